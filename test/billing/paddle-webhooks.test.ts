// Paddle Billing (issue 32): events built from Paddle's documented payloads (fixtures/paddle),
// signed as Paddle signs them and checked with Paddle's own SDK verifier, posted to a real
// server on both dialects — the transaction's custom_data and the customer's e-mail meeting in
// either order, sales net of tax, a 6-month plan, refunds and chargebacks by adjustment (once
// each, before and after a payout), duplicate and concurrent delivery, signatures, another
// program's secret, another currency and a zero-decimal one.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Paddle } from '@paddle/paddle-node-sdk';
import { updateProgramSettings } from '../../src/modules/programs/program.service.ts';
import { billingProviderOf, connectBilling } from '../../src/modules/billing/billing.service.ts';
import { rawDb, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { uniqueEmail, unique } from '../helpers/fixtures.ts';
import { fixture, paddleSignature, postPaddleEvent, providerId, connectedProgram as connectedProgramOf } from '../helpers/billing-providers.ts';
import { raceNote } from '../helpers/test-database.ts';
import { assertLedgerMatchesCounters } from '../helpers/recount.ts';

let t: TestServer;
/** The server's clock (the plan's months); Paddle's signatures use real time. */
let now = new Date();

before(async () => {
  t = await startTestServer({}, { clock: () => now });
});
after(() => t.close());

/** A program connected to paddle, with its own secret. */
const connectedProgram = (currency = 'USD') => connectedProgramOf(t, 'paddle', `pdl_ntfset_${providerId('x').slice(2)}_${unique('k').replace(/[^A-Za-z0-9]/g, '')}Av4U6W2GMu`, currency);

/** Paddle's customer.created for a new customer (their e-mail; custom_data only when given). */
function customerCreated(customerId = providerId('ctm'), email = uniqueEmail('payer'), referral?: string) {
  const event = fixture('paddle', 'customer.created');
  event.event_id = providerId('evt');
  Object.assign(event.data, { id: customerId, email, custom_data: referral === undefined ? null : { tandem_referral: referral } });
  return event;
}

/** Paddle's transaction.completed of `customerId`: `total` and `tax` in cents, custom_data's tandem_referral when given. */
function transactionCompleted(customerId: string, { referral, total = '5880', tax = '980', currency = 'USD', id = providerId('txn'), discountId = null as string | null, billedAt }: { referral?: string; total?: string; tax?: string; currency?: string; id?: string; discountId?: string | null; billedAt?: string } = {}) {
  const event = fixture('paddle', 'transaction.completed');
  event.event_id = providerId('evt');
  Object.assign(event.data, { id, customer_id: customerId, custom_data: referral === undefined ? null : { tandem_referral: referral }, currency_code: currency, discount_id: discountId });
  Object.assign(event.data.details.totals, { total, tax, currency_code: currency });
  if (billedAt) {
    event.data.billed_at = billedAt;
    event.data.payments[0].captured_at = billedAt;
  }
  return event;
}

/** Paddle's adjustment event for `transactionId`: `total` and `tax` in cents. */
function adjustment(transactionId: string, { id = providerId('adj'), action = 'refund', status = 'approved', total = '2352', tax = '392', type = 'adjustment.updated', currency = 'USD' } = {}) {
  const event = fixture('paddle', 'adjustment.updated');
  event.event_id = providerId('evt');
  event.event_type = type;
  Object.assign(event.data, { id, action, status, transaction_id: transactionId, currency_code: currency });
  Object.assign(event.data.totals, { total, tax });
  return event;
}

describe('Paddle Billing webhooks', () => {
  it("Paddle's own SDK verifies the signatures the tests send", async () => {
    const payload = JSON.stringify(customerCreated());
    const secret = 'pdl_ntfset_01hv8x2aqs8t6gdn1xqk2f7b1w_Av4U6W2GMu';
    const { webhooks } = new Paddle('pdl_sdbx_apikey_unused_only_webhook_verification');
    const event = await webhooks.unmarshal(payload, secret, paddleSignature(payload, [secret]));
    assert.equal(event.eventType, 'customer.created');
    assert.equal(await webhooks.isSignatureValid(payload, secret, paddleSignature(payload, ['pdl_ntfset_other_secret_key'])), false);
  });

  it("the transaction's custom_data and the customer's e-mail meet in either order: a referral, and its sale net of tax", async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    // The customer first (as Paddle's checkout usually sends): kept until a transaction names an affiliate.
    const first = customerCreated(undefined, 'pat.first@example.org');
    assert.deepEqual((await postPaddleEvent(t.url, programId, first, secret)).body, { received: true, duplicate: false });
    const txn = transactionCompleted(first.data.id, { referral: affiliate.link });
    assert.equal((await postPaddleEvent(t.url, programId, txn, secret)).status, 200);
    const [referral] = (await api.get(`/referrals?externalId=${first.data.id}`)).body;
    assert.deepEqual([referral.affiliateId, referral.email, referral.name], [affiliate.id, 'pat.first@example.org', 'Pat Payer']);
    const dated = await rawDb(t).selectFrom('referrals').select('created_at').where('id', '=', referral.id).executeTakeFirstOrThrow();
    assert.equal(new Date(dated.created_at as string).toISOString(), '2026-11-20T10:14:54.196Z', "dated by the customer's created_at, not the transaction's");
    const [sale] = (await api.get(`/sales?referralId=${referral.id}`)).body;
    assert.deepEqual([sale.totalEarned, sale.externalInvoiceId, sale.commission, sale.createdAt], [49, txn.data.id, 9.8, '2026-11-20T10:15:21.102Z'], 'net of tax: 58.80 − 9.80; paid when captured');

    // The transaction first: it waits with its referral; the customer's event refers them and makes the sale.
    const second = customerCreated(undefined, 'pat.second@example.org');
    const early = transactionCompleted(second.data.id, { referral: affiliate.id, total: '1200', tax: '200' });
    await postPaddleEvent(t.url, programId, early, secret);
    const events = () => api.get('/billing-events').then((r) => r.body as any[]);
    const waiting = (await events()).find((e) => e.id === early.event_id);
    assert.deepEqual([waiting.provider, waiting.outcome, waiting.reason], ['paddle', 'waiting', `waiting up to 24 hours for the customer ${second.data.id} to be referred`]);
    await postPaddleEvent(t.url, programId, second, secret);
    const [late] = (await api.get(`/referrals?externalId=${second.data.id}`)).body;
    assert.equal(late.email, 'pat.second@example.org');
    assert.deepEqual((await api.get(`/sales?referralId=${late.id}`)).body.map((s: any) => s.totalEarned), [10]);
    const listed = await events();
    assert.deepEqual(
      [listed.find((e) => e.id === early.event_id).outcome, listed.find((e) => e.id === second.event_id).outcome, listed.find((e) => e.id === second.event_id).referralId],
      ['recorded', 'recorded', late.id],
    );

    // custom_data on the customer refers them by itself; a customer with none and no transaction is listed as ignored.
    const direct = customerCreated(undefined, undefined, affiliate.link);
    await postPaddleEvent(t.url, programId, direct, secret);
    assert.equal((await api.get(`/referrals?externalId=${direct.data.id}`)).body.length, 1);
    const stray = customerCreated();
    await postPaddleEvent(t.url, programId, stray, secret);
    assert.match((await events()).find((e) => e.id === stray.event_id).reason, /no tandem_referral in custom_data/);
    // An e-mail the API refuses is not kept: a transaction of that customer waits, nothing fails.
    const odd = customerCreated(undefined, 'not\u0000an e-mail');
    assert.equal((await postPaddleEvent(t.url, programId, odd, secret)).status, 200);
    assert.equal((await rawDb(t).selectFrom('billing_customers').select('id').where('id', '=', odd.data.id).execute()).length, 0);
    const oddTxn = transactionCompleted(odd.data.id, { referral: affiliate.link });
    await postPaddleEvent(t.url, programId, oddTxn, secret);
    assert.equal((await events()).find((e) => e.id === oddTxn.event_id).outcome, 'waiting');
    await assertLedgerMatchesCounters(rawDb(t), programId);
  });

  it("a discount credits the affiliate of the program's promotional code whose externalId is its dsc_ id", async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    const coupon = (await api.post('/coupons', { name: 'Ten off', couponType: 'PERCENTAGE', percentOff: 10, duration: 'once' })).body;
    const code = (await api.post('/promotional-codes', { couponId: coupon.id, code: 'PADDLE10', externalId: 'dsc_01hv8x2aqs8t6gdn1xqk2f7b1w', affiliateId: affiliate.id })).body;
    const customer = customerCreated();
    await postPaddleEvent(t.url, programId, customer, secret);
    await postPaddleEvent(t.url, programId, transactionCompleted(customer.data.id, { discountId: 'dsc_01hv8x2aqs8t6gdn1xqk2f7b1w' }), secret);
    const [referral] = (await api.get(`/referrals?externalId=${customer.data.id}`)).body;
    assert.equal(referral.affiliateId, affiliate.id);
    assert.equal((await api.get(`/promotional-codes?id=${code.id}`)).body.timesRedeemed, 1);
  });

  it('a monthly subscription under a 6-month plan: its renewals (custom_data carried on) earn for six months', async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    await updateProgramSettings(rawDb(t), programId, { durationMonths: 6 });
    const customer = customerCreated();
    await postPaddleEvent(t.url, programId, customer, secret);
    const start = now;
    const commissions = [];
    for (let month = 0; month < 8; month++) {
      now = new Date(start.getTime() + month * 30.5 * 86_400_000);
      const txn = transactionCompleted(customer.data.id, { referral: affiliate.link, total: '2400', tax: '400', billedAt: now.toISOString() });
      assert.equal((await postPaddleEvent(t.url, programId, txn, secret)).status, 200);
      commissions.push((await api.get(`/sales?referralId=${(await api.get(`/referrals?externalId=${customer.data.id}`)).body[0].id}&limit=1`)).body[0].commission);
    }
    assert.deepEqual(commissions, [4, 4, 4, 4, 4, 4, 0, 0]);
    now = new Date();
  });

  it('refunds and chargebacks by approved adjustment, each applied once, before and after a payout', async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    await updateProgramSettings(rawDb(t), programId, { holdDays: 0 });
    const customer = customerCreated();
    await postPaddleEvent(t.url, programId, customer, secret);
    const a = transactionCompleted(customer.data.id, { referral: affiliate.link, total: '12000', tax: '2000' });
    const b = transactionCompleted(customer.data.id, { referral: affiliate.link, total: '6000', tax: '1000' });
    await postPaddleEvent(t.url, programId, a, secret);
    // A refund pending approval changes nothing; approved, it pays back its amount net of tax.
    const pending = adjustment(a.data.id, { status: 'pending_approval', type: 'adjustment.created', total: '2400', tax: '400' });
    await postPaddleEvent(t.url, programId, pending, secret);
    const approved = adjustment(a.data.id, { id: pending.data.id, total: '2400', tax: '400' });
    await postPaddleEvent(t.url, programId, approved, secret);
    await postPaddleEvent(t.url, programId, approved, secret); // redelivered: nothing more
    await postPaddleEvent(t.url, programId, { ...approved, event_id: providerId('evt') }, secret); // the same adjustment in another event: nothing more
    const saleOf = async (id: string) => (await api.get('/sales')).body.find((s: any) => s.externalInvoiceId === id);
    assert.deepEqual([(await saleOf(a.data.id)).refundedAmount, (await saleOf(a.data.id)).status], [20, 'partially_refunded']);
    const listed = (await api.get('/billing-events')).body as any[];
    assert.match(listed.find((e) => e.id === pending.event_id).reason, /the refund is pending_approval, not approved yet/);
    const again = listed.filter((e) => e.type === 'adjustment.updated' && e.id !== approved.event_id)[0];
    assert.deepEqual([again.outcome, again.reason, again.saleId], ['recorded', `the refund ${approved.data.id} was already applied`, (await saleOf(a.data.id)).id]);

    // After a payout, a chargeback of the second payment takes its commission back as a due (negative) entry.
    await postPaddleEvent(t.url, programId, b, secret);
    const [payout] = (await api.post('/payouts', {})).body;
    await api.put('/payouts', { payoutId: payout.id, status: 'paid' });
    await postPaddleEvent(t.url, programId, adjustment(b.data.id, { action: 'chargeback', type: 'adjustment.created', total: '6000', tax: '1000' }), secret);
    assert.deepEqual([(await saleOf(b.data.id)).refundedAmount, (await saleOf(b.data.id)).status, (await saleOf(b.data.id)).commission], [50, 'refunded', 0]);
    const refunds = (await api.get('/commissions')).body.filter((e: any) => e.kind === 'refund');
    assert.deepEqual(refunds.map((e: any) => [e.amount, e.status]).sort(), [[-10, 'due'], [-4, 'paid']].sort(), 'the refund before the payout went into it; the chargeback after it is due, off the next');
    // More than is left, and a credit adjustment: ignored with the reason in words.
    const tooMuch = adjustment(a.data.id, { total: '99999', tax: '0' });
    await postPaddleEvent(t.url, programId, tooMuch, secret);
    const credit = adjustment(a.data.id, { action: 'credit' });
    await postPaddleEvent(t.url, programId, credit, secret);
    const after = (await api.get('/billing-events')).body as any[];
    assert.deepEqual([after.find((e) => e.id === tooMuch.event_id).outcome, after.find((e) => e.id === tooMuch.event_id).reason], ['ignored', 'the refund is more than the 80 not yet refunded']);
    assert.equal(after.find((e) => e.id === credit.event_id).reason, 'an adjustment of action credit changes no sale');
    // The over-large one was given back: a corrected event of that adjustment can still apply.
    await postPaddleEvent(t.url, programId, adjustment(a.data.id, { id: tooMuch.data.id, total: '1200', tax: '200' }), secret);
    assert.equal((await saleOf(a.data.id)).refundedAmount, 30);
    await assertLedgerMatchesCounters(rawDb(t), programId);
  });

  it(`duplicate and concurrent deliveries record once${raceNote}`, async () => {
    const { api, programId, secret, affiliate } = await connectedProgram();
    const customer = customerCreated();
    await postPaddleEvent(t.url, programId, customer, secret);
    const txn = transactionCompleted(customer.data.id, { referral: affiliate.link });
    const answers = await Promise.all(Array.from({ length: 6 }, () => postPaddleEvent(t.url, programId, txn, secret)));
    assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200, 200]);
    assert.equal(answers.filter((a) => a.body.duplicate === false).length, 1);
    // The same transaction under other event ids at once (transaction.completed redelivered as new notifications): one sale.
    await Promise.all(Array.from({ length: 4 }, () => postPaddleEvent(t.url, programId, { ...txn, event_id: providerId('evt') }, secret)));
    assert.equal((await api.get('/sales')).body.length, 1);
    const listed = (await api.get('/billing-events')).body as any[];
    assert.deepEqual([...new Set(listed.filter((e) => e.type === 'transaction.completed').map((e) => e.outcome))], ['recorded']);
    assert.equal(listed.filter((e) => e.reason === 'the payment was already recorded').length, 4);
  });

  it("bad, old, missing and rotated signatures, another program's secret: 400 and nothing recorded, or both secrets accepted", async () => {
    const a = await connectedProgram();
    const b = await connectedProgram();
    const customer = customerCreated(undefined, undefined, a.affiliate.link);
    const payload = JSON.stringify(customer);
    const old = paddleSignature(payload, [a.secret], Math.floor(Date.now() / 1000) - 600);
    for (const [secret, header] of [
      [null, undefined],
      [b.secret, undefined],
      [a.secret, 'ts=1;h1=deadbeef'],
      [a.secret, old],
      [a.secret, 'h1=deadbeef'],
    ] as const) {
      const res = await postPaddleEvent(t.url, a.programId, customer, secret, header);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.code, 'bad_request');
    }
    assert.deepEqual((await a.api.get('/billing-events')).body, []);
    // During a rotation Paddle signs with the old and the new secret: either matching is enough.
    const rotated = await postPaddleEvent(t.url, a.programId, customer, a.secret, paddleSignature(payload, ['pdl_ntfset_the_old_secret_key', a.secret]));
    assert.equal(rotated.status, 200);
    assert.equal((await a.api.get('/referrals')).body.length, 1);
    // A signed event whose event_id is no id: refused, nothing recorded.
    const noId = { ...customerCreated(), event_id: 'evt\u0001bad' };
    assert.equal((await postPaddleEvent(t.url, a.programId, noId, a.secret)).status, 400);
    await assert.rejects(connectBilling(rawDb(t), a.programId, billingProviderOf('paddle'), 'whsec_wrongprovider1', new Date().toISOString()), (error: any) => /pdl_ntfset_/.test(error.errors?.[0]?.detail));
  });

  it('another currency is ignored with its reason; JPY (zero-decimal at Paddle) is read in yen', async () => {
    const usd = await connectedProgram();
    const customer = customerCreated();
    await postPaddleEvent(t.url, usd.programId, customer, usd.secret);
    const eur = transactionCompleted(customer.data.id, { referral: usd.affiliate.link, currency: 'EUR' });
    await postPaddleEvent(t.url, usd.programId, eur, usd.secret);
    const listed = (await usd.api.get('/billing-events')).body.find((e: any) => e.id === eur.event_id);
    assert.deepEqual([listed.outcome, listed.reason], ['ignored', "paid in EUR, not the program's USD"]);

    const jpy = await connectedProgram('JPY');
    const buyer = customerCreated();
    await postPaddleEvent(t.url, jpy.programId, buyer, jpy.secret);
    await postPaddleEvent(t.url, jpy.programId, transactionCompleted(buyer.data.id, { referral: jpy.affiliate.link, currency: 'JPY', total: '5500', tax: '500' }), jpy.secret);
    assert.deepEqual((await jpy.api.get('/sales')).body.map((s: any) => [s.totalEarned, s.commission]), [[5000, 1000]]);
  });

  it("one program's Paddle events never reach another's: the same ids are separate programs' events, and Stripe and Paddle ids never collide", async () => {
    const a = await connectedProgram();
    const b = await connectedProgram();
    const customer = customerCreated(providerId('ctm'), undefined, a.affiliate.link);
    await postPaddleEvent(t.url, a.programId, customer, a.secret);
    const inB = await postPaddleEvent(t.url, b.programId, customer, b.secret);
    assert.equal(inB.body.duplicate, false, "the same event id in another program is that program's own");
    assert.equal((await b.api.get('/referrals')).body.length, 0, "b's link-less event refers nobody in b (a's affiliate is not b's)");
    assert.equal((await b.api.get('/billing-events')).body[0].outcome, 'ignored');
    // A Paddle event id equal to one another provider used is still new: ids are per provider.
    await rawDb(t).insertInto('billing_events').values({ program_id: a.programId, id: 'evt_01sameidacrossproviders00', provider: 'stripe', type: 'customer.created', created_at: new Date().toISOString(), outcome: 'ignored', reason: 'x', referral_id: null, sale_id: null, waiting: null, customer_id: null }).execute();
    const same = await postPaddleEvent(t.url, a.programId, { ...customerCreated(), event_id: 'evt_01sameidacrossproviders00' }, a.secret);
    assert.equal(same.body.duplicate, false);
  });
});
