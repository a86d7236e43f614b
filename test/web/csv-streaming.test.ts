// The dashboard's CSV downloads streamed in keyset batches (issue 31 item 2): a list longer
// than one batch (1,200 sales over 1,100 affiliates, 500 rows a read) arrives whole, each row
// exactly once, in the list's order — newest first, another sort, a filter — with each row's
// affiliate named (names are looked up per batch), sent chunked (no Content-Length: the file is
// written as it is read). What is refused before the first byte is refused as before.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createAffiliate } from '../../src/modules/affiliates/affiliate.service.ts';
import { createSale } from '../../src/modules/sales/sale.service.ts';
import { programContext, rawDb, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, uniqueEmail } from '../helpers/browser-session.ts';

const AFFILIATES = 1100;
const SALES = 1200;

let t: TestServer;
let merchant: BrowserSession;
let base: string;
/** Affiliate id → its name as the sales CSV writes it. */
const affiliateNames = new Map<string, string>();
const affiliateIds: string[] = [];
let heavy: { id: string; email: string };
/** Sale id → its affiliate's id. */
const saleAffiliate = new Map<number, string>();

before(async () => {
  t = await startTestServer({ worker: false });
  merchant = await BrowserSession.signUp(t.url);
  const program = await merchant.createProgram({ name: 'Acme', commissionRate: '10' });
  base = program.base;
  const context = await programContext(t, program.id);
  const db = rawDb(t);
  for (let i = 0; i < AFFILIATES; i++) {
    const firstName = i % 2 === 0 ? 'Even' : 'Odd';
    const affiliate = await createAffiliate(db, context, { firstName, lastName: `${i}`, email: uniqueEmail('seller') });
    affiliateIds.push(affiliate.id);
    affiliateNames.set(affiliate.id, `${firstName} ${i}`);
    if (i === 0) heavy = { id: affiliate.id, email: affiliate.email };
  }
  // Half the sales are the heavy affiliate's (a filter over more than one batch); amounts repeat
  // (an order with ties, broken by id).
  for (let i = 0; i < SALES; i++) {
    const affiliateId = i % 2 === 0 ? heavy.id : affiliateIds[1 + (i % (AFFILIATES - 1))]!;
    const sale = await createSale(db, context, { referralId: affiliateId, name: 'Customer', email: uniqueEmail('buyer'), totalEarned: 1 + ((i * 37) % 90) });
    saleAffiliate.set(sale.id, affiliateId);
  }
});
after(() => t?.close());

/** A download: its lines (the header first) and its headers. */
async function download(path: string) {
  const response = await merchant.get(path);
  assert.equal(response.status, 200, response.text.slice(0, 300));
  assert.match(response.headers.get('content-type') ?? '', /^text\/csv; charset=utf-8$/);
  assert.match(response.headers.get('content-disposition') ?? '', /^attachment; filename="(sales|affiliates)-\d{4}-\d{2}-\d{2}\.csv"$/);
  assert.ok(response.text.endsWith('\r\n'));
  return { lines: response.text.slice(0, -2).split('\r\n'), headers: response.headers };
}

/** Sent as it is written: chunked, no length announced. */
function assertChunked(headers: Headers) {
  assert.equal(headers.get('content-length'), null);
  assert.equal(headers.get('transfer-encoding'), 'chunked');
}

type Key = (string | number)[];

function compareKeys(a: Key, b: Key): number {
  for (let i = 0; i < a.length; i++) {
    if (a[i]! < b[i]!) return -1;
    if (a[i]! > b[i]!) return 1;
  }
  return 0;
}

/** Each row's key strictly after the one before it in `direction`: no row twice, none out of order. */
function assertOrdered(keys: Key[], direction: 'asc' | 'desc') {
  for (let i = 1; i < keys.length; i++) {
    const c = compareKeys(keys[i - 1]!, keys[i]!);
    assert.ok(direction === 'asc' ? c < 0 : c > 0, `row ${i} (${keys[i]}) after row ${i - 1} (${keys[i - 1]}) in ${direction} order`);
  }
}

/** Every one of `expected` exactly once. */
function assertExactly(ids: (string | number)[], expected: (string | number)[]) {
  assert.equal(new Set(ids).size, ids.length, 'a row twice');
  assert.deepEqual([...ids].sort(), [...expected].sort());
}

describe('the sales CSV', () => {
  const HEADER = 'id,created_at,customer_name,customer_email,affiliate_id,affiliate_name,affiliate_email,currency,amount,refunded,commission_rate,commission,commission_refunded,commission_net,invoice_id,external_id';
  const rowsOf = (lines: string[]) => lines.slice(1).map((line) => line.split(','));

  /** Each row's affiliate named as seeded: the names of every batch were looked up. */
  function assertNamed(rows: string[][]) {
    for (const r of rows) {
      assert.equal(r[4], saleAffiliate.get(Number(r[0])), `sale ${r[0]}'s affiliate`);
      assert.equal(r[5], affiliateNames.get(r[4]!), `sale ${r[0]}'s affiliate name`);
    }
  }

  it('newest first: every sale once, by created_at then id, streamed chunked', async () => {
    const { lines, headers } = await download(`${base}/sales.csv`);
    assertChunked(headers);
    assert.equal(lines[0], HEADER);
    const rows = rowsOf(lines);
    assertExactly(rows.map((r) => Number(r[0])), [...saleAffiliate.keys()]);
    assertOrdered(rows.map((r) => [r[1]!, Number(r[0])]), 'desc');
    assertNamed(rows);
  });

  it('by amount, lowest first: every sale once, ties in id order', async () => {
    const { lines, headers } = await download(`${base}/sales.csv?sort=amount-asc`);
    assertChunked(headers);
    const rows = rowsOf(lines);
    assertExactly(rows.map((r) => Number(r[0])), [...saleAffiliate.keys()]);
    assertOrdered(rows.map((r) => [Number(r[8]), Number(r[0])]), 'asc');
    assertNamed(rows);
  });

  it("filtered by an affiliate, oldest first: that affiliate's sales only, each once, in order", async () => {
    const { lines, headers } = await download(`${base}/sales.csv?affiliate=${encodeURIComponent(heavy.email)}&sort=oldest`);
    assertChunked(headers);
    const rows = rowsOf(lines);
    const expected = [...saleAffiliate].filter(([, affiliateId]) => affiliateId === heavy.id).map(([id]) => id);
    assert.equal(expected.length, SALES / 2);
    assertExactly(rows.map((r) => Number(r[0])), expected);
    assertOrdered(rows.map((r) => [r[1]!, Number(r[0])]), 'asc');
    assertNamed(rows);
  });

  it('refuses before the first byte as before: no session, another merchant, a filter that names nobody', async () => {
    const anonymous = await new BrowserSession(t.url, 'nobody@example.com').get(`${base}/sales.csv`);
    assert.equal(anonymous.status, 302);
    const stranger = await BrowserSession.signUp(t.url);
    assert.equal((await stranger.get(`${base}/sales.csv`)).status, 404);
    assert.equal((await stranger.get(`${base}/affiliates.csv`)).status, 404);
    for (const query of ['affiliate=nobody%40example.com', 'from=not-a-day']) {
      const { lines } = await download(`${base}/sales.csv?${query}`);
      assert.deepEqual(lines, [HEADER]);
    }
  });
});

describe('the affiliates CSV', () => {
  const rowsOf = (lines: string[]) => lines.slice(1).map((line) => line.split(','));

  it('newest first: every affiliate once, by created_at then id, streamed chunked', async () => {
    const { lines, headers } = await download(`${base}/affiliates.csv`);
    assertChunked(headers);
    assert.equal(lines[0], 'id,first_name,last_name,email,link,status,approval,commission_rate,referrals,clicks,currency,commission_earned,payout_email,payment_method,created_at');
    const rows = rowsOf(lines);
    assertExactly(rows.map((r) => r[0]!), affiliateIds);
    assertOrdered(rows.map((r) => [r[14]!, r[0]!]), 'desc');
    for (const r of rows) assert.equal(`${r[1]} ${r[2]}`, affiliateNames.get(r[0]!));
  });

  it('by commission earned, highest first: every affiliate once, ties in id order', async () => {
    const { lines, headers } = await download(`${base}/affiliates.csv?sort=commission-desc`);
    assertChunked(headers);
    const rows = rowsOf(lines);
    assertExactly(rows.map((r) => r[0]!), affiliateIds);
    assertOrdered(rows.map((r) => [Number(r[11]), r[0]!]), 'desc');
    assert.equal(rows[0]![0], heavy.id);
  });

  it('searched: the matching affiliates only, each once, in order', async () => {
    const { lines, headers } = await download(`${base}/affiliates.csv?q=even`);
    assertChunked(headers);
    const rows = rowsOf(lines);
    assertExactly(rows.map((r) => r[0]!), affiliateIds.filter((_, i) => i % 2 === 0));
    assertOrdered(rows.map((r) => [r[14]!, r[0]!]), 'desc');
  });
});
