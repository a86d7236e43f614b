// A purge of a large backlog (the first purge of a program's two million old events) must not
// stop the server: it goes in batches with a real turn of the event loop between them, each pass
// within a time budget, the next pass at once while work is left; and on SQLite the space it
// frees goes back to the file system (issue 31).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { sql } from 'kysely';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { testDialect } from '../helpers/test-database.ts';
import { runTandem } from '../helpers/cli.ts';
import { purgeEventsBefore } from '../../src/modules/events/outbox.ts';
import { createPeriodicWorker, type PeriodicJob } from '../../src/modules/maintenance/periodic-worker.ts';
import { reclaimFreePages } from '../../src/db/upkeep.ts';

const DAY = 86_400_000;
const quiet = { error: () => {}, warn: () => {}, debug: () => {} };

/** `count` events of `programId`, `daysOld` days old, numbered after every event already there (one statement). */
async function insertOldEvents(t: TestServer, programId: string, count: number, daysOld: number): Promise<void> {
  const db = rawDb(t);
  const createdAt = new Date(Date.now() - daysOld * DAY).toISOString();
  const { max } = await db.selectFrom('events').select(sql<number | null>`max(sequence)`.as('max')).executeTakeFirstOrThrow();
  const first = Number(max ?? 0) + 1;
  const time = testDialect === 'postgres' ? sql`cast(${createdAt} as timestamptz)` : sql`${createdAt}`;
  await sql`
    insert into events (id, program_id, type, data, created_at, sequence)
    select 'evt_old_' || n, ${programId}${testDialect === 'postgres' ? sql`::uuid` : sql``}, 'affiliate.updated', ${'{"id":"x","padding":"' + 'x'.repeat(400) + '"}'}, ${time}, ${first} + n
    from (${testDialect === 'postgres' ? sql`select generate_series(0, ${count - 1}) as n` : sql`with recursive s(n) as (select 0 union all select n + 1 from s where n < ${count - 1}) select n from s`}) numbers`.execute(db);
}

describe('a purge of a large backlog', () => {
  let t: TestServer;
  let api: ApiClient;
  before(async () => {
    t = await startTestServer({ worker: false });
    api = await t.createTenant();
  });
  after(() => t.close());

  it('answers requests between its batches: a request made while it runs is answered before it ends', async () => {
    await insertOldEvents(t, api.programId, 30_000, 400);
    const cutoff = new Date(Date.now() - 90 * DAY).toISOString();
    let purgeDone = false;
    const purge = purgeEventsBefore(rawDb(t), cutoff).then((n) => {
      purgeDone = true;
      return n;
    });
    const answered: boolean[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await api.get('/me');
      assert.equal(response.status, 200);
      answered.push(!purgeDone);
    }
    assert.equal(await purge, 30_000);
    assert.deepEqual(answered, [true, true, true], 'each request was answered while the purge was still running');
  });

  it('stops at its deadline after one batch, and the next pass goes on where it stopped', async () => {
    await insertOldEvents(t, api.programId, 1_200, 400);
    const cutoff = new Date(Date.now() - 90 * DAY).toISOString();
    assert.equal(await purgeEventsBefore(rawDb(t), cutoff, performance.now()), 500, 'a pass past its deadline deletes one batch');
    assert.equal(await purgeEventsBefore(rawDb(t), cutoff), 700);
    const left = await rawDb(t).selectFrom('events').select(sql<number>`count(*)`.as('n')).where('id', 'like', 'evt_old_%').executeTakeFirstOrThrow();
    assert.equal(Number(left.n), 0);
  });

  it('a job that says it has more runs again within seconds, not at its next hour', async () => {
    const runs: number[] = [];
    const job: PeriodicJob = {
      name: 'backlog',
      everyMs: 3_600_000,
      async run() {
        runs.push(Date.now());
        return { more: runs.length < 3 };
      },
    };
    const worker = createPeriodicWorker(job, { db: rawDb(t), config: t.config, clock: () => new Date(), log: quiet });
    worker.start();
    try {
      for (let i = 0; i < 100 && runs.length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(runs.length, 3, 'ran three times: the first, then twice more while it had more');
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      assert.equal(runs.length, 3, 'and then waits for its next time');
    } finally {
      await worker.stop();
    }
  });
});

describe('space a purge frees (SQLite)', { skip: testDialect !== 'sqlite' && 'a SQLite file only: PostgreSQL reuses the space in place (VACUUM)' }, () => {
  it('a file Tandem creates hands the pages a purge freed back to the file system', async () => {
    const t = await startTestServer({ worker: false });
    try {
      const api = await t.createTenant();
      const db = rawDb(t);
      const { auto_vacuum } = (await sql<{ auto_vacuum: number }>`pragma auto_vacuum`.execute(db)).rows[0]!;
      assert.equal(Number(auto_vacuum), 2, 'incremental auto-vacuum');
      await insertOldEvents(t, api.programId, 20_000, 400);
      await sql`pragma wal_checkpoint(truncate)`.execute(db);
      const file = t.database.url.slice('sqlite:'.length);
      const full = statSync(file).size;
      await purgeEventsBefore(db, new Date(Date.now() - 90 * DAY).toISOString());
      const free = Number((await sql<{ freelist_count: number }>`pragma freelist_count`.execute(db)).rows[0]!.freelist_count);
      assert.ok(free > 1000, `the purge left ${free} free pages`);
      assert.ok((await reclaimFreePages(db, 60_000)) >= free);
      assert.equal(Number((await sql<{ freelist_count: number }>`pragma freelist_count`.execute(db)).rows[0]!.freelist_count), 0);
      await sql`pragma wal_checkpoint(truncate)`.execute(db);
      assert.ok(statSync(file).size < full / 2, `the file shrank from ${full} to ${statSync(file).size} bytes`);
    } finally {
      await t.close();
    }
  });

  it('`tandem vacuum` turns an older file (no auto-vacuum) into one that can, keeping its data', async () => {
    const t = await startTestServer({ worker: false });
    const file = t.database.url.slice('sqlite:'.length);
    try {
      const api = await t.createTenant();
      const db = rawDb(t);
      await sql`pragma auto_vacuum = none`.execute(db);
      await sql`vacuum`.execute(db);
      assert.equal(Number((await sql<{ auto_vacuum: number }>`pragma auto_vacuum`.execute(db)).rows[0]!.auto_vacuum), 0, 'an older file, as before issue 31');
      await t.server.close();
      const run = await runTandem(['vacuum', '--json'], { DATABASE_URL: t.database.url });
      assert.equal(run.code, 0, run.stderr);
      assert.equal(typeof run.json.seconds, 'number');
      const SqliteDatabase = (await import('better-sqlite3')).default;
      const connection = new SqliteDatabase(file);
      try {
        assert.equal(connection.pragma('auto_vacuum', { simple: true }), 2);
        assert.equal((connection.prepare('select count(*) as n from programs where id = ?').get(api.programId) as { n: number }).n, 1);
      } finally {
        connection.close();
      }
    } finally {
      await t.database.drop();
    }
  });
});
