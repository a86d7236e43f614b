// The referrals' and affiliates' searches through their indexes (issue 31): SQLite's trigram
// tables `referrals_search` and `affiliates_search`, PostgreSQL's trigram indexes (migration
// 2026-12-03T1200, db/text-search.ts). Whatever reads, a search finds what "name or e-mail
// contains the text, ignoring case" finds — every character literal, only the program's own
// rows — follows every write (new, edited, deleted), refuses too short a text, and a count past
// the cap says "more than". On SQLite the index survives `tandem vacuum`, which may renumber rowids.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { countReferrals, listReferrals } from '../../src/modules/referrals/referral.repository.ts';
import { countFilteredAffiliates, listAffiliates } from '../../src/modules/affiliates/affiliate.repository.ts';
import { vacuumDatabase } from '../../src/db/upkeep.ts';
import { apiClient, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession } from '../helpers/browser-session.ts';
import { testDialect } from '../helpers/test-database.ts';

let t: TestServer;
let merchant: BrowserSession;
let program: { id: string; base: string };
let other: { id: string; base: string };
let api: ApiClient;
let otherApi: ApiClient;
let keptId: string;

const unescape = (text: string) => text.replaceAll('&quot;', '"').replaceAll('&amp;', '&').replaceAll('&#39;', "'");

/** The referred customers' names a search of the referrals list shows (one page here). */
async function referralsFound(q: string, base = program.base): Promise<string[]> {
  const page = await merchant.page(`${base}/referrals?q=${encodeURIComponent(q)}`);
  const table = page.slice(page.indexOf('<table'), page.indexOf('</table>'));
  return [...table.matchAll(/<tr>\s*<td>([^<]*)<br>/g)].map((m) => unescape(m[1]!)).sort();
}

/** The affiliates' e-mails a search of the affiliates list shows (one page here). */
async function affiliatesFound(q: string, base = program.base): Promise<string[]> {
  const page = await merchant.page(`${base}/affiliates?q=${encodeURIComponent(q)}`);
  const table = page.slice(page.indexOf('<table'), page.indexOf('</table>'));
  return [...table.matchAll(/[\w.+%-]+@[\w.-]+\.example/g)].map((m) => m[0]).filter((e, i, all) => all.indexOf(e) === i).sort();
}

async function refer(client: ApiClient, affiliateId: string, name: string, email: string): Promise<string> {
  const res = await client.post('/referrals', { name, email, referredUserExternalId: `cus_${email}`, affiliateId });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id as string;
}

async function addAffiliate(client: ApiClient, firstName: string, lastName: string, email: string): Promise<string> {
  const res = await client.post('/affiliates', { firstName, lastName, email });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id as string;
}

before(async () => {
  t = await startTestServer({ worker: false });
  merchant = await BrowserSession.signUp(t.url);
  program = await merchant.createProgram({ name: 'Searched', commissionRate: '20' });
  other = await merchant.createProgram({ name: 'Other', commissionRate: '20' });
  const db = t.server.database.db;
  api = apiClient(t.url, (await issueToken(db, { programId: program.id, name: 'site', kind: 'api_key' })).token, program.id);
  otherApi = apiClient(t.url, (await issueToken(db, { programId: other.id, name: 'site', kind: 'api_key' })).token, other.id);
  keptId = await addAffiliate(api, 'Kept', 'Partner', 'kept@partners.example');
  await addAffiliate(api, 'Ada', 'Lovelace', 'ada@analytical.example');
  await addAffiliate(api, 'Percy', 'Sign', 'take-10%_off@deals.example');
  await addAffiliate(api, 'Percy', 'Plain', 'take-10xyoff@deals.example');
  await addAffiliate(otherApi, 'Ada', 'Twin', 'ada-twin@analytical.example');
  const elsewhere = await addAffiliate(otherApi, 'Elsewhere', 'Partner', 'elsewhere@partners.example');
  await refer(api, keptId, 'Grace Hopper', 'grace@navy.example');
  await refer(api, keptId, 'Bob "The Builder"', 'bob@build.example');
  await refer(api, keptId, 'Percy Sign', 'take-10%_off@deals.example');
  await refer(api, keptId, 'Percy Plain', 'take-10xyoff@deals.example');
  await refer(otherApi, elsewhere, 'Grace Twin', 'grace-twin@navy.example');
});
after(() => t.close());

describe('the referrals search', () => {
  it('finds a name or an e-mail containing the text, ignoring case, in this program only, every character literal', async () => {
    assert.deepEqual(await referralsFound('HOPP'), ['Grace Hopper']);
    assert.deepEqual(await referralsFound('navy.exa'), ['Grace Hopper'], "the other program's referral is not shown");
    assert.deepEqual(await referralsFound('navy.exa', other.base), ['Grace Twin']);
    assert.deepEqual(await referralsFound('10%_'), ['Percy Sign']);
    assert.deepEqual(await referralsFound('%%%'), []);
    assert.deepEqual(await referralsFound('"The'), ['Bob "The Builder"']);
    assert.deepEqual(await referralsFound('hopper OR bob'), [], 'no query syntax');
    assert.deepEqual(await referralsFound('nobody-here'), []);
  });

  it('follows every write: a new referral, an edit of its name or e-mail, its deletion', async () => {
    const id = await refer(api, keptId, 'Katherine Johnson', 'katherine@orbit.example');
    assert.deepEqual(await referralsFound('orbit'), ['Katherine Johnson']);
    assert.equal((await api.put(`/referrals?id=${id}`, { name: 'Dorothy Vaughan', email: 'dorothy@fortran.example' })).status, 200);
    assert.deepEqual(await referralsFound('orbit'), []);
    assert.deepEqual(await referralsFound('katherine'), []);
    assert.deepEqual(await referralsFound('fortran'), ['Dorothy Vaughan']);
    assert.deepEqual(await referralsFound('vaughan'), ['Dorothy Vaughan']);
    assert.equal((await api.put(`/referrals?id=${id}`, { plan: 'gold' })).status, 200);
    assert.deepEqual(await referralsFound('vaughan'), ['Dorothy Vaughan'], 'an edit of the plan leaves the text as it was');
    assert.equal((await api.request('DELETE', `/referrals?id=${id}`)).status, 200);
    assert.deepEqual(await referralsFound('vaughan'), []);
  });

  it('refuses a text too short to search for, and shows nothing for it', async () => {
    const page = await merchant.page(`${program.base}/referrals?q=${encodeURIComponent(' ho ')}`);
    assert.match(page, /Search for at least 3 characters/);
    assert.doesNotMatch(page, /Grace Hopper/);
    assert.deepEqual(await referralsFound('hop'), ['Grace Hopper']);
  });

  it('counts a filter up to the cap, and past it only says there are more; the list is the same whichever index reads it', async () => {
    const db = t.server.database.db;
    assert.equal(await countReferrals(db, program.id, { search: 'deals.example' }), 2);
    assert.equal(await countReferrals(db, program.id, { search: 'deals.example' }, 2), 2, 'at the cap: counted');
    assert.deepEqual(await countReferrals(db, program.id, { search: 'deals.example' }, 1), { moreThan: 1 });
    assert.deepEqual(await countReferrals(db, program.id, { status: 'active' }, 1), { moreThan: 1 }, 'any filter, not only a search');
    // "navy": one here, two in the file. Under a cap of 1 the trigram table holds too many (the
    // other program's count too) and the list walks the program instead: the same answer.
    for (const cap of [10, 1]) {
      const listed = await listReferrals(db, program.id, { search: 'navy' }, { limit: 50 }, cap);
      assert.deepEqual(listed.map((r) => r.name), ['Grace Hopper'], `cap ${cap}`);
    }
    const page = await merchant.page(`${program.base}/referrals?status=active`);
    assert.match(page, /<strong>\d+ referrals<\/strong> match these filters/);
  });
});

describe('the affiliates search', () => {
  it('finds a name (first and last) or an e-mail containing the text, ignoring case, in this program only, every character literal', async () => {
    assert.deepEqual(await affiliatesFound('LOVEL'), ['ada@analytical.example']);
    assert.deepEqual(await affiliatesFound('ada lovelace'), ['ada@analytical.example'], 'across first and last name');
    assert.deepEqual(await affiliatesFound('analytical'), ['ada@analytical.example'], "the other program's affiliate is not shown");
    assert.deepEqual(await affiliatesFound('analytical', other.base), ['ada-twin@analytical.example']);
    assert.deepEqual(await affiliatesFound('10%_'), ['take-10%_off@deals.example']);
    assert.deepEqual(await affiliatesFound('___'), []);
    assert.deepEqual(await affiliatesFound('nobody-here'), []);
  });

  it('follows every write: a new affiliate, an edit of a name or the e-mail, its deletion', async () => {
    const id = await addAffiliate(api, 'Mary', 'Jackson', 'mary@wind.example');
    assert.deepEqual(await affiliatesFound('jackson'), ['mary@wind.example']);
    assert.equal((await api.put(`/affiliates?id=${id}`, { lastName: 'Tunnel' })).status, 200);
    assert.deepEqual(await affiliatesFound('jackson'), []);
    assert.deepEqual(await affiliatesFound('mary tunnel'), ['mary@wind.example']);
    assert.equal((await api.put(`/affiliates?id=${id}`, { email: 'mary@langley.example' })).status, 200);
    assert.deepEqual(await affiliatesFound('wind.ex'), []);
    assert.deepEqual(await affiliatesFound('langley'), ['mary@langley.example']);
    assert.equal((await api.request('DELETE', `/affiliates?id=${id}&force=true`)).status, 200);
    assert.deepEqual(await affiliatesFound('langley'), []);
  });

  it('refuses a text too short to search for, in the list and its CSV', async () => {
    const page = await merchant.page(`${program.base}/affiliates?q=ad`);
    assert.match(page, /Search for at least 3 characters/);
    assert.doesNotMatch(page, /ada@analytical\.example/);
    const csv = await merchant.get(`${program.base}/affiliates.csv?q=ad`);
    assert.equal(csv.status, 200);
    assert.equal(csv.text.trim().split('\n').length, 1, 'only the header');
    assert.deepEqual(await affiliatesFound('ada'), ['ada@analytical.example']);
  });

  it('counts a search up to the cap, and past it only says there are more', async () => {
    const db = t.server.database.db;
    assert.equal(await countFilteredAffiliates(db, program.id, { search: 'deals.example' }), 2);
    assert.deepEqual(await countFilteredAffiliates(db, program.id, { search: 'deals.example' }, 1), { moreThan: 1 });
    for (const cap of [10, 1]) {
      const listed = await listAffiliates(db, program.id, { limit: 50 }, { search: 'analytical' }, cap);
      assert.deepEqual(listed.map((a) => a.email), ['ada@analytical.example'], `cap ${cap}`);
    }
  });
});

describe('the search indexes', () => {
  it('are on this dialect', async () => {
    const db = rawDb(t);
    if (testDialect === 'sqlite') {
      const { rows } = await sql<{ name: string }>`select name from sqlite_master where name in ('referrals_search', 'affiliates_search') or type = 'trigger' and (name like 'referrals_search_%' or name like 'affiliates_search_%') order by name`.execute(db);
      assert.deepEqual(rows.map((r) => r.name), [
        'affiliates_search', 'affiliates_search_delete', 'affiliates_search_insert', 'affiliates_search_update',
        'referrals_search', 'referrals_search_delete', 'referrals_search_insert', 'referrals_search_update',
      ]);
    } else {
      const { rows } = await sql<{ indexname: string }>`select indexname from pg_indexes where tablename in ('referrals', 'affiliates') and indexname like '%trigrams' order by indexname`.execute(db);
      assert.deepEqual(rows.map((r) => r.indexname), ['affiliates_email_trigrams', 'affiliates_name_trigrams', 'referrals_email_trigrams', 'referrals_name_trigrams']);
    }
  });

  it('hold exactly the rows there are, and are whole again after `tandem vacuum` (SQLite)', { skip: testDialect !== 'sqlite' && 'SQLite only: PostgreSQL indexes rows in place' }, async () => {
    const db = rawDb(t);
    const indexed = async (index: string) => Number((await sql<{ n: number }>`select count(*) as n from ${sql.table(index)} where ${sql.table(index)} match '"example"'`.execute(db)).rows[0]!.n);
    const stored = {
      referrals: async () => Number((await sql<{ n: number }>`select count(*) as n from referrals where email_key like '%example%'`.execute(db)).rows[0]!.n),
      affiliates: async () => Number((await sql<{ n: number }>`select count(*) as n from affiliates where email_key like '%example%'`.execute(db)).rows[0]!.n),
    };
    assert.equal(await indexed('referrals_search'), await stored.referrals());
    assert.equal(await indexed('affiliates_search'), await stored.affiliates());
    // An index out of step with the rowids (what a VACUUM that renumbered them would leave):
    // the searches find nothing until `tandem vacuum` indexes both lists again.
    await sql`insert into referrals_search (referrals_search) values ('delete-all')`.execute(db);
    await sql`insert into affiliates_search (affiliates_search) values ('delete-all')`.execute(db);
    assert.deepEqual(await referralsFound('hopper'), []);
    await vacuumDatabase(db);
    assert.deepEqual(await referralsFound('hopper'), ['Grace Hopper']);
    assert.deepEqual(await affiliatesFound('lovelace'), ['ada@analytical.example']);
    assert.equal(await indexed('referrals_search'), await stored.referrals());
    assert.equal(await indexed('affiliates_search'), await stored.affiliates());
  });
});
