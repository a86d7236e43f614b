import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import type { Database } from '../../src/db/schema.ts';
import { systemClock } from '../../src/domain/clock.ts';
import type { ProgramContext } from '../../src/domain/program-context.ts';
import { countAffiliatesMatching, createAffiliate, getAffiliate, getAffiliateCounterTotals, getAffiliatePage, getApprovalQueue } from '../../src/modules/affiliates/affiliate.service.ts';
import { getEntryPage, getLedgerBalance } from '../../src/modules/ledger/commission.service.ts';
import { getPortalView } from '../../src/modules/portal/portal-view.service.ts';
import { createProgram, getProgram, toProgramContext } from '../../src/modules/programs/program.service.ts';
import { getPayoutPage, runPayouts, updatePayout } from '../../src/modules/payouts/payout.service.ts';
import { countMatchingReferrals, getReferralPage } from '../../src/modules/referrals/referral.service.ts';
import { exportSalesCsv } from '../../src/modules/sales/sale-export.ts';
import { createCoupon } from '../../src/modules/coupons/coupon.service.ts';
import { createPromotionalCode } from '../../src/modules/coupons/promotional-code.service.ts';
import { createSale, getSalePage, getSaleTotals } from '../../src/modules/sales/sale.service.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database.ts';

// The plans SQLite picks for the hot reads of a grown program (issue 31). Without statistics
// SQLite takes a program-wide index where an affiliate's is far more selective, and the portal,
// the affiliate page and the CSV read the whole program. Tandem refreshes the statistics when it
// opens a file (db/upkeep.ts); this file seeds a program through the services, opens the file
// as Tandem does, then runs each hot read on a connection that records its statements and asks
// SQLite for the plan of each. The data: one program of many affiliates, one of whom ("heavy")
// has a tenth of the sales, beside a second program. SQLite only: PostgreSQL plans by cost from
// autovacuum's statistics, which a test database of this size does not resemble.

/** Tables that grow with a program: reading one of them whole is what a hot page must not do. */
const GROWING = ['affiliates', 'affiliate_links', 'referrals', 'sales', 'commission_entries', 'payouts', 'promotional_codes', 'events', 'billing_events', 'clicks'];
/** Tables read per affiliate on the affiliate's pages: each search must name the affiliate (or a row's own key). */
const PER_AFFILIATE = ['referrals', 'sales', 'commission_entries', 'payouts', 'promotional_codes', 'affiliate_links'];

/** Affiliates in the program; the sales go to the first SELLERS of them. */
const AFFILIATES = 600;
const SELLERS = 40;
const SALES = 1600;

let database: TestDatabase;
let program: ProgramContext;
let heavyId: string;
interface Statement {
  sql: string;
  parameters: unknown[];
}
let traced: { db: Kysely<Database>; connection: SqliteDatabase.Database; statements: Statement[] };

before(async () => {
  database = await createTestDatabase('sqlite');
  const seeding = openDatabase({ databaseUrl: database.url });
  await migrateToLatest(seeding.db as never);
  const db = seeding.db;
  const owner = await createUser(db, { email: 'owner@plans.example', password: 'a long password' });
  const other = await createProgram(db, { ownerUserId: owner.id, name: 'Other', domain: 'other.example' });
  const { id } = await createProgram(db, { ownerUserId: owner.id, name: 'Grown', domain: 'grown.example' });
  program = toProgramContext(await getProgram(db, id), systemClock);
  const otherProgram = toProgramContext(await getProgram(db, other.id), systemClock);
  const affiliates: string[] = [];
  for (let a = 0; a < AFFILIATES; a++) affiliates.push((await createAffiliate(db, program, { firstName: 'A', lastName: `${a}`, email: `a${a}@plans.example` })).id);
  heavyId = affiliates[0]!;
  // Codes: one per affiliate for the first few hundred, a handful for the heavy one.
  const coupon = await createCoupon(db, program, { name: 'Ten off', couponType: 'PERCENTAGE', percentOff: 10 }, 'http://tandem.test');
  for (let a = 0; a < 300; a++) await createPromotionalCode(db, program, { couponId: coupon.id, code: `SAVE${a}`, affiliateEmail: `a${a}@plans.example` });
  for (let s = 0; s < SALES; s++) {
    // The heavy affiliate makes every tenth sale; the rest are spread over the others.
    const affiliateId = s % 10 === 0 ? heavyId : affiliates[1 + (s % (SELLERS - 1))]!;
    await createSale(db, program, { totalEarned: 10 + (s % 90), referralId: affiliateId, name: 'Customer', email: `c${s}@customers.example` });
  }
  const stranger = await createAffiliate(db, otherProgram, { firstName: 'O', lastName: 'O', email: 'o@plans.example' });
  for (let s = 0; s < 50; s++) await createSale(db, otherProgram, { totalEarned: 20, referralId: stranger.id, name: 'Customer', email: `o${s}@customers.example` });
  // A payout run two months on, paid: most of the ledger is paid history, as in a program that
  // pays monthly; the newest sales are still in their hold.
  const later = toProgramContext(await getProgram(db, id), () => new Date(Date.now() + 60 * 86_400_000));
  for (const payout of await runPayouts(db, later, {})) await updatePayout(db, later, { payoutId: payout.id, status: 'paid' });
  for (let s = 0; s < 100; s++) await createSale(db, program, { totalEarned: 30, referralId: affiliates[s % SELLERS]!, name: 'Customer', email: `n${s}@customers.example` });
  await seeding.close();
  // Tandem opening the file again (a server start): the statistics are refreshed then.
  await openDatabase({ databaseUrl: database.url }).close();

  const file = database.url.slice('sqlite:'.length);
  const statements: Statement[] = [];
  const connection = new SqliteDatabase(file);
  traced = { db: new Kysely<Database>({ dialect: new SqliteDialect({ database: recording(connection, statements) }) }), connection, statements };
});

/** The connection as Kysely's driver uses it, noting each statement it runs with its parameters. */
function recording(connection: SqliteDatabase.Database, statements: Statement[]) {
  return {
    close: () => connection.close(),
    prepare(sql: string) {
      const statement = connection.prepare(sql);
      const noted =
        <R>(run: (parameters: unknown[]) => R) =>
        (parameters: unknown[]) => {
          statements.push({ sql, parameters });
          return run(parameters);
        };
      return {
        reader: statement.reader,
        all: noted((parameters) => statement.all(parameters)),
        get: noted((parameters) => statement.get(parameters)),
        run: noted((parameters) => statement.run(parameters)),
        iterate: noted((parameters) => statement.iterate(parameters)),
      };
    },
  } as unknown as SqliteDatabase.Database;
}

after(async () => {
  await traced?.db.destroy();
  await database?.drop();
});

/** The plan's lines of each SELECT `read` ran, with the statement. */
async function plansOf(read: () => Promise<unknown>): Promise<{ statement: string; plan: string[] }[]> {
  traced.statements.length = 0;
  await read();
  const selects = traced.statements.filter((s) => /^\s*(select|with)\b/i.test(s.sql));
  return selects.map(({ sql, parameters }) => ({
    statement: sql,
    plan: (traced.connection.prepare(`explain query plan ${sql}`).all(parameters) as { detail: string }[]).map((row) => row.detail),
  }));
}

/** Which table a plan line reads (by name or alias as the statement spells it). */
function tableOf(line: string, statement: string): string | undefined {
  const name = /^(?:SCAN|SEARCH) (\w+)/.exec(line)?.[1];
  if (name === undefined) return undefined;
  if (GROWING.includes(name)) return name;
  const aliased = new RegExp(`"?(\\w+)"? as "?${name}"?\\b`, 'i').exec(statement);
  return aliased?.[1];
}

function assertBounded(reads: { statement: string; plan: string[] }[], options: { perAffiliate?: boolean } = {}) {
  assert.ok(reads.length > 0, 'the read ran statements');
  for (const { statement, plan } of reads) {
    const where = `\n${statement}\n${plan.join('\n')}`;
    for (const line of plan) {
      const table = tableOf(line, statement);
      if (table === undefined || !GROWING.includes(table)) continue;
      assert.ok(!line.startsWith('SCAN'), `a full scan of ${table}:${where}`);
      if (options.perAffiliate && PER_AFFILIATE.includes(table)) {
        assert.match(line, /affiliate_id=|\bid=|rowid=|payout_id=|sale_id=/, `${table} is searched without the affiliate:${where}`);
      }
    }
    if (GROWING.some((table) => new RegExp(`\\b${table}\\b`).test(statement))) {
      assert.ok(!plan.some((line) => line.includes('USE TEMP B-TREE FOR ORDER BY')), `sorted outside an index:${where}`);
    }
  }
}

test('Tandem keeps statistics: after it opens a file, sqlite_stat1 describes the grown tables, and no per-value samples are kept', () => {
  const tables = new Set((traced.connection.prepare('select tbl from sqlite_stat1').all() as { tbl: string }[]).map((row) => row.tbl));
  for (const table of ['sales', 'referrals', 'commission_entries', 'affiliates']) assert.ok(tables.has(table), `no statistics for ${table}`);
  // Samples would make every statement whose plan may depend on a bound value prepare again when the value changes (db/upkeep.ts).
  const samples = traced.connection.prepare("select name from sqlite_schema where name = 'sqlite_stat4'").get() ? (traced.connection.prepare('select count(*) as n from sqlite_stat4').get() as { n: number }).n : 0;
  assert.equal(samples, 0);
});

test("the portal (me.json and home) reads only the affiliate's rows", async () => {
  const affiliate = await getAffiliate(traced.db, program, { id: heavyId });
  assertBounded(await plansOf(() => getPortalView(traced.db, program, affiliate)), { perAffiliate: true });
});

test("the affiliate's page reads only the affiliate's rows", async () => {
  const recent = { limit: 10 };
  const reads = await plansOf(() =>
    Promise.all([
      getReferralPage(traced.db, program, { affiliateId: heavyId }, recent),
      getSalePage(traced.db, program, { affiliateId: heavyId }, recent),
      getLedgerBalance(traced.db, program, heavyId),
    ]),
  );
  assertBounded(reads, { perAffiliate: true });
});

test('GET /commissions?affiliateId= walks the affiliate’s entries in list order', async () => {
  assertBounded(await plansOf(() => getEntryPage(traced.db, program, { affiliateId: heavyId }, { limit: 100 }, new Date())), { perAffiliate: true });
});

test('the sales list and its CSV walk an index in list order, never sorting the program', async () => {
  assertBounded(await plansOf(() => getSalePage(traced.db, program, {}, { limit: 100 })));
  assertBounded(await plansOf(() => exportSalesCsv(traced.db, program, {}, { column: 'created_at', direction: 'desc' })));
});

test('the sales list sorted by amount or commission walks an index in that order, first page and next', async () => {
  for (const column of ['total_earned', 'commission'] as const) {
    for (const direction of ['desc', 'asc'] as const) {
      const order = { column, direction };
      assertBounded(await plansOf(() => getSalePage(traced.db, program, {}, { limit: 50, order })));
      assertBounded(await plansOf(() => getSalePage(traced.db, program, {}, { limit: 50, order, after: { createdAt: new Date().toISOString(), id: 100, value: 5000 } })));
    }
  }
});

test("an affiliate's ledger balance (portal, affiliate page) reads its unpaid entries only, from their covering index; the program's (payouts page) only today's", async () => {
  const expected = {
    affiliate: ['SEARCH commission_entries USING COVERING INDEX commission_entries_unpaid'],
    // The program's: unpaid_days for every other day, and today's unpaid entries by due time.
    program: ['SEARCH commission_entries USING INDEX commission_entries_unpaid_due', 'SEARCH commission_entries USING INDEX commission_entries_unpaid_due'],
  };
  for (const affiliateId of [heavyId, undefined]) {
    const reads = await plansOf(() => getLedgerBalance(traced.db, program, affiliateId));
    const entries = reads.flatMap((read) => read.plan).filter((line) => /^(SCAN|SEARCH) commission_entries\b/.test(line));
    assert.deepEqual(
      entries.map((line) => line.replace(/ \(.*\)$/, '')),
      expected[affiliateId === undefined ? 'program' : 'affiliate'],
      reads.map((read) => `${read.statement}\n${read.plan.join('\n')}`).join('\n'),
    );
  }
});

/**
 * A search's reads: each first counts its text's matches in the trigram table alone (up to the
 * cap, every program's), then reads from the trigram table (`f`) outward, each match's row of
 * `alias` by its rowid.
 */
function assertReadsTrigramTableFirst(reads: { statement: string; plan: string[] }[], index: string, alias: string, rowidLookup: string) {
  for (const { statement, plan } of reads) {
    const where = `\n${statement}\n${plan.join('\n')}`;
    const reading = plan.filter((line) => new RegExp(`^(SCAN|SEARCH) (f|${alias}|${index})\\b`).test(line));
    if (!new RegExp(`\\b${alias}\\b`).test(reading.join('\n'))) {
      assert.match(reading[0] ?? '', new RegExp(`^SCAN ${index} VIRTUAL TABLE INDEX`), `the count of matches in the trigram table:${where}`);
      continue;
    }
    assert.match(reading[0] ?? '', /^SCAN f VIRTUAL TABLE INDEX/, `first the trigram table:${where}`);
    for (const line of plan.filter((l) => new RegExp(`^(SCAN|SEARCH) ${alias}\\b`).test(l))) assert.equal(line, rowidLookup, where);
  }
}

test("the sales search reads its trigram table outward, each match's sale by id, for the list, its sorts and its totals", async () => {
  const search = 'c12@customers';
  const reads = await plansOf(() =>
    Promise.all([
      getSalePage(traced.db, program, { search }, { limit: 50 }),
      getSalePage(traced.db, program, { search }, { limit: 50, order: { column: 'total_earned', direction: 'desc' } }),
      getSaleTotals(traced.db, program, { search }),
    ]),
  );
  assertReadsTrigramTableFirst(reads, 'sales_search', 's', 'SEARCH s USING INTEGER PRIMARY KEY (rowid=?)');
  assert.equal(reads.length, 6, 'each page and the totals count the matches in the trigram table (up to the cap), then read them');
});

test("the referrals' and affiliates' searches read their trigram tables outward, each match by rowid, for the list and its count", async () => {
  const referrals = await plansOf(() => Promise.all([getReferralPage(traced.db, program, { search: 'c12@customers' }, { limit: 50 }), countMatchingReferrals(traced.db, program, { search: 'c12@customers' })]));
  assertReadsTrigramTableFirst(referrals, 'referrals_search', 'r', 'SEARCH r USING INTEGER PRIMARY KEY (rowid=?)');
  assert.equal(referrals.length, 4, referrals.map((read) => read.statement).join('\n'));
  const affiliates = await plansOf(() => Promise.all([getAffiliatePage(traced.db, program, { limit: 50 }, { search: 'a12@plans' }), countAffiliatesMatching(traced.db, program, { search: 'a12@plans' })]));
  assertReadsTrigramTableFirst(affiliates, 'affiliates_search', 'a', 'SEARCH a USING INTEGER PRIMARY KEY (rowid=?)');
  assert.equal(affiliates.length, 4, affiliates.map((read) => read.statement).join('\n'));
});

test("a list filtered by a state (pending payouts, the approval queue, inactive affiliates and referrals) reads only that state's rows, in list order", async () => {
  const reads = [
    ...(await plansOf(() => getPayoutPage(traced.db, program, { status: 'pending' }, { limit: 50 }))),
    ...(await plansOf(() => getApprovalQueue(traced.db, program, 5))),
    ...(await plansOf(() => getAffiliatePage(traced.db, program, { limit: 50 }, { status: 'inactive' }))),
    ...(await plansOf(() => getReferralPage(traced.db, program, { status: 'inactive' }, { limit: 50 }))),
    ...(await plansOf(() => countMatchingReferrals(traced.db, program, { status: 'inactive' }))),
  ];
  assertBounded(reads);
  for (const { statement, plan } of reads) {
    // Without the state in the index, SQLite walks the program's list and tests every row (it shows as program_id=? alone).
    const reading = plan.filter((line) => /^SEARCH (payouts|affiliates|referrals|a|p|r)\b/.test(line));
    assert.ok(reading.length > 0 && reading.every((line) => /\(program_id=\? AND (status|approval)=\?\)/.test(line)), `\n${statement}\n${plan.join('\n')}`);
  }
});

test("the affiliates' count (the list's, any status or one; the overview's) reads the program's kept counts, not the affiliates", async () => {
  const reads = await plansOf(() =>
    Promise.all([
      countAffiliatesMatching(traced.db, program, {}),
      countAffiliatesMatching(traced.db, program, { status: 'inactive' }),
      getAffiliateCounterTotals(traced.db, program),
    ]),
  );
  const counts = reads.filter(({ statement }) => /\baffiliate_counts\b/.test(statement));
  assert.equal(counts.length, 3, 'each count sums the kept rows');
  for (const { statement, plan } of counts) {
    // The table is its primary key (without rowid): the program's rows are one range of it.
    assert.deepEqual(plan, ['SEARCH affiliate_counts USING PRIMARY KEY (program_id=?)'], statement);
  }
});
