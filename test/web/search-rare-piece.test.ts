// PostgreSQL's searches give the trigram index only the text's rare piece (db/text-search.ts,
// issue 31): GIN reads every posting list of the text's trigrams, and a trigram most rows hold
// ("cus" of "customer…", "  c" of "customers.example.net") costs a read of all of them. The piece
// must be chosen as pg_trgm reads a `like` (its trigrams, with their padding) and the whole text
// must still decide, so a row holding only the piece is never shown. On SQLite the same searches
// read the FTS5 trigram table: the answers are the same on both.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { forgetTrigramSamples, indexedPieceOf, likeTrigramsOf, searchReadOf } from '../../src/db/text-search.ts';
import { apiClient, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, uniqueEmail } from '../helpers/browser-session.ts';
import { testDialect } from '../helpers/test-database.ts';

/** Customers sharing a prefix and a domain, as a real list shares `gmail.com`: enough of them for the sample to call those trigrams common. */
const CUSTOMERS = 260;
const customerEmail = (n: number) => `customer${n}.b@customers.example.net`;

describe('the trigrams pg_trgm reads from a like', () => {
  it('cuts each word in threes, padded only where a separator inside the text bounds it', () => {
    assert.deepEqual(likeTrigramsOf('customer777.'), ['cus', 'ust', 'sto', 'tom', 'ome', 'mer', 'er7', 'r77', '777', '77 ']);
    assert.deepEqual(likeTrigramsOf('r777.'), ['r77', '777', '77 ']);
    assert.deepEqual(likeTrigramsOf('.b@x'), ['  b', ' b ', '  x']);
    assert.deepEqual(likeTrigramsOf('ab'), [], 'a word of two characters at both ends has no trigram');
  });

  it('picks the longest piece with no common trigram, or none when the whole text has none or no piece has a trigram', () => {
    const common = new Set(['cus', 'ust', 'sto', 'tom', 'ome', 'mer', 'er7', '  c', ' cu']);
    assert.equal(indexedPieceOf('customer777.', common), 'r777.');
    assert.equal(indexedPieceOf('zq-tail-1@customers', common), 'zq-tail-1@');
    assert.equal(indexedPieceOf('jane doe', common), undefined, 'nothing common: the whole text');
    assert.equal(indexedPieceOf('customer', common), undefined, 'every trigram common: the whole text');
    assert.equal(indexedPieceOf('customer777.', new Set()), undefined);
    assert.equal(indexedPieceOf('émile777customer', common), undefined, 'not ASCII: the whole text');
  });
});

describe('a search through the rare piece', () => {
  let t: TestServer;
  let merchant: BrowserSession;
  let program: { id: string; base: string };
  let api: ApiClient;

  /** The customers' names a search of the sales list shows (one page: each search here finds fewer than 50). */
  async function found(q: string): Promise<string[]> {
    const page = await merchant.page(`${program.base}/sales?q=${encodeURIComponent(q)}`);
    return [...page.matchAll(/<td><a href="[^"]*\/sales\/\d+">([^<]*)<\/a>/g)].map((m) => m[1]!).sort();
  }

  before(async () => {
    t = await startTestServer({ worker: false });
    merchant = await BrowserSession.signUp(t.url);
    program = await merchant.createProgram({ name: 'Customers', commissionRate: '20' });
    api = apiClient(t.url, (await issueToken(t.server.database.db, { programId: program.id, name: 'site', kind: 'api_key' })).token, program.id);
    const affiliate = await api.post('/affiliates', { firstName: 'Kept', lastName: 'Partner', email: uniqueEmail('kept'), affiliateLink: `kept-${Date.now()}` });
    assert.equal(affiliate.status, 201, JSON.stringify(affiliate.body));
    const sell = async (name: string, email: string) => {
      const res = await api.post('/sales', { referralId: affiliate.body.id, name, email, totalEarned: 10 });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    };
    for (let n = 0; n < CUSTOMERS; n += 10) await Promise.all(Array.from({ length: 10 }, (_, i) => sell(`Customer ${n + i}`, customerEmail(n + i))));
    await sell('Wanted', 'zq-tail-1@customers.example.net');
    await sell('Only the piece', 'zq-tail-1@elsewhere.example.org');
    await sell('Ada Lovelace', 'ada@analytical.example');
    if (testDialect === 'postgres') await sql`analyze sales`.execute(rawDb(t));
    forgetTrigramSamples(t.server.database.db);
  });
  after(() => t.close());

  it('gives the index only the rare piece on PostgreSQL (SQLite reads its trigram table)', async () => {
    const read = await searchReadOf(t.server.database.db, 'sales', 'Customer77.');
    if (testDialect === 'postgres') assert.deepEqual(read, { via: 'like', indexedPiece: 'er77.' }, '"er7" is in 11 of 263 e-mails: under the 5 % that makes a trigram common');
    else assert.deepEqual(read, { via: 'trigram-table' });
    assert.equal((await searchReadOf(t.server.database.db, 'sales', 'lovelace')).indexedPiece, undefined, 'a text with no common trigram is the index’s whole');
  });

  it('finds what "contains the text" finds: the whole text decides, not the piece', async () => {
    assert.deepEqual(await found('zq-tail-1@customers'), ['Wanted'], 'a row holding only the piece is not shown');
    assert.deepEqual(await found('customer77.'), ['Customer 77']);
    assert.deepEqual(await found('CUSTOMER7.B@'), ['Customer 7']);
    assert.deepEqual(await found('er25'), ['Customer 25', 'Customer 250', 'Customer 251', 'Customer 252', 'Customer 253', 'Customer 254', 'Customer 255', 'Customer 256', 'Customer 257', 'Customer 258', 'Customer 259']);
    assert.deepEqual(await found('zq-tail'), ['Only the piece', 'Wanted']);
    assert.deepEqual(await found('lovelace'), ['Ada Lovelace']);
  });

  it('keeps no GIN pending list on the trigram indexes (PostgreSQL: every search would read it whole)', { skip: testDialect !== 'postgres' && 'PostgreSQL only' }, async () => {
    const { rows } = await sql<{ name: string; options: string[] | null }>`select c.relname as name, c.reloptions as options from pg_class c
      join pg_am am on am.oid = c.relam where am.amname = 'gin' and c.relname like '%trigrams' order by c.relname`.execute(rawDb(t));
    assert.equal(rows.length, 6, JSON.stringify(rows));
    for (const row of rows) assert.deepEqual(row.options, ['fastupdate=off'], row.name);
  });

  it('adds up the same sales the page shows', async () => {
    const page = await merchant.page(`${program.base}/sales?q=${encodeURIComponent('zq-tail-1@customers')}`);
    assert.match(page, /<strong>1 sale<\/strong>/, 'one sale counted, not the two holding the piece');
  });
});
