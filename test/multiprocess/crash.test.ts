// Crash safety across a real process boundary, on both dialects: `tandem serve` is SIGKILLed
// in the middle of a load of POST /sales (SQLite: the one process on its file; PostgreSQL:
// one of two processes on one database, the other keeps serving). After a restart on the same
// database, every sale that was answered 201 is there with its amount, no sale is half-written
// (the counters equal the aggregates of the rows, every new customer has its sale, every
// redemption its sale, every sale its event), and the service works without any repair.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import SqliteDatabase from 'better-sqlite3';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { createTestDatabase, testDialect, type TestDatabase } from '../helpers/test-database.ts';
import { apiClient, type ApiClient, type ApiResponse } from '../helpers/test-server.ts';
import { seedTenant, startServerProcess, startServerProcesses, type ProcessExit, type ServerProcess, type Tenant } from '../helpers/server-process.ts';
import { attempt, counterMismatches, tally, type Outcome } from './invariants.ts';
import { unique, uniqueEmail } from '../helpers/fixtures.ts';

const WORKERS = 32;
const KILL_AFTER = 300;
/** PostgreSQL: successes on the surviving process before the load stops. */
const SURVIVOR_SALES = 100;


interface Affiliate {
  id: string;
  link: string;
}
interface Acknowledged {
  id: number;
  totalEarned: number;
  serverIndex: number;
}

describe(`a server process killed with SIGKILL in the middle of a load (${testDialect})`, () => {
  let database: TestDatabase;
  let tenant: Tenant;
  let servers: ServerProcess[] = [];
  let handle: DatabaseHandle | undefined;

  before(async () => {
    database = await createTestDatabase();
    tenant = await seedTenant(database.url, { currency: 'USD', commissionRate: 20 });
    servers = await startServerProcesses(testDialect === 'postgres' ? 2 : 1, { databaseUrl: database.url });
  });

  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await handle?.close();
    await database?.drop();
  });

  const client = (server: ServerProcess): ApiClient => apiClient(server.url, tenant.token, tenant.programId);
  const serverLogs = () => servers.map((s, i) => `--- process ${i} (pid ${s.pid}) ---\n${s.output().slice(-4000)}`).join('\n');

  async function created<T>(res: ApiResponse): Promise<T> {
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body as T;
  }

  it('keeps every acknowledged sale, leaves no half-written one, and serves again after a restart', async (t) => {
    // ---- fixtures, through the API -----------------------------------------------------------
    const api = client(servers[0]!);
    const affiliates: Affiliate[] = [];
    for (let i = 0; i < 10; i++) {
      affiliates.push(await api.post('/affiliates', { firstName: 'Crash', lastName: `A${i}`, email: uniqueEmail('aff') }).then(created<Affiliate>));
    }
    const customers: { email: string }[] = [];
    for (const [i, a] of affiliates.entries()) {
      customers.push(await api.post('/referrals', { name: `Old ${i}`, email: uniqueEmail('old'), referredUserExternalId: unique('x'), affiliateId: a.link }).then(created<{ email: string }>));
    }
    const coupon = await api.post('/coupons', { name: unique('Coupon'), couponType: 'PERCENTAGE', percentOff: 10 }).then(created<{ id: string }>);
    const code = await api.post('/promotional-codes', { code: unique('CRASH'), couponId: coupon.id, affiliateId: affiliates[0]!.id }).then(created<{ id: string; code: string }>);

    const saleBody = (n: number) => {
      const totalEarned = Number((3 + ((n * 37) % 400) + ((n * 7) % 100) / 100).toFixed(2));
      switch (n % 4) {
        case 0:
          return { referralId: affiliates[n % 10]!.link, name: `Load ${n}`, email: uniqueEmail('load'), totalEarned };
        case 1:
          return { email: customers[n % 10]!.email, totalEarned };
        case 2:
          return { promoCode: code.code, name: `Load ${n}`, email: uniqueEmail('load'), totalEarned };
        default:
          return { referralId: affiliates[n % 10]!.id, name: `Load ${n}`, email: uniqueEmail('load'), totalEarned, commissionRate: 12.5 };
      }
    };

    // ---- the load, and the crash ---------------------------------------------------------------
    const acknowledged: Acknowledged[] = [];
    const refused: Outcome[] = [];
    let unanswered = 0;
    let next = 0;
    const alive = servers.map((_, i) => i);
    let crash: Promise<ProcessExit> | undefined;
    let crashedAt = 0;
    const victim = servers[0]!;
    const enough = () => (testDialect === 'postgres' ? acknowledged.length >= crashedAt + SURVIVOR_SALES : true);

    const worker = async () => {
      while (!(crash && enough())) {
        const n = next++;
        const serverIndex = alive[n % alive.length]!;
        const body = saleBody(n);
        const outcome = await attempt(client(servers[serverIndex]!), 'POST', '/sales', body);
        if (outcome.status === 201) {
          acknowledged.push({ id: (outcome as ApiResponse).body.id, totalEarned: body.totalEarned, serverIndex });
          if (!crash && acknowledged.length >= KILL_AFTER) {
            crashedAt = acknowledged.length;
            alive.splice(alive.indexOf(0), 1);
            crash = victim.kill();
          }
        } else if (outcome.status === 0) {
          unanswered++;
          if (!crash) refused.push(outcome); // nothing may fail before the crash
        } else {
          refused.push(outcome);
        }
      }
    };
    const deadline = setTimeout(() => {
      if (!crash) crash = victim.kill();
    }, 40_000);
    await Promise.all(Array.from({ length: WORKERS }, worker));
    clearTimeout(deadline);
    const exit = await crash!;
    assert.equal(exit.signal, 'SIGKILL', 'the server process was killed, not stopped');
    t.diagnostic(`${acknowledged.length} sales acknowledged (${crashedAt} before the kill), ${unanswered} requests unanswered`);
    assert.ok(crashedAt >= KILL_AFTER, `the load reached ${KILL_AFTER} sales before the kill`);
    assert.deepEqual(refused, [], `every answered request succeeded: ${JSON.stringify(tally(refused))}\n${serverLogs()}`);

    // ---- restart on the same database ----------------------------------------------------------
    servers[0] = await startServerProcess({ databaseUrl: database.url });
    for (const server of servers) {
      const health = await fetch(`${server.url}/healthz`);
      assert.equal(health.status, 200);
      assert.deepEqual(await health.json(), { status: 'ok', database: 'reachable' });
    }
    handle = openDatabase({ databaseUrl: database.url, databasePoolSize: 2 });
    const db = handle.db;

    // Every 201 is durable, with its amount.
    const ids = acknowledged.map((a) => a.id);
    assert.equal(new Set(ids).size, ids.length, 'sale ids are unique');
    const rows = new Map<number, number>();
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = await db.selectFrom('sales').select(['id', 'total_earned']).where('id', 'in', ids.slice(i, i + 500)).execute();
      for (const row of chunk) rows.set(Number(row.id), Number(row.total_earned));
    }
    const missing = acknowledged.filter((a) => rows.get(a.id) !== Math.round(a.totalEarned * 100));
    assert.deepEqual(missing, [], 'every acknowledged sale exists with the totalEarned it was acknowledged with');
    for (const sample of [acknowledged[0]!, acknowledged[crashedAt - 1]!, acknowledged.at(-1)!]) {
      const res: ApiResponse = await client(servers[1] ?? servers[0]!).get(`/sales?id=${sample.id}`);
      assert.equal(res.status, 200);
      assert.equal(res.body.totalEarned, sample.totalEarned);
    }

    // Nothing half-written: counters = aggregates; every new customer has its sale; every
    // redemption has its sale; every sale has its sale.created event.
    assert.deepEqual(await counterMismatches(db, tenant.programId), [], 'every affiliate and link counter equals the aggregate of its rows');
    const orphans = await db
      .selectFrom('referrals as r')
      .select('r.email')
      .where('r.program_id', '=', tenant.programId)
      .where('r.email', 'like', 'load%')
      .where(({ not, exists, selectFrom }) => not(exists(selectFrom('sales as s').select('s.id').whereRef('s.referral_id', '=', 'r.id'))))
      .execute();
    assert.deepEqual(orphans, [], 'no customer was recorded without its sale');
    const redeemed = await db.selectFrom('promotional_codes').select('times_redeemed').where('id', '=', code.id).executeTakeFirstOrThrow();
    const codeSales = await db.selectFrom('sales').select((eb) => eb.fn.countAll<string>().as('n')).where('promotional_code_id', '=', code.id).executeTakeFirstOrThrow();
    assert.equal(Number(redeemed.times_redeemed), Number(codeSales.n), 'timesRedeemed counts exactly the sales made with the code');
    const couponRow = await db.selectFrom('coupons').select('times_redeemed').where('id', '=', coupon.id).executeTakeFirstOrThrow();
    assert.equal(Number(couponRow.times_redeemed), Number(codeSales.n));
    const saleIds = (await db.selectFrom('sales').select('id').where('program_id', '=', tenant.programId).execute()).map((r) => Number(r.id)).sort((a, b) => a - b);
    const eventIds = (await db.selectFrom('events').select('data').where('program_id', '=', tenant.programId).where('type', '=', 'sale.created').execute())
      .map((e) => (JSON.parse(e.data) as { id: number }).id)
      .sort((a, b) => a - b);
    assert.deepEqual(eventIds, saleIds, 'every committed sale has exactly one sale.created event, and no event reports a sale that is not there');

    // New sales work on every process without any repair: new, returning and promo-code customers.
    for (const [i, server] of servers.entries()) {
      const api = client(server);
      const fresh = await api.post('/sales', { referralId: affiliates[i]!.link, name: 'After', email: uniqueEmail('after'), totalEarned: 10 });
      assert.equal(fresh.status, 201, JSON.stringify(fresh.body));
      const returning = await api.post('/sales', { email: customers[i]!.email, totalEarned: 11.5 });
      assert.equal(returning.status, 201, JSON.stringify(returning.body));
      const withCode = await api.post('/sales', { promoCode: code.code, name: 'After', email: uniqueEmail('after'), totalEarned: 12 });
      assert.equal(withCode.status, 201, JSON.stringify(withCode.body));
      assert.ok(withCode.body.id > Math.max(...saleIds), 'new sale ids do not collide with the old ones');
    }
    assert.deepEqual(await counterMismatches(db, tenant.programId), []);

    if (testDialect === 'sqlite') {
      await Promise.all(servers.map((s) => s.stop()));
      await handle.close();
      handle = undefined;
      const file = new SqliteDatabase(database.url.slice('sqlite:'.length));
      try {
        assert.equal(file.pragma('integrity_check', { simple: true }), 'ok');
        assert.deepEqual(file.pragma('foreign_key_check'), []);
      } finally {
        file.close();
      }
    }
  });
});
