// Contract tests for POST /sales and GET /sales (spec 2.4, 4.2; CONTRACT.md "Values").
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { rawDb, setProgramCommissionRate, startTestServer, type ApiClient, type ApiResponse, type TestServer } from '../helpers/test-server.ts';
import { assertProblem, nextPath } from '../helpers/api-assertions.ts';
import { ISO_TIME, unique, uniqueEmail, UUID } from '../helpers/fixtures.ts';

const SALE_FIELDS = ['id', 'affiliateId', 'referralId', 'externalId', 'externalInvoiceId', 'name', 'email', 'totalEarned', 'commissionRate', 'createdAt', 'refundedAmount', 'status', 'commission'].sort();


interface Affiliate {
  id: string;
  email: string;
  link: string;
  commissionRate: number;
}
interface Referral {
  id: string;
  affiliateId: string;
  name: string;
  email: string;
}
interface Sale {
  id: number;
  affiliateId: string;
  referralId: string;
  name: string;
  email: string;
  totalEarned: number;
  commissionRate: number;
  createdAt: string;
}

/** Every field of spec 2.4 is present, with the spec's type, and nothing else. */
function assertSaleShape(body: Record<string, unknown>): void {
  assert.deepEqual(Object.keys(body).sort(), SALE_FIELDS);
  assert.equal(typeof body.id, 'number');
  assert.ok(Number.isSafeInteger(body.id) && (body.id as number) > 0, 'sale id is a positive integer, not a uuid');
  assert.match(body.affiliateId as string, UUID);
  assert.match(body.referralId as string, UUID);
  assert.equal(typeof body.externalId, 'string');
  assert.equal(typeof body.externalInvoiceId, 'string');
  assert.equal(typeof body.name, 'string');
  assert.equal(typeof body.email, 'string');
  assert.equal(typeof body.totalEarned, 'number');
  assert.equal(typeof body.commissionRate, 'number');
  assert.match(body.createdAt as string, ISO_TIME);
}

/** The contract's rule, independently: minor × rate% / 100, rounded half away from zero. */
function expectedCommission(minor: number, ratePercent: number): number {
  const millionths = BigInt(Math.round(ratePercent * 10_000));
  const product = BigInt(minor) * millionths;
  return Number((product + 500_000n) / 1_000_000n);
}

describe('sales', () => {
  let t: TestServer;
  let api: ApiClient;

  before(async () => {
    t = await startTestServer();
    api = await t.createTenant({ commissionRate: 20 });
  });
  after(() => t.close());

  async function createAffiliate(client = api, body: Record<string, unknown> = {}): Promise<Affiliate> {
    const res = await client.post('/affiliates', { firstName: 'Sam', lastName: 'Seller', email: uniqueEmail('aff'), ...body });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  }

  async function createReferral(client: ApiClient, extra: Record<string, unknown>): Promise<Referral> {
    const res = await client.post('/referrals', { name: 'Carla Customer', email: uniqueEmail(), referredUserExternalId: unique('cus'), ...extra });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  }

  async function createCode(client: ApiClient, affiliateId: string | null, extra: Record<string, unknown> = {}) {
    const coupon = await client.post('/coupons', { name: unique('Coupon'), couponType: 'PERCENTAGE', percentOff: 15 });
    assert.equal(coupon.status, 201, JSON.stringify(coupon.body));
    const code = await client.post('/promotional-codes', { couponId: coupon.body.id, code: unique('SALE').toUpperCase(), ...(affiliateId ? { affiliateId } : {}), ...extra });
    assert.equal(code.status, 201, JSON.stringify(code.body));
    return code.body as { id: string; code: string };
  }

  async function sale(client: ApiClient, body: Record<string, unknown>): Promise<Sale> {
    const res = await client.post('/sales', body);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assertSaleShape(res.body);
    return res.body;
  }

  async function saleRow(id: number) {
    return rawDb(t).selectFrom('sales').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  }

  async function linkRow(id: string) {
    return rawDb(t).selectFrom('affiliate_links').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  }

  async function primaryLinkId(affiliateId: string): Promise<string> {
    const row = await rawDb(t).selectFrom('affiliate_links').select('id').where('affiliate_id', '=', affiliateId).where('is_primary', '=', 1).executeTakeFirstOrThrow();
    return row.id;
  }

  async function affiliateState(id: string) {
    const row = await rawDb(t).selectFrom('affiliates').select(['total_commission_earned', 'number_of_referred_users']).where('id', '=', id).executeTakeFirstOrThrow();
    return { commission: Number(row.total_commission_earned), referred: Number(row.number_of_referred_users) };
  }

  async function linkState(id: string) {
    const row = await linkRow(id);
    return { referrals: Number(row.referrals), sales: Number(row.sales), revenue: Number(row.total_revenue) };
  }

  /** Rows and events of one program, to prove a failed request wrote nothing. */
  async function snapshot(programId = api.programId) {
    const n = async (table: 'sales' | 'referrals' | 'events') =>
      Number((await rawDb(t).selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).where('program_id', '=', programId).executeTakeFirstOrThrow()).n);
    const affiliates = await rawDb(t).selectFrom('affiliates').select(['id', 'total_commission_earned', 'number_of_referred_users']).where('program_id', '=', programId).orderBy('id').execute();
    const links = await rawDb(t).selectFrom('affiliate_links').select(['id', 'referrals', 'sales', 'total_revenue']).where('program_id', '=', programId).orderBy('id').execute();
    const codes = await rawDb(t).selectFrom('promotional_codes').select(['id', 'times_redeemed']).where('program_id', '=', programId).orderBy('id').execute();
    return { sales: await n('sales'), referrals: await n('referrals'), events: await n('events'), affiliates, links, codes };
  }

  async function lastEvent(type: string, programId = api.programId) {
    const row = await rawDb(t).selectFrom('events').selectAll().where('program_id', '=', programId).where('type', '=', type).orderBy('created_at', 'desc').orderBy('id', 'desc').executeTakeFirst();
    return row ? JSON.parse(row.data) : undefined;
  }

  describe('POST /sales: finding the customer and the affiliate', () => {
    it('referralId = a referral id: credits its affiliate and link, stores the sale, 201 with every spec field', async () => {
      const aff = await createAffiliate();
      const side = (await api.post('/links', { link: unique('side'), affiliateId: aff.id })).body;
      const ref = await createReferral(api, { affiliateId: side.link });
      const before = await snapshot();
      const res = await api.post('/sales', { referralId: ref.id, totalEarned: 49.99, externalId: 'ch_1', externalInvoiceId: 'in_1' });
      assert.equal(res.status, 201);
      assertSaleShape(res.body);
      const s: Sale = res.body;
      assert.deepEqual(
        { ...s, id: 0, createdAt: '' },
        { id: 0, createdAt: '', affiliateId: aff.id, referralId: ref.id, externalId: 'ch_1', externalInvoiceId: 'in_1', name: ref.name, email: ref.email, totalEarned: 49.99, commissionRate: 20, refundedAmount: 0, status: 'paid', commission: 10 },
      );
      assert.ok(Math.abs(Date.parse(s.createdAt) - Date.now()) < 60_000);

      const row = await saleRow(s.id);
      assert.equal(row.program_id, api.programId);
      assert.equal(row.affiliate_id, aff.id);
      assert.equal(row.referral_id, ref.id);
      assert.equal(row.link_id, side.id, "the referral's link is credited");
      assert.equal(Number(row.total_earned), 4999, 'stored in cents');
      assert.equal(Number(row.commission_rate), 200_000, 'stored in millionths');
      assert.equal(Number(row.commission), 1000, '49.99 × 20 % = 9.998 → 10.00');
      assert.equal(row.created_at, s.createdAt);

      assert.deepEqual(await linkState(side.id), { referrals: 1, sales: 1, revenue: 4999 });
      assert.deepEqual(await linkState(await primaryLinkId(aff.id)), { referrals: 0, sales: 0, revenue: 0 });
      assert.deepEqual(await affiliateState(aff.id), { commission: 1000, referred: 1 });
      assert.equal((await api.get(`/affiliates?id=${aff.id}`)).body.totalCommissionEarned, 10);

      const after = await snapshot();
      assert.equal(after.sales, before.sales + 1);
      assert.equal(after.referrals, before.referrals, 'an existing customer: no new referral');
      assert.equal(after.events, before.events + 1);
      assert.deepEqual(await lastEvent('sale.created'), s, 'the event carries the sale exactly as returned');
    });

    it('referralId = an affiliate id: a new customer (name and email required) is created and credited through the affiliate link', async () => {
      const aff = await createAffiliate();
      const primary = await primaryLinkId(aff.id);
      const before = await snapshot();
      assert.deepEqual(assertProblem(await api.post('/sales', { referralId: aff.id, totalEarned: 10, email: uniqueEmail() }), 422, 'validation_failed'), ['#/name']);
      assert.deepEqual(assertProblem(await api.post('/sales', { referralId: aff.id, totalEarned: 10, name: 'No Mail' }), 422, 'validation_failed'), ['#/email']);
      assert.deepEqual(await snapshot(), before, 'a rejected sale writes nothing, not even the customer');

      const mail = uniqueEmail('New');
      const s = await sale(api, { referralId: aff.id, totalEarned: 10, name: 'Nina New', email: mail });
      assert.equal(s.affiliateId, aff.id);
      assert.equal(s.name, 'Nina New');
      assert.equal(s.email, mail);
      const ref = await api.get(`/referrals?id=${s.referralId}`);
      assert.equal(ref.status, 200);
      assert.deepEqual(ref.body, { id: s.referralId, affiliateId: aff.id, name: 'Nina New', email: mail, referredUserExternalId: '', plan: '', status: 'active' });
      assert.equal((await saleRow(s.id)).link_id, primary);
      assert.deepEqual(await linkState(primary), { referrals: 1, sales: 1, revenue: 1000 });
      assert.deepEqual(await affiliateState(aff.id), { commission: 200, referred: 1 });
      assert.deepEqual(await lastEvent('referral.created'), ref.body, 'the new customer is reported too');

      // The same customer again, by e-mail in another case, is not created twice.
      const again = await sale(api, { referralId: aff.id, totalEarned: 5, email: mail.toUpperCase() });
      assert.equal(again.referralId, s.referralId);
      assert.equal(again.name, 'Nina New', "the customer's name when the body has none");
      assert.deepEqual(await affiliateState(aff.id), { commission: 300, referred: 1 });
    });

    it('referralId = a link string (any case): credits that link with sales and totalRevenue', async () => {
      const aff = await createAffiliate();
      const side = (await api.post('/links', { link: unique('Promo-Link'), affiliateId: aff.id })).body;
      const s = await sale(api, { referralId: side.link.toUpperCase(), totalEarned: 120.5, name: 'Lou Link', email: uniqueEmail() });
      assert.equal(s.affiliateId, aff.id);
      assert.equal((await saleRow(s.id)).link_id, side.id);
      await sale(api, { referralId: side.link, totalEarned: 0.5, email: s.email });
      assert.deepEqual(await linkState(side.id), { referrals: 1, sales: 2, revenue: 12100 });
      assert.deepEqual(await linkState(await primaryLinkId(aff.id)), { referrals: 0, sales: 0, revenue: 0 });
      const renamed = await api.put('/links', { id: side.id, newLink: unique('renamed') });
      assert.equal(renamed.body.sales, 2);
      assert.equal(renamed.body.totalRevenue, 121);
    });

    it('referralId = a referral id or affiliate id in upper case is found', async () => {
      const aff = await createAffiliate();
      const ref = await createReferral(api, { affiliateId: aff.id });
      assert.equal((await sale(api, { referralId: ref.id.toUpperCase(), totalEarned: 1 })).referralId, ref.id);
      assert.equal((await sale(api, { referralId: aff.id.toUpperCase(), totalEarned: 1, email: ref.email })).affiliateId, aff.id);
    });

    it('rejects a blank customer name (422)', async () => {
      const aff = await createAffiliate();
      assert.deepEqual(assertProblem(await api.post('/sales', { referralId: aff.id, totalEarned: 1, name: '  ', email: uniqueEmail() }), 422, 'validation_failed'), ['#/name']);
    });

    it('email: finds the referral by e-mail in any case', async () => {
      const aff = await createAffiliate();
      const ref = await createReferral(api, { affiliateId: aff.id, email: uniqueEmail('ByMail') });
      const before = await snapshot();
      const s = await sale(api, { email: `  ${ref.email.toUpperCase()} `, totalEarned: 30, name: 'Other Name' });
      assert.equal(s.referralId, ref.id);
      assert.equal(s.affiliateId, aff.id);
      assert.equal(s.email, ref.email, "the customer's stored e-mail");
      assert.equal(s.name, 'Other Name', 'the body name wins');
      const after = await snapshot();
      assert.equal(after.referrals, before.referrals);
      assert.equal(after.sales, before.sales + 1);
      assert.deepEqual(await affiliateState(aff.id), { commission: 600, referred: 1 });
    });

    it('email of nobody and no promoCode: 404, nothing written', async () => {
      const before = await snapshot();
      assertProblem(await api.post('/sales', { email: uniqueEmail('ghost'), totalEarned: 10, name: 'Ghost' }), 404, 'not_found');
      assert.deepEqual(await snapshot(), before);
    });

    it('promoCode only, new customer: name and email required; then credits the code affiliate and redeems the code', async () => {
      const aff = await createAffiliate();
      const code = await createCode(api, aff.id);
      const before = await snapshot();
      assert.deepEqual(assertProblem(await api.post('/sales', { promoCode: code.code, totalEarned: 20 }), 422, 'validation_failed'), ['#/name']);
      assert.deepEqual(assertProblem(await api.post('/sales', { promoCode: code.code, totalEarned: 20, name: 'Pam' }), 422, 'validation_failed'), ['#/email']);
      assert.deepEqual(assertProblem(await api.post('/sales', { promoCode: code.code, totalEarned: 20, email: uniqueEmail() }), 422, 'validation_failed'), ['#/name']);
      assert.deepEqual(await snapshot(), before, 'nothing written, nothing redeemed');

      const mail = uniqueEmail('promo');
      const s = await sale(api, { promoCode: code.code.toLowerCase(), totalEarned: 20, name: 'Pam Promo', email: mail });
      assert.equal(s.affiliateId, aff.id);
      assert.equal(s.email, mail);
      const row = await saleRow(s.id);
      assert.equal(row.promotional_code_id, code.id);
      assert.equal(row.link_id, await primaryLinkId(aff.id));
      assert.equal((await api.get(`/promotional-codes?id=${code.id}`)).body.timesRedeemed, 1);
      const referral = await rawDb(t).selectFrom('referrals').selectAll().where('id', '=', s.referralId).executeTakeFirstOrThrow();
      assert.equal(referral.affiliate_id, aff.id);
      assert.equal(referral.promotional_code_id, code.id);
      const after = await snapshot();
      assert.equal(after.sales, before.sales + 1);
      assert.equal(after.referrals, before.referrals + 1);
      assert.equal(after.events, before.events + 3, 'referral.created, promotional_code.redeemed, sale.created');
      assert.deepEqual(await affiliateState(aff.id), { commission: 400, referred: 1 });

      // The same customer again by promo code and e-mail: found, not created again.
      const second = await sale(api, { promoCode: code.code, totalEarned: 5, email: mail });
      assert.equal(second.referralId, s.referralId);
      assert.equal((await api.get(`/promotional-codes?id=${code.id}`)).body.timesRedeemed, 2);
    });

    it('a promo code that cannot be redeemed fails the sale and writes nothing', async () => {
      const aff = await createAffiliate();
      const ref = await createReferral(api, { affiliateId: aff.id });
      const exhausted = await createCode(api, aff.id, { maxRedemptions: 1 });
      await sale(api, { referralId: ref.id, promoCode: exhausted.code, totalEarned: 10 });
      const minimum = await createCode(api, aff.id, { minimumAmount: 50 });
      const before = await snapshot();
      assertProblem(await api.post('/sales', { referralId: ref.id, promoCode: exhausted.code, totalEarned: 10 }), 422, 'promo_code_exhausted');
      assertProblem(await api.post('/sales', { referralId: ref.id, promoCode: minimum.code, totalEarned: 49.99 }), 422, 'promo_code_minimum_amount');
      // A new customer is inserted before the code check fails: it must roll back too.
      assertProblem(await api.post('/sales', { promoCode: exhausted.code, totalEarned: 10, name: 'N', email: uniqueEmail() }), 422, 'promo_code_exhausted');
      assertProblem(await api.post('/sales', { referralId: ref.id, promoCode: unique('NOPE'), totalEarned: 10 }), 404, 'not_found');
      assert.deepEqual(await snapshot(), before);
      assert.equal((await sale(api, { referralId: ref.id, promoCode: minimum.code, totalEarned: 50 })).affiliateId, aff.id);
    });

    it('needs referralId, email or promoCode (422), and totalEarned (422)', async () => {
      const before = await snapshot();
      assert.deepEqual(assertProblem(await api.post('/sales', { totalEarned: 10, name: 'X' }), 422, 'validation_failed'), ['#/referralId']);
      assert.deepEqual(assertProblem(await api.post('/sales', { email: uniqueEmail() }), 422, 'validation_failed'), ['#/totalEarned']);
      assert.deepEqual(assertProblem(await api.post('/sales', {}), 422, 'validation_failed'), ['#/totalEarned']);
      assert.deepEqual(await snapshot(), before);
    });

    it('unknown referralId (uuid, link string, or of another program): 404, nothing written', async () => {
      const other = await t.createTenant();
      const foreignAff = await createAffiliate(other);
      const foreignRef = await createReferral(other, { affiliateId: foreignAff.id });
      const before = await snapshot();
      for (const referralId of ['00000000-0000-4000-8000-000000000000', unique('no-such-link'), foreignRef.id, foreignAff.id, foreignAff.link]) {
        assertProblem(await api.post('/sales', { referralId, totalEarned: 10, name: 'N', email: uniqueEmail() }), 404, 'not_found');
      }
      assert.deepEqual(await snapshot(), before);
      const otherState = await snapshot(other.programId);
      assert.equal(otherState.sales, 0);
    });
  });

  describe('POST /sales: money and commission', () => {
    it('commission = totalEarned × rate / 100, rounded half away from zero to the cent', async () => {
      const cases: [number, number, number][] = [
        // [totalEarned, commissionRate, expected commission in cents]
        [49.99, 20, 1000], // 999.8 → 1000
        [0.25, 10, 3], // 2.5 → 3 (not banker's 2)
        [0.15, 10, 2], // 1.5 → 2
        [0.05, 50, 3], // 2.5 → 3
        [1.01, 12.5, 13], // 12.625 → 13
        [0.01, 33.3333, 0], // 0.333333 → 0
        [99.99, 33.3333, 3333], // 3333.29667 → 3333
        [10, 0, 0],
        [10, 100, 1000],
        [0, 20, 0],
        [1234567.89, 7.25, 8950617], // 8950617.2025
        [0.07, 50, 4], // 3.5 → 4
      ];
      const aff = await createAffiliate();
      const ref = await createReferral(api, { affiliateId: aff.id });
      let total = 0;
      let revenue = 0;
      for (const [totalEarned, commissionRate, expected] of cases) {
        const minor = Math.round(totalEarned * 100);
        assert.equal(expectedCommission(minor, commissionRate), expected, `the table itself: ${totalEarned} × ${commissionRate}`);
        const s = await sale(api, { referralId: ref.id, totalEarned, commissionRate });
        assert.equal(s.totalEarned, totalEarned);
        assert.equal(s.commissionRate, commissionRate);
        const row = await saleRow(s.id);
        assert.equal(Number(row.total_earned), minor);
        assert.equal(Number(row.commission), expected, `${totalEarned} × ${commissionRate} %`);
        total += expected;
        revenue += minor;
      }
      assert.deepEqual(await affiliateState(aff.id), { commission: total, referred: 1 });
      const got = await api.get(`/affiliates?id=${aff.id}`);
      assert.equal(got.body.totalCommissionEarned, total / 100);
      assert.deepEqual(await linkState(await primaryLinkId(aff.id)), { referrals: 1, sales: cases.length, revenue });
    });

    it("commissionRate defaults to the affiliate's rate, then the program's, as of the sale", async () => {
      const client = await t.createTenant({ commissionRate: 15 });
      const withRate = await createAffiliate(client, { commissionRate: 30 });
      const withoutRate = await createAffiliate(client);
      const r1 = await createReferral(client, { affiliateId: withRate.id });
      const r2 = await createReferral(client, { affiliateId: withoutRate.id });

      const s1 = await sale(client, { referralId: r1.id, totalEarned: 100 });
      assert.equal(s1.commissionRate, 30);
      assert.equal(Number((await saleRow(s1.id)).commission), 3000);
      const s2 = await sale(client, { referralId: r2.id, totalEarned: 100 });
      assert.equal(s2.commissionRate, 15);
      assert.equal(Number((await saleRow(s2.id)).commission), 1500);

      // Rates change later: new sales take the new rate, stored sales keep theirs.
      await setProgramCommissionRate(t, client.programId, 12.5);
      await rawDb(t).updateTable('affiliates').set({ commission_rate: 50_000 }).where('id', '=', withRate.id).execute();
      const s3 = await sale(client, { referralId: r2.id, totalEarned: 100 });
      assert.equal(s3.commissionRate, 12.5);
      const s4 = await sale(client, { referralId: r1.id, totalEarned: 100 });
      assert.equal(s4.commissionRate, 5);
      assert.equal((await client.get(`/sales?id=${s1.id}`)).body.commissionRate, 30);
      assert.equal((await client.get(`/sales?id=${s2.id}`)).body.commissionRate, 15);
      assert.deepEqual(await affiliateState(withRate.id), { commission: 3500, referred: 1 });
      assert.deepEqual(await affiliateState(withoutRate.id), { commission: 2750, referred: 1 });
    });

    it('an explicit commissionRate wins over the affiliate rate', async () => {
      const aff = await createAffiliate(api, { commissionRate: 40 });
      const ref = await createReferral(api, { affiliateId: aff.id });
      const s = await sale(api, { referralId: ref.id, totalEarned: 80, commissionRate: 7.5 });
      assert.equal(s.commissionRate, 7.5);
      assert.equal(Number((await saleRow(s.id)).commission), 600);
      assert.equal((await api.get(`/affiliates?id=${aff.id}`)).body.commissionRate, 40, "the affiliate's own rate is unchanged");
    });

    it('rejects a bad commissionRate (422, nothing written)', async () => {
      const ref = await createReferral(api, { affiliateId: (await createAffiliate()).id });
      const before = await snapshot();
      for (const commissionRate of [100.5, -1, 12.34567, '20']) {
        assert.deepEqual(assertProblem(await api.post('/sales', { referralId: ref.id, totalEarned: 10, commissionRate }), 422, 'validation_failed'), ['#/commissionRate'], String(commissionRate));
      }
      assert.deepEqual(await snapshot(), before);
    });

    it('rejects amounts with more decimals than the currency, negative or non-numeric amounts (422, nothing written)', async () => {
      const ref = await createReferral(api, { affiliateId: (await createAffiliate()).id });
      const before = await snapshot();
      for (const totalEarned of [49.999, 0.001, 12345.678, 10.0000001, -1, -0.01, '49.99', null]) {
        const res = await api.post('/sales', { referralId: ref.id, totalEarned });
        assert.deepEqual(assertProblem(res, 422, 'validation_failed'), ['#/totalEarned'], String(totalEarned));
      }
      assert.deepEqual(await snapshot(), before);
      // Binary floating point is no reason to reject: 0.1 + 0.2 is 0.3 to the cent.
      const s = await sale(api, { referralId: ref.id, totalEarned: 0.1 + 0.2 });
      assert.equal(s.totalEarned, 0.3);
      assert.equal(Number((await saleRow(s.id)).total_earned), 30);
    });

    it('a JPY program has no minor unit: 100.5 is rejected, 100 is stored as 100', async () => {
      const jpy = await t.createTenant({ currency: 'JPY', commissionRate: 10 });
      const aff = await createAffiliate(jpy);
      const ref = await createReferral(jpy, { affiliateId: aff.id });
      const before = await snapshot(jpy.programId);
      assert.deepEqual(assertProblem(await jpy.post('/sales', { referralId: ref.id, totalEarned: 100.5 }), 422, 'validation_failed'), ['#/totalEarned']);
      assert.deepEqual(assertProblem(await jpy.post('/sales', { referralId: ref.id, totalEarned: 0.01 }), 422, 'validation_failed'), ['#/totalEarned']);
      assert.deepEqual(await snapshot(jpy.programId), before);

      const s = await sale(jpy, { referralId: ref.id, totalEarned: 100 });
      assert.equal(s.totalEarned, 100);
      const row = await saleRow(s.id);
      assert.equal(Number(row.total_earned), 100, 'yen are the minor unit');
      assert.equal(Number(row.commission), 10);
      const odd = await sale(jpy, { referralId: ref.id, totalEarned: 105 });
      assert.equal(Number((await saleRow(odd.id)).commission), 11, '10.5 yen → 11');
      assert.equal((await jpy.get(`/affiliates?id=${aff.id}`)).body.totalCommissionEarned, 21);
      assert.equal((await linkRow(await primaryLinkId(aff.id))).total_revenue, 205);
    });

    it('a BHD program has three decimals', async () => {
      const bhd = await t.createTenant({ currency: 'BHD', commissionRate: 10 });
      const ref = await createReferral(bhd, { affiliateId: (await createAffiliate(bhd)).id });
      assert.deepEqual(assertProblem(await bhd.post('/sales', { referralId: ref.id, totalEarned: 1.2345 }), 422, 'validation_failed'), ['#/totalEarned']);
      const s = await sale(bhd, { referralId: ref.id, totalEarned: 1.235 });
      assert.equal(s.totalEarned, 1.235);
      const row = await saleRow(s.id);
      assert.equal(Number(row.total_earned), 1235);
      assert.equal(Number(row.commission), 124, '123.5 fils → 124');
    });
  });

  describe('POST /sales: ids and events', () => {
    it('gives sales increasing integer ids and records sale.created in the same transaction', async () => {
      const ref = await createReferral(api, { affiliateId: (await createAffiliate()).id });
      const a = await sale(api, { referralId: ref.id, totalEarned: 1 });
      const b = await sale(api, { referralId: ref.id, totalEarned: 2 });
      assert.ok(b.id > a.id);
      const events = await rawDb(t).selectFrom('events').selectAll().where('program_id', '=', api.programId).where('type', '=', 'sale.created').execute();
      const byId = new Map(events.map((e) => [JSON.parse(e.data).id as number, JSON.parse(e.data)]));
      assert.deepEqual(byId.get(a.id), a);
      assert.deepEqual(byId.get(b.id), b);
      assert.equal(events.length, (await snapshot()).sales, 'one sale.created per stored sale');
    });
  });

  describe('GET /sales', () => {
    it('returns one sale by integer id, equal to what POST returned; 404 unknown or foreign; 422 malformed', async () => {
      const ref = await createReferral(api, { affiliateId: (await createAffiliate()).id });
      const s = await sale(api, { referralId: ref.id, totalEarned: 12.34, externalId: 'ext-9' });
      const res = await api.get(`/sales?id=${s.id}`);
      assert.equal(res.status, 200);
      assert.ok(!Array.isArray(res.body));
      assertSaleShape(res.body);
      assert.deepEqual(res.body, s);
      assertProblem(await api.get('/sales?id=999999999'), 404, 'not_found');
      assert.deepEqual(assertProblem(await api.get('/sales?id=abc'), 422, 'validation_failed'), ['#/id']);
      assert.deepEqual(assertProblem(await api.get('/sales?id=0'), 422, 'validation_failed'), ['#/id']);
      assert.deepEqual(assertProblem(await api.get('/sales?id=1.5'), 422, 'validation_failed'), ['#/id']);
      // Beyond what a JSON number holds exactly (and beyond bigint on PostgreSQL): invalid, never a 500.
      assert.deepEqual(assertProblem(await api.get('/sales?id=99999999999999999999'), 422, 'validation_failed'), ['#/id']);
      assert.deepEqual(assertProblem(await api.get('/sales?id=9223372036854775807'), 422, 'validation_failed'), ['#/id']);
      const other = await t.createTenant();
      assertProblem(await other.get(`/sales?id=${s.id}`), 404, 'not_found');
    });

    it('lists sales newest first as a bare array, with affiliateId / referralId filters and cursor paging', async () => {
      const client = await t.createTenant();
      const a = await createAffiliate(client);
      const b = await createAffiliate(client);
      const ra = await createReferral(client, { affiliateId: a.id });
      const rb = await createReferral(client, { affiliateId: b.id });
      const made: Sale[] = [];
      for (let i = 0; i < 7; i++) {
        made.push(await sale(client, { referralId: i % 3 === 0 ? rb.id : ra.id, totalEarned: i + 1 }));
        await sleep(2);
      }
      const all = await client.get('/sales');
      assert.equal(all.status, 200);
      assert.ok(Array.isArray(all.body));
      assert.equal(all.headers.get('link'), null);
      assert.deepEqual(all.body, [...made].reverse());

      const ofB = await client.get(`/sales?affiliateId=${b.id}`);
      assert.deepEqual(ofB.body.map((s: Sale) => s.id), made.filter((s) => s.affiliateId === b.id).map((s) => s.id).reverse());
      const ofBUpper = await client.get(`/sales?affiliateId=${b.id.toUpperCase()}`);
      assert.deepEqual(ofBUpper.body, ofB.body, 'UUIDs ignore case');
      const ofRa = await client.get(`/sales?referralId=${ra.id}`);
      assert.deepEqual(ofRa.body.map((s: Sale) => s.id), made.filter((s) => s.referralId === ra.id).map((s) => s.id).reverse());
      assert.deepEqual((await client.get(`/sales?affiliateId=${a.id}&referralId=${rb.id}`)).body, [], 'filters combine with AND');

      const seen: number[] = [];
      let path: string | null = '/sales?limit=2';
      let pages = 0;
      while (path !== null) {
        const res: ApiResponse = await client.get(path);
        assert.equal(res.status, 200);
        assert.ok(res.body.length <= 2);
        seen.push(...res.body.map((s: Sale) => s.id));
        path = nextPath(res);
        pages++;
      }
      assert.equal(pages, 4);
      assert.deepEqual(seen, made.map((s) => s.id).reverse());

      const created = await client.get(`/sales?createdAfter=${encodeURIComponent(made[4]!.createdAt)}`);
      assert.deepEqual(created.body.map((s: Sale) => s.id), [made[6]!.id, made[5]!.id]);
    });

    it('pages across sales that share a timestamp without duplicates or gaps', async () => {
      const client = await t.createTenant();
      const ref = await createReferral(client, { affiliateId: (await createAffiliate(client)).id });
      const ids: number[] = [];
      for (let i = 0; i < 6; i++) ids.push((await sale(client, { referralId: ref.id, totalEarned: 1 })).id);
      await rawDb(t).updateTable('sales').set({ created_at: '2030-01-01T00:00:00.000Z' }).where('id', 'in', ids).execute();
      const seen: number[] = [];
      let path: string | null = '/sales?limit=4';
      while (path !== null) {
        const res: ApiResponse = await client.get(path);
        seen.push(...res.body.map((s: Sale) => s.id));
        path = nextPath(res);
      }
      assert.deepEqual(seen, [...ids].sort((x, y) => y - x), 'ties broken by id, newest (largest) first');
    });

    it('validates list parameters (422)', async () => {
      for (const q of ['limit=0', 'limit=1001', 'createdAfter=nope', 'affiliateId=nope']) {
        assertProblem(await api.get(`/sales?${q}`), 422, 'validation_failed');
      }
      assertProblem(await api.get('/sales?cursor=%25%25%25'), 400, 'invalid_cursor');
    });
  });
});
