import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { apiClient, rawDb, startTestServer, type ApiClient, type ApiResponse, type TestServer } from '../helpers/test-server.ts';
import type { Coupon, PromotionalCode } from '../../src/modules/coupons/promotional-code.schema.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { raceNote } from '../helpers/test-database.ts';
import { ISO_TIME, newAffiliate, newCode, newCoupon, unique, uniqueEmail, UUID } from '../helpers/fixtures.ts';

// Promotional code redemption through POST /referrals and POST /sales (spec 4.2 rules;
// CONTRACT.md "Promotional code redemption"; docs/api.md "Redemption"): every failure reason
// through both endpoints, the "writes nothing" guarantee, successful redemption, and the
// atomicity of maxRedemptions under 200 concurrent requests.


interface Affiliate {
  id: string;
  firstName: string;
  lastName: string;
  email: string;
  link: string;
}

type Reason =
  | 'promo_code_inactive'
  | 'promo_code_expired'
  | 'promo_code_exhausted'
  | 'coupon_invalid'
  | 'promo_code_minimum_amount'
  | 'promo_code_first_time_only'
  | 'promo_code_customer_restricted'
  | 'promo_code_not_assigned';


/** A free TCP port on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/** A second server process (`tandem serve`) over the same database as the test server. */
async function startSecondProcess(databaseUrl: string): Promise<{ url: string; child: ChildProcess; stop(): Promise<void> }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['bin/tandem', 'serve'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'silent', SITE_URL: 'http://tandem.test', RATE_LIMIT_PER_MINUTE: '0' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Generous: tsx compiles the sources on start, which is slow on a loaded machine.
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/healthz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline || child.exitCode !== null) {
      if (child.exitCode === null) child.kill('SIGTERM');
      throw new Error('the second server process did not start');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url,
    child,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

describe('promotional code redemption', () => {
  let t: TestServer;
  let api: ApiClient;

  before(async () => {
    t = await startTestServer();
    api = await t.createTenant({ currency: 'USD', commissionRate: 20 });
  });
  after(() => t.close());

  const db = () => rawDb(t);

  // ---- fixtures -------------------------------------------------------------------------

  async function createAffiliate(client: ApiClient = api): Promise<Affiliate> {
    return newAffiliate<Affiliate>(client);
  }


  async function createCoupon(body: Record<string, unknown> = {}, client: ApiClient = api): Promise<Coupon> {
    return newCoupon<Coupon>(client, body);
  }


  async function createCode(body: Record<string, unknown>, client: ApiClient = api): Promise<PromotionalCode> {
    return newCode<PromotionalCode>(client, body);
  }


  /** An affiliate, a coupon and a code assigned to the affiliate (unless `assign` is false). */
  async function fixture(options: { coupon?: Record<string, unknown>; code?: Record<string, unknown>; assign?: boolean } = {}) {
    const affiliate = await createAffiliate();
    const coupon = await createCoupon(options.coupon);
    const code = await createCode({ couponId: coupon.id, ...(options.assign === false ? {} : { affiliateId: affiliate.id }), ...options.code });
    return { affiliate, coupon, code };
  }

  const referWith = (promoCode: string, extra: Record<string, unknown> = {}, client: ApiClient = api) =>
    client.post('/referrals', { name: 'Referred User', email: uniqueEmail(), referredUserExternalId: unique('cus_'), promoCode, ...extra });

  const sellWith = (promoCode: string, extra: Record<string, unknown> = {}, client: ApiClient = api) =>
    client.post('/sales', { totalEarned: 100, name: 'New Customer', email: uniqueEmail(), promoCode, ...extra });

  /** A customer (a referral) of `affiliate`, made without any promotional code. */
  async function customerOf(affiliate: Affiliate, externalId = unique('cus_')) {
    const res = await api.post('/referrals', { name: 'Customer', email: uniqueEmail(), referredUserExternalId: externalId, affiliateId: affiliate.id });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body as { id: string; email: string; affiliateId: string; referredUserExternalId: string };
  }

  async function redeemOnce(code: string) {
    const res = await referWith(code);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res;
  }

  // ---- stored state -----------------------------------------------------------------------

  /** Everything a redemption could touch in the program, read straight from the database. */
  async function snapshot(programId = api.programId) {
    const [referrals, sales, events, codes, coupons, affiliates, links] = await Promise.all([
      db().selectFrom('referrals').selectAll().where('program_id', '=', programId).orderBy('id').execute(),
      db().selectFrom('sales').selectAll().where('program_id', '=', programId).orderBy('id').execute(),
      db().selectFrom('events').select(['id', 'program_id', 'type', 'data', 'created_at']).where('program_id', '=', programId).orderBy('id').execute(),
      db().selectFrom('promotional_codes').selectAll().where('program_id', '=', programId).orderBy('id').execute(),
      db().selectFrom('coupons').selectAll().where('program_id', '=', programId).orderBy('id').execute(),
      db().selectFrom('affiliates').selectAll().where('program_id', '=', programId).orderBy('id').execute(),
      db().selectFrom('affiliate_links').selectAll().where('program_id', '=', programId).orderBy('id').execute(),
    ]);
    return { referrals, sales, events, codes, coupons, affiliates, links };
  }

  /** Sends a request that must fail with `reason` and checks that it changed nothing at all. */
  async function expectRejected(send: () => Promise<ApiResponse>, reason: Reason | 'not_found', status = 422) {
    const before = await snapshot();
    const res = await send();
    assertProblem(res, status, reason);
    const after = await snapshot();
    assert.equal(after.referrals.length, before.referrals.length, 'no referral written');
    assert.equal(after.sales.length, before.sales.length, 'no sale written');
    assert.equal(after.events.length, before.events.length, 'no event written');
    assert.deepEqual(after, before, 'nothing changed: codes, coupons, counters');
    return res;
  }

  const storedCode = (id: string) => db().selectFrom('promotional_codes').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const storedCoupon = (id: string) => db().selectFrom('coupons').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const timesRedeemed = async (id: string) => ((await api.get(`/promotional-codes?id=${id}`)).body as PromotionalCode).timesRedeemed;

  // ---- every failure reason, through both endpoints ---------------------------------------

  describe('promo_code_inactive', () => {
    it('rejects an inactive code on POST /referrals and POST /sales, writing nothing', async () => {
      const { code } = await fixture({ code: { active: false } });
      await expectRejected(() => referWith(code.code), 'promo_code_inactive');
      await expectRejected(() => sellWith(code.code), 'promo_code_inactive');
    });

    it('rejects a code deactivated by PUT, and redeems it again once reactivated', async () => {
      const { code } = await fixture();
      assert.equal((await api.put('/promotional-codes', { promotionalCodeId: code.id, active: false })).status, 200);
      await expectRejected(() => referWith(code.code), 'promo_code_inactive');
      await expectRejected(() => sellWith(code.code), 'promo_code_inactive');
      assert.equal((await api.put('/promotional-codes', { promotionalCodeId: code.id, active: true })).status, 200);
      assert.equal((await referWith(code.code)).status, 201);
      assert.equal((await sellWith(code.code)).status, 201);
      assert.equal(await timesRedeemed(code.id), 2);
    });
  });

  describe('promo_code_expired', () => {
    it('rejects a code created with expiresAt in the past', async () => {
      const { code } = await fixture({ code: { expiresAt: new Date(Date.now() - 60_000).toISOString() } });
      await expectRejected(() => referWith(code.code), 'promo_code_expired');
      await expectRejected(() => sellWith(code.code), 'promo_code_expired');
    });

    it('rejects a code whose expiresAt was moved into the past by PUT; a future expiresAt redeems', async () => {
      const { code } = await fixture({ code: { expiresAt: new Date(Date.now() + 86_400_000).toISOString() } });
      await redeemOnce(code.code);
      const res = await api.put('/promotional-codes', { promotionalCodeId: code.id, expiresAt: new Date(Date.now() - 1000).toISOString() });
      assert.equal(res.status, 200);
      await expectRejected(() => referWith(code.code), 'promo_code_expired');
      await expectRejected(() => sellWith(code.code), 'promo_code_expired');
      assert.equal(await timesRedeemed(code.id), 1);
    });
  });

  describe('promo_code_exhausted', () => {
    it('redeems a code exactly maxRedemptions times, then rejects it on both endpoints', async () => {
      const { code, coupon } = await fixture({ code: { maxRedemptions: 2 } });
      await redeemOnce(code.code);
      const sale = await sellWith(code.code);
      assert.equal(sale.status, 201, JSON.stringify(sale.body));
      assert.equal(await timesRedeemed(code.id), 2);
      await expectRejected(() => referWith(code.code), 'promo_code_exhausted');
      await expectRejected(() => sellWith(code.code), 'promo_code_exhausted');
      assert.equal(Number((await storedCode(code.id)).times_redeemed), 2);
      assert.equal(Number((await storedCoupon(coupon.id)).times_redeemed), 2);
    });

    it('treats a maxRedemptions lowered below timesRedeemed by PUT as exhausted, and null as no limit', async () => {
      const { code } = await fixture();
      await redeemOnce(code.code);
      await redeemOnce(code.code);
      assert.equal((await api.put('/promotional-codes', { promotionalCodeId: code.id, maxRedemptions: 1 })).status, 200);
      await expectRejected(() => referWith(code.code), 'promo_code_exhausted');
      await expectRejected(() => sellWith(code.code), 'promo_code_exhausted');
      assert.equal((await api.put('/promotional-codes', { promotionalCodeId: code.id, maxRedemptions: null })).status, 200);
      await redeemOnce(code.code);
      assert.equal(await timesRedeemed(code.id), 3);
    });
  });

  describe('coupon_invalid', () => {
    it('rejects a code whose coupon has valid false', async () => {
      const { code } = await fixture({ coupon: { valid: false } });
      await expectRejected(() => referWith(code.code), 'coupon_invalid');
      await expectRejected(() => sellWith(code.code), 'coupon_invalid');
    });

    it('rejects a code whose coupon is past redeemBy', async () => {
      const { code } = await fixture({ coupon: { redeemBy: new Date(Date.now() - 60_000).toISOString() } });
      await expectRejected(() => referWith(code.code), 'coupon_invalid');
      await expectRejected(() => sellWith(code.code), 'coupon_invalid');
    });

    it('redeems a coupon whose redeemBy is still ahead', async () => {
      const { code } = await fixture({ coupon: { redeemBy: new Date(Date.now() + 86_400_000).toISOString() } });
      await redeemOnce(code.code);
    });

    it('counts the coupon\'s maxRedemptions over all of its codes, then rejects every one of them', async () => {
      const affiliate = await createAffiliate();
      const coupon = await createCoupon({ maxRedemptions: 3 });
      const [a, b, c] = [
        await createCode({ couponId: coupon.id, affiliateId: affiliate.id }),
        await createCode({ couponId: coupon.id, affiliateId: affiliate.id }),
        await createCode({ couponId: coupon.id, affiliateId: affiliate.id, maxRedemptions: 10 }),
      ];
      await redeemOnce(a.code);
      await redeemOnce(b.code);
      assert.equal((await sellWith(a.code)).status, 201);
      assert.equal(Number((await storedCoupon(coupon.id)).times_redeemed), 3);
      for (const code of [a, b, c]) {
        await expectRejected(() => referWith(code.code), 'coupon_invalid');
        await expectRejected(() => sellWith(code.code), 'coupon_invalid');
      }
      assert.deepEqual([await timesRedeemed(a.id), await timesRedeemed(b.id), await timesRedeemed(c.id)], [2, 1, 0]);
      assert.equal(Number((await storedCoupon(coupon.id)).times_redeemed), 3);
      assert.equal(((await api.get(`/coupons?id=${coupon.id}`)).body as Coupon).valid, false);
    });
  });

  describe('promo_code_minimum_amount', () => {
    it('rejects a sale below minimumAmount and accepts one exactly at it', async () => {
      const { code } = await fixture({ code: { minimumAmount: 50 } });
      await expectRejected(() => sellWith(code.code, { totalEarned: 49.99 }), 'promo_code_minimum_amount');
      await expectRejected(() => sellWith(code.code, { totalEarned: 0 }), 'promo_code_minimum_amount');
      const ok = await sellWith(code.code, { totalEarned: 50 });
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
      assert.equal(ok.body.totalEarned, 50);
      assert.equal(await timesRedeemed(code.id), 1);
    });

    it('applies to sales only: a referral (no amount) redeems a code with a minimumAmount', async () => {
      const { code } = await fixture({ code: { minimumAmount: 1000 } });
      await redeemOnce(code.code);
      assert.equal(await timesRedeemed(code.id), 1);
    });

    it('rejects an existing customer\'s sale below the minimum (customer found by e-mail)', async () => {
      const { code, affiliate } = await fixture({ code: { minimumAmount: 20 } });
      const customer = await customerOf(affiliate);
      await expectRejected(() => sellWith(code.code, { email: customer.email, name: undefined, totalEarned: 19.99 }), 'promo_code_minimum_amount');
    });
  });

  describe('promo_code_first_time_only', () => {
    it('rejects a sale for a customer who already has a sale (found by e-mail and by referralId)', async () => {
      const { code, affiliate } = await fixture({ code: { firstTimeOrder: true } });
      const customer = await customerOf(affiliate);
      const first = await api.post('/sales', { totalEarned: 10, email: customer.email });
      assert.equal(first.status, 201, JSON.stringify(first.body));
      await expectRejected(() => sellWith(code.code, { email: customer.email, name: undefined }), 'promo_code_first_time_only');
      await expectRejected(() => sellWith(code.code, { referralId: customer.id, email: undefined, name: undefined }), 'promo_code_first_time_only');
    });

    it('redeems for a new customer and for an existing customer without sales, but not for their second order', async () => {
      const { code, affiliate } = await fixture({ code: { firstTimeOrder: true } });
      const created = await sellWith(code.code);
      assert.equal(created.status, 201, JSON.stringify(created.body));
      await expectRejected(() => sellWith(code.code, { email: created.body.email, name: undefined }), 'promo_code_first_time_only');

      const customer = await customerOf(affiliate);
      const firstOrder = await sellWith(code.code, { referralId: customer.id, email: undefined, name: undefined });
      assert.equal(firstOrder.status, 201, JSON.stringify(firstOrder.body));
      assert.equal(firstOrder.body.referralId, customer.id);
      await expectRejected(() => sellWith(code.code, { referralId: customer.id, email: undefined, name: undefined }), 'promo_code_first_time_only');
      assert.equal(await timesRedeemed(code.id), 2);
    });

    it('does not restrict referrals (a referral is never an order)', async () => {
      const { code } = await fixture({ code: { firstTimeOrder: true } });
      await redeemOnce(code.code);
      await redeemOnce(code.code);
    });
  });

  describe('promo_code_customer_restricted', () => {
    it('rejects a referral whose referredUserExternalId is not the code\'s customerId, accepts the right one', async () => {
      const { code } = await fixture({ code: { limitToCustomers: true, customerId: 'cus_allowed' } });
      await expectRejected(() => referWith(code.code, { referredUserExternalId: 'cus_someone_else' }), 'promo_code_customer_restricted');
      await expectRejected(() => referWith(code.code, { referredUserExternalId: 'CUS_ALLOWED' }), 'promo_code_customer_restricted');
      const ok = await referWith(code.code, { referredUserExternalId: 'cus_allowed' });
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
    });

    it('rejects a sale for another customer (existing, or new with no external id), accepts the right customer', async () => {
      const { code, affiliate } = await fixture({ code: { limitToCustomers: true, customerId: 'cus_vip' } });
      const stranger = await customerOf(affiliate, 'cus_stranger');
      await expectRejected(() => sellWith(code.code, { email: stranger.email, name: undefined }), 'promo_code_customer_restricted');
      await expectRejected(() => sellWith(code.code, { referralId: stranger.id, email: undefined, name: undefined }), 'promo_code_customer_restricted');
      await expectRejected(() => sellWith(code.code), 'promo_code_customer_restricted');
      const vip = await customerOf(affiliate, 'cus_vip');
      const ok = await sellWith(code.code, { email: vip.email, name: undefined });
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
      assert.equal(ok.body.referralId, vip.id);
    });
  });

  describe('promo_code_not_assigned', () => {
    it('rejects a code without an affiliate when it is the only way to credit somebody', async () => {
      const { code } = await fixture({ assign: false });
      await expectRejected(() => referWith(code.code), 'promo_code_not_assigned');
      await expectRejected(() => sellWith(code.code), 'promo_code_not_assigned');
    });

    it('rejects a code without an affiliate even when another identifier names the affiliate', async () => {
      const { code, affiliate } = await fixture({ assign: false });
      await expectRejected(() => referWith(code.code, { affiliateId: affiliate.id }), 'promo_code_not_assigned');
      await expectRejected(() => referWith(code.code, { affiliateEmail: affiliate.email }), 'promo_code_not_assigned');
      const customer = await customerOf(affiliate);
      await expectRejected(() => sellWith(code.code, { email: customer.email, name: undefined }), 'promo_code_not_assigned');
      await expectRejected(() => sellWith(code.code, { referralId: affiliate.id }), 'promo_code_not_assigned');
    });

    it('rejects a limitToAffiliate code when another affiliate is credited, on both endpoints', async () => {
      const { code, affiliate: owner } = await fixture({ code: { limitToAffiliate: true } });
      const otherAffiliate = await createAffiliate();
      await expectRejected(() => referWith(code.code, { affiliateId: otherAffiliate.id }), 'promo_code_not_assigned');
      await expectRejected(() => referWith(code.code, { affiliateId: otherAffiliate.link }), 'promo_code_not_assigned');
      await expectRejected(() => referWith(code.code, { affiliateEmail: otherAffiliate.email }), 'promo_code_not_assigned');
      const theirCustomer = await customerOf(otherAffiliate);
      await expectRejected(() => sellWith(code.code, { email: theirCustomer.email, name: undefined }), 'promo_code_not_assigned');
      await expectRejected(() => sellWith(code.code, { referralId: theirCustomer.id, email: undefined, name: undefined }), 'promo_code_not_assigned');
      await expectRejected(() => sellWith(code.code, { referralId: otherAffiliate.id }), 'promo_code_not_assigned');

      // Its own affiliate may use it, however named.
      assert.equal((await referWith(code.code, { affiliateId: owner.id })).status, 201);
      assert.equal((await referWith(code.code, { affiliateEmail: owner.email })).status, 201);
      assert.equal((await sellWith(code.code)).status, 201);
      assert.equal(await timesRedeemed(code.id), 3);
    });

    it('without limitToAffiliate, redeems the code while crediting the affiliate another identifier names', async () => {
      const { code } = await fixture();
      const otherAffiliate = await createAffiliate();
      const res = await referWith(code.code, { affiliateId: otherAffiliate.id });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.affiliateId, otherAffiliate.id);
      assert.equal(await timesRedeemed(code.id), 1);
    });
  });

  describe('order of the checks (docs/api.md: the first failing reason in the table\'s order)', () => {
    it('reports inactive before expired, expired before exhausted, exhausted before coupon_invalid', async () => {
      const { code, coupon } = await fixture({ code: { maxRedemptions: 1 } });
      await redeemOnce(code.code);
      // Now exhausted; also make the coupon invalid, the code expired and inactive, one at a time.
      const stored = await db().updateTable('coupons').set({ valid: 0 }).where('id', '=', coupon.id).executeTakeFirst();
      assert.equal(Number(stored.numUpdatedRows), 1);
      await expectRejected(() => referWith(code.code), 'promo_code_exhausted');
      await api.put('/promotional-codes', { promotionalCodeId: code.id, expiresAt: new Date(Date.now() - 1000).toISOString() });
      await expectRejected(() => sellWith(code.code), 'promo_code_expired');
      await api.put('/promotional-codes', { promotionalCodeId: code.id, active: false });
      await expectRejected(() => referWith(code.code), 'promo_code_inactive');
    });

    it('reports coupon_invalid before any rule about the customer or the affiliate', async () => {
      const { code } = await fixture({ coupon: { valid: false }, assign: false, code: { minimumAmount: 500, limitToCustomers: true, customerId: 'cus_x' } });
      await expectRejected(() => referWith(code.code), 'coupon_invalid');
      await expectRejected(() => sellWith(code.code, { totalEarned: 1 }), 'coupon_invalid');
    });

    it('reports minimum_amount before first_time_only before customer_restricted before not_assigned', async () => {
      const { code, affiliate } = await fixture({
        code: { minimumAmount: 50, firstTimeOrder: true, limitToCustomers: true, customerId: 'cus_only', limitToAffiliate: true },
      });
      const otherAffiliate = await createAffiliate();
      const customer = await customerOf(otherAffiliate, 'cus_not_it');
      assert.equal((await api.post('/sales', { totalEarned: 10, email: customer.email })).status, 201);
      const send = (totalEarned: number) => () => sellWith(code.code, { email: customer.email, name: undefined, totalEarned });
      await expectRejected(send(10), 'promo_code_minimum_amount');
      await expectRejected(send(60), 'promo_code_first_time_only');

      const fresh = await customerOf(otherAffiliate, 'cus_not_it_either');
      await expectRejected(() => sellWith(code.code, { email: fresh.email, name: undefined, totalEarned: 60 }), 'promo_code_customer_restricted');
      const right = await customerOf(otherAffiliate, 'cus_only');
      await expectRejected(() => sellWith(code.code, { email: right.email, name: undefined, totalEarned: 60 }), 'promo_code_not_assigned');
      void affiliate;
    });
  });

  describe('unknown codes', () => {
    it('answers an unknown code with 404 on both endpoints, writing nothing', async () => {
      await expectRejected(() => referWith('NO-SUCH-CODE'), 'not_found', 404);
      await expectRejected(() => sellWith('NO-SUCH-CODE'), 'not_found', 404);
    });

    it('answers another program\'s code with 404', async () => {
      const other = await t.createTenant();
      const theirAffiliate = await createAffiliate(other);
      const theirCoupon = await createCoupon({}, other);
      const theirs = await createCode({ couponId: theirCoupon.id, affiliateId: theirAffiliate.id }, other);
      await expectRejected(() => referWith(theirs.code), 'not_found', 404);
      await expectRejected(() => sellWith(theirs.code), 'not_found', 404);
      assert.equal(Number((await storedCode(theirs.id)).times_redeemed), 0);
    });
  });

  // ---- success -----------------------------------------------------------------------------

  describe('successful redemption', () => {
    it('POST /referrals with promoCode: 201, credits the code\'s affiliate, increments both counts, writes the events', async () => {
      const { code, coupon, affiliate } = await fixture({ code: { maxRedemptions: 5 } });
      const before = await snapshot();
      const email = uniqueEmail();
      const res = await api.post('/referrals', { name: ' Grace Hopper ', email, referredUserExternalId: 'cus_grace', promoCode: code.code.toLowerCase(), plan: 'pro' });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.deepEqual(res.body, {
        id: res.body.id,
        affiliateId: affiliate.id,
        name: 'Grace Hopper',
        email,
        referredUserExternalId: 'cus_grace',
        plan: 'pro',
        status: 'active',
      });
      assert.match(res.body.id, UUID);

      const referral = await db().selectFrom('referrals').selectAll().where('id', '=', res.body.id).executeTakeFirstOrThrow();
      assert.equal(referral.promotional_code_id, code.id);
      assert.equal(referral.affiliate_id, affiliate.id);
      const primaryLink = await db().selectFrom('affiliate_links').selectAll().where('affiliate_id', '=', affiliate.id).executeTakeFirstOrThrow();
      assert.equal(referral.link_id, primaryLink.id);
      assert.equal(Number(primaryLink.referrals), 1);

      const redeemed = (await api.get(`/promotional-codes?id=${code.id}`)).body as PromotionalCode;
      assert.equal(redeemed.timesRedeemed, 1);
      assert.equal(redeemed.updatedAt, code.updatedAt, 'a redemption is not an edit of the code');
      assert.equal(Number((await storedCode(code.id)).times_redeemed), 1);
      assert.equal(Number((await storedCoupon(coupon.id)).times_redeemed), 1);

      const after = await snapshot();
      const newEvents = after.events.filter((e) => !before.events.some((b) => b.id === e.id));
      assert.deepEqual(newEvents.map((e) => e.type).sort(), ['promotional_code.redeemed', 'referral.created']);
      assert.deepEqual(JSON.parse(newEvents.find((e) => e.type === 'referral.created')!.data), res.body);
      assert.deepEqual(JSON.parse(newEvents.find((e) => e.type === 'promotional_code.redeemed')!.data), redeemed);
      for (const e of newEvents) {
        assert.match(e.id, /^evt_/);
        assert.match(String(e.created_at), ISO_TIME);
      }

      const aff = (await api.get(`/affiliates?id=${affiliate.id}`)).body as { numberOfReferredUsers: number };
      assert.equal(aff.numberOfReferredUsers, 1);
    });

    it('POST /sales with promoCode: 201, a new customer of the code\'s affiliate, commission, counts and events', async () => {
      const { code, coupon, affiliate } = await fixture({ code: { minimumAmount: 10 } });
      const before = await snapshot();
      const email = uniqueEmail();
      const res = await api.post('/sales', { totalEarned: 80, name: 'Linus', email, promoCode: code.code, externalId: 'ch_1', externalInvoiceId: 'in_1' });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.ok(Number.isInteger(res.body.id));
      assert.match(res.body.referralId, UUID);
      assert.match(res.body.createdAt, ISO_TIME);
      assert.deepEqual(res.body, {
        id: res.body.id,
        affiliateId: affiliate.id,
        referralId: res.body.referralId,
        externalId: 'ch_1',
        externalInvoiceId: 'in_1',
        name: 'Linus',
        email,
        totalEarned: 80,
        commissionRate: 20,
        createdAt: res.body.createdAt,
        refundedAmount: 0,
        status: 'paid',
        commission: 16,
      });

      const sale = await db().selectFrom('sales').selectAll().where('id', '=', res.body.id).executeTakeFirstOrThrow();
      assert.equal(sale.promotional_code_id, code.id);
      assert.equal(Number(sale.total_earned), 8000);
      assert.equal(Number(sale.commission), 1600);
      const referral = await db().selectFrom('referrals').selectAll().where('id', '=', res.body.referralId).executeTakeFirstOrThrow();
      assert.equal(referral.affiliate_id, affiliate.id);
      assert.equal(referral.promotional_code_id, code.id);
      assert.equal(referral.email, email);

      assert.equal(await timesRedeemed(code.id), 1);
      assert.equal(Number((await storedCoupon(coupon.id)).times_redeemed), 1);

      const after = await snapshot();
      const newEvents = after.events.filter((e) => !before.events.some((b) => b.id === e.id));
      assert.deepEqual(newEvents.map((e) => e.type).sort(), ['promotional_code.redeemed', 'referral.created', 'sale.created']);
      assert.deepEqual(JSON.parse(newEvents.find((e) => e.type === 'sale.created')!.data), res.body);
      const redeemedEvent = JSON.parse(newEvents.find((e) => e.type === 'promotional_code.redeemed')!.data) as PromotionalCode;
      assert.equal(redeemedEvent.id, code.id);
      assert.equal(redeemedEvent.timesRedeemed, 1);

      const aff = (await api.get(`/affiliates?id=${affiliate.id}`)).body as { numberOfReferredUsers: number; totalCommissionEarned: number };
      assert.equal(aff.numberOfReferredUsers, 1);
      assert.equal(aff.totalCommissionEarned, 16);
    });

    it('counts redemptions through both endpoints on the same code and coupon', async () => {
      const { code, coupon, affiliate } = await fixture();
      await redeemOnce(code.code);
      const customer = await customerOf(affiliate);
      assert.equal((await sellWith(code.code, { email: customer.email, name: undefined })).status, 201);
      assert.equal((await sellWith(code.code)).status, 201);
      assert.equal(await timesRedeemed(code.id), 3);
      assert.equal(Number((await storedCoupon(coupon.id)).times_redeemed), 3);
      const redeemedEvents = (await snapshot()).events.filter((e) => e.type === 'promotional_code.redeemed' && (JSON.parse(e.data) as PromotionalCode).id === code.id);
      assert.deepEqual(redeemedEvents.map((e) => (JSON.parse(e.data) as PromotionalCode).timesRedeemed).sort(), [1, 2, 3]);
    });

    it('does not redeem a code when the referral itself is refused (duplicate e-mail → 409)', async () => {
      const { code } = await fixture();
      const first = await redeemOnce(code.code);
      const before = await snapshot();
      const dup = await referWith(code.code, { email: first.body.email });
      assert.equal(dup.status, 409);
      assert.deepEqual(await snapshot(), before);
      assert.equal(await timesRedeemed(code.id), 1);
    });
  });

  // ---- concurrency -------------------------------------------------------------------------

  describe('concurrency', () => {
    it('200 parallel referrals on a code with maxRedemptions 50: exactly 50 succeed' + raceNote, async () => {
      const tenant = await t.createTenant();
      const affiliate = await createAffiliate(tenant);
      const coupon = await createCoupon({}, tenant);
      const code = await createCode({ couponId: coupon.id, affiliateId: affiliate.id, maxRedemptions: 50 }, tenant);

      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          tenant.post('/referrals', { name: `Racer ${i}`, email: `racer${i}@example.com`, referredUserExternalId: `cus_${i}`, promoCode: code.code }),
        ),
      );
      const created = results.filter((r) => r.status === 201);
      const rejected = results.filter((r) => r.status !== 201);
      assert.equal(created.length, 50, `statuses: ${JSON.stringify(results.map((r) => r.status))}`);
      assert.equal(rejected.length, 150);
      for (const r of rejected) assertProblem(r, 422, 'promo_code_exhausted');

      const got = (await tenant.get(`/promotional-codes?id=${code.id}`)).body as PromotionalCode;
      assert.equal(got.timesRedeemed, 50);
      assert.equal(Number((await storedCode(code.id)).times_redeemed), 50);
      assert.equal(Number((await storedCoupon(coupon.id)).times_redeemed), 50);

      const state = await snapshot(tenant.programId);
      assert.equal(state.referrals.length, 50);
      assert.ok(state.referrals.every((r) => r.promotional_code_id === code.id && r.affiliate_id === affiliate.id));
      assert.deepEqual(new Set(state.referrals.map((r) => r.id)), new Set(created.map((r) => r.body.id as string)));
      assert.equal(state.events.filter((e) => e.type === 'referral.created').length, 50);
      const redeemed = state.events.filter((e) => e.type === 'promotional_code.redeemed');
      assert.equal(redeemed.length, 50);
      assert.ok(redeemed.every((e) => (JSON.parse(e.data) as PromotionalCode).timesRedeemed <= 50));
      assert.equal(Number(state.affiliates.find((a) => a.id === affiliate.id)!.number_of_referred_users), 50);
      assert.equal(Number(state.links.find((l) => l.affiliate_id === affiliate.id)!.referrals), 50);
    });

    it('200 parallel sales over 3 codes sharing a coupon with maxRedemptions 50: exactly 50 succeed' + raceNote, async () => {
      const tenant = await t.createTenant({ commissionRate: 10 });
      const affiliates = [await createAffiliate(tenant), await createAffiliate(tenant), await createAffiliate(tenant)];
      const coupon = await createCoupon({ maxRedemptions: 50 }, tenant);
      const codes: PromotionalCode[] = [];
      for (const affiliate of affiliates) codes.push(await createCode({ couponId: coupon.id, affiliateId: affiliate.id }, tenant));

      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          tenant.post('/sales', { totalEarned: 25, name: `Buyer ${i}`, email: `buyer${i}@example.com`, promoCode: codes[i % 3]!.code }),
        ),
      );
      const created = results.filter((r) => r.status === 201);
      const rejected = results.filter((r) => r.status !== 201);
      assert.equal(created.length, 50, `statuses: ${JSON.stringify(results.map((r) => r.status))}`);
      assert.equal(rejected.length, 150);
      for (const r of rejected) assertProblem(r, 422, 'coupon_invalid');

      assert.equal(Number((await storedCoupon(coupon.id)).times_redeemed), 50);
      const state = await snapshot(tenant.programId);
      assert.equal(state.sales.length, 50);
      assert.equal(state.referrals.length, 50);
      let sum = 0;
      for (const code of codes) {
        const got = (await tenant.get(`/promotional-codes?id=${code.id}`)).body as PromotionalCode;
        assert.equal(got.timesRedeemed, state.sales.filter((s) => s.promotional_code_id === code.id).length, 'each code counts its own sales');
        sum += got.timesRedeemed;
      }
      assert.equal(sum, 50);
      assert.equal(state.events.filter((e) => e.type === 'sale.created').length, 50);
      assert.equal(state.events.filter((e) => e.type === 'referral.created').length, 50);
      assert.equal(state.events.filter((e) => e.type === 'promotional_code.redeemed').length, 50);
      const commission = state.affiliates.reduce((total, a) => total + Number(a.total_commission_earned), 0);
      assert.equal(commission, 50 * 250, 'each sale of 25.00 at 10 % earns 2.50');
      const got = (await tenant.get(`/coupons?id=${coupon.id}`)).body as Coupon;
      assert.equal(got.valid, false);
    });

    it('20 parallel sales of one customer with a firstTimeOrder code: exactly one first order' + raceNote, async () => {
      const tenant = await t.createTenant();
      const affiliate = await createAffiliate(tenant);
      const coupon = await createCoupon({}, tenant);
      const code = await createCode({ couponId: coupon.id, affiliateId: affiliate.id, firstTimeOrder: true }, tenant);
      const customer = await tenant.post('/referrals', { name: 'Once', email: 'once@example.com', referredUserExternalId: 'cus_once', affiliateId: affiliate.id });
      assert.equal(customer.status, 201);

      const results = await Promise.all(
        Array.from({ length: 20 }, () => tenant.post('/sales', { totalEarned: 10, email: 'once@example.com', promoCode: code.code })),
      );
      const tally: Record<string, number> = {};
      for (const r of results) tally[`${r.status} ${r.body?.code ?? ''}`.trim()] = (tally[`${r.status} ${r.body?.code ?? ''}`.trim()] ?? 0) + 1;
      assert.deepEqual(tally, { '201': 1, '422 promo_code_first_time_only': 19 });
      const state = await snapshot(tenant.programId);
      assert.equal(state.sales.length, 1);
      assert.equal(Number(state.codes[0]!.times_redeemed), 1);
    });

    it('two server processes over one database: 200 parallel referrals on maxRedemptions 50 → exactly 50', async () => {
      const tenant = await t.createTenant();
      const affiliate = await createAffiliate(tenant);
      const coupon = await createCoupon({}, tenant);
      const code = await createCode({ couponId: coupon.id, affiliateId: affiliate.id, maxRedemptions: 50 }, tenant);
      const second = await startSecondProcess(t.config.databaseUrl);
      try {
        const viaSecond = apiClient(second.url, tenant.token, tenant.programId);
        const results = await Promise.all(
          Array.from({ length: 200 }, (_, i) =>
            (i % 2 === 0 ? tenant : viaSecond).post('/referrals', {
              name: `Proc ${i}`,
              email: `proc${i}@example.com`,
              referredUserExternalId: `cus_${i}`,
              promoCode: code.code,
            }),
          ),
        );
        const tally: Record<string, number> = {};
        for (const r of results) tally[`${r.status} ${r.body?.code ?? ''}`.trim()] = (tally[`${r.status} ${r.body?.code ?? ''}`.trim()] ?? 0) + 1;
        assert.deepEqual(tally, { '201': 50, '422 promo_code_exhausted': 150 });
        const rejected = results.filter((r) => r.status !== 201);
        assert.equal(rejected.length, 150);
        for (const r of rejected) assertProblem(r, 422, 'promo_code_exhausted');
        assert.equal(Number((await storedCode(code.id)).times_redeemed), 50);
        assert.equal(Number((await storedCoupon(coupon.id)).times_redeemed), 50);
        const state = await snapshot(tenant.programId);
        assert.equal(state.referrals.length, 50);
        assert.equal(state.events.filter((e) => e.type === 'promotional_code.redeemed').length, 50);
      } finally {
        await second.stop();
      }
    });
  });
});
