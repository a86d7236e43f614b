// Idempotency-Key across a crash (Brandur Leach's "crash-safe" keys): the server is killed with
// SIGKILL in the middle of a load of keyed POST /sales; after a restart, retrying every key with
// its body gives the original response where the request had committed (replayed), and does the
// work where it had not — every sale exactly once, none refused with 409 for hours.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDatabase } from '../../src/db/database.ts';
import { createTestDatabase, testDialect, type TestDatabase } from '../helpers/test-database.ts';
import { apiClient, type ApiResponse } from '../helpers/test-server.ts';
import { seedTenant, startServerProcess, type ServerProcess, type Tenant } from '../helpers/server-process.ts';

const LEASE_MS = 1500;
const REQUESTS = 160;
const KILL_AFTER = 60;

describe(`Idempotency-Key after SIGKILL (${testDialect})`, () => {
  let database: TestDatabase;
  let tenant: Tenant;
  const servers: ServerProcess[] = [];

  before(async () => {
    database = await createTestDatabase();
    tenant = await seedTenant(database.url);
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await database.drop();
  });

  const start = async () => {
    const server = await startServerProcess({ databaseUrl: database.url, env: { IDEMPOTENCY_LEASE_MS: String(LEASE_MS), WORKER: 'off' } });
    servers.push(server);
    return server;
  };

  it('retrying every key replays what committed and does the rest exactly once', async () => {
    const first = await start();
    const api = apiClient(first.url, tenant.token, tenant.programId);
    const affiliate = await api.post('/affiliates', { firstName: 'Idem', lastName: 'Potent', email: `idem-${Date.now()}@example.com` });
    assert.equal(affiliate.status, 201);
    const customer = `cust-${Date.now()}@example.com`;
    assert.equal((await api.post('/referrals', { name: 'Cus Tomer', email: customer, referredUserExternalId: 'cus_1', affiliateId: affiliate.body.id })).status, 201);

    const body = (i: number) => ({ email: customer, totalEarned: 10 + i / 100, externalInvoiceId: `inv_${i}` });
    const key = (i: number) => `crash-key-${i}`;
    const firstAnswers = new Map<number, ApiResponse>();
    let next = 0;
    let acknowledged = 0;
    let killed = false;
    await Promise.all(
      Array.from({ length: 24 }, async () => {
        while (next < REQUESTS && !killed) {
          const i = next++;
          try {
            const res = await api.request('POST', '/sales', body(i), { 'idempotency-key': key(i) });
            firstAnswers.set(i, res);
            if (res.status === 201 && ++acknowledged === KILL_AFTER && !killed) {
              killed = true;
              await first.kill();
            }
          } catch {
            // connection reset by the kill: no answer
          }
        }
      }),
    );
    assert.ok(killed, 'the server was killed mid-load');
    const unanswered = [...Array(next).keys()].filter((i) => firstAnswers.get(i)?.status !== 201);
    assert.ok(unanswered.length > 0, 'some requests were cut off by the kill');

    const second = await start();
    const retry = apiClient(second.url, tenant.token, tenant.programId);
    await sleep(LEASE_MS + 200); // keys of requests that died uncommitted are taken over after the lease
    for (let i = 0; i < next; i++) {
      const res = await retry.request('POST', '/sales', body(i), { 'idempotency-key': key(i) });
      assert.equal(res.status, 201, `key ${i}: ${res.status} ${JSON.stringify(res.body)}`);
      const original = firstAnswers.get(i);
      if (original?.status === 201) {
        assert.equal(res.headers.get('idempotent-replayed'), 'true', `key ${i} was answered before the kill: replayed`);
        assert.deepEqual(res.body, original.body);
      }
    }
    // Exactly one sale per key: nothing lost, nothing done twice.
    const db = openDatabase({ databaseUrl: database.url });
    try {
      const rows = await db.db.selectFrom('sales').select(['external_invoice_id']).where('program_id', '=', tenant.programId).execute();
      const counts = new Map<string, number>();
      for (const r of rows) counts.set(r.external_invoice_id, (counts.get(r.external_invoice_id) ?? 0) + 1);
      for (let i = 0; i < next; i++) assert.equal(counts.get(`inv_${i}`), 1, `inv_${i} recorded ${counts.get(`inv_${i}`) ?? 0} times`);
      assert.equal(rows.length, next);
      const stuck = await db.db.selectFrom('idempotency_keys').select('key').where('state', '=', 'running').execute();
      assert.deepEqual(stuck, [], 'no key left running');
    } finally {
      await db.close();
    }
  });
});
