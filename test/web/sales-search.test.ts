// The sales list's search through its index (issue 31): SQLite's trigram table `sales_search`
// and PostgreSQL's trigram indexes (db/text-search.ts, migration 2026-12-03T0600). Whatever
// reads it, the search finds what "name or e-mail contains the text, ignoring case" finds —
// every character literal, only the program's own sales — and follows every write: a new sale,
// an edit of its name or e-mail, a void, its affiliate's deletion. Too short a text is refused;
// a search matching more than the cap says so instead of adding up.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { listSales, sumFilteredSales } from '../../src/modules/sales/sale.repository.ts';
import { saleListBody } from '../../src/web/dashboard/sales.view.ts';
import { apiClient, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, uniqueEmail } from '../helpers/browser-session.ts';
import { testDialect } from '../helpers/test-database.ts';

let t: TestServer;
let merchant: BrowserSession;
let program: { id: string; base: string };
let other: { id: string; base: string };
let api: ApiClient;
let otherApi: ApiClient;
let affiliateId: string;
let leaverId: string;

async function sell(client: ApiClient, referralId: string, name: string, email: string, totalEarned = 10) {
  const res = await client.post('/sales', { referralId, name, email, totalEarned });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: number };
}

/** The customers' names a search of the sales list shows (every page is one here: fewer than 50 sales). */
async function found(q: string, base = program.base): Promise<string[]> {
  const page = await merchant.page(`${base}/sales?q=${encodeURIComponent(q)}`);
  return [...page.matchAll(/<td><a href="[^"]*\/sales\/\d+">([^<]*)<\/a>/g)].map((m) => m[1]!.replaceAll('&quot;', '"').replaceAll('&amp;', '&')).sort();
}

before(async () => {
  t = await startTestServer({ worker: false });
  merchant = await BrowserSession.signUp(t.url);
  program = await merchant.createProgram({ name: 'Searched', commissionRate: '20' });
  other = await merchant.createProgram({ name: 'Other', commissionRate: '20' });
  const db = t.server.database.db;
  api = apiClient(t.url, (await issueToken(db, { programId: program.id, name: 'site', kind: 'api_key' })).token, program.id);
  otherApi = apiClient(t.url, (await issueToken(db, { programId: other.id, name: 'site', kind: 'api_key' })).token, other.id);
  const add = async (client: ApiClient, first: string) =>
    (await client.post('/affiliates', { firstName: first, lastName: 'Partner', email: uniqueEmail(first.toLowerCase()), affiliateLink: `${first.toLowerCase()}-${Date.now()}` })).body.id as string;
  affiliateId = await add(api, 'Kept');
  leaverId = await add(api, 'Leaver');
  const otherAffiliate = await add(otherApi, 'Elsewhere');
  await sell(api, affiliateId, 'Ada Lovelace', 'ada@analytical.example');
  await sell(api, affiliateId, 'Grace Hopper', 'grace@navy.example');
  await sell(api, affiliateId, 'Émile Zola', 'emile@roman.example');
  await sell(api, affiliateId, 'Bob "The Builder"', 'bob@build.example');
  await sell(api, affiliateId, 'Percy Sign', 'take-10%_off@deals.example');
  await sell(api, affiliateId, 'Percy Plain', 'take-10xyoff@deals.example');
  await sell(api, leaverId, 'Linus Leaver', 'linus@leaving.example');
  await sell(otherApi, otherAffiliate, 'Ada Lovelace Twin', 'ada-twin@analytical.example');
});
after(() => t.close());

describe('the sales search', () => {
  it('finds a name or an e-mail containing the text, ignoring case, in this program only', async () => {
    assert.deepEqual(await found('LOVEL'), ['Ada Lovelace']);
    assert.deepEqual(await found('navy.exa'), ['Grace Hopper']);
    assert.deepEqual(await found('analytical'), ['Ada Lovelace'], "the other program's sale is not shown");
    assert.deepEqual(await found('analytical', other.base), ['Ada Lovelace Twin']);
    assert.deepEqual(await found('zola'), ['Émile Zola']);
    assert.deepEqual(await found('.example'), ['Ada Lovelace', 'Bob "The Builder"', 'Grace Hopper', 'Linus Leaver', 'Percy Plain', 'Percy Sign', 'Émile Zola']);
    assert.deepEqual(await found('nobody-here'), []);
  });

  it('takes every character literally: % and _ are not wildcards, quotes are text', async () => {
    assert.deepEqual(await found('10%_'), ['Percy Sign']);
    assert.deepEqual(await found('%%%'), []);
    assert.deepEqual(await found('___'), []);
    assert.deepEqual(await found('"The'), ['Bob "The Builder"']);
    assert.deepEqual(await found('der"'), ['Bob "The Builder"']);
    assert.deepEqual(await found('lace OR grace'), [], 'no query syntax');
  });

  it('follows every write: a new sale, an edit of its name or e-mail, a void, its affiliate deleted', async () => {
    const sale = await sell(api, affiliateId, 'Katherine Johnson', 'katherine@orbit.example');
    assert.deepEqual(await found('orbit'), ['Katherine Johnson']);
    assert.equal((await api.put(`/sales?saleId=${sale.id}`, { name: 'Dorothy Vaughan', email: 'dorothy@fortran.example' })).status, 200);
    assert.deepEqual(await found('orbit'), []);
    assert.deepEqual(await found('katherine'), []);
    assert.deepEqual(await found('fortran'), ['Dorothy Vaughan']);
    assert.deepEqual(await found('vaughan'), ['Dorothy Vaughan']);
    // An edit of the amount only leaves the text as it was.
    assert.equal((await api.put(`/sales?saleId=${sale.id}`, { totalEarned: 20 })).status, 200);
    assert.deepEqual(await found('vaughan'), ['Dorothy Vaughan']);
    assert.equal((await api.request('DELETE', `/sales?saleId=${sale.id}`)).status, 200);
    assert.deepEqual(await found('vaughan'), []);
    assert.deepEqual(await found('leaving'), ['Linus Leaver']);
    assert.equal((await api.request('DELETE', `/affiliates?id=${leaverId}&force=true`)).status, 200);
    assert.deepEqual(await found('leaving'), []);
    if (testDialect === 'sqlite') {
      // The index holds exactly the sales there are (a deleted sale's rowid would be found again if its id came back).
      const db = rawDb(t);
      const indexed = await sql<{ n: number }>`select count(*) as n from sales_search where sales_search match '"example"'`.execute(db);
      const stored = await sql<{ n: number }>`select count(*) as n from sales where lower(email) like '%example%'`.execute(db);
      assert.equal(Number(indexed.rows[0]!.n), Number(stored.rows[0]!.n));
    }
  });

  it('refuses a text too short to search for, and shows nothing for it', async () => {
    const page = await merchant.page(`${program.base}/sales?q=${encodeURIComponent(' zo ')}`);
    assert.match(page, /Search for at least 3 characters/);
    assert.doesNotMatch(page, /Émile Zola/);
    const csv = await merchant.get(`${program.base}/sales.csv?q=zo`);
    assert.equal(csv.status, 200);
    assert.equal(csv.text.trim().split('\n').length, 1, 'only the header');
    assert.deepEqual(await found('zol'), ['Émile Zola']);
  });

  it('adds up a search up to the cap, and past it says how many more there are instead', async () => {
    const db = t.server.database.db;
    const all = await sumFilteredSales(db, program.id, { search: 'deals.example' });
    assert.deepEqual(all, { count: 2, amount: 2000, refunded: 0, commission: 400 });
    assert.deepEqual(await sumFilteredSales(db, program.id, { search: 'deals.example' }, 2), all, 'at the cap: added up');
    assert.deepEqual(await sumFilteredSales(db, program.id, { search: 'deals.example' }, 1), { moreThan: 1 });
    // Past the cap the list still shows every match, newest first.
    const listed = await listSales(db, program.id, { search: 'deals.example' }, { limit: 50 }, 1);
    assert.equal(listed.length, 2);
    assert.deepEqual(listed.map((s) => Number(s.id)), [...listed.map((s) => Number(s.id))].sort((a, b) => b - a));
    const body = String(saleListBody({
      base: '/b', currency: 'USD', values: { q: 'example' }, errors: { fields: {}, message: '', status: 200 }, sort: 'newest', order: { column: 'created_at', direction: 'desc' },
      sorts: [], refundStates: [], filtered: true, totals: { moreThan: 10_000 }, csvQuery: 'q=example', csvRows: 10_000, list: { items: [], pager: '' }, names: new Map(),
    } as unknown as Parameters<typeof saleListBody>[0]));
    assert.match(body, /More than 10,000 sales<\/strong> match/);
    assert.match(body, /Download CSV \(the first 10,000\)/);
  });

  it('has its index on this dialect', async () => {
    const db = rawDb(t);
    if (testDialect === 'sqlite') {
      const { rows } = await sql<{ name: string }>`select name from sqlite_master where name = 'sales_search' or name like 'sales_search_%' and type = 'trigger' order by name`.execute(db);
      assert.deepEqual(rows.map((r) => r.name), ['sales_search', 'sales_search_delete', 'sales_search_insert', 'sales_search_update']);
    } else {
      const { rows } = await sql<{ indexname: string }>`select indexname from pg_indexes where tablename = 'sales' and indexname like '%trigrams' order by indexname`.execute(db);
      assert.deepEqual(rows.map((r) => r.indexname), ['sales_email_trigrams', 'sales_name_trigrams']);
    }
  });
});
