// Looking up, changing, refunding and deleting affiliates, referrals and sales, as the SDKs of
// the original service call them (ids in DELETE bodies, status "ACTIVE"/"INACTIVE"): every
// response, the stored rows, the events, and every counter against a recount of the rows.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { newAffiliate, newCode, newCoupon, newReferral, newSale, unique, uniqueEmail } from '../helpers/fixtures.ts';
import { raceNote } from '../helpers/test-database.ts';
import { assertCountersMatchRows } from '../helpers/recount.ts';

let t: TestServer;
let api: ApiClient;
let other: ApiClient;

before(async () => {
  t = await startTestServer();
  api = await t.createTenant({ currency: 'USD' });
  other = await t.createTenant();
});
after(() => t?.close());

/** A DELETE shaped like the SDKs': the target in a JSON body. */
function deleteWithBody(client: ApiClient, path: string, body: Record<string, unknown>) {
  return client.request('DELETE', path, body);
}

/** The last event of a type in the program, with its data. */
async function lastEvent(programId: string, type: string): Promise<any> {
  const row = await rawDb(t)
    .selectFrom('events')
    .select(['data'])
    .where('program_id', '=', programId)
    .where('type', '=', type)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirst();
  return row && JSON.parse(row.data);
}

async function eventCount(programId: string): Promise<number> {
  const { n } = await rawDb(t).selectFrom('events').select((eb) => eb.fn.countAll().as('n')).where('program_id', '=', programId).executeTakeFirstOrThrow();
  return Number(n);
}

async function affiliateOf(id: string) {
  return (await api.get(`/affiliates?id=${id}`)).body;
}

async function primaryLinkCounters(affiliateId: string) {
  const row = await rawDb(t)
    .selectFrom('affiliate_links')
    .select(['referrals', 'sales', 'total_revenue'])
    .where('affiliate_id', '=', affiliateId)
    .where('is_primary', '=', 1)
    .executeTakeFirstOrThrow();
  return { referrals: Number(row.referrals), sales: Number(row.sales), revenue: Number(row.total_revenue) };
}

describe('PUT /affiliates', () => {
  it('takes the id in the body and status "INACTIVE"/"ACTIVE" or affiliateStatus, as the SDK sends them', async () => {
    const affiliate = await newAffiliate(api);
    const off = await api.put('/affiliates', { id: affiliate.id, status: 'INACTIVE' });
    assert.equal(off.status, 200, JSON.stringify(off.body));
    assert.equal(off.body.status, 'inactive');
    assert.deepEqual(await lastEvent(api.programId, 'affiliate.updated'), off.body);
    const on = await api.put('/affiliates', { affiliateId: affiliate.id, affiliateStatus: 'ACTIVE' });
    assert.equal(on.body.status, 'active');
    const stored = await rawDb(t).selectFrom('affiliates').select('status').where('id', '=', affiliate.id).executeTakeFirstOrThrow();
    assert.equal(stored.status, 'active');
  });

  it('changes names, e-mail, rate, payout e-mail and the own link; other fields stay', async () => {
    const affiliate = await newAffiliate(api, { commissionRate: 10 });
    const newEmail = uniqueEmail('moved');
    const link = unique('renamed');
    const res = await api.put('/affiliates', {
      id: affiliate.id,
      firstName: 'Grace',
      lastName: 'Hopper',
      email: ` ${newEmail.toUpperCase()} `,
      commissionRate: 12.5,
      payoutEmail: 'pay@example.com',
      affiliateLink: link,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.name, 'Grace Hopper');
    assert.equal(res.body.email, newEmail.toUpperCase(), 'trimmed, as typed (compared ignoring case)');
    assert.equal(res.body.commissionRate, 12.5);
    assert.equal(res.body.payoutEmail, 'pay@example.com');
    assert.equal(res.body.link, link);
    assert.equal(res.body.createdAt, affiliate.createdAt);
    assert.deepEqual((await api.get(`/affiliates?email=${newEmail}`)).body, res.body);
    // The old link string no longer credits anybody; the new one does.
    assert.equal((await api.post('/referrals', { name: 'X', email: uniqueEmail(), referredUserExternalId: unique('c'), affiliateId: affiliate.link })).status, 404);
    await newReferral(api, { affiliateId: link });
    assert.equal((await primaryLinkCounters(affiliate.id)).referrals, 1);
    assert.equal((await lastEvent(api.programId, 'link.updated')).link, link);
  });

  it('refuses a taken e-mail or link with 409 and changes nothing', async () => {
    const [a, b] = [await newAffiliate(api), await newAffiliate(api)];
    const events = await eventCount(api.programId);
    assertProblem(await api.put('/affiliates', { id: a.id, email: b.email, firstName: 'Changed' }), 409, 'conflict');
    assertProblem(await api.put('/affiliates', { id: a.id, affiliateLink: b.link.toUpperCase(), firstName: 'Changed' }), 409, 'conflict');
    assert.deepEqual(await affiliateOf(a.id), a);
    assert.equal(await eventCount(api.programId), events);
  });

  it('needs an id of the program: 422 without one, 404 for unknown or another program’s', async () => {
    const theirs = await newAffiliate(other);
    assertProblem(await api.put('/affiliates', { firstName: 'X' }), 422, 'validation_failed', '#/id');
    assertProblem(await api.put('/affiliates', { id: theirs.id, firstName: 'X' }), 404, 'not_found');
    assertProblem(await api.put('/affiliates', { id: '00000000-0000-4000-8000-000000000000' }), 404, 'not_found');
    assertProblem(await api.put('/affiliates', { id: theirs.id, status: 'paused' }), 422, 'validation_failed', '#/status');
    assertProblem(await api.get(`/affiliates?id=${theirs.id}`), 404, 'not_found');
    assert.equal((await other.get(`/affiliates?id=${theirs.id}`)).body.firstName, theirs.firstName);
  });
});

describe('DELETE /affiliates', () => {
  it('deletes an affiliate without dependents, id in a JSON body; 200 with it as it was', async () => {
    const affiliate = await newAffiliate(api);
    const res = await deleteWithBody(api, '/affiliates', { id: affiliate.id });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, affiliate);
    assertProblem(await api.get(`/affiliates?id=${affiliate.id}`), 404, 'not_found');
    assert.equal((await rawDb(t).selectFrom('affiliate_links').select('id').where('affiliate_id', '=', affiliate.id).execute()).length, 0);
    assert.deepEqual(await lastEvent(api.programId, 'affiliate.deleted'), affiliate);
  });

  it('refuses one with referrals, sales or codes (409 has_dependents, nothing changed) unless force=true', async () => {
    const affiliate = await newAffiliate(api, { commissionRate: 20 });
    const customer = await newReferral(api, { affiliateId: affiliate.id });
    await newSale(api, { referralId: customer.id, totalEarned: 50 });
    const coupon = await newCoupon(api);
    const code = await newCode(api, { couponId: coupon.id, affiliateId: affiliate.id });
    const events = await eventCount(api.programId);
    assertProblem(await api.request('DELETE', `/affiliates?id=${affiliate.id}`), 409, 'has_dependents');
    assertProblem(await deleteWithBody(api, '/affiliates', { affiliateId: affiliate.id, force: false }), 409, 'has_dependents');
    assert.equal((await affiliateOf(affiliate.id)).numberOfReferredUsers, 1);
    assert.equal(await eventCount(api.programId), events);

    const res = await api.request('DELETE', `/affiliates?id=${affiliate.id}&force=true`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assertProblem(await api.get(`/referrals?id=${customer.id}`), 404, 'not_found');
    assert.deepEqual((await api.get(`/sales?referralId=${customer.id}`)).body, []);
    const kept = await api.get(`/promotional-codes?id=${code.id}`);
    assert.equal(kept.status, 200, 'the code stays on its coupon');
    assert.equal(kept.body.affiliateId, null);
    await assertCountersMatchRows(rawDb(t), api.programId);
  });

  it('force: a sale of its customer credited to another affiliate leaves that affiliate’s counters', async () => {
    const [owner, seller] = [await newAffiliate(api, { commissionRate: 10 }), await newAffiliate(api, { commissionRate: 10 })];
    const customer = await newReferral(api, { affiliateId: owner.id });
    // Credited to the seller (their link), for a customer the owner referred.
    await newSale(api, { referralId: seller.link, email: customer.email, totalEarned: 80 });
    assert.equal((await affiliateOf(seller.id)).totalCommissionEarned, 8);
    assert.equal((await api.request('DELETE', `/affiliates?id=${owner.id}&force=true`)).status, 200);
    const after = await affiliateOf(seller.id);
    assert.equal(after.totalCommissionEarned, 0);
    assert.deepEqual(await primaryLinkCounters(seller.id), { referrals: 0, sales: 0, revenue: 0 });
    await assertCountersMatchRows(rawDb(t), api.programId);
  });

  it('404 for another program’s affiliate, which stays; 422 without an id or with a bad one', async () => {
    const theirs = await newAffiliate(other);
    assertProblem(await deleteWithBody(api, '/affiliates', { id: theirs.id, force: true }), 404, 'not_found');
    assert.equal((await other.get(`/affiliates?id=${theirs.id}`)).status, 200);
    assertProblem(await api.request('DELETE', '/affiliates'), 422, 'validation_failed', '#/id');
    assertProblem(await deleteWithBody(api, '/affiliates', { id: 42 }), 422, 'validation_failed', '#/id');
    assertProblem(await api.request('DELETE', '/affiliates?id=not-a-uuid'), 422, 'validation_failed');
  });
});

describe('GET, PUT and DELETE /referrals', () => {
  it('filters by affiliateEmail and externalId; an unknown e-mail is an empty list; a mismatched id is 404', async () => {
    const [a, b] = [await newAffiliate(api), await newAffiliate(api)];
    const ra = await newReferral(api, { affiliateId: a.id });
    await newReferral(api, { affiliateId: b.id });
    assert.deepEqual((await api.get(`/referrals?affiliateEmail=${encodeURIComponent(a.email.toUpperCase())}`)).body, [ra]);
    assert.deepEqual((await api.get(`/referrals?externalId=${ra.referredUserExternalId}`)).body, [ra]);
    assert.deepEqual((await api.get(`/referrals?affiliateEmail=nobody@example.com`)).body, []);
    assert.deepEqual((await api.get(`/referrals?id=${ra.id}&affiliateEmail=${encodeURIComponent(a.email)}`)).body, ra);
    assertProblem(await api.get(`/referrals?id=${ra.id}&affiliateEmail=${encodeURIComponent(b.email)}`), 404, 'not_found');
    assert.deepEqual((await other.get(`/referrals?externalId=${ra.referredUserExternalId}`)).body, []);
  });

  it('PUT changes name, e-mail, external id, plan and status; the credit stays', async () => {
    const affiliate = await newAffiliate(api);
    const referral = await newReferral(api, { affiliateId: affiliate.id });
    const email = uniqueEmail('new');
    const externalId = unique('cus_new');
    const res = await api.put('/referrals', { referralId: referral.id, name: 'New Name', email, referredUserExternalId: externalId, plan: 'pro', status: 'INACTIVE' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, { ...referral, name: 'New Name', email, referredUserExternalId: externalId, plan: 'pro', status: 'inactive' });
    assert.deepEqual((await api.get(`/referrals?id=${referral.id}`)).body, res.body);
    assert.deepEqual(await lastEvent(api.programId, 'referral.updated'), res.body);
    // The new e-mail finds the customer for a sale.
    const sale = await newSale(api, { email, totalEarned: 10 });
    assert.equal(sale.referralId, referral.id);
  });

  it('PUT refuses an external id or e-mail another referral holds (409, nothing changed)', async () => {
    const affiliate = await newAffiliate(api);
    const [r1, r2] = [await newReferral(api, { affiliateId: affiliate.id }), await newReferral(api, { affiliateId: affiliate.id })];
    const dup = await api.put('/referrals', { referralId: r1.id, referredUserExternalId: r2.referredUserExternalId, name: 'Changed' });
    assertProblem(dup, 409, 'duplicate_referral');
    assert.equal(dup.body.existingId, r2.id);
    assertProblem(await api.put('/referrals', { id: r1.id, email: r2.email.toUpperCase() }), 409, 'conflict');
    assert.deepEqual((await api.get(`/referrals?id=${r1.id}`)).body, r1);
    // Keeping its own external id is no conflict.
    assert.equal((await api.put('/referrals', { referralId: r1.id, referredUserExternalId: r1.referredUserExternalId })).status, 200);
    assertProblem(await api.put('/referrals', { name: 'X' }), 422, 'validation_failed', '#/referralId');
    assertProblem(await other.put('/referrals', { referralId: r1.id, name: 'X' }), 404, 'not_found');
  });

  it('DELETE takes it off the affiliate and link counters; one with sales needs force, which voids them', async () => {
    const affiliate = await newAffiliate(api, { commissionRate: 10 });
    const lone = await newReferral(api, { affiliateId: affiliate.id });
    const buyer = await newReferral(api, { affiliateId: affiliate.id });
    await newSale(api, { referralId: buyer.id, totalEarned: 30 });
    await newSale(api, { referralId: buyer.id, totalEarned: 20 });
    assert.deepEqual(await primaryLinkCounters(affiliate.id), { referrals: 2, sales: 2, revenue: 5000 });

    const res = await deleteWithBody(api, '/referrals', { id: lone.id });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, lone);
    assert.deepEqual(await lastEvent(api.programId, 'referral.deleted'), lone);
    assert.equal((await affiliateOf(affiliate.id)).numberOfReferredUsers, 1);

    assertProblem(await deleteWithBody(api, '/referrals', { referralId: buyer.id }), 409, 'has_dependents');
    assert.equal((await affiliateOf(affiliate.id)).totalCommissionEarned, 5);
    assert.equal((await api.request('DELETE', `/referrals?referralId=${buyer.id}&force=true`)).status, 200);
    const after = await affiliateOf(affiliate.id);
    assert.equal(after.numberOfReferredUsers, 0);
    assert.equal(after.totalCommissionEarned, 0);
    assert.deepEqual(await primaryLinkCounters(affiliate.id), { referrals: 0, sales: 0, revenue: 0 });
    assert.deepEqual((await api.get(`/sales?referralId=${buyer.id}`)).body, []);
    assertProblem(await api.request('DELETE', `/referrals?id=${buyer.id}`), 404, 'not_found');
    await assertCountersMatchRows(rawDb(t), api.programId);
  });
});

describe('GET, PUT and DELETE /sales, and refunds', () => {
  it('filters by affiliateEmail and saleExternalId; an unknown e-mail is an empty list', async () => {
    const affiliate = await newAffiliate(api);
    const customer = await newReferral(api, { affiliateId: affiliate.id });
    const externalId = unique('ch_');
    const sale = await newSale(api, { referralId: customer.id, externalId });
    await newSale(api, { referralId: customer.id });
    assert.deepEqual((await api.get(`/sales?saleExternalId=${externalId}`)).body, [sale]);
    assert.equal((await api.get(`/sales?affiliateEmail=${encodeURIComponent(affiliate.email)}`)).body.length, 2);
    assert.deepEqual((await api.get(`/sales?affiliateEmail=nobody@example.com`)).body, []);
    assert.deepEqual((await other.get(`/sales?saleExternalId=${externalId}`)).body, []);
    assert.equal(sale.status, 'paid');
    assert.equal(sale.refundedAmount, 0);
  });

  it('PUT recomputes the commission and moves every counter by the difference', async () => {
    const affiliate = await newAffiliate(api, { commissionRate: 10 });
    const customer = await newReferral(api, { affiliateId: affiliate.id });
    const sale = await newSale(api, { referralId: customer.id, totalEarned: 100 });
    const res = await api.put('/sales', { saleId: sale.id, totalEarned: 250.5, commissionRate: 20, name: 'Renamed', email: 'billing@example.com' });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, { ...sale, totalEarned: 250.5, commissionRate: 20, commission: 50.1, name: 'Renamed', email: 'billing@example.com' });
    assert.deepEqual((await api.get(`/sales?id=${sale.id}`)).body, res.body);
    assert.equal((await affiliateOf(affiliate.id)).totalCommissionEarned, 50.1);
    assert.deepEqual(await primaryLinkCounters(affiliate.id), { referrals: 1, sales: 1, revenue: 25050 });
    assert.deepEqual(await lastEvent(api.programId, 'sale.updated'), res.body);
    assertProblem(await api.put('/sales', { saleId: sale.id, totalEarned: 1.001 }), 422, 'validation_failed', '#/totalEarned');
    assertProblem(await api.put('/sales', { totalEarned: 1 }), 422, 'validation_failed', '#/saleId');
    assertProblem(await other.put('/sales', { saleId: sale.id, totalEarned: 1 }), 404, 'not_found');
    await assertCountersMatchRows(rawDb(t), api.programId);
  });

  it('refunds in parts: status and refundedAmount follow, commission is taken back exactly, each refund is a row', async () => {
    const affiliate = await newAffiliate(api, { commissionRate: 33.3333 });
    const customer = await newReferral(api, { affiliateId: affiliate.id });
    const invoice = unique('in_');
    const sale = await newSale(api, { referralId: customer.id, totalEarned: 100.01, externalInvoiceId: invoice });
    assert.equal((await affiliateOf(affiliate.id)).totalCommissionEarned, 33.34);

    const first = await api.post('/sales/refund', { saleId: sale.id, amount: 33.33 });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    assert.deepEqual(first.body, { ...sale, refundedAmount: 33.33, status: 'partially_refunded', commission: 22.23 });
    assert.deepEqual(await lastEvent(api.programId, 'sale.refunded'), first.body);
    const second = await api.post('/sales/refund', { externalInvoiceId: invoice, amount: 33.33 });
    assert.equal(second.body.refundedAmount, 66.66);
    const rest = await api.post('/sales/refund', { saleId: sale.id });
    assert.deepEqual(rest.body, { ...sale, refundedAmount: 100.01, status: 'refunded', commission: 0 });
    assert.equal((await affiliateOf(affiliate.id)).totalCommissionEarned, 0, 'a full refund takes back the whole commission');
    assert.deepEqual(await primaryLinkCounters(affiliate.id), { referrals: 1, sales: 1, revenue: 0 });
    const refunds = await rawDb(t).selectFrom('sale_refunds').select(['amount', 'commission']).where('sale_id', '=', sale.id).orderBy('created_at').execute();
    assert.deepEqual(refunds.map((r) => Number(r.amount)), [3333, 3333, 3335]);
    assert.equal(refunds.reduce((sum, r) => sum + Number(r.commission), 0), 3334);
    assertProblem(await api.post('/sales/refund', { saleId: sale.id, amount: 1 }), 422, 'validation_failed', '#/saleId');
    await assertCountersMatchRows(rawDb(t), api.programId);
  });

  it('refuses a refund over what is left, a bad amount or an unknown sale, and changes nothing', async () => {
    const affiliate = await newAffiliate(api, { commissionRate: 10 });
    const sale = await newSale(api, { referralId: affiliate.id, totalEarned: 40 });
    const events = await eventCount(api.programId);
    assertProblem(await api.post('/sales/refund', { saleId: sale.id, amount: 40.01 }), 422, 'validation_failed', '#/amount');
    assertProblem(await api.post('/sales/refund', { saleId: sale.id, amount: 0 }), 422, 'validation_failed', '#/amount');
    assertProblem(await api.post('/sales/refund', { saleId: sale.id, amount: 1.234 }), 422, 'validation_failed', '#/amount');
    assertProblem(await api.post('/sales/refund', { amount: 1 }), 422, 'validation_failed', '#/saleId');
    assertProblem(await api.post('/sales/refund', { externalInvoiceId: unique('none') }), 404, 'not_found');
    assertProblem(await other.post('/sales/refund', { saleId: sale.id }), 404, 'not_found');
    assert.deepEqual((await api.get(`/sales?id=${sale.id}`)).body, sale);
    assert.equal(await eventCount(api.programId), events);
    // A PUT may not bring the amount under what was refunded.
    await api.post('/sales/refund', { saleId: sale.id, amount: 15 });
    assertProblem(await api.put('/sales', { saleId: sale.id, totalEarned: 14.99 }), 422, 'validation_failed', '#/totalEarned');
    const edited = await api.put('/sales', { saleId: sale.id, totalEarned: 30 });
    assert.deepEqual([edited.body.refundedAmount, edited.body.status], [15, 'partially_refunded']);
    await assertCountersMatchRows(rawDb(t), api.programId);
  });

  it('ten concurrent refunds of 10 on a sale of 50: exactly five succeed' + raceNote, async () => {
    const affiliate = await newAffiliate(api, { commissionRate: 10 });
    const sale = await newSale(api, { referralId: affiliate.id, totalEarned: 50 });
    const results = await Promise.all(Array.from({ length: 10 }, () => api.post('/sales/refund', { saleId: sale.id, amount: 10 })));
    assert.deepEqual(results.map((r) => r.status).sort(), [...Array(5).fill(201), ...Array(5).fill(422)]);
    const stored = await api.get(`/sales?id=${sale.id}`);
    assert.deepEqual([stored.body.refundedAmount, stored.body.status], [50, 'refunded']);
    assert.equal((await affiliateOf(affiliate.id)).totalCommissionEarned, 0);
    await assertCountersMatchRows(rawDb(t), api.programId);
  });

  it('DELETE voids a sale (id in a JSON body): off every counter, with its refunds; the code stays redeemed', async () => {
    const affiliate = await newAffiliate(api, { commissionRate: 10 });
    const coupon = await newCoupon(api);
    const code = await newCode(api, { couponId: coupon.id, affiliateId: affiliate.id });
    const sale = await newSale(api, { promoCode: code.code, totalEarned: 60 });
    await api.post('/sales/refund', { saleId: sale.id, amount: 10 });
    const res = await deleteWithBody(api, '/sales', { saleId: sale.id });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, { ...sale, refundedAmount: 10, status: 'partially_refunded', commission: 5 });
    assert.deepEqual(await lastEvent(api.programId, 'sale.deleted'), res.body);
    assertProblem(await api.get(`/sales?id=${sale.id}`), 404, 'not_found');
    assert.equal((await affiliateOf(affiliate.id)).totalCommissionEarned, 0);
    assert.deepEqual(await primaryLinkCounters(affiliate.id), { referrals: 1, sales: 0, revenue: 0 });
    assert.equal((await rawDb(t).selectFrom('sale_refunds').select('id').where('sale_id', '=', sale.id).execute()).length, 0);
    assert.equal((await api.get(`/promotional-codes?id=${code.id}`)).body.timesRedeemed, 1);
    assertProblem(await api.request('DELETE', `/sales?id=${sale.id}`), 404, 'not_found');
    assertProblem(await api.request('DELETE', '/sales?id=abc'), 422, 'validation_failed');
    assertProblem(await deleteWithBody(api, '/sales', { id: 'abc' }), 422, 'validation_failed', '#/id');
    await assertCountersMatchRows(rawDb(t), api.programId);
  });

  it('another program cannot void a sale', async () => {
    const affiliate = await newAffiliate(api);
    const sale = await newSale(api, { referralId: affiliate.id });
    assertProblem(await other.request('DELETE', `/sales?id=${sale.id}`), 404, 'not_found');
    assert.equal((await api.get(`/sales?id=${sale.id}`)).status, 200);
  });
});
