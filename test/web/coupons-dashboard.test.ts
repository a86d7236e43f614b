// The coupons page over real HTTP (issue 31, item 3): it shows each coupon's newest codes only,
// with the count of all and a link to the coupon's own page, which pages through every code 50
// at a time; another program's coupon page is not found.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Insertable } from 'kysely';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import type { PromotionalCodesTable } from '../../src/db/schema.ts';
import { apiClient, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession } from '../helpers/browser-session.ts';
import { nextLink } from '../helpers/web-client.ts';
import { newCoupon, unique } from '../helpers/fixtures.ts';

let t: TestServer;
let merchant: BrowserSession;
let program: { id: string; base: string };
let api: ApiClient;

before(async () => {
  t = await startTestServer({ worker: false });
  merchant = await BrowserSession.signUp(t.url);
  program = await merchant.createProgram({ name: 'Acme' });
  const { token } = await issueToken(t.server.database.db, { programId: program.id, name: 'site', kind: 'api_key' });
  api = apiClient(t.url, token, program.id);
});
after(() => t.close());

/** Inserts `count` codes of the coupon, one millisecond apart (the last is the newest); their strings newest first. */
async function insertCodes(couponId: string, count: number): Promise<string[]> {
  const prefix = unique('DASH').toUpperCase();
  const base = Date.now() - 3_600_000;
  const rows: Insertable<PromotionalCodesTable>[] = Array.from({ length: count }, (_, i) => {
    const code = `${prefix}-${String(i).padStart(4, '0')}`;
    const at = new Date(base + i).toISOString();
    return {
      id: randomUUID(), program_id: program.id, coupon_id: couponId, affiliate_id: null, code, code_key: code.toLowerCase(),
      external_id: null, active: 1, expires_at: null, max_redemptions: null, times_redeemed: 0, first_time_order: 0,
      minimum_amount: null, minimum_amount_currency: null, limit_to_customers: 0, customer_id: null, limit_to_affiliate: 0,
      is_auto_generated: 0, created_at: at, updated_at: at,
    };
  });
  await rawDb(t).insertInto('promotional_codes').values(rows).execute();
  return rows.map((r) => r.code).reverse();
}

const shown = (page: string, codes: string[]) => codes.filter((code) => page.includes(`<code>${code}</code>`));

describe('dashboard: a coupon with many codes', () => {
  it("shows a coupon's 10 newest codes, the count of all and a link to its page, which pages through all of them", async () => {
    const coupon = await newCoupon<{ id: string; name: string }>(api, { name: 'Crowded coupon' });
    const codes = await insertCodes(coupon.id, 120);
    const few = await newCoupon<{ id: string; name: string }>(api, { name: 'Few codes' });
    const fewCodes = await insertCodes(few.id, 3);

    const list = await merchant.page(`${program.base}/coupons`);
    assert.deepEqual(shown(list, codes), codes.slice(0, 10), 'the 10 newest codes, newest first');
    assert.match(list, /The 10 newest of 120 codes\./);
    const couponPage = `${program.base}/coupons/${coupon.id}`;
    assert.ok(list.includes(`<a href="${couponPage}">All 120 codes of Crowded coupon</a>`), 'a link to all of them');
    assert.deepEqual(shown(list, fewCodes), fewCodes, 'a coupon with few codes shows them all');
    assert.ok(!list.includes(`href="${program.base}/coupons/${few.id}"`), 'and needs no link');

    // The coupon's page: 50 codes a page, newest first, every code once.
    const seen: string[] = [];
    let pages = 0;
    for (let path: string | null = couponPage; path !== null; pages++) {
      const page = await merchant.page(path);
      assert.match(page, /<h1>Crowded coupon<\/h1>/);
      assert.match(page, /120 codes/);
      const onPage = shown(page, codes);
      assert.ok(onPage.length <= 50);
      seen.push(...onPage);
      path = nextLink(page);
    }
    assert.equal(pages, 3);
    assert.deepEqual(seen, codes, 'every code once, newest first');
  });

  it("answers 404 for another program's coupon page, and for an unknown one", async () => {
    const stranger = await BrowserSession.signUp(t.url);
    const theirs = await stranger.createProgram({ name: 'Theirs' });
    const { token } = await issueToken(t.server.database.db, { programId: theirs.id, name: 'site', kind: 'api_key' });
    const theirCoupon = await newCoupon<{ id: string }>(apiClient(t.url, token, theirs.id));
    assert.equal((await merchant.get(`${program.base}/coupons/${theirCoupon.id}`)).status, 404);
    assert.equal((await merchant.get(`${theirs.base}/coupons/${theirCoupon.id}`)).status, 404);
    assert.equal((await merchant.get(`${program.base}/coupons/${randomUUID()}`)).status, 404);
    assert.equal((await stranger.get(`${theirs.base}/coupons/${theirCoupon.id}`)).status, 200);
  });
});
