import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { createProgram } from '../../src/modules/programs/program.service.ts';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { createTestDatabase, testDialect, type TestDatabase } from '../helpers/test-database.ts';
import { apiClient, type ApiClient } from '../helpers/test-server.ts';

const run = promisify(execFile);

async function serve(url: string): Promise<RunningServer> {
  return startServer(loadConfig({}, { port: 0, host: '127.0.0.1', databaseUrl: url, logLevel: 'silent', siteUrl: 'http://tandem.test', rateLimitPerMinute: 0 }));
}

/** Runs `count` calls with at most `width` in flight. */
async function inParallel(count: number, width: number, call: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) await call(next++);
  }));
}

describe('tandem migrate-data: SQLite → PostgreSQL', { skip: testDialect !== 'postgres' && 'runs in the PostgreSQL leg (needs both databases)' }, () => {
  let source: TestDatabase;
  let target: TestDatabase;
  let token: string;
  let programId: string;
  const paths = [
    '/me',
    '/affiliates?limit=1000',
    '/referrals?limit=1000',
    '/sales?limit=1000',
    '/sales?limit=50&createdAfter=2000-01-01T00:00:00Z',
    '/coupons',
    '/promotional-codes',
    '/events?limit=1000',
    '/events?after=3000&limit=1000',
  ];
  const before_: Record<string, string> = {};

  before(async () => {
    source = await createTestDatabase('sqlite');
    target = await createTestDatabase('postgres');
    const server = await serve(source.url);
    const db = server.database.db;
    const user = await createUser(db, { email: 'owner@example.com', password: 'a long password' });
    const program = await createProgram(db, { ownerUserId: user.id, name: 'Moving', domain: 'moving.example.com' });
    programId = program.id;
    token = (await issueToken(db, { programId, name: 'k', kind: 'api_key' })).token;
    const api: ApiClient = apiClient(server.url, token, programId);

    // Real data through the API: affiliates, links, coupons and codes, referrals, sales.
    await inParallel(60, 8, (i) => api.post('/affiliates', { firstName: `A${i}`, lastName: 'Z', email: `a${i}@example.com`, affiliateLink: `aff-${i}`, commissionRate: 5 + (i % 20) }));
    const coupon = (await api.post('/coupons', { name: 'Ten', couponType: 'PERCENTAGE', percentOff: 10 })).body;
    const affiliates = (await api.get('/affiliates')).body as { id: string }[];
    await inParallel(20, 8, (i) => api.post('/promotional-codes', { couponId: coupon.id, code: `CODE${i}`, affiliateId: affiliates[i]!.id }));
    await inParallel(1000, 16, (i) => api.post('/referrals', { name: `C${i}`, email: `c${i}@example.org`, referredUserExternalId: `cus_${i}`, affiliateId: `aff-${i % 60}` }));
    await inParallel(2000, 16, async (i) => {
      const res = await api.post('/sales', { email: `c${i % 1000}@example.org`, totalEarned: 10 + (i % 97) + 0.99, externalInvoiceId: `in_${i}` });
      assert.equal(res.status, 201);
    });
    await inParallel(40, 8, (i) => api.post('/sales', { promoCode: `code${i % 20}`, email: `p${i}@example.org`, name: `P${i}`, totalEarned: 20 }));
    for (const path of paths) before_[path] = JSON.stringify((await api.get(path)).body);
    await server.close();
  });

  after(async () => {
    await source?.drop();
    await target?.drop();
  });

  it('copies every row, and the API answers the same on PostgreSQL', async () => {
    const { stdout } = await run('./bin/tandem', ['migrate-data', '--from', source.url, '--to', target.url, '--json'], { env: { ...process.env, LOG_LEVEL: 'silent' } });
    const report = JSON.parse(stdout.trim().split('\n').at(-1)!);
    assert.equal(report.tables.affiliates, 60);
    assert.equal(report.tables.referrals, 1040);
    assert.equal(report.tables.sales, 2040);
    assert.equal(report.tables.promotional_codes, 20);
    // affiliate.created, coupon.created, promotional_code.created, referral.created (1000 + 40 by
    // sales), sale.created, promotional_code.redeemed
    assert.equal(report.tables.events, 60 + 1 + 20 + 1040 + 2040 + 40);

    const server = await serve(target.url);
    try {
      assert.equal(server.database.dialect, 'postgres');
      const api = apiClient(server.url, token, programId); // the same API key still works
      for (const path of paths) {
        const res = await api.get(path);
        assert.equal(res.status, 200, path);
        assert.equal(JSON.stringify(res.body), before_[path], `GET ${path} differs after the move`);
      }
      // New sales continue the id sequence after the copied ones.
      const sale = await api.post('/sales', { email: 'c1@example.org', totalEarned: 1 });
      assert.equal(sale.status, 201);
      assert.equal(sale.body.id, 2041);
      // Event numbers continue after the copied ones: a poller's cursor stays valid.
      const events = await api.get('/events?type=sale.created&after=3201');
      assert.deepEqual(events.body.map((e: { data: { id: number }; sequence: number }) => [e.data.id, e.sequence > 3201]), [[2041, true]]);
    } finally {
      await server.close();
    }
  });

  it('refuses a target that already has data, and changes nothing', async () => {
    await assert.rejects(
      run('./bin/tandem', ['migrate-data', '--from', source.url, '--to', target.url], { env: { ...process.env, LOG_LEVEL: 'silent' } }),
      (error: { code: number; stderr: string }) => {
        assert.equal(error.code, 1);
        assert.match(error.stderr, /target database is not empty/);
        assert.equal(error.stderr.trim().split('\n').length, 1);
        return true;
      },
    );
  });
});

describe('tandem migrate-data: a row PostgreSQL refuses', { skip: testDialect !== 'postgres' && 'runs in the PostgreSQL leg (needs both databases)' }, () => {
  it('names the table and the row\'s key, and leaves the target empty', async () => {
    const { openDatabase } = await import('../../src/db/database.ts');
    const { sql } = await import('kysely');
    const source = await createTestDatabase('sqlite');
    const target = await createTestDatabase('postgres');
    try {
      const server = await serve(source.url);
      const db = server.database.db;
      const user = await createUser(db, { email: 'owner@example.com', password: 'a long password' });
      const program = await createProgram(db, { ownerUserId: user.id, name: 'Refused', domain: 'refused.example.com' });
      const { token } = await issueToken(db, { programId: program.id, name: 'k', kind: 'api_key' });
      const api = apiClient(server.url, token, program.id);
      const affiliate = await api.post('/affiliates', { firstName: 'Ada', lastName: 'L', email: 'ada@example.com' });
      assert.equal(affiliate.status, 201);
      await server.close();
      // A NUL in text: SQLite stores it, PostgreSQL refuses it. The API never writes one (it
      // refuses control characters), so this row is written behind its back, as an old
      // version or a hand edit might have.
      const handle = openDatabase({ databaseUrl: source.url });
      await sql`update affiliates set first_name = ${'Ada\u0000'} where id = ${affiliate.body.id}`.execute(handle.db);
      await handle.close();
      await assert.rejects(
        run('./bin/tandem', ['migrate-data', '--from', source.url, '--to', target.url], { env: { ...process.env, LOG_LEVEL: 'silent' } }),
        (error: { code: number; stderr: string }) => {
          assert.equal(error.code, 1);
          assert.match(error.stderr, new RegExp(`cannot copy table affiliates, row id="${affiliate.body.id}": .*0x00`));
          assert.equal(error.stderr.trim().split('\n').length, 1);
          return true;
        },
      );
      const copied = openDatabase({ databaseUrl: target.url });
      try {
        const { rows } = await sql<{ n: string }>`select count(*) as n from users`.execute(copied.db);
        assert.equal(Number(rows[0]!.n), 0, 'the copy is one transaction: nothing stays behind');
      } finally {
        await copied.close();
      }
    } finally {
      await source.drop();
      await target.drop();
    }
  });
});

// Runs once, in the SQLite leg: a SQLite → SQLite copy is enough to exercise the guard.
describe('tandem migrate-data knows every table', { skip: testDialect !== 'sqlite' && 'runs in the SQLite leg' }, () => {
  it('refuses to copy a database with a table its list does not name, naming the table', async () => {
    const { openDatabase } = await import('../../src/db/database.ts');
    const { migrateToLatest } = await import('../../src/db/migrate.ts');
    const { sql } = await import('kysely');
    const source = await createTestDatabase('sqlite');
    const target = await createTestDatabase('sqlite');
    try {
      const db = openDatabase({ databaseUrl: source.url });
      await migrateToLatest(db.db as never);
      await sql`create table payouts_from_the_future (id text primary key)`.execute(db.db);
      await db.close();
      await assert.rejects(
        run('./bin/tandem', ['migrate-data', '--from', source.url, '--to', target.url], { env: { ...process.env, LOG_LEVEL: 'silent' } }),
        (error: { code: number; stderr: string }) => {
          assert.equal(error.code, 1);
          assert.match(error.stderr, /does not know the table\(s\) payouts_from_the_future/);
          return true;
        },
      );
    } finally {
      await source.drop();
      await target.drop();
    }
  });
});
