// Polar (issue 32): events built from Polar's documented payloads (fixtures/polar, each one
// parsed by Polar's SDK), signed with Standard Webhooks as Polar signs them and checked with
// Polar's own validateEvent, posted to a real server on both dialects — orders as sales net of
// tax by their checkout's metadata or the customer's, a discount code, a 6-month plan,
// cumulative refunds before and after a payout, the same message redelivered and raced,
// signatures (bad, old, missing, rotated), another program's secret, another currency.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { validateEvent } from '@polar-sh/sdk/webhooks';
import { updateProgramSettings } from '../../src/modules/programs/program.service.ts';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { uniqueEmail, unique } from '../helpers/fixtures.ts';
import { fixture, polarHeaders, postPolarEvent, connectedProgram as connectedProgramOf } from '../helpers/billing-providers.ts';
import { raceNote } from '../helpers/test-database.ts';
import { assertLedgerMatchesCounters } from '../helpers/recount.ts';

let t: TestServer;
let now = new Date();

before(async () => {
  t = await startTestServer({}, { clock: () => now });
});
after(() => t.close());

/** A program connected to polar, with its own secret. */
const connectedProgram = (currency = 'USD') => connectedProgramOf(t, 'polar', `polar_whs_${unique('s').replace(/[^A-Za-z0-9]/g, '')}q7Xk2pLm9`, currency);

const uuid = () => crypto.randomUUID();

function orderPaid(o: { referral?: string; customerReferral?: string; customerId?: string; email?: string; net?: number; tax?: number; currency?: string; createdAt?: string; discount?: { id: string; code: string } } = {}) {
  const event = fixture('polar', 'order.paid');
  const customerId = o.customerId ?? uuid();
  Object.assign(event.data, {
    id: uuid(),
    metadata: o.referral === undefined ? {} : { tandem_referral: o.referral },
    customer_id: customerId,
    currency: o.currency ?? 'usd',
    net_amount: o.net ?? 4900,
    tax_amount: o.tax ?? 980,
    total_amount: (o.net ?? 4900) + (o.tax ?? 980),
    ...(o.createdAt ? { created_at: o.createdAt } : {}),
    discount: o.discount ? { id: o.discount.id, code: o.discount.code } : null,
  });
  Object.assign(event.data.customer, { id: customerId, email: o.email ?? uniqueEmail('payer'), metadata: o.customerReferral === undefined ? {} : { tandem_referral: o.customerReferral } });
  return event;
}

function orderRefunded(paid: any, refundedAmount: number) {
  const event = structuredClone(paid);
  event.type = 'order.refunded';
  Object.assign(event.data, { refunded_amount: refundedAmount, status: refundedAmount >= event.data.net_amount ? 'refunded' : 'partially_refunded' });
  return event;
}

const listed = async (api: ApiClient) => (await api.get('/billing-events')).body as any[];

describe('Polar webhooks', () => {
  it("Polar's own SDK verifies (and parses) the events the tests send", () => {
    const payload = JSON.stringify(orderPaid({ referral: 'jane' }));
    const secret = 'polar_whs_q7Xk2pLm9RtY4wZ1';
    assert.equal((validateEvent(payload, polarHeaders(payload, secret), secret) as { type: string }).type, 'order.paid');
    assert.throws(() => validateEvent(payload, polarHeaders(payload, 'polar_whs_another_secret_'), secret));
  });

  it("an order with its checkout's metadata: a referral by the customer's e-mail, the sale net of tax; the customer's metadata refers as well", async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    const order = orderPaid({ referral: affiliate.link, email: 'pat@example.org' });
    assert.deepEqual((await postPolarEvent(t.url, programId, order, secret)).body, { received: true, duplicate: false });
    const [referral] = (await api.get(`/referrals?externalId=${order.data.customer.id}`)).body;
    assert.deepEqual([referral.affiliateId, referral.email, referral.name], [affiliate.id, 'pat@example.org', 'Pat Payer']);
    const stored = await rawDb(t).selectFrom('referrals').select('created_at').where('id', '=', referral.id).executeTakeFirstOrThrow();
    assert.equal(new Date(stored.created_at as string).toISOString(), '2026-11-20T10:14:02.511Z', "dated by the customer's created_at");
    const [sale] = (await api.get(`/sales?referralId=${referral.id}`)).body;
    assert.deepEqual([sale.totalEarned, sale.externalInvoiceId, sale.commission, sale.createdAt], [49, order.data.id, 9.8, '2026-11-20T10:15:21.102Z']);
    const [event] = await listed(api);
    assert.deepEqual([event.provider, event.type, event.outcome, event.saleId], ['polar', 'order.paid', 'recorded', sale.id]);

    const byCustomer = orderPaid({ customerReferral: affiliate.id });
    await postPolarEvent(t.url, programId, byCustomer, secret);
    assert.equal((await api.get(`/referrals?externalId=${byCustomer.data.customer.id}`)).body[0].affiliateId, affiliate.id);
    const nobody = orderPaid();
    await postPolarEvent(t.url, programId, nobody, secret);
    const waiting = (await listed(api)).filter((e) => e.outcome === 'waiting');
    assert.deepEqual(waiting.map((e) => e.reason), [`waiting up to 24 hours for the customer ${nobody.data.customer.id} to be referred`], 'a customer nothing credits yet: the order waits 24 hours for a referral');
    // The merchant refers them through the API within the 24 hours: the order becomes their sale.
    const later = (await api.post('/referrals', { name: 'Known Later', email: uniqueEmail('later'), referredUserExternalId: nobody.data.customer.id, affiliateId: affiliate.id })).body;
    assert.deepEqual((await api.get(`/sales?referralId=${later.id}`)).body.map((s: any) => s.externalInvoiceId), [nobody.data.id]);
  });

  it("a discount code credits the affiliate of the program's code; a customer.created with metadata refers by itself", async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    const coupon = (await api.post('/coupons', { name: 'Ten off', couponType: 'PERCENTAGE', percentOff: 10, duration: 'once' })).body;
    await api.post('/promotional-codes', { couponId: coupon.id, code: 'POLAR10', affiliateId: affiliate.id });
    const order = orderPaid({ discount: { id: uuid(), code: 'POLAR10' } });
    await postPolarEvent(t.url, programId, order, secret);
    assert.equal((await api.get(`/referrals?externalId=${order.data.customer.id}`)).body[0].affiliateId, affiliate.id);
    const customer = fixture('polar', 'customer.created');
    Object.assign(customer.data, { id: uuid(), email: uniqueEmail('signup'), metadata: { tandem_referral: affiliate.link } });
    await postPolarEvent(t.url, programId, customer, secret);
    assert.equal((await api.get(`/referrals?externalId=${customer.data.id}`)).body.length, 1);
  });

  it('a monthly subscription under a 6-month plan pays the first six orders', async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    await updateProgramSettings(rawDb(t), programId, { durationMonths: 6 });
    const customerId = uuid();
    const start = now;
    const first = orderPaid({ referral: affiliate.link, customerId, net: 2000, createdAt: start.toISOString() });
    first.data.customer.created_at = start.toISOString();
    await postPolarEvent(t.url, programId, first, secret);
    for (let month = 1; month < 8; month++) {
      now = new Date(start.getTime() + month * 30.5 * 86_400_000);
      const renewal = orderPaid({ referral: affiliate.link, customerId, net: 2000, createdAt: now.toISOString() });
      renewal.data.customer.created_at = start.toISOString();
      await postPolarEvent(t.url, programId, renewal, secret);
    }
    now = new Date();
    assert.deepEqual(((await api.get('/sales?limit=100')).body as any[]).map((s) => s.commission).reverse(), [4, 4, 4, 4, 4, 4, 0, 0]);
  });

  it('refunds by the cumulative refunded_amount (before tax), before and after a payout, once', async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    await updateProgramSettings(rawDb(t), programId, { holdDays: 0 });
    const order = orderPaid({ referral: affiliate.link, net: 10_000, tax: 2_000 });
    await postPolarEvent(t.url, programId, order, secret);
    const part = orderRefunded(order, 2_500);
    await postPolarEvent(t.url, programId, part, secret);
    await postPolarEvent(t.url, programId, part, secret); // the same total in another message: nothing more
    const sale = async () => (await api.get('/sales')).body[0];
    assert.deepEqual([(await sale()).refundedAmount, (await sale()).status], [25, 'partially_refunded']);
    const [payout] = (await api.post('/payouts', {})).body;
    await api.put('/payouts', { payoutId: payout.id, status: 'paid' });
    await postPolarEvent(t.url, programId, orderRefunded(order, 10_000), secret);
    assert.deepEqual([(await sale()).refundedAmount, (await sale()).status, (await sale()).commission], [100, 'refunded', 0]);
    const refunds = (await api.get('/commissions')).body.filter((e: any) => e.kind === 'refund');
    assert.deepEqual(refunds.map((e: any) => [e.amount, e.status]).sort(), [[-15, 'due'], [-5, 'paid']].sort());
    const again = (await listed(api)).filter((e) => e.type === 'order.refunded' && e.outcome === 'ignored');
    assert.deepEqual(again.map((e) => e.reason), ['the refund is nothing beyond what is already refunded']);
    await assertLedgerMatchesCounters(rawDb(t), programId);
  });

  it(`one message redelivered, and raced, is recorded once${raceNote}; another currency is ignored`, async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    const order = orderPaid({ referral: affiliate.link });
    const payload = JSON.stringify(order);
    const headers = polarHeaders(payload, secret);
    const answers = await Promise.all(Array.from({ length: 6 }, () => postPolarEvent(t.url, programId, order, secret, headers)));
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200, 200]);
    assert.equal(answers.filter((a) => a.body.duplicate === false).length, 1);
    // The same order in other messages (Polar's retries of a new delivery): one sale, each listed as recorded naming it.
    await Promise.all([postPolarEvent(t.url, programId, order, secret), postPolarEvent(t.url, programId, order, secret)]);
    assert.equal((await api.get('/sales')).body.length, 1);
    assert.deepEqual([...new Set((await listed(api)).map((e) => e.outcome))], ['recorded']);
    const eur = orderPaid({ referral: affiliate.link, currency: 'eur' });
    await postPolarEvent(t.url, programId, eur, secret);
    assert.deepEqual((await listed(api)).filter((e) => e.outcome === 'ignored').map((e) => e.reason), ["paid in EUR, not the program's USD"]);
  });

  it("bad, old, missing and rotated signatures, another program's secret: 400, nothing recorded, or either secret accepted", async () => {
    const a = await connectedProgram();
    const b = await connectedProgram();
    const order = orderPaid({ referral: a.affiliate.link });
    const payload = JSON.stringify(order);
    const good = polarHeaders(payload, a.secret);
    for (const headers of [
      {},
      polarHeaders(payload, b.secret),
      { ...good, 'webhook-signature': 'v1,ZGVhZGJlZWY=' },
      polarHeaders(payload, a.secret, undefined, new Date(Date.now() - 600_000)),
      { ...good, 'webhook-id': 'msg_another' },
    ]) {
      const res = await postPolarEvent(t.url, a.programId, order, a.secret, headers);
      assert.equal(res.status, 400, JSON.stringify(res.body));
    }
    assert.deepEqual(await listed(a.api), []);
    const rotated = { ...good, 'webhook-signature': `v1,b2xkc2lnbmF0dXJl ${good['webhook-signature']}` };
    assert.equal((await postPolarEvent(t.url, a.programId, order, a.secret, rotated)).status, 200);
    assert.equal((await a.api.get('/sales')).body.length, 1);
  });
});
