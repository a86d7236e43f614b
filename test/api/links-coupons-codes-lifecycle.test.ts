// Contract tests of the lifecycle endpoints beyond the spec's table: GET and DELETE /links,
// PUT and DELETE /coupons, DELETE /promotional-codes and POST /promotional-codes/bulk
// (CONTRACT.md "Status codes", "One object or a list", "Events"; docs/api.md "Links",
// "Coupons", "Promotional codes"). Real HTTP to a real server over the dialect under test.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { programContext, rawDb, startTestServer, type ApiClient, type ApiResponse, type TestServer } from '../helpers/test-server.ts';
import { assertNewestFirst, assertProblem, nextPath } from '../helpers/api-assertions.ts';
import { newAffiliate, newCode, newCoupon, newReferral, newSale, unique, uniqueEmail } from '../helpers/fixtures.ts';
import { bulkCreatePromotionalCodes } from '../../src/modules/coupons/promotional-code.service.ts';

const RANDOM_UPPER = '[ABCDEFGHJKMNPQRSTUVWXYZ23456789]';
const RANDOM_LOWER = '[abcdefghjkmnpqrstuvwxyz23456789]';

describe('links, coupons and promotional codes: lifecycle', () => {
  let t: TestServer;
  let api: ApiClient;
  let other: ApiClient;

  before(async () => {
    t = await startTestServer();
    api = await t.createTenant({ currency: 'USD' });
    other = await t.createTenant({ currency: 'USD' });
  });
  after(() => t.close());

  const db = () => rawDb(t);
  /** A DELETE as the SDKs send it: the target in the query, or JSON in the body. */
  const del = (client: ApiClient, path: string, body?: unknown): Promise<ApiResponse> => client.request('DELETE', path, body);
  const eventsOf = async (type: string, programId = api.programId) =>
    (await db().selectFrom('events').selectAll().where('program_id', '=', programId).where('type', '=', type).execute()).map((e) => JSON.parse(e.data));
  const eventCount = async (programId = api.programId) =>
    Number((await db().selectFrom('events').select((eb) => eb.fn.countAll().as('n')).where('program_id', '=', programId).executeTakeFirstOrThrow()).n);
  const codeCount = async (programId = api.programId) =>
    Number((await db().selectFrom('promotional_codes').select((eb) => eb.fn.countAll().as('n')).where('program_id', '=', programId).executeTakeFirstOrThrow()).n);
  const linkRow = (id: string) => db().selectFrom('affiliate_links').selectAll().where('id', '=', id).executeTakeFirst();
  const couponRow = (id: string) => db().selectFrom('coupons').selectAll().where('id', '=', id).executeTakeFirst();
  const codeRow = (id: string) => db().selectFrom('promotional_codes').selectAll().where('id', '=', id).executeTakeFirst();
  const referralRow = (id: string) => db().selectFrom('referrals').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const saleRow = (id: string | number) => db().selectFrom('sales').selectAll().where('id', '=', id as string).executeTakeFirstOrThrow();
  const getOne = async (path: string) => {
    const res = await api.get(path);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };

  async function newLink(client = api, affiliateId?: string) {
    const owner = affiliateId ?? (await newAffiliate(client)).id;
    return (await client.post('/links', { link: unique('extra-'), affiliateId: owner })).body;
  }

  describe('GET /links', () => {
    it('fetches one link by id, or by link string ignoring case, exactly as POST returned it', async () => {
      const link = await newLink();
      assert.deepEqual(await getOne(`/links?id=${link.id}`), link);
      assert.deepEqual(await getOne(`/links?link=${link.link.toUpperCase()}`), link);
      assert.deepEqual(await getOne(`/links?id=${link.id.toUpperCase()}&link=${link.link}`), link);
    });

    it('a unique key plus a filter that does not match is 404; a matching one finds the link', async () => {
      const link = await newLink();
      const stranger = await newAffiliate(api);
      assert.deepEqual(await getOne(`/links?id=${link.id}&affiliateId=${link.affiliate.id}`), link);
      assert.deepEqual(await getOne(`/links?link=${link.link}&affiliateEmail=${encodeURIComponent(link.affiliate.email.toUpperCase())}`), link);
      assertProblem(await api.get(`/links?id=${link.id}&affiliateId=${stranger.id}`), 404, 'not_found');
      assertProblem(await api.get(`/links?id=${link.id}&affiliateEmail=${uniqueEmail('nobody')}`), 404, 'not_found');
    });

    it('404 for an unknown id or link and for another program\'s link', async () => {
      assertProblem(await api.get(`/links?id=${crypto.randomUUID()}`), 404, 'not_found');
      assertProblem(await api.get(`/links?link=${unique('nope-')}`), 404, 'not_found');
      const theirs = await newLink(other);
      assertProblem(await api.get(`/links?id=${theirs.id}`), 404, 'not_found');
      assertProblem(await api.get(`/links?link=${theirs.link}`), 404, 'not_found');
      assert.equal((await other.get(`/links?id=${theirs.id}`)).status, 200);
    });

    it("lists an affiliate's links (its own link too) newest first, by affiliateId or affiliateEmail", async () => {
      const affiliate = await newAffiliate(api);
      const first = await newLink(api, affiliate.id);
      await sleep(3);
      const second = await newLink(api, affiliate.id);
      await newLink(); // someone else's
      const byId = await api.get(`/links?affiliateId=${affiliate.id}`);
      assert.equal(byId.status, 200);
      assert.ok(Array.isArray(byId.body));
      assert.deepEqual(byId.body.map((l: any) => l.link).sort(), [affiliate.link, first.link, second.link].sort());
      assertNewestFirst(byId.body);
      assert.deepEqual(byId.body.find((l: any) => l.id === second.id), second);
      const byEmail = await api.get(`/links?affiliateEmail=${encodeURIComponent(`  ${affiliate.email.toUpperCase()} `)}`);
      assert.deepEqual(byEmail.body, byId.body);
      const both = await api.get(`/links?affiliateId=${affiliate.id}&affiliateEmail=${encodeURIComponent(affiliate.email)}`);
      assert.deepEqual(both.body, byId.body);
    });

    it('gives [] for an affiliateEmail of nobody, or affiliateId and affiliateEmail of two affiliates', async () => {
      const a = await newAffiliate(api);
      const b = await newAffiliate(api);
      assert.deepEqual((await api.get(`/links?affiliateEmail=${uniqueEmail('nobody')}`)).body, []);
      assert.deepEqual((await api.get(`/links?affiliateId=${a.id}&affiliateEmail=${encodeURIComponent(b.email)}`)).body, []);
      assert.deepEqual((await api.get(`/links?affiliateId=${crypto.randomUUID()}`)).body, []);
    });

    it("lists only the program's links, pages with limit and cursor, and filters createdAfter", async () => {
      const tenant = await t.createTenant();
      const a = await newAffiliate(tenant);
      await sleep(3);
      const extra = await newLink(tenant, a.id);
      await newLink(other);
      const all = await tenant.get('/links');
      assert.deepEqual(all.body.map((l: any) => l.link), [extra.link, a.link]);
      const page1 = await tenant.get('/links?limit=1');
      assert.deepEqual(page1.body.map((l: any) => l.id), [extra.id]);
      const next = nextPath(page1);
      assert.ok(next);
      const page2 = await tenant.get(next);
      assert.deepEqual(page2.body.map((l: any) => l.link), [a.link]);
      assert.equal(nextPath(page2), null);
      const after = await tenant.get(`/links?createdAfter=${encodeURIComponent(all.body[1].createdAt)}`);
      assert.deepEqual(after.body.map((l: any) => l.id), [extra.id]);
    });

    it('422 for bad query values, with pointers', async () => {
      assertProblem(await api.get('/links?id=not-a-uuid'), 422, 'validation_failed', '#/id');
      assertProblem(await api.get('/links?link=no%20spaces'), 422, 'validation_failed', '#/link');
      assertProblem(await api.get('/links?affiliateEmail=nope'), 422, 'validation_failed', '#/affiliateEmail');
      assertProblem(await api.get('/links?limit=0'), 422, 'validation_failed', '#/limit');
      assertProblem(await api.get('/links?limit=1001'), 422, 'validation_failed', '#/limit');
      assertProblem(await api.get(`/links?link=${'a'.repeat(65)}`), 422, 'validation_failed', '#/link');
    });
  });

  describe('DELETE /links', () => {
    it('deletes by id in the query: 200 with the link as it was, row gone, link.deleted written', async () => {
      const link = await newLink();
      const res = await del(api, `/links?id=${link.id}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, link);
      assert.equal(await linkRow(link.id), undefined);
      assert.deepEqual((await eventsOf('link.deleted')).filter((e) => e.id === link.id), [link]);
      assertProblem(await api.get(`/links?id=${link.id}`), 404, 'not_found');
      assertProblem(await del(api, `/links?id=${link.id}`), 404, 'not_found');
    });

    it('deletes by id in a JSON body, and by link string (any case) in a JSON body', async () => {
      const byId = await newLink();
      const res = await fetch(`${t.url}/api/v1/links`, {
        method: 'DELETE',
        headers: { Authorization: `Bearer ${api.token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ id: byId.id }),
      });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), byId);
      assert.equal(await linkRow(byId.id), undefined);
      const byLink = await newLink();
      const res2 = await del(api, '/links', { link: byLink.link.toLowerCase() });
      assert.equal(res2.status, 200);
      assert.equal(res2.body.id, byLink.id);
      assert.equal(await linkRow(byLink.id), undefined);
    });

    it("refuses the affiliate's own link with 409 conflict and changes nothing", async () => {
      const affiliate = await newAffiliate(api);
      const own = await getOne(`/links?link=${affiliate.link}`);
      const events = await eventCount();
      const res = await del(api, `/links?id=${own.id}`);
      assertProblem(res, 409, 'conflict');
      assert.match(res.body.detail, /PUT \/links/);
      assert.match(res.body.detail, /delete the affiliate/);
      assertProblem(await del(api, '/links', { link: affiliate.link, force: true }), 409, 'conflict');
      assert.ok(await linkRow(own.id));
      assert.equal(await eventCount(), events);
      assert.equal((await getOne(`/affiliates?id=${affiliate.id}`)).link, affiliate.link);
    });

    it('refuses a link that referrals and sales use (409 has_dependents, nothing written); force=true detaches them and keeps the counters', async () => {
      const affiliate = await newAffiliate(api);
      const link = await newLink(api, affiliate.id);
      const referral = await newReferral(api, { affiliateId: link.link });
      const sale = await newSale(api, { email: referral.email, totalEarned: 80 });
      assert.equal((await referralRow(referral.id)).link_id, link.id, 'the referral is credited through the link');
      assert.equal((await saleRow(sale.id)).link_id, link.id, 'the sale is credited through the link');
      const affiliateBefore = await getOne(`/affiliates?id=${affiliate.id}`);
      const linkBefore = await getOne(`/links?id=${link.id}`);
      assert.equal(linkBefore.referrals, 1);
      assert.equal(linkBefore.sales, 1);
      const events = await eventCount();

      const refused = await del(api, `/links?id=${link.id}`);
      assertProblem(refused, 409, 'has_dependents');
      assert.match(refused.body.detail, /force=true/);
      assertProblem(await del(api, '/links', { id: link.id, force: false }), 409, 'has_dependents');
      assert.deepEqual(await getOne(`/links?id=${link.id}`), linkBefore);
      assert.equal(await eventCount(), events);

      const forced = await del(api, `/links?id=${link.id}&force=true`);
      assert.equal(forced.status, 200, JSON.stringify(forced.body));
      assert.deepEqual(forced.body, linkBefore);
      assert.equal(await linkRow(link.id), undefined);
      const referralAfter = await referralRow(referral.id);
      const saleAfter = await saleRow(sale.id);
      assert.equal(referralAfter.link_id, null);
      assert.equal(referralAfter.affiliate_id, affiliate.id);
      assert.equal(saleAfter.link_id, null);
      assert.equal(saleAfter.affiliate_id, affiliate.id);
      assert.deepEqual(await getOne(`/affiliates?id=${affiliate.id}`), affiliateBefore, "the affiliate's counters do not change");
      assert.deepEqual((await eventsOf('link.deleted')).filter((e) => e.id === link.id), [linkBefore]);
    });

    it("404 for an unknown link and for another program's link, which stays", async () => {
      assertProblem(await del(api, `/links?id=${crypto.randomUUID()}`), 404, 'not_found');
      assertProblem(await del(api, '/links', { link: unique('nope-') }), 404, 'not_found');
      const theirs = await newLink(other);
      assertProblem(await del(api, `/links?id=${theirs.id}&force=true`), 404, 'not_found');
      assertProblem(await del(api, '/links', { link: theirs.link, force: true }), 404, 'not_found');
      assert.ok(await linkRow(theirs.id));
    });

    it('422 without a target or with a bad one', async () => {
      assertProblem(await del(api, '/links'), 422, 'validation_failed', '#/id');
      assertProblem(await del(api, '/links', {}), 422, 'validation_failed', '#/id');
      assertProblem(await del(api, '/links?id=nope'), 422, 'validation_failed', '#/id');
      assertProblem(await del(api, '/links', { id: 5 }), 422, 'validation_failed', '#/id');
      assertProblem(await del(api, '/links', { link: 'no spaces' }), 422, 'validation_failed', '#/link');
      assertProblem(await del(api, '/links', [1]), 422, 'validation_failed');
      assertProblem(await del(api, '/links', '"just a string"'), 422, 'validation_failed');
      assertProblem(await del(api, '/links', 'null'), 422, 'validation_failed', '#/id');
      assertProblem(await del(api, '/links', '{not json'), 400, 'bad_request');
      const link = await newLink();
      assertProblem(await del(api, '/links', { id: link.id, force: 'yes' }), 422, 'validation_failed', '#/force');
      assert.ok(await linkRow(link.id));
    });
  });

  describe('PUT /coupons', () => {
    it('updates every changeable field: 200 with the coupon, stored, updatedAt moved, coupon.updated written', async () => {
      const coupon = await newCoupon(api, { externalId: unique('ext') });
      await sleep(3);
      const body = {
        id: coupon.id,
        name: '  Renamed coupon ',
        externalId: unique('ext2'),
        valid: false,
        redeemBy: '2031-01-02T03:04:05+02:00',
        maxRedemptions: 7,
        limitToProducts: true,
        productIds: ['prod_1', 'prod_2'],
        integrationType: 'stripe',
      };
      const res = await api.put('/coupons', body);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, {
        ...coupon,
        name: 'Renamed coupon',
        externalId: body.externalId,
        valid: false,
        redeemBy: '2031-01-02T01:04:05.000Z',
        maxRedemptions: 7,
        limitToProducts: true,
        productIds: ['prod_1', 'prod_2'],
        integrationType: 'stripe',
        updatedAt: res.body.updatedAt,
      });
      assert.ok(res.body.updatedAt > coupon.updatedAt);
      assert.deepEqual(await getOne(`/coupons?id=${coupon.id}`), res.body);
      const row = (await couponRow(coupon.id))!;
      assert.equal(row.name, 'Renamed coupon');
      assert.equal(Number(row.valid), 0);
      assert.equal(JSON.parse(row.product_ids).length, 2);
      assert.deepEqual(await eventsOf('coupon.updated'), [res.body]);
    });

    it('accepts couponId for id, clears nullable fields with null, and keeps what is not sent', async () => {
      const coupon = await newCoupon(api, { externalId: unique('ext'), maxRedemptions: 3, redeemBy: '2031-01-01T00:00:00Z', integrationType: 'x' });
      const res = await api.put('/coupons', { couponId: coupon.id, externalId: null, maxRedemptions: null, redeemBy: null, integrationType: null });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.externalId, null);
      assert.equal(res.body.maxRedemptions, null);
      assert.equal(res.body.redeemBy, null);
      assert.equal(res.body.integrationType, null);
      assert.equal(res.body.name, coupon.name);
      assert.equal(res.body.percentOff, coupon.percentOff);
      const same = await api.put('/coupons', { id: coupon.id, couponId: coupon.id });
      assert.equal(same.status, 200);
      assertProblem(await api.put('/coupons', { id: coupon.id, couponId: crypto.randomUUID() }), 422, 'validation_failed', '#/couponId');
    });

    it('accepts the discount terms with their current values and refuses any other (422, nothing written)', async () => {
      const percent = await newCoupon(api, { percentOff: 15, duration: 'repeating', durationInMonths: 3 });
      const same = await api.put('/coupons', {
        id: percent.id, couponType: 'PERCENTAGE', percentOff: 15, amountOff: null, currency: null, duration: 'repeating', durationInMonths: 3, name: 'Same terms',
      });
      assert.equal(same.status, 200, JSON.stringify(same.body));
      assert.equal(same.body.name, 'Same terms');
      const flat = await newCoupon(api, { couponType: 'FLAT', percentOff: undefined, amountOff: 5.5 });
      assert.equal((await api.put('/coupons', { id: flat.id, amountOff: 5.5, currency: 'usd', percentOff: null, couponType: 'FLAT', duration: 'once' })).status, 200);

      const stored = await couponRow(percent.id);
      const events = await eventCount();
      for (const [field, value] of [
        ['percentOff', 20], ['couponType', 'FLAT'], ['amountOff', 5], ['currency', 'EUR'], ['duration', 'forever'], ['durationInMonths', 6], ['durationInMonths', null],
      ] as const) {
        const res = await api.put('/coupons', { id: percent.id, name: 'Changed', [field]: value });
        assertProblem(res, 422, 'validation_failed', `#/${field}`);
        assert.match(res.body.errors[0].detail, /new coupon/);
      }
      assertProblem(await api.put('/coupons', { id: flat.id, amountOff: 6 }), 422, 'validation_failed', '#/amountOff');
      const both = await api.put('/coupons', { id: percent.id, percentOff: 1, duration: 'once' });
      assert.deepEqual(assertProblem(both, 422, 'validation_failed'), ['#/duration', '#/percentOff'], 'every changed term is named');
      assert.deepEqual(await couponRow(percent.id), stored);
      assert.equal(await eventCount(), events);
    });

    it('limitToProducts: true needs products, the stored ones or sent ones', async () => {
      const coupon = await newCoupon(api);
      assertProblem(await api.put('/coupons', { id: coupon.id, limitToProducts: true }), 422, 'validation_failed', '#/productIds');
      assertProblem(await api.put('/coupons', { id: coupon.id, limitToProducts: true, productIds: [] }), 422, 'validation_failed', '#/productIds');
      const withProducts = await newCoupon(api, { productIds: ['p1'] });
      assert.equal((await api.put('/coupons', { id: withProducts.id, limitToProducts: true })).status, 200);
      assertProblem(await api.put('/coupons', { id: withProducts.id, productIds: [] }), 422, 'validation_failed', '#/productIds');
    });

    it('409 conflict for an externalId another coupon of the program has (not for another program\'s)', async () => {
      const taken = unique('ext');
      await newCoupon(api, { externalId: taken });
      await newCoupon(other, { externalId: unique('ext-other') });
      const coupon = await newCoupon(api);
      const res = await api.put('/coupons', { id: coupon.id, externalId: taken });
      assertProblem(res, 409, 'conflict');
      assert.equal((await couponRow(coupon.id))!.external_id, null);
      const theirs = unique('theirs');
      await newCoupon(other, { externalId: theirs });
      assert.equal((await api.put('/coupons', { id: coupon.id, externalId: theirs })).status, 200);
      assert.equal((await api.put('/coupons', { id: coupon.id, externalId: theirs })).status, 200, 'its own externalId is no conflict');
    });

    it("404 for an unknown coupon and another program's, 422 for bad input", async () => {
      assertProblem(await api.put('/coupons', { id: crypto.randomUUID(), name: 'x' }), 404, 'not_found');
      const theirs = await newCoupon(other);
      assertProblem(await api.put('/coupons', { id: theirs.id, name: 'Hijacked' }), 404, 'not_found');
      assert.equal((await couponRow(theirs.id))!.name, theirs.name);
      const coupon = await newCoupon(api);
      assertProblem(await api.put('/coupons', { name: 'no id' }), 422, 'validation_failed', '#/id');
      assertProblem(await api.put('/coupons', { id: 'nope' }), 422, 'validation_failed', '#/id');
      assertProblem(await api.put('/coupons', { id: coupon.id, name: '   ' }), 422, 'validation_failed', '#/name');
      assertProblem(await api.put('/coupons', { id: coupon.id, name: 'x'.repeat(201) }), 422, 'validation_failed', '#/name');
      assertProblem(await api.put('/coupons', { id: coupon.id, valid: 'yes' }), 422, 'validation_failed', '#/valid');
      assertProblem(await api.put('/coupons', { id: coupon.id, maxRedemptions: 0 }), 422, 'validation_failed', '#/maxRedemptions');
      assertProblem(await api.put('/coupons', { id: coupon.id, maxRedemptions: 1e20 }), 422, 'validation_failed', '#/maxRedemptions');
      // Beyond a 64-bit integer PostgreSQL would fail the statement (a 500): bounded on POST too.
      assertProblem(await api.post('/coupons', { name: 'Huge', couponType: 'PERCENTAGE', percentOff: 5, maxRedemptions: 1e20 }), 422, 'validation_failed', '#/maxRedemptions');
      assertProblem(await api.post('/promotional-codes', { couponId: coupon.id, maxRedemptions: 1e20 }), 422, 'validation_failed', '#/maxRedemptions');
      assertProblem(await api.put('/coupons', { id: coupon.id, redeemBy: 'tomorrow' }), 422, 'validation_failed', '#/redeemBy');
      assertProblem(await api.put('/coupons', { id: coupon.id, externalId: '' }), 422, 'validation_failed', '#/externalId');
      assertProblem(await api.put('/coupons', { id: coupon.id, integrationType: 'x'.repeat(51) }), 422, 'validation_failed', '#/integrationType');
      assertProblem(await api.put('/coupons', { id: coupon.id, couponType: 'x'.repeat(21) }), 422, 'validation_failed', '#/couponType');
    });
  });

  describe('DELETE /coupons', () => {
    it('deletes a coupon with its codes: 200 with the coupon as it was, one coupon.deleted event', async () => {
      const coupon = await newCoupon(api);
      const a = await newCode(api, { couponId: coupon.id });
      const b = await newCode(api, { couponId: coupon.id });
      const before = await getOne(`/coupons?id=${coupon.id}`);
      assert.equal(before.promotionalCodes.length, 2);
      const codeEvents = (await eventsOf('promotional_code.deleted')).length;
      const res = await del(api, `/coupons?id=${coupon.id}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, before);
      assert.equal(await couponRow(coupon.id), undefined);
      assert.equal(await codeRow(a.id), undefined);
      assert.equal(await codeRow(b.id), undefined);
      assert.deepEqual((await eventsOf('coupon.deleted')).filter((e) => e.id === coupon.id), [before]);
      assert.equal((await eventsOf('promotional_code.deleted')).length, codeEvents, 'its codes go without events of their own');
      assertProblem(await api.get(`/coupons?id=${coupon.id}`), 404, 'not_found');
      assertProblem(await api.get(`/promotional-codes?id=${a.id}`), 404, 'not_found');
    });

    it('takes the id in a JSON body, as id or couponId', async () => {
      const one = await newCoupon(api);
      const res = await del(api, '/coupons', { id: one.id });
      assert.equal(res.status, 200);
      assert.equal(res.body.id, one.id);
      const two = await newCoupon(api);
      const res2 = await del(api, '/coupons', { couponId: two.id });
      assert.equal(res2.status, 200);
      assert.equal(await couponRow(two.id), undefined);
    });

    it('refuses a coupon whose code was redeemed (409 has_dependents, nothing written); force=true keeps the referrals and sales', async () => {
      const affiliate = await newAffiliate(api);
      const coupon = await newCoupon(api);
      const redeemed = await newCode(api, { couponId: coupon.id, affiliateId: affiliate.id });
      const unused = await newCode(api, { couponId: coupon.id });
      const referral = await newReferral(api, { promoCode: redeemed.code });
      const sale = await newSale(api, { promoCode: redeemed.code, totalEarned: 40 });
      assert.equal((await referralRow(referral.id)).promotional_code_id, redeemed.id);
      const before = await getOne(`/coupons?id=${coupon.id}`);
      const affiliateBefore = await getOne(`/affiliates?id=${affiliate.id}`);
      const events = await eventCount();

      const refused = await del(api, `/coupons?id=${coupon.id}`);
      assertProblem(refused, 409, 'has_dependents');
      assert.match(refused.body.detail, /force=true/);
      assert.deepEqual(await getOne(`/coupons?id=${coupon.id}`), before);
      assert.ok(await codeRow(unused.id));
      assert.equal(await eventCount(), events);

      const forced = await del(api, '/coupons', { id: coupon.id, force: true });
      assert.equal(forced.status, 200, JSON.stringify(forced.body));
      assert.deepEqual(forced.body, before);
      assert.equal(await couponRow(coupon.id), undefined);
      assert.equal(await codeRow(redeemed.id), undefined);
      const referralAfter = await referralRow(referral.id);
      const saleAfter = await saleRow(sale.id);
      assert.equal(referralAfter.promotional_code_id, null);
      assert.equal(saleAfter.promotional_code_id, null);
      assert.equal(saleAfter.affiliate_id, affiliate.id);
      assert.deepEqual(await getOne(`/affiliates?id=${affiliate.id}`), affiliateBefore);
      assert.deepEqual((await eventsOf('coupon.deleted')).filter((e) => e.id === coupon.id), [before]);
    });

    it("404 for an unknown coupon and another program's, which stays with its codes; 422 without a target", async () => {
      assertProblem(await del(api, `/coupons?id=${crypto.randomUUID()}`), 404, 'not_found');
      const theirs = await newCoupon(other);
      const theirCode = await newCode(other, { couponId: theirs.id });
      assertProblem(await del(api, `/coupons?id=${theirs.id}&force=true`), 404, 'not_found');
      assertProblem(await del(api, '/coupons', { couponId: theirs.id, force: true }), 404, 'not_found');
      assert.ok(await couponRow(theirs.id));
      assert.ok(await codeRow(theirCode.id));
      assertProblem(await del(api, '/coupons'), 422, 'validation_failed', '#/id');
      assertProblem(await del(api, '/coupons?id=nope'), 422, 'validation_failed', '#/id');
      assertProblem(await del(api, '/coupons', { id: crypto.randomUUID(), couponId: crypto.randomUUID() }), 422, 'validation_failed', '#/couponId');
    });
  });

  describe('DELETE /promotional-codes', () => {
    it('deletes by id in the query: 200 with the code as it was, promotional_code.deleted written, the coupon stays', async () => {
      const coupon = await newCoupon(api);
      const code = await newCode(api, { couponId: coupon.id });
      const before = await getOne(`/promotional-codes?id=${code.id}`);
      const res = await del(api, `/promotional-codes?id=${code.id}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, before);
      assert.equal(await codeRow(code.id), undefined);
      assert.ok(await couponRow(coupon.id));
      assert.deepEqual((await eventsOf('promotional_code.deleted')).filter((e) => e.id === code.id), [before]);
      assertProblem(await del(api, `/promotional-codes?id=${code.id}`), 404, 'not_found');
    });

    it('takes promotionalCodeId in a JSON body, or the code string in any case', async () => {
      const coupon = await newCoupon(api);
      const one = await newCode(api, { couponId: coupon.id });
      const res = await del(api, '/promotional-codes', { promotionalCodeId: one.id });
      assert.equal(res.status, 200);
      assert.equal(res.body.id, one.id);
      const two = await newCode(api, { couponId: coupon.id });
      const res2 = await del(api, `/promotional-codes?code=${two.code.toLowerCase()}`);
      assert.equal(res2.status, 200);
      assert.equal(await codeRow(two.id), undefined);
      const three = await newCode(api, { couponId: coupon.id });
      assert.equal((await del(api, '/promotional-codes', { code: three.code })).status, 200);
    });

    it('refuses a redeemed code (409 has_dependents, nothing written); force=true keeps its referral', async () => {
      const affiliate = await newAffiliate(api);
      const coupon = await newCoupon(api);
      const code = await newCode(api, { couponId: coupon.id, affiliateId: affiliate.id });
      const referral = await newReferral(api, { promoCode: code.code });
      const before = await getOne(`/promotional-codes?id=${code.id}`);
      assert.equal(before.timesRedeemed, 1);
      const affiliateBefore = await getOne(`/affiliates?id=${affiliate.id}`);
      const events = await eventCount();
      assertProblem(await del(api, `/promotional-codes?id=${code.id}`), 409, 'has_dependents');
      assert.deepEqual(await getOne(`/promotional-codes?id=${code.id}`), before);
      assert.equal(await eventCount(), events);
      const forced = await del(api, '/promotional-codes', { id: code.id, force: true });
      assert.equal(forced.status, 200, JSON.stringify(forced.body));
      assert.deepEqual(forced.body, before);
      assert.equal(await codeRow(code.id), undefined);
      const referralAfter = await referralRow(referral.id);
      assert.equal(referralAfter.promotional_code_id, null);
      assert.equal(referralAfter.affiliate_id, affiliate.id);
      assert.deepEqual(await getOne(`/affiliates?id=${affiliate.id}`), affiliateBefore);
    });

    it("404 for an unknown code and another program's, which stays; 422 for a missing or contradictory target", async () => {
      assertProblem(await del(api, `/promotional-codes?id=${crypto.randomUUID()}`), 404, 'not_found');
      assertProblem(await del(api, `/promotional-codes?code=${unique('NOPE')}`), 404, 'not_found');
      const theirs = await newCode(other, { couponId: (await newCoupon(other)).id });
      assertProblem(await del(api, `/promotional-codes?id=${theirs.id}&force=true`), 404, 'not_found');
      assertProblem(await del(api, '/promotional-codes', { code: theirs.code, force: true }), 404, 'not_found');
      assert.ok(await codeRow(theirs.id));
      const mine = await newCode(api, { couponId: (await newCoupon(api)).id });
      assertProblem(await del(api, `/promotional-codes?id=${mine.id}&code=${theirs.code}`), 404, 'not_found');
      assertProblem(await del(api, '/promotional-codes'), 422, 'validation_failed', '#/id');
      assertProblem(await del(api, '/promotional-codes', { id: mine.id, promotionalCodeId: theirs.id }), 422, 'validation_failed', '#/promotionalCodeId');
      assertProblem(await del(api, '/promotional-codes', { code: 'x'.repeat(65) }), 422, 'validation_failed', '#/code');
      assert.ok(await codeRow(mine.id));
    });
  });

  describe('POST /promotional-codes/bulk', () => {
    it('generates count codes: prefix + 8 upper-case characters, unique, stored, one event each', async () => {
      const coupon = await newCoupon(api);
      const codesBefore = await codeCount();
      const createdBefore = (await eventsOf('promotional_code.created')).length;
      const res = await api.post('/promotional-codes/bulk', { couponId: coupon.id, count: 25, prefix: 'Spring-' });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.ok(Array.isArray(res.body));
      assert.equal(res.body.length, 25);
      const format = new RegExp(`^Spring-${RANDOM_UPPER}{8}$`);
      for (const code of res.body) {
        assert.match(code.code, format);
        assert.equal(code.isAutoGenerated, true);
        assert.equal(code.couponId, coupon.id);
        assert.equal(code.coupon.id, coupon.id);
        assert.equal(code.active, true);
        assert.equal(code.timesRedeemed, 0);
        assert.equal(code.affiliate, null);
      }
      assert.equal(new Set(res.body.map((c: any) => c.code.toLowerCase())).size, 25);
      assert.equal(await codeCount(), codesBefore + 25);
      assert.deepEqual(await getOne(`/promotional-codes?id=${res.body[0].id}`), res.body[0]);
      const events = await eventsOf('promotional_code.created');
      assert.equal(events.length, createdBefore + 25);
      const byId = new Map(events.map((e) => [e.id, e]));
      for (const code of res.body) assert.deepEqual(byId.get(code.id), code);
    });

    it('lowercase and length shape the random part; the restrictions and the affiliate apply to every code', async () => {
      const coupon = await newCoupon(api);
      const affiliate = await newAffiliate(api);
      const res = await api.post('/promotional-codes/bulk', {
        couponId: coupon.id,
        count: 5,
        length: 4,
        lowercase: true,
        affiliateEmail: affiliate.email.toUpperCase(),
        maxRedemptions: 3,
        expiresAt: '2032-05-06T07:08:09Z',
        firstTimeOrder: true,
        minimumAmount: 12.5,
        limitToAffiliate: true,
        active: false,
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.length, 5);
      for (const code of res.body) {
        assert.match(code.code, new RegExp(`^${RANDOM_LOWER}{4}$`));
        assert.equal(code.affiliateId, affiliate.id);
        assert.equal(code.maxRedemptions, 3);
        assert.equal(code.expiresAt, '2032-05-06T07:08:09.000Z');
        assert.equal(code.firstTimeOrder, true);
        assert.equal(code.minimumAmount, 12.5);
        assert.equal(code.minimumAmountCurrency, 'USD');
        assert.equal(code.limitToAffiliate, true);
        assert.equal(code.active, false);
      }
      const long = await api.post('/promotional-codes/bulk', { couponId: coupon.id, count: 2, length: 32, prefix: 'P'.repeat(20), affiliateId: affiliate.id });
      assert.equal(long.status, 201, JSON.stringify(long.body));
      for (const code of long.body) assert.match(code.code, new RegExp(`^P{20}${RANDOM_UPPER}{32}$`));
    });

    it('generates the maximum of 1000 in one request, all distinct; 1001 is a 422', async () => {
      const coupon = await newCoupon(api);
      const res = await api.post('/promotional-codes/bulk', { couponId: coupon.id, count: 1000, length: 4 });
      assert.equal(res.status, 201, JSON.stringify(res.body).slice(0, 500));
      assert.equal(res.body.length, 1000);
      assert.equal(new Set(res.body.map((c: any) => c.code)).size, 1000);
      const stored = await db().selectFrom('promotional_codes').select('code').where('coupon_id', '=', coupon.id).execute();
      assert.equal(stored.length, 1000);
      const before = await codeCount();
      assertProblem(await api.post('/promotional-codes/bulk', { couponId: coupon.id, count: 1001 }), 422, 'validation_failed', '#/count');
      assert.equal(await codeCount(), before);
    });

    it('422 for bad input and 404 for a coupon or affiliate not of the program, writing nothing', async () => {
      const coupon = await newCoupon(api);
      const codes = await codeCount();
      const events = await eventCount();
      const bulk = (body: Record<string, unknown>) => api.post('/promotional-codes/bulk', { couponId: coupon.id, count: 2, ...body });
      assertProblem(await api.post('/promotional-codes/bulk', { couponId: coupon.id }), 422, 'validation_failed', '#/count');
      assertProblem(await api.post('/promotional-codes/bulk', { count: 2 }), 422, 'validation_failed', '#/couponId');
      assertProblem(await bulk({ count: 0 }), 422, 'validation_failed', '#/count');
      assertProblem(await bulk({ count: 2.5 }), 422, 'validation_failed', '#/count');
      assertProblem(await bulk({ count: '2' }), 422, 'validation_failed', '#/count');
      assertProblem(await bulk({ prefix: 'no spaces' }), 422, 'validation_failed', '#/prefix');
      assertProblem(await bulk({ prefix: 'under_score' }), 422, 'validation_failed', '#/prefix');
      assertProblem(await bulk({ prefix: 'P'.repeat(21) }), 422, 'validation_failed', '#/prefix');
      assertProblem(await bulk({ length: 3 }), 422, 'validation_failed', '#/length');
      assertProblem(await bulk({ length: 33 }), 422, 'validation_failed', '#/length');
      assertProblem(await bulk({ lowercase: 'yes' }), 422, 'validation_failed', '#/lowercase');
      assertProblem(await bulk({ externalId: 'one-for-all' }), 422, 'validation_failed', '#/externalId');
      assertProblem(await bulk({ limitToCustomers: true }), 422, 'validation_failed', '#/customerId');
      assertProblem(await bulk({ maxRedemptions: 1e20 }), 422, 'validation_failed', '#/maxRedemptions');
      assertProblem(await bulk({ minimumAmount: 1.234 }), 422, 'validation_failed', '#/minimumAmount');
      assertProblem(await bulk({ couponId: crypto.randomUUID() }), 404, 'not_found');
      assertProblem(await bulk({ couponId: (await newCoupon(other)).id }), 404, 'not_found');
      assertProblem(await bulk({ affiliateEmail: uniqueEmail('nobody') }), 404, 'not_found');
      assertProblem(await bulk({ affiliateId: (await newAffiliate(other)).id }), 404, 'not_found');
      assert.equal(await codeCount(), codes);
      assert.equal(await eventCount(), events);
    });

    it('replaces a string the program already has (any case) or drew twice with a new one', async () => {
      const coupon = await newCoupon(api);
      const existing = await newCode(api, { couponId: coupon.id, code: 'collide-aaaa' });
      const existingRow = await codeRow(existing.id);
      const draws = ['AAAA', 'BBBB', 'BBBB', 'CCCC', 'DDDD'];
      const fake = (length: number) => {
        assert.equal(length, 4);
        const next = draws.shift();
        assert.ok(next, 'no more draws than needed');
        return next;
      };
      const program = await programContext(t, api.programId);
      const created = await bulkCreatePromotionalCodes(db(), program, { couponId: coupon.id, count: 3, prefix: 'COLLIDE-', length: 4 }, fake);
      assert.deepEqual(created.map((c) => c.code).sort(), ['COLLIDE-BBBB', 'COLLIDE-CCCC', 'COLLIDE-DDDD']);
      assert.deepEqual(draws, []);
      assert.deepEqual(await codeRow(existing.id), existingRow, 'the existing code is untouched');
      const stored = await db().selectFrom('promotional_codes').select('code').where('coupon_id', '=', coupon.id).execute();
      assert.deepEqual(stored.map((r) => r.code).sort(), ['COLLIDE-BBBB', 'COLLIDE-CCCC', 'COLLIDE-DDDD', 'collide-aaaa']);
    });

    it('gives up with 422 (nothing written) when new strings keep colliding, and refuses a length too short for the count', async () => {
      const coupon = await newCoupon(api);
      await newCode(api, { couponId: coupon.id, code: 'STUCK-AAAA' });
      const program = await programContext(t, api.programId);
      const codes = await codeCount();
      const events = await eventCount();
      const stuck = bulkCreatePromotionalCodes(db(), program, { couponId: coupon.id, count: 2, prefix: 'STUCK-', length: 4 }, () => 'AAAA');
      await assert.rejects(stuck, (error: any) => error.code === 'validation_failed' && error.errors[0].pointer === '#/length');
      const tooShort = bulkCreatePromotionalCodes(db(), program, { couponId: coupon.id, count: 1000, length: 2 });
      await assert.rejects(tooShort, (error: any) => error.code === 'validation_failed' && error.errors[0].pointer === '#/length');
      assert.equal(await codeCount(), codes);
      assert.equal(await eventCount(), events);
    });
  });

  it('documents every new route in the OpenAPI document', async () => {
    const doc = await (await fetch(`${t.url}/api/v1/openapi.json`)).json();
    assert.ok(doc.paths['/api/v1/links'].get);
    assert.ok(doc.paths['/api/v1/links'].delete);
    assert.ok(doc.paths['/api/v1/coupons'].put);
    assert.ok(doc.paths['/api/v1/coupons'].delete);
    assert.ok(doc.paths['/api/v1/promotional-codes'].delete);
    assert.ok(doc.paths['/api/v1/promotional-codes/bulk'].post);
    const params = doc.paths['/api/v1/links'].delete.parameters.map((p: any) => p.name).sort();
    assert.deepEqual(params, ['force', 'id', 'link']);
  });
});
