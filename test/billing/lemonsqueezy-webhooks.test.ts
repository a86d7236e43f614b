// Lemon Squeezy (issue 32): events built from Lemon Squeezy's documented payloads
// (fixtures/lemonsqueezy), signed as Lemon Squeezy signs them (X-Signature, hex HMAC-SHA256 of
// the body; its SDK has no verifier), posted to a real server on both dialects — orders and
// renewals as sales net of tax under a 6-month plan, a subscription's first invoice left to its
// order, cumulative refunds before and after a payout, redelivery (Lemon Squeezy numbers no
// event: the business keys decide), an unknown customer who becomes known, signatures,
// another program's secret, another currency.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { updateProgramSettings } from '../../src/modules/programs/program.service.ts';
import { billingProviderOf, connectBilling } from '../../src/modules/billing/billing.service.ts';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { uniqueEmail, unique } from '../helpers/fixtures.ts';
import { fixture, postLemonSqueezyEvent, connectedProgram as connectedProgramOf } from '../helpers/billing-providers.ts';
import { raceNote } from '../helpers/test-database.ts';
import { assertLedgerMatchesCounters } from '../helpers/recount.ts';

let t: TestServer;
let now = new Date();
let seq = 1000;
const nextId = () => ++seq;

before(async () => {
  t = await startTestServer({}, { clock: () => now });
});
after(() => t.close());

/** A program connected to lemonsqueezy, with its own secret. */
const connectedProgram = (currency = 'USD') => connectedProgramOf(t, 'lemonsqueezy', unique('lsq').replace(/[^A-Za-z0-9]/g, '').slice(0, 30), currency);

interface PaymentOptions {
  referral?: string;
  customerId?: number;
  email?: string;
  id?: number;
  total?: number;
  tax?: number;
  currency?: string;
  createdAt?: string;
  billingReason?: string;
}

function payment(name: 'order_created' | 'subscription_payment_success', o: PaymentOptions = {}) {
  const event = fixture('lemonsqueezy', name);
  event.meta.custom_data = o.referral === undefined ? null : { tandem_referral: o.referral };
  event.data.id = String(o.id ?? nextId());
  Object.assign(event.data.attributes, {
    customer_id: o.customerId ?? nextId(),
    user_email: o.email ?? uniqueEmail('buyer'),
    currency: o.currency ?? 'USD',
    total: o.total ?? 1199,
    tax: o.tax ?? 200,
    ...(o.createdAt ? { created_at: o.createdAt } : {}),
    ...(o.billingReason ? { billing_reason: o.billingReason } : {}),
  });
  return event;
}

/** The order as Lemon Squeezy sends it refunded up to `refundedAmount` (cumulative). */
function refunded(order: any, refundedAmount: number) {
  const event = structuredClone(order);
  event.meta.event_name = 'order_refunded';
  Object.assign(event.data.attributes, { refunded: true, refunded_amount: refundedAmount, status: refundedAmount >= event.data.attributes.total ? 'refunded' : 'partial_refund' });
  return event;
}

const listed = async (api: ApiClient) => (await api.get('/billing-events')).body as any[];

describe('Lemon Squeezy webhooks', () => {
  it("an order with the checkout's tandem_referral: a referral by the order's e-mail, and its sale net of tax; a redelivery does nothing", async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    const order = payment('order_created', { referral: affiliate.link, email: 'darlene@example.org', customerId: 4321 });
    assert.deepEqual((await postLemonSqueezyEvent(t.url, programId, order, secret)).body, { received: true, duplicate: false });
    assert.deepEqual((await postLemonSqueezyEvent(t.url, programId, order, secret)).body, { received: true, duplicate: true });
    const [referral] = (await api.get('/referrals?externalId=4321')).body;
    assert.deepEqual([referral.affiliateId, referral.email, referral.name], [affiliate.id, 'darlene@example.org', 'Darlene Daugherty']);
    const [sale] = (await api.get(`/sales?referralId=${referral.id}`)).body;
    assert.deepEqual([sale.totalEarned, sale.externalInvoiceId, sale.commission, sale.createdAt], [9.99, `orders/${order.data.id}`, 2, '2026-11-20T10:15:19.000Z']);
    const [event] = await listed(api);
    assert.deepEqual([event.id, event.provider, event.type, event.outcome], [`order_created:orders/${order.data.id}`, 'lemonsqueezy', 'order_created', 'recorded']);
    await assertLedgerMatchesCounters(rawDb(t), programId);
  });

  it("a subscription's renewals are sales under a 6-month plan; its first invoice is left to its order", async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    await updateProgramSettings(rawDb(t), programId, { durationMonths: 6 });
    const customerId = nextId();
    const start = now;
    await postLemonSqueezyEvent(t.url, programId, payment('order_created', { referral: affiliate.link, customerId, total: 2400, tax: 400, createdAt: start.toISOString() }), secret);
    const initial = payment('subscription_payment_success', { referral: affiliate.link, customerId, total: 2400, tax: 400, billingReason: 'initial' });
    await postLemonSqueezyEvent(t.url, programId, initial, secret);
    assert.equal((await listed(api)).find((e) => e.type === 'subscription_payment_success').reason, "a subscription's first payment is its order's (order_created)");
    for (let month = 1; month < 8; month++) {
      now = new Date(start.getTime() + month * 30.5 * 86_400_000);
      await postLemonSqueezyEvent(t.url, programId, payment('subscription_payment_success', { referral: affiliate.link, customerId, total: 2400, tax: 400, createdAt: now.toISOString() }), secret);
    }
    now = new Date();
    const sales = (await api.get('/sales?limit=100')).body as any[];
    assert.deepEqual(sales.map((s) => s.commission).reverse(), [4, 4, 4, 4, 4, 4, 0, 0]);
    assert.equal(sales.filter((s) => s.externalInvoiceId.startsWith('subscription-invoices/')).length, 7);
  });

  it('refunds by the cumulative refunded_amount, net of tax in proportion, before and after a payout, once each', async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    await updateProgramSettings(rawDb(t), programId, { holdDays: 0 });
    const order = payment('order_created', { referral: affiliate.link, total: 12000, tax: 2000 });
    await postLemonSqueezyEvent(t.url, programId, order, secret);
    const part = refunded(order, 6000);
    await postLemonSqueezyEvent(t.url, programId, part, secret);
    assert.equal((await postLemonSqueezyEvent(t.url, programId, part, secret)).body.duplicate, true);
    const sale = async () => (await api.get('/sales')).body[0];
    assert.deepEqual([(await sale()).refundedAmount, (await sale()).status], [50, 'partially_refunded'], 'half of 120.00 refunded: half of the 100.00 net of tax');
    const [payout] = (await api.post('/payouts', {})).body;
    await api.put('/payouts', { payoutId: payout.id, status: 'paid' });
    await postLemonSqueezyEvent(t.url, programId, refunded(order, 12000), secret);
    assert.deepEqual([(await sale()).refundedAmount, (await sale()).status, (await sale()).commission], [100, 'refunded', 0]);
    const refunds = (await api.get('/commissions')).body.filter((e: any) => e.kind === 'refund');
    assert.deepEqual(refunds.map((e: any) => [e.amount, e.status]).sort(), [[-10, 'due'], [-10, 'paid']].sort());
    await assertLedgerMatchesCounters(rawDb(t), programId);
  });

  it('an order of a customer not referred yet waits, and becomes their sale when the merchant refers them through the API', async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    const order = payment('order_created', { customerId: 98765 });
    await postLemonSqueezyEvent(t.url, programId, order, secret);
    assert.equal((await listed(api))[0].outcome, 'waiting');
    const referral = (await api.post('/referrals', { name: 'Later Known', email: uniqueEmail('later'), referredUserExternalId: '98765', affiliateId: affiliate.id })).body;
    assert.deepEqual((await api.get(`/sales?referralId=${referral.id}`)).body.map((s: any) => s.externalInvoiceId), [`orders/${order.data.id}`]);
    assert.deepEqual([(await listed(api))[0].outcome, (await listed(api))[0].referralId], ['recorded', referral.id]);
  });

  it(`concurrent deliveries of one order record it once${raceNote}; another currency is ignored with its reason`, async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    const order = payment('order_created', { referral: affiliate.link });
    const answers = await Promise.all(Array.from({ length: 6 }, () => postLemonSqueezyEvent(t.url, programId, order, secret)));
    assert.equal(answers.filter((a) => a.status === 200 && a.body.duplicate === false).length, 1);
    assert.equal((await api.get('/sales')).body.length, 1);
    const eur = payment('order_created', { referral: affiliate.link, currency: 'EUR' });
    await postLemonSqueezyEvent(t.url, programId, eur, secret);
    assert.deepEqual((await listed(api)).filter((e) => e.outcome === 'ignored').map((e) => e.reason), ["paid in EUR, not the program's USD"]);
  });

  it("bad and missing signatures, another program's secret, a secret of the wrong shape: refused, nothing recorded", async () => {
    const a = await connectedProgram();
    const b = await connectedProgram();
    const order = payment('order_created', { referral: a.affiliate.link });
    for (const [secret, header] of [[null, undefined], [b.secret, undefined], [a.secret, 'deadbeef'], [a.secret, '']] as const) {
      const res = await postLemonSqueezyEvent(t.url, a.programId, order, secret, header);
      assert.equal(res.status, 400, JSON.stringify(res.body));
    }
    assert.deepEqual(await listed(a.api), []);
    assert.deepEqual((await a.api.get('/referrals')).body, []);
    await assert.rejects(connectBilling(rawDb(t), a.programId, billingProviderOf('lemonsqueezy'), 'short', new Date().toISOString()), (error: any) => /6 to 40 characters/.test(error.errors?.[0]?.detail));
  });
});
