// Chargebee (issue 32): events built from Chargebee's documented payloads (fixtures/chargebee),
// sent with the webhook's HTTP Basic credentials as Chargebee sends them, posted to a real
// server on both dialects — a customer's cf_tandem_referral (or meta_data) and a coupon code
// crediting an affiliate, paid invoices as sales net of tax under a 6-month plan, refunds by
// refund transaction (once each) before and after a payout, duplicate and concurrent delivery,
// wrong and missing credentials, another program's, another currency, an unknown customer who
// becomes known.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { updateProgramSettings } from '../../src/modules/programs/program.service.ts';
import { billingProviderOf, connectBilling } from '../../src/modules/billing/billing.service.ts';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { uniqueEmail, unique } from '../helpers/fixtures.ts';
import { fixture, postChargebeeEvent, connectedProgram as connectedProgramOf } from '../helpers/billing-providers.ts';
import { raceNote } from '../helpers/test-database.ts';
import { assertLedgerMatchesCounters } from '../helpers/recount.ts';

let t: TestServer;
let now = new Date();
const cbId = (prefix: string) => `${prefix}${unique('c').replace(/[^A-Za-z0-9]/g, '')}`;

before(async () => {
  t = await startTestServer({}, { clock: () => now });
});
after(() => t.close());

/** A program connected to chargebee, with its own secret. */
const connectedProgram = (currency = 'USD') => connectedProgramOf(t, 'chargebee', `tandem:${cbId('pw')}Zq8vL2`, currency);

interface Options {
  customerId?: string;
  referral?: string | null;
  metaReferral?: string;
  email?: string;
  total?: number;
  tax?: number;
  currency?: string;
  invoiceId?: string;
  paidAt?: Date;
  coupon?: { id: string; code: string };
}

function paymentSucceeded(o: Options = {}) {
  const event = fixture('chargebee', 'payment_succeeded');
  event.id = cbId('ev_');
  const { transaction, invoice, customer } = event.content;
  const total = o.total ?? 5880;
  const paid = Math.floor((o.paidAt ?? new Date('2026-11-20T10:15:21Z')).getTime() / 1000);
  Object.assign(transaction, { id: cbId('txn_'), amount: total, currency_code: o.currency ?? 'USD', date: paid });
  Object.assign(invoice, { id: o.invoiceId ?? cbId('INV-'), total, tax: o.tax ?? 980, amount_paid: total, currency_code: o.currency ?? 'USD', paid_at: paid, discounts: o.coupon ? [{ amount: 490, entity_type: 'document_level_coupon', entity_id: o.coupon.id, coupon_set_code: o.coupon.code, object: 'discount' }] : [] });
  Object.assign(customer, { id: o.customerId ?? cbId('cust'), email: o.email ?? uniqueEmail('payer'), cf_tandem_referral: o.referral ?? null, meta_data: o.metaReferral ? { tandem_referral: o.metaReferral } : {} });
  return event;
}

function paymentRefunded(paid: any, amount: number, transactionId = cbId('txn_')) {
  const event = fixture('chargebee', 'payment_refunded');
  event.id = cbId('ev_');
  Object.assign(event.content.transaction, { id: transactionId, amount, currency_code: paid.content.invoice.currency_code });
  event.content.invoice = structuredClone(paid.content.invoice);
  event.content.customer = structuredClone(paid.content.customer);
  event.content.credit_note.reference_invoice_id = paid.content.invoice.id;
  return event;
}

const listed = async (api: ApiClient) => (await api.get('/billing-events')).body as any[];

describe('Chargebee webhooks', () => {
  it("a customer's cf_tandem_referral: a referral, and the paid invoice a sale net of tax; meta_data refers as well", async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    const paid = paymentSucceeded({ referral: affiliate.link, email: 'pat@example.org' });
    assert.deepEqual((await postChargebeeEvent(t.url, programId, paid, secret)).body, { received: true, duplicate: false });
    assert.deepEqual((await postChargebeeEvent(t.url, programId, paid, secret)).body, { received: true, duplicate: true });
    const [referral] = (await api.get(`/referrals?externalId=${paid.content.customer.id}`)).body;
    assert.deepEqual([referral.affiliateId, referral.email, referral.name], [affiliate.id, 'pat@example.org', 'Pat Payer']);
    const [sale] = (await api.get(`/sales?referralId=${referral.id}`)).body;
    assert.deepEqual([sale.totalEarned, sale.externalInvoiceId, sale.commission, sale.createdAt], [49, paid.content.invoice.id, 9.8, '2026-11-20T10:15:21.000Z']);
    const byMeta = paymentSucceeded({ metaReferral: affiliate.id });
    await postChargebeeEvent(t.url, programId, byMeta, secret);
    assert.equal((await api.get(`/referrals?externalId=${byMeta.content.customer.id}`)).body[0].affiliateId, affiliate.id);
    const created = fixture('chargebee', 'customer_created');
    created.id = cbId('ev_');
    Object.assign(created.content.customer, { id: cbId('cust'), email: uniqueEmail('signup'), cf_tandem_referral: affiliate.link });
    await postChargebeeEvent(t.url, programId, created, secret);
    assert.equal((await api.get(`/referrals?externalId=${created.content.customer.id}`)).body.length, 1);
    await assertLedgerMatchesCounters(rawDb(t), programId);
  });

  it("a coupon code credits its affiliate; an unknown customer's invoice waits and becomes a sale once the merchant refers them", async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    const coupon = (await api.post('/coupons', { name: 'Ten off', couponType: 'PERCENTAGE', percentOff: 10, duration: 'once' })).body;
    await api.post('/promotional-codes', { couponId: coupon.id, code: 'CB10', affiliateId: affiliate.id });
    const withCode = paymentSucceeded({ coupon: { id: 'ten-off', code: 'CB10' } });
    await postChargebeeEvent(t.url, programId, withCode, secret);
    assert.equal((await api.get(`/referrals?externalId=${withCode.content.customer.id}`)).body[0].affiliateId, affiliate.id);
    const unknown = paymentSucceeded();
    await postChargebeeEvent(t.url, programId, unknown, secret);
    assert.equal((await listed(api)).find((e) => e.id === unknown.id).outcome, 'waiting');
    const referral = (await api.post('/referrals', { name: 'Known Later', email: uniqueEmail('later'), referredUserExternalId: unknown.content.customer.id, affiliateId: affiliate.id })).body;
    assert.deepEqual((await api.get(`/sales?referralId=${referral.id}`)).body.map((s: any) => s.externalInvoiceId), [unknown.content.invoice.id]);
    assert.equal((await listed(api)).find((e) => e.id === unknown.id).outcome, 'recorded');
  });

  it('a monthly subscription under a 6-month plan pays the first six invoices', async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    await updateProgramSettings(rawDb(t), programId, { durationMonths: 6 });
    const customerId = cbId('cust');
    const start = now;
    for (let month = 0; month < 8; month++) {
      now = new Date(start.getTime() + month * 30.5 * 86_400_000);
      const paid = paymentSucceeded({ customerId, referral: affiliate.link, total: 2400, tax: 400, paidAt: now });
      paid.content.customer.created_at = Math.floor(start.getTime() / 1000);
      await postChargebeeEvent(t.url, programId, paid, secret);
    }
    now = new Date();
    assert.deepEqual(((await api.get('/sales?limit=100')).body as any[]).map((s) => s.commission).reverse(), [4, 4, 4, 4, 4, 4, 0, 0]);
  });

  it('refunds by refund transaction, net of tax in proportion, once each, before and after a payout', async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    await updateProgramSettings(rawDb(t), programId, { holdDays: 0 });
    const paid = paymentSucceeded({ referral: affiliate.link, total: 12000, tax: 2000 });
    await postChargebeeEvent(t.url, programId, paid, secret);
    const part = paymentRefunded(paid, 3000);
    await postChargebeeEvent(t.url, programId, part, secret);
    await postChargebeeEvent(t.url, programId, { ...part, id: cbId('ev_') }, secret); // the same refund in another event: nothing more
    const sale = async () => (await api.get('/sales')).body[0];
    assert.deepEqual([(await sale()).refundedAmount, (await sale()).status], [25, 'partially_refunded'], 'a quarter of 120.00 refunded: a quarter of the 100.00 net of tax');
    const [payout] = (await api.post('/payouts', {})).body;
    await api.put('/payouts', { payoutId: payout.id, status: 'paid' });
    await postChargebeeEvent(t.url, programId, paymentRefunded(paid, 9000), secret);
    assert.deepEqual([(await sale()).refundedAmount, (await sale()).status, (await sale()).commission], [100, 'refunded', 0]);
    const refunds = (await api.get('/commissions')).body.filter((e: any) => e.kind === 'refund');
    assert.deepEqual(refunds.map((e: any) => [e.amount, e.status]).sort(), [[-15, 'due'], [-5, 'paid']].sort());
    assert.equal((await listed(api)).filter((e) => e.reason === `the refund ${part.content.transaction.id} was already applied`).length, 1);
    await assertLedgerMatchesCounters(rawDb(t), programId);
  });

  it(`concurrent deliveries record once${raceNote}; another currency is ignored with its reason`, async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    const paid = paymentSucceeded({ referral: affiliate.link });
    const answers = await Promise.all(Array.from({ length: 6 }, () => postChargebeeEvent(t.url, programId, paid, secret)));
    assert.equal(answers.filter((a) => a.status === 200 && a.body.duplicate === false).length, 1);
    assert.equal((await api.get('/sales')).body.length, 1);
    const eur = paymentSucceeded({ referral: affiliate.link, currency: 'EUR' });
    await postChargebeeEvent(t.url, programId, eur, secret);
    assert.equal((await listed(api)).find((e) => e.id === eur.id).reason, "paid in EUR, not the program's USD");
  });

  it("wrong and missing credentials, another program's: 400, nothing recorded; the credentials' shape is checked", async () => {
    const a = await connectedProgram();
    const b = await connectedProgram();
    const paid = paymentSucceeded({ referral: a.affiliate.link });
    for (const credentials of [null, b.secret, `${a.secret}x`, a.secret.split(':')[0]!]) {
      const res = await postChargebeeEvent(t.url, a.programId, paid, credentials);
      assert.equal(res.status, 400, JSON.stringify(res.body));
    }
    assert.deepEqual(await listed(a.api), []);
    await assert.rejects(connectBilling(rawDb(t), a.programId, billingProviderOf('chargebee'), 'no-colon-here', new Date().toISOString()), (error: any) => /user:password/.test(error.errors?.[0]?.detail));
  });
});
