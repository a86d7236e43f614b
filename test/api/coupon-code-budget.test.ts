import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Insertable } from 'kysely';
import { rawDb, startTestServer, type ApiClient, type ApiResponse, type TestServer } from '../helpers/test-server.ts';
import type { CouponsTable, PromotionalCodesTable } from '../../src/db/schema.ts';
import { COUPON_CODES_LIMIT, COUPON_PAGE_CODES, type Coupon, type PromotionalCode } from '../../src/modules/coupons/promotional-code.schema.ts';
import { created, newAffiliate, newCode, newCoupon, unique } from '../helpers/fixtures.ts';
import { codeRow } from '../helpers/coupon-rows.ts';

// Issue 31, item 3: GET /coupons is bounded in bytes and rows like every list. A coupon carries
// its COUPON_CODES_LIMIT newest codes, the count of all of them and the URL of their list (the
// same shape alone, in a list, in a write's answer); a page of coupons ends early, with the
// usual Link, when the next coupon's codes would take it past COUPON_PAGE_CODES nested codes,
// so following Link still gives every coupon once. Codes are inserted straight into the
// database (through the API the counts here would take minutes).

const iso = (ms: number) => new Date(ms).toISOString();

function couponRow(programId: string, name: string, at: string): Insertable<CouponsTable> {
  return {
    id: randomUUID(), program_id: programId, name, external_id: null, coupon_type: 'PERCENTAGE', percent_off: 10,
    amount_off: null, currency: null, duration: 'once', duration_in_months: null, max_redemptions: null, times_redeemed: 0,
    limit_to_products: 0, product_ids: '[]', valid: 1, redeem_by: null, integration_type: null, created_at: at, updated_at: at,
  };
}

async function insertRows(t: TestServer, coupons: Insertable<CouponsTable>[], codes: Insertable<PromotionalCodesTable>[]): Promise<void> {
  await rawDb(t).transaction().execute(async (tx) => {
    for (let i = 0; i < coupons.length; i += 500) await tx.insertInto('coupons').values(coupons.slice(i, i + 500)).execute();
    for (let i = 0; i < codes.length; i += 500) await tx.insertInto('promotional_codes').values(codes.slice(i, i + 500)).execute();
  });
}

/** `count` codes of a coupon, one millisecond apart from `base` on (later is newer); newest first. */
function codesOf(programId: string, couponId: string, count: number, base: number, affiliateId: string | null = null) {
  const prefix = unique('C');
  return Array.from({ length: count }, (_, i) => codeRow(programId, couponId, `${prefix}-${i}`, iso(base + i), affiliateId)).reverse();
}

/** The path and query of a URL on SITE_URL, to ask the test server (SITE_URL is not its address). */
function onServer(t: TestServer, url: string): string {
  assert.ok(url.startsWith(`${t.config.siteUrl}/api/v1/`), url);
  const parsed = new URL(url);
  return `${parsed.pathname.replace(/^\/api\/v1/, '')}${parsed.search}`;
}

function nextLink(headers: Headers): string | undefined {
  return headers.get('link')?.match(/<([^>]+)>;\s*rel="next"/)?.[1];
}

/** Every page of a list, following Link from `path`. */
async function allPages<T>(t: TestServer, client: ApiClient, path: string): Promise<T[][]> {
  const pages: T[][] = [];
  for (let next: string | undefined = path; next !== undefined; ) {
    const res: ApiResponse<T[]> = await client.get<T[]>(next);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    pages.push(res.body);
    const link = nextLink(res.headers);
    next = link === undefined ? undefined : onServer(t, link);
    assert.ok(pages.length < 500, 'the pages end');
  }
  return pages;
}

const nestedIn = (page: Coupon[]) => page.reduce((sum, c) => sum + c.promotionalCodes.length, 0);

describe('GET /coupons: each coupon its newest codes, their count and their list', () => {
  let t: TestServer;
  let api: ApiClient;
  let big: Coupon;
  /** The big coupon's code ids, newest first. */
  let bigCodes: string[];
  const BIG = 250;

  before(async () => {
    t = await startTestServer();
    api = await t.createTenant({ currency: 'USD' });
    big = await newCoupon<Coupon>(api, { name: unique('Big'), externalId: unique('ext') });
    const jane = await newAffiliate<{ id: string }>(api);
    const rows = codesOf(api.programId, big.id, BIG, Date.now() - 3_600_000, jane.id);
    await insertRows(t, [], rows);
    bigCodes = rows.map((r) => r.id!);
  });
  after(() => t.close());

  it(`carries the ${COUPON_CODES_LIMIT} newest codes, promotionalCodesCount and promotionalCodesUrl, whose list holds them all`, async () => {
    const res = await api.get<Coupon>(`/coupons?id=${big.id}`);
    assert.equal(res.status, 200);
    const c = res.body;
    assert.equal(c.promotionalCodesCount, BIG);
    assert.deepEqual(c.promotionalCodes.map((p) => p.id), bigCodes.slice(0, COUPON_CODES_LIMIT), 'the newest first, as lists are');
    assert.equal(c.promotionalCodesUrl, `${t.config.siteUrl}/api/v1/promotional-codes?couponId=${big.id}`);

    const [all, ...more] = await allPages<PromotionalCode>(t, api, onServer(t, c.promotionalCodesUrl));
    assert.equal(more.length, 0, 'one page of the default limit');
    assert.deepEqual(all!.map((p) => p.id), bigCodes, 'the link lists every code of the coupon, newest first');
    assert.ok(all!.every((p) => p.couponId === big.id));

    // Paged by the link's cursor: every code once.
    const pages = await allPages<PromotionalCode>(t, api, `${onServer(t, c.promotionalCodesUrl)}&limit=100`);
    assert.equal(pages.length, 3);
    assert.deepEqual(pages.flat().map((p) => p.id), bigCodes);
  });

  it('has one shape alone, by externalId, in a list and in the answers of POST, PUT and DELETE', async () => {
    const alone = (await api.get<Coupon>(`/coupons?id=${big.id}`)).body;
    assert.deepEqual((await api.get<Coupon>(`/coupons?externalId=${encodeURIComponent(big.externalId!)}`)).body, alone);
    const listed = (await api.get<Coupon[]>(`/coupons?name=${encodeURIComponent(big.name)}`)).body;
    assert.deepEqual(listed, [alone]);
    const inDefaultList = (await api.get<Coupon[]>('/coupons')).body.find((c) => c.id === big.id);
    assert.deepEqual(inDefaultList, alone);

    const updated = await api.put<Coupon>('/coupons', { id: big.id, name: `${big.name} renamed` });
    assert.equal(updated.status, 200);
    assert.deepEqual({ ...updated.body, name: alone.name, updatedAt: alone.updatedAt }, alone);

    const fresh = await newCoupon<Coupon>(api, { name: unique('Fresh') });
    assert.deepEqual([fresh.promotionalCodes, fresh.promotionalCodesCount, fresh.promotionalCodesUrl], [[], 0, `${t.config.siteUrl}/api/v1/promotional-codes?couponId=${fresh.id}`]);
    const code = await newCode<PromotionalCode>(api, { couponId: fresh.id });
    const deleted = await created<Coupon>(api.request('DELETE', `/coupons?id=${fresh.id}`), 200);
    assert.deepEqual([deleted.promotionalCodes.map((p) => p.id), deleted.promotionalCodesCount, deleted.promotionalCodesUrl], [[code.id], 1, fresh.promotionalCodesUrl]);
  });
});

describe(`GET /coupons: a page holds at most ${COUPON_PAGE_CODES} nested codes`, () => {
  let t: TestServer;
  let api: ApiClient;
  /** The coupons newest first, with how many codes each has. */
  let coupons: { id: string; codes: number }[];

  before(async () => {
    t = await startTestServer();
    api = await t.createTenant({ currency: 'USD' });
    // 60 coupons, newest first: runs of big coupons (over the per-coupon limit) between small
    // ones and coupons without codes, so pages end at the budget in several places.
    const counts = Array.from({ length: 60 }, (_, i) => [250, 0, 37, 100, 101, 99, 3, 180, 0, 64, 120, 1][i % 12]!);
    const base = Date.now() - 3_600_000;
    const rows = counts.map((_, i) => couponRow(api.programId, `Budget ${i}`, iso(base - i * 1000)));
    const codes = rows.flatMap((row, i) => codesOf(api.programId, row.id!, counts[i]!, base - i * 1000 + 1));
    await insertRows(t, rows, codes);
    coupons = rows.map((row, i) => ({ id: row.id!, codes: counts[i]! }));
  });
  after(() => t.close());

  /** The pages the rule makes of `coupons` with `limit`: a page takes coupons while their nested codes fit the budget. */
  function expectedPages(limit: number): string[][] {
    const pages: string[][] = [];
    let page: string[] = [];
    let used = 0;
    for (const c of coupons) {
      const nested = Math.min(c.codes, COUPON_CODES_LIMIT);
      if (page.length > 0 && (page.length === limit || used + nested > COUPON_PAGE_CODES)) {
        pages.push(page);
        page = [];
        used = 0;
      }
      page.push(c.id);
      used += nested;
    }
    pages.push(page);
    return pages;
  }

  for (const limit of [undefined, 7, 1]) {
    it(`ends a page at the budget${limit === undefined ? '' : ` or at limit=${limit}`}; Link gives every coupon once, in order`, async () => {
      const pages = await allPages<Coupon>(t, api, limit === undefined ? '/coupons' : `/coupons?limit=${limit}`);
      for (const page of pages) {
        assert.ok(page.length >= 1, 'a page holds at least one coupon');
        assert.ok(page.length <= (limit ?? 1000));
        assert.ok(nestedIn(page) <= COUPON_PAGE_CODES, `${nestedIn(page)} nested codes`);
      }
      assert.deepEqual(pages.map((page) => page.map((c) => c.id)), expectedPages(limit ?? 1000));
      const all = pages.flat();
      assert.deepEqual(all.map((c) => c.id), coupons.map((c) => c.id), 'every coupon once, newest first');
      for (const [i, c] of all.entries()) {
        assert.equal(c.promotionalCodesCount, coupons[i]!.codes);
        assert.equal(c.promotionalCodes.length, Math.min(coupons[i]!.codes, COUPON_CODES_LIMIT));
      }
      if (limit === undefined) assert.ok(pages.length > 1 && pages.length < coupons.length, `${pages.length} pages`);
    });
  }

  it('keeps createdAfter and the name filter on the next pages', async () => {
    const pages = await allPages<Coupon>(t, api, `/coupons?name=${encodeURIComponent('Budget 0')}`);
    assert.deepEqual(pages.flat().map((c) => c.id), [coupons[0]!.id]);
    const since = (await api.get<Coupon[]>(`/coupons?limit=1`)).body[0]!;
    assert.equal(since.id, coupons[0]!.id);
    const later = await allPages<Coupon>(t, api, `/coupons?createdAfter=${encodeURIComponent(iso(Date.parse(since.createdAt) - 20_500))}`);
    assert.deepEqual(later.flat().map((c) => c.id), coupons.slice(0, 21).map((c) => c.id));
  });
});

describe('GET /coupons: tenant isolation of the nested codes and their counts', () => {
  let t: TestServer;

  before(async () => {
    t = await startTestServer();
  });
  after(() => t.close());

  it("never counts or lists another program's codes, and its code list is not another program's", async () => {
    const a = await t.createTenant({ currency: 'USD' });
    const b = await t.createTenant({ currency: 'USD' });
    const name = unique('Same name');
    const ofA = await newCoupon<Coupon>(a, { name });
    const ofB = await newCoupon<Coupon>(b, { name });
    const base = Date.now() - 3_600_000;
    await insertRows(t, [], [...codesOf(a.programId, ofA.id, 3, base), ...codesOf(b.programId, ofB.id, 150, base)]);
    await newCode(b, { couponId: ofB.id });

    const seenByA = (await a.get<Coupon>(`/coupons?id=${ofA.id}`)).body;
    assert.equal(seenByA.promotionalCodesCount, 3);
    assert.equal(seenByA.promotionalCodes.length, 3);
    assert.ok(seenByA.promotionalCodes.every((p) => p.couponId === ofA.id));
    assert.deepEqual((await a.get<Coupon[]>(`/coupons?name=${encodeURIComponent(name)}`)).body, [seenByA]);
    assert.deepEqual((await a.get<Coupon[]>('/coupons')).body.map((c) => c.id), [ofA.id]);
    assert.equal((await a.get(`/coupons?id=${ofB.id}`)).status, 404);

    const seenByB = (await b.get<Coupon>(`/coupons?id=${ofB.id}`)).body;
    assert.equal(seenByB.promotionalCodesCount, 151);
    assert.equal(seenByB.promotionalCodes.length, COUPON_CODES_LIMIT);

    // B's link, with A's token: A has no codes of that coupon.
    assert.deepEqual((await a.get(onServer(t, seenByB.promotionalCodesUrl))).body, []);
    assert.equal((await b.get<PromotionalCode[]>(onServer(t, seenByB.promotionalCodesUrl))).body.length, 151);
  });
});
