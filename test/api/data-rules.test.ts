// The data rules a billing integration relies on (CONTRACT.md status table): an invoice is
// recorded once and a customer's external id once (409 duplicate_sale / duplicate_referral
// with the existing id, never a second commission, also when the retries race), an inactive
// affiliate is credited nothing new (422 affiliate_inactive), and a pasted URL is a domain.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { programContext, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { newAffiliate, newCode, newCoupon, newReferral, newSale, unique, uniqueEmail } from '../helpers/fixtures.ts';
import { raceNote } from '../helpers/test-database.ts';
import { updateAffiliate } from '../../src/modules/affiliates/affiliate.service.ts';
import { createProgram, domainOf } from '../../src/modules/programs/program.service.ts';
import { createUser } from '../../src/modules/users/user.service.ts';

let t: TestServer;
let api: ApiClient;
let other: ApiClient;

before(async () => {
  t = await startTestServer();
  api = await t.createTenant();
  other = await t.createTenant();
});
after(() => t?.close());

/** What a duplicate may not change: the program's sales, referrals and commissions. */
async function ledger(programId: string) {
  const db = rawDb(t);
  const sales = await db.selectFrom('sales').select(['id', 'commission']).where('program_id', '=', programId).orderBy('id').execute();
  const referrals = await db.selectFrom('referrals').select('id').where('program_id', '=', programId).orderBy('id').execute();
  const affiliates = await db
    .selectFrom('affiliates')
    .select(['id', 'number_of_referred_users', 'total_commission_earned'])
    .where('program_id', '=', programId)
    .orderBy('id')
    .execute();
  const links = await db.selectFrom('affiliate_links').select(['id', 'referrals', 'sales', 'total_revenue']).where('program_id', '=', programId).orderBy('id').execute();
  const events = await db.selectFrom('events').select('id').where('program_id', '=', programId).orderBy('id').execute();
  return { sales, referrals, affiliates, links, events };
}

describe('an invoice is recorded once', () => {
  it('a second sale with the same externalInvoiceId is 409 duplicate_sale naming the first, and changes nothing', async () => {
    const affiliate = await newAffiliate(api);
    const customer = await newReferral(api, { affiliateId: affiliate.id });
    const invoice = unique('in_');
    const first = await newSale(api, { email: customer.email, totalEarned: 49.99, externalInvoiceId: invoice });
    const before = await ledger(api.programId);
    // The retry of a billing webhook: the same body, then a different amount and customer.
    for (const body of [
      { email: customer.email, totalEarned: 49.99, externalInvoiceId: invoice },
      { referralId: affiliate.id, name: 'Someone Else', email: uniqueEmail('new'), totalEarned: 10, externalInvoiceId: invoice },
    ]) {
      const res = await api.post('/sales', body);
      assertProblem(res, 409, 'duplicate_sale');
      assert.equal(res.body.existingId, first.id);
      assert.match(res.body.detail, new RegExp(invoice));
    }
    assert.deepEqual(await ledger(api.programId), before, 'no sale, no new customer, no commission, no event');
  });

  it('is per program, and sales without an invoice id are never duplicates', async () => {
    const invoice = unique('in_');
    const mine = await newAffiliate(api);
    const theirs = await newAffiliate(other);
    await newSale(api, { referralId: mine.id, externalInvoiceId: invoice });
    await newSale(other, { referralId: theirs.id, externalInvoiceId: invoice });
    const customer = await newReferral(api, { affiliateId: mine.id });
    await newSale(api, { email: customer.email });
    await newSale(api, { email: customer.email, externalInvoiceId: '' });
    await newSale(api, { email: customer.email });
  });

  it('ten concurrent deliveries of one invoice: one sale, one commission, nine 409s naming it' + raceNote, async () => {
    const affiliate = await newAffiliate(api, { commissionRate: 10 });
    const customer = await newReferral(api, { affiliateId: affiliate.id });
    const invoice = unique('in_');
    const results = await Promise.all(Array.from({ length: 10 }, () => api.post('/sales', { email: customer.email, totalEarned: 100, externalInvoiceId: invoice })));
    const created = results.filter((r) => r.status === 201);
    assert.equal(created.length, 1, JSON.stringify(results.map((r) => [r.status, r.body.code])));
    for (const r of results.filter((r) => r.status !== 201)) {
      assertProblem(r, 409, 'duplicate_sale');
      assert.equal(r.body.existingId, created[0]!.body.id);
    }
    const stored = await api.get(`/affiliates?id=${affiliate.id}`);
    assert.equal(stored.body.totalCommissionEarned, 10);
  });
});

describe("a customer's external id is recorded once", () => {
  it('a second referral with the same referredUserExternalId is 409 duplicate_referral naming the first', async () => {
    const affiliate = await newAffiliate(api);
    const externalId = unique('cus_');
    const first = await newReferral(api, { affiliateId: affiliate.id, referredUserExternalId: externalId });
    const before = await ledger(api.programId);
    const res = await api.post('/referrals', { name: 'Again', email: uniqueEmail('again'), referredUserExternalId: externalId, affiliateId: affiliate.id });
    assertProblem(res, 409, 'duplicate_referral');
    assert.equal(res.body.existingId, first.id);
    assert.deepEqual(await ledger(api.programId), before);
    // Another program may know the same customer id.
    await newReferral(other, { affiliateId: (await newAffiliate(other)).id, referredUserExternalId: externalId });
  });

  it('ten concurrent sign-ups of one customer id: one referral, nine 409s naming it' + raceNote, async () => {
    const affiliate = await newAffiliate(api);
    const externalId = unique('cus_');
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => api.post('/referrals', { name: `Racer ${i}`, email: uniqueEmail('racer'), referredUserExternalId: externalId, affiliateId: affiliate.id })),
    );
    const created = results.filter((r) => r.status === 201);
    assert.equal(created.length, 1, JSON.stringify(results.map((r) => [r.status, r.body.code])));
    for (const r of results.filter((r) => r.status !== 201)) {
      assertProblem(r, 409, 'duplicate_referral');
      assert.equal(r.body.existingId, created[0]!.body.id);
    }
    assert.equal((await api.get(`/affiliates?id=${affiliate.id}`)).body.numberOfReferredUsers, 1);
  });

  it('ten concurrent sign-ups of one customer id with one e-mail: the e-mail met first still names the referral as its duplicate' + raceNote, async () => {
    const affiliate = await newAffiliate(api);
    const externalId = unique('cus_');
    const email = uniqueEmail('twin');
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => api.post('/referrals', { name: `Twin ${i}`, email, referredUserExternalId: externalId, affiliateId: affiliate.id })),
    );
    const created = results.filter((r) => r.status === 201);
    assert.equal(created.length, 1, JSON.stringify(results.map((r) => [r.status, r.body.code])));
    for (const r of results.filter((r) => r.status !== 201)) {
      assertProblem(r, 409, 'duplicate_referral');
      assert.equal(r.body.existingId, created[0]!.body.id);
    }
    // The same e-mail under another customer id is still the e-mail's conflict, not a duplicate.
    assertProblem(await api.post('/referrals', { name: 'Other', email, referredUserExternalId: unique('cus_'), affiliateId: affiliate.id }), 409, 'conflict');
  });
});

describe('an inactive affiliate is credited nothing new', () => {
  it('refuses referrals and sales credited to them in every way with 422 affiliate_inactive, writing nothing; reactivated, they earn again', async () => {
    const affiliate = await newAffiliate(api);
    const customer = await newReferral(api, { affiliateId: affiliate.id });
    const coupon = await newCoupon(api);
    const code = await newCode(api, { couponId: coupon.id, affiliateId: affiliate.id });
    const context = await programContext(t, api.programId);
    await updateAffiliate(rawDb(t), context, affiliate.id, { status: 'inactive' });
    const before = await ledger(api.programId);
    const attempts = [
      api.post('/referrals', { name: 'By id', email: uniqueEmail(), referredUserExternalId: unique('cus_'), affiliateId: affiliate.id }),
      api.post('/referrals', { name: 'By link', email: uniqueEmail(), referredUserExternalId: unique('cus_'), affiliateId: affiliate.link }),
      api.post('/referrals', { name: 'By e-mail', email: uniqueEmail(), referredUserExternalId: unique('cus_'), affiliateEmail: affiliate.email }),
      api.post('/referrals', { name: 'By code', email: uniqueEmail(), referredUserExternalId: unique('cus_'), promoCode: code.code }),
      api.post('/sales', { email: customer.email, totalEarned: 20 }),
      api.post('/sales', { referralId: customer.id, totalEarned: 20 }),
      api.post('/sales', { referralId: affiliate.link, name: 'New', email: uniqueEmail(), totalEarned: 20 }),
      api.post('/sales', { promoCode: code.code, name: 'New', email: uniqueEmail(), totalEarned: 20 }),
    ];
    for (const res of await Promise.all(attempts)) {
      assertProblem(res, 422, 'affiliate_inactive');
      assert.match(res.body.detail, /inactive/);
    }
    assert.deepEqual(await ledger(api.programId), before);
    assert.equal((await api.get(`/promotional-codes?id=${code.id}`)).body.timesRedeemed, 0, 'the code was not spent');

    await updateAffiliate(rawDb(t), context, affiliate.id, { status: 'active' });
    await newSale(api, { email: customer.email, totalEarned: 20 });
    await newReferral(api, { promoCode: code.code });
  });
});

describe('the program domain', () => {
  it('takes the host from a pasted URL', async () => {
    for (const [typed, host] of [
      ['https://Shop.Example.com/', 'shop.example.com'],
      ['http://shop.example.com:8080/pricing?ref=x#top', 'shop.example.com'],
      ['  shop.example.com/  ', 'shop.example.com'],
      ['shop.example.com.', 'shop.example.com'],
      ['localhost:3000', 'localhost'],
      ['EXAMPLE.org', 'example.org'],
    ]) {
      assert.equal(domainOf(typed!), host, typed);
    }
    const user = await createUser(rawDb(t), { email: uniqueEmail('owner'), password: 'a long password' });
    const program = await createProgram(rawDb(t), { ownerUserId: user.id, name: 'Pasted', domain: 'https://Shop.Example.com/checkout' });
    assert.equal(program.domain, 'shop.example.com');
    assert.deepEqual(program.baseUrls, ['https://shop.example.com']);
  });

  it('still refuses what is not a domain', async () => {
    const user = await createUser(rawDb(t), { email: uniqueEmail('owner'), password: 'a long password' });
    for (const domain of ['ftp://files.example.com', 'https://user:pw@example.com', 'not a domain', 'https://', '']) {
      await assert.rejects(createProgram(rawDb(t), { ownerUserId: user.id, name: 'Bad', domain }), (error: { errors?: { pointer: string }[] }) => error.errors?.[0]?.pointer === '#/domain', domain);
    }
  });
});
