// An event that reports a time before it was written (issue 29, item 4): a Stripe sale is dated
// by the invoice's payment time, an hour before Stripe delivered it. An endpoint subscribed in
// between must get it — what decides is when the event was written (its number), never the
// time it reports — and must not get what was written before it subscribed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { rawDb, startTestServer, apiClient, type TestServer } from '../helpers/test-server.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { created, unique, uniqueEmail } from '../helpers/fixtures.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { createProgram } from '../../src/modules/programs/program.service.ts';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { connectStripe } from '../../src/modules/billing/billing.service.ts';
import { postStripeEvent, stripeEvent, stripeId } from '../helpers/stripe-events.ts';

let t: TestServer;
let receiver: WebhookReceiver;

before(async () => {
  t = await startTestServer({ webhookAllowPrivateUrls: true });
  receiver = await startWebhookReceiver('/past');
});
after(async () => {
  await receiver.close();
  await t.close();
});

const event = stripeEvent;

async function deliver(programId: string, body: object, secret: string): Promise<void> {
  const res = await postStripeEvent(t.url, programId, body, secret);
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

describe('events dated before they were written', () => {
  it("an endpoint made between an invoice's payment and its delivery gets the sale; not what was written before it", async () => {
    const db = rawDb(t);
    const owner = await createUser(db, { email: uniqueEmail('owner'), password: 'a long password' });
    const program = await createProgram(db, { ownerUserId: owner.id, name: 'Late Shop', domain: 'late.example', currency: 'USD', commissionRate: 20 });
    const secret = `whsec_${unique('s').replace(/[^A-Za-z0-9]/g, '')}abcdef`;
    await connectStripe(db, program.id, secret, new Date().toISOString());
    const { token } = await issueToken(db, { programId: program.id, name: 'test', kind: 'api_key' });
    const api = apiClient(t.url, token, program.id);
    const affiliate = await created<{ id: string; link: string }>(api.post('/affiliates', { firstName: 'Jane', lastName: 'Late', email: uniqueEmail('jane') }));
    const customerId = stripeId('cus');
    await deliver(program.id, event('customer.created', { id: customerId, object: 'customer', email: uniqueEmail('carl'), name: 'Carl Customer', metadata: { tandem_referral: affiliate.link } }), secret);
    const before = await created<{ id: number }>(api.post('/sales', { referralId: affiliate.id, name: 'Earlier', email: uniqueEmail('earlier'), totalEarned: 5 }));

    // The invoice was paid an hour ago; the endpoint subscribes now; Stripe delivers after that.
    const paidAt = Math.floor(Date.now() / 1000) - 3600;
    await sleep(20); // the subscription's time is after every event above
    await created(api.post('/webhooks', { url: `${receiver.url}`, events: ['sale.created'] }));
    const invoiceId = stripeId('in');
    await deliver(
      program.id,
      event('invoice.paid', { id: invoiceId, object: 'invoice', customer: customerId, amount_paid: 4999, currency: 'usd', status: 'paid', status_transitions: { paid_at: paidAt } }),
      secret,
    );
    const sale = (await api.get('/sales')).body.find((s: { externalInvoiceId: string }) => s.externalInvoiceId === invoiceId);
    assert.ok(sale, 'the invoice became a sale');
    assert.equal(sale.createdAt, new Date(paidAt * 1000).toISOString(), 'the sale reports the payment time, an hour before the subscription');

    await receiver.waitFor((received) => received.some((d) => d.json?.data?.id === sale.id), 5000, 'the late sale.created');
    await sleep(300); // time for anything else fan-out would make
    const deliveredSales = receiver.received.map((d) => d.json?.data?.id);
    assert.deepEqual(deliveredSales, [sale.id], `only the sale written after the subscription, not sale ${before.id}`);
  });
});
