import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { Insertable } from 'kysely';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import type { AffiliatesTable, CouponsTable, Database } from '../../src/db/schema.ts';
import { COUPON_CODES_LIMIT, COUPON_PAGE_CODES, type Coupon, type PromotionalCode } from '../../src/modules/coupons/promotional-code.schema.ts';
import { unique } from '../helpers/fixtures.ts';
import { codeRow } from '../helpers/coupon-rows.ts';

// Issue 12, "Bounded work per request": a coupon answers at most COUPON_CODES_LIMIT of its codes
// and their count (the rest page through GET /promotional-codes?couponId=), and no query binds
// one parameter per code or affiliate, so a coupon list stays a 200 with more distinct
// affiliates than SQLite's 32,766 bind parameters (PostgreSQL's limit, 65,535, falls to the same
// join); since issue 31 a page of coupons also ends at COUPON_PAGE_CODES nested codes. The data is inserted straight into the database, in
// chunks (the API would take minutes to make 30,000 codes).

const BIG_COUPON_CODES = 30_000;
const DISTINCT_AFFILIATES = 33_000;
const LIST_COUPONS = 1000;

/** Inserts rows in one transaction, `chunk` rows per statement (under both bind limits). */
async function insertChunked<T extends 'affiliates' | 'coupons' | 'promotional_codes'>(
  t: TestServer,
  table: T,
  rows: Insertable<Database[T]>[],
  chunk = 1000,
): Promise<void> {
  await rawDb(t).transaction().execute(async (tx) => {
    for (let i = 0; i < rows.length; i += chunk) await tx.insertInto(table).values(rows.slice(i, i + chunk) as never).execute();
  });
}

function affiliateRow(programId: string, n: number, at: string): Insertable<AffiliatesTable> {
  const email = `bound${n}@example.com`;
  return {
    id: randomUUID(), program_id: programId, first_name: 'Bound', last_name: `No${n}`, email, email_key: email, email_verified: 0,
    image: null, payout_email: email, payment_method: 'paypal', commission_rate: null, status: 'active',
    number_of_referred_users: 0, number_of_clicks: 0, total_commission_earned: 0, created_at: at, updated_at: at,
  };
}

function couponRow(programId: string, n: number, at: string): Insertable<CouponsTable> {
  return {
    id: randomUUID(), program_id: programId, name: `Bulk ${n}`, external_id: null, coupon_type: 'PERCENTAGE', percent_off: 10,
    amount_off: null, currency: null, duration: 'once', duration_in_months: null, max_redemptions: null, times_redeemed: 0,
    limit_to_products: 0, product_ids: '[]', valid: 1, redeem_by: null, integration_type: null, created_at: at, updated_at: at,
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

interface Answer<T = any> {
  status: number;
  headers: IncomingHttpHeaders;
  body: T;
  bytes: number;
  ms: number;
}

/**
 * A request on a connection of its own, timed, with the size of the body. The server runs in
 * this process, so the long synchronous inserts below stall its keep-alive timers and the
 * client's alike: a pooled connection could be closed under the next request (ECONNRESET).
 */
function call<T = any>(t: TestServer, client: ApiClient, method: string, path: string, body?: unknown): Promise<Answer<T>> {
  const started = performance.now();
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${t.url}/api/v1${path}`, {
      method,
      agent: false,
      headers: { authorization: `Bearer ${client.token}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) as T, bytes: Buffer.byteLength(text), ms: Math.round(performance.now() - started) });
      });
    });
    req.end(payload);
  });
}

async function newCoupon(t: TestServer, client: ApiClient, name: string): Promise<Coupon> {
  const res = await call<Coupon>(t, client, 'POST', '/coupons', { name, couponType: 'PERCENTAGE', percentOff: 10 });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

/** The path and query of a Link rel="next" header, relative to /api/v1. */
function nextPath(link: string | string[] | undefined): string | undefined {
  const match = (Array.isArray(link) ? link.join(', ') : link)?.match(/<([^>]+)>;\s*rel="next"/);
  if (!match) return undefined;
  const url = new URL(match[1]!);
  return `${url.pathname.replace(/^\/api\/v1/, '')}${url.search}`;
}

describe('coupons with many codes (bounded work per request)', () => {
  let t: TestServer;
  let api: ApiClient;
  let big: Coupon;
  /** The big coupon's code ids, newest first (created_at desc; the times are distinct). */
  let bigCodeIds: string[];

  before(async () => {
    t = await startTestServer();
    api = await t.createTenant({ currency: 'USD' });
    big = await newCoupon(t, api, unique('Thirty thousand'));
    const prefix = unique('BIG');
    const base = Date.now() - 3_600_000;
    const rows = Array.from({ length: BIG_COUPON_CODES }, (_, i) => codeRow(api.programId, big.id, `${prefix}-${i}`, iso(base + i)));
    await insertChunked(t, 'promotional_codes', rows);
    bigCodeIds = rows.map((r) => r.id).reverse();
  });
  after(() => t.close());

  it(`answers the ${COUPON_CODES_LIMIT} newest codes and promotionalCodesCount, in a small body`, async (ctx) => {
    assert.equal(COUPON_CODES_LIMIT, 100, 'docs/api.md documents 100');
    const res = await call<Coupon>(t, api, 'GET', `/coupons?id=${big.id}`);
    ctx.diagnostic(`GET /coupons?id= with ${BIG_COUPON_CODES} codes: ${res.bytes} bytes in ${res.ms} ms`);
    assert.equal(res.status, 200);
    const c = res.body;
    assert.equal(c.promotionalCodesCount, BIG_COUPON_CODES);
    assert.equal(c.promotionalCodes.length, COUPON_CODES_LIMIT);
    assert.deepEqual(c.promotionalCodes.map((p) => p.id), bigCodeIds.slice(0, COUPON_CODES_LIMIT), 'the newest first, as lists are');
    assert.ok(res.bytes < 200_000, `${res.bytes} bytes`);

    // The same coupon in a list, and found by name.
    const listed = (await call<Coupon[]>(t, api, 'GET', `/coupons?name=${encodeURIComponent(big.name)}`)).body;
    assert.deepEqual(listed, [c]);
  });

  it('pages through every code of the coupon with GET /promotional-codes?couponId= and the Link cursor', async (ctx) => {
    const seen: string[] = [];
    let path: string | undefined = `/promotional-codes?couponId=${big.id}&limit=1000`;
    let pages = 0;
    const started = performance.now();
    while (path !== undefined) {
      const res: Answer<PromotionalCode[]> = await call<PromotionalCode[]>(t, api, 'GET', path);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const codes = res.body;
      assert.ok(codes.length <= 1000);
      for (const code of codes) {
        assert.equal(code.couponId, big.id);
        assert.equal(code.coupon.id, big.id);
        seen.push(code.id);
      }
      pages++;
      path = nextPath(res.headers.link);
    }
    ctx.diagnostic(`${pages} pages of codes in ${Math.round(performance.now() - started)} ms`);
    assert.equal(pages, BIG_COUPON_CODES / 1000, 'a page links to the next only while more rows exist');
    assert.equal(new Set(seen).size, seen.length, 'no code twice');
    assert.deepEqual(seen, bigCodeIds, 'every code once, newest first');
  });

  it('bounds PUT and DELETE /coupons and their coupon.* events the same way', async () => {
    const res = await call<Coupon>(t, api, 'PUT', '/coupons', { id: big.id, name: `${big.name} renamed` });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const updated = res.body;
    assert.equal(updated.promotionalCodes.length, COUPON_CODES_LIMIT);
    assert.equal(updated.promotionalCodesCount, BIG_COUPON_CODES);

    const deleted = await call<Coupon>(t, api, 'DELETE', `/coupons?id=${big.id}`);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    assert.equal(deleted.body.promotionalCodes.length, COUPON_CODES_LIMIT);
    assert.equal(deleted.body.promotionalCodesCount, BIG_COUPON_CODES);

    const events = await call<{ type: string; data: Coupon }[]>(t, api, 'GET', '/events?type=coupon.updated,coupon.deleted');
    assert.equal(events.status, 200, JSON.stringify(events.body));
    const ofBig = events.body.filter((e) => e.data.id === big.id);
    assert.deepEqual(ofBig.map((e) => e.type), ['coupon.updated', 'coupon.deleted']);
    for (const event of ofBig) {
      assert.equal(event.data.promotionalCodes.length, COUPON_CODES_LIMIT);
      assert.equal(event.data.promotionalCodesCount, BIG_COUPON_CODES);
    }
    assert.ok(events.bytes < 400_000, `${events.bytes} bytes`);
  });

  it('answers a new coupon with no codes and a count of 0', async () => {
    const c = await newCoupon(t, api, unique('Empty'));
    assert.deepEqual([c.promotionalCodes, c.promotionalCodesCount], [[], 0]);
  });

  it(`lists ${LIST_COUPONS} coupons whose codes belong to ${DISTINCT_AFFILIATES} distinct affiliates (more than SQLite's bind limit)`, async (ctx) => {
    const tenant = await t.createTenant({ currency: 'USD' });
    const base = Date.now() - 3_600_000;
    const started = performance.now();
    const affiliates = Array.from({ length: DISTINCT_AFFILIATES }, (_, i) => affiliateRow(tenant.programId, i, iso(base)));
    const coupons = Array.from({ length: LIST_COUPONS }, (_, i) => couponRow(tenant.programId, i, iso(base + i)));
    const perCoupon = DISTINCT_AFFILIATES / LIST_COUPONS;
    const codes = affiliates.map((a, i) => codeRow(tenant.programId, coupons[i % LIST_COUPONS]!.id, `AFF-${i}`, iso(base + i), a.id));
    await insertChunked(t, 'affiliates', affiliates);
    await insertChunked(t, 'coupons', coupons);
    await insertChunked(t, 'promotional_codes', codes);
    ctx.diagnostic(`inserted ${DISTINCT_AFFILIATES} affiliates and codes, ${LIST_COUPONS} coupons in ${Math.round(performance.now() - started)} ms`);

    // A page holds COUPON_PAGE_CODES nested codes at most: the list pages by its Link.
    const listed: Coupon[] = [];
    let pages = 0;
    let bytes = 0;
    const listStarted = performance.now();
    for (let path: string | undefined = `/coupons?limit=${LIST_COUPONS}`; path !== undefined; pages++) {
      const res: Answer<Coupon[]> = await call<Coupon[]>(t, tenant, 'GET', path);
      assert.equal(res.status, 200, JSON.stringify(res.body).slice(0, 500));
      const nested = res.body.reduce((sum, c) => sum + c.promotionalCodes.length, 0);
      assert.ok(nested <= COUPON_PAGE_CODES, `${nested} nested codes on a page`);
      listed.push(...res.body);
      bytes += res.bytes;
      path = nextPath(res.headers.link);
    }
    ctx.diagnostic(`GET /coupons?limit=${LIST_COUPONS}: ${pages} pages, ${bytes} bytes in ${Math.round(performance.now() - listStarted)} ms`);
    assert.equal(pages, Math.ceil(LIST_COUPONS / Math.floor(COUPON_PAGE_CODES / perCoupon)));
    assert.deepEqual(listed.map((c) => c.id), coupons.map((c) => c.id).reverse(), 'every coupon once, newest first');
    const affiliateIds = new Set<string>();
    for (const c of listed) {
      assert.equal(c.promotionalCodesCount, perCoupon);
      assert.equal(c.promotionalCodes.length, perCoupon);
      for (const code of c.promotionalCodes) {
        assert.equal(code.affiliate?.id, code.affiliateId);
        affiliateIds.add(code.affiliateId!);
      }
    }
    assert.equal(affiliateIds.size, DISTINCT_AFFILIATES);
    const sample = listed.find((c) => c.id === coupons[7]!.id)!;
    assert.deepEqual(sample.promotionalCodes[0]!.affiliate, { id: affiliates[DISTINCT_AFFILIATES - LIST_COUPONS + 7]!.id, firstName: 'Bound', lastName: `No${DISTINCT_AFFILIATES - LIST_COUPONS + 7}`, email: `bound${DISTINCT_AFFILIATES - LIST_COUPONS + 7}@example.com` });

    // Codes with their affiliates, a page of 1000 at a time.
    const page = await call<PromotionalCode[]>(t, tenant, 'GET', '/promotional-codes?limit=1000');
    assert.equal(page.status, 200);
    assert.equal(page.body.length, 1000);
    assert.ok(page.body.every((p) => p.affiliate?.id === p.affiliateId));
  });
});
