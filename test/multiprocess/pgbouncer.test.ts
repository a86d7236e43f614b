// Tandem behind PgBouncer in transaction-pooling mode (docs/deploy.md): two server processes
// talk to PostgreSQL only through PgBouncer, which hands every transaction to any of a few
// server connections. Redemption limits, idempotency keys and counters must still hold, and a
// server starting through PgBouncer must not need the migration lock.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { isExecutableFile } from '../helpers/executables.ts';
import { join } from 'node:path';
import { issueToken, revokeToken } from '../../src/modules/tokens/token.service.ts';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { createTestDatabase, postgresAdminUrl, testDialect, type TestDatabase } from '../helpers/test-database.ts';
import { apiClient, type ApiClient } from '../helpers/test-server.ts';
import { freePort, seedTenant, startServerProcess, startServerProcesses, type ServerProcess, type Tenant } from '../helpers/server-process.ts';
import { attempt, counterMismatches, tally } from './invariants.ts';

const PGBOUNCER = '/usr/sbin/pgbouncer';
// PgBouncer is the one system binary the suite uses that npm cannot provide: without it this
// suite is skipped with one line saying so, except where REQUIRE_PGBOUNCER=1 (.ci/run) makes
// its absence a failure.
const pgbouncerMissing = !isExecutableFile(PGBOUNCER) && process.env.REQUIRE_PGBOUNCER !== '1';
if (pgbouncerMissing && testDialect === 'postgres') console.log(`SKIPPED test/multiprocess/pgbouncer.test.ts: ${PGBOUNCER} is not installed (apt-get install pgbouncer; .ci/run requires it)`);

async function startPgBouncer(dir: string, port: number): Promise<ChildProcess> {
  const ini = join(dir, 'pgbouncer.ini');
  const server = new URL(postgresAdminUrl);
  const password = decodeURIComponent(server.password);
  writeFileSync(join(dir, 'users.txt'), `"postgres" "${password}"\n`);
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || 5432}${password ? ` password=${password}` : ''}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      'ignore_startup_parameters = statement_timeout',
      'default_pool_size = 4',
      'max_client_conn = 200',
    ].join('\n'),
  );
  chmodSync(dir, 0o755);
  // PgBouncer refuses to run as root; -u drops to the postgres user.
  const args = process.getuid?.() === 0 ? ['-u', 'postgres', ini] : [ini];
  const child = spawn(PGBOUNCER, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  for (let i = 0; i < 50; i++) {
    const probe = openDatabase({ databaseUrl: `postgres://postgres@127.0.0.1:${port}/postgres`, databasePoolSize: 1 });
    const up = await probe.ping();
    await probe.close();
    if (up) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error('PgBouncer did not start');
}

describe('behind PgBouncer (transaction pooling)', { skip: (testDialect !== 'postgres' && 'needs PostgreSQL') || (pgbouncerMissing && `${PGBOUNCER} is not installed`) }, () => {
  let database: TestDatabase;
  let direct: DatabaseHandle;
  let bouncer: ChildProcess;
  let servers: ServerProcess[] = [];
  let tenant: Tenant;
  let clients: ApiClient[];
  let bouncedUrl: string;

  before(async () => {
    assert.ok(isExecutableFile(PGBOUNCER), `${PGBOUNCER} is missing: apt-get install pgbouncer (.ci/run does)`);
    database = await createTestDatabase('postgres');
    // Migrations go straight to PostgreSQL, as docs/deploy.md says.
    tenant = await seedTenant(database.url);
    direct = openDatabase({ databaseUrl: database.url, databasePoolSize: 2 });
    const port = await freePort();
    bouncer = await startPgBouncer(database.dir, port);
    const url = new URL(database.url);
    url.port = String(port);
    bouncedUrl = url.toString();
    // PgBouncer 1.18 in transaction mode cannot carry named prepared statements (docs/deploy.md).
    servers = await startServerProcesses(2, { databaseUrl: bouncedUrl, env: { DATABASE_POOL_SIZE: '10', DATABASE_PREPARED_STATEMENTS: 'off' } });
    clients = servers.map((s) => apiClient(s.url, tenant.token, tenant.programId));
  });

  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    bouncer?.kill('SIGTERM');
    await direct?.close();
    await database?.drop();
  });

  it('redeems a limited code exactly maxRedemptions times across processes', async () => {
    const affiliate = (await clients[0]!.post('/affiliates', { firstName: 'Bo', lastName: 'Uncer', email: 'bo@example.com', affiliateLink: 'bo' })).body;
    const coupon = (await clients[0]!.post('/coupons', { name: 'Pooled', couponType: 'PERCENTAGE', percentOff: 10 })).body;
    const code = await clients[1]!.post('/promotional-codes', { couponId: coupon.id, code: 'POOL30', affiliateId: affiliate.id, maxRedemptions: 30 });
    assert.equal(code.status, 201);
    const outcomes = await Promise.all(
      Array.from({ length: 120 }, (_, i) =>
        attempt(clients[i % 2]!, 'POST', '/referrals', { name: `R${i}`, email: `r${i}@example.org`, referredUserExternalId: `r${i}`, promoCode: 'pool30' }),
      ),
    );
    assert.deepEqual(tally(outcomes), { '201': 30, '422 promo_code_exhausted': 90 });
    assert.equal((await clients[0]!.get('/promotional-codes?code=POOL30')).body.timesRedeemed, 30);
  });

  it('refuses a revoked key on the next request: LISTEN cannot hear through the pooler, so the token cache is not trusted', async () => {
    const key = await issueToken(direct.db, { programId: tenant.programId, name: 'revoked behind the pooler', kind: 'api_key' });
    const viaBouncer = servers.map((s) => apiClient(s.url, key.token, tenant.programId));
    for (const client of viaBouncer) assert.equal((await client.get('/me')).status, 200);
    // Revoked straight on PostgreSQL, announced as every revocation is.
    await revokeToken(direct.db, key.id);
    for (const client of viaBouncer) assert.equal((await client.get('/me')).status, 401);
  });

  it('keeps idempotency keys and counters exact', async () => {
    const referral = (await clients[0]!.get('/referrals?limit=1')).body[0];
    for (let round = 0; round < 4; round++) {
      const key = `bounce-${round}`;
      const body = { referralId: referral.id, totalEarned: 12.5 + round };
      const results = await Promise.all([0, 1, 0, 1].map((i) => clients[i]!.request('POST', '/sales', body, { 'idempotency-key': key })));
      assert.ok(results.every((r) => r.status === 201 || r.status === 409), results.map((r) => r.status).join(','));
    }
    const storm = await Promise.all(
      Array.from({ length: 100 }, (_, i) => attempt(clients[i % 2]!, 'POST', '/sales', { referralId: referral.id, totalEarned: 3 + (i % 7) })),
    );
    assert.deepEqual(tally(storm), { '201': 100 });
    const sales = await direct.db.selectFrom('sales').select((eb) => eb.fn.countAll<number>().as('n')).where('program_id', '=', tenant.programId).executeTakeFirstOrThrow();
    assert.equal(Number(sales.n), 104, 'one sale per idempotency key plus the storm');
    assert.deepEqual(await counterMismatches(direct.db, tenant.programId), []);
  });

  it('starts another server through PgBouncer without taking the migration lock', async () => {
    const third = await startServerProcess({ databaseUrl: bouncedUrl, env: { DATABASE_PREPARED_STATEMENTS: 'off' } });
    servers.push(third);
    const res = await apiClient(third.url, tenant.token, tenant.programId).get('/me');
    assert.equal(res.status, 200);
    assert.equal(res.body.id, tenant.programId);
  });
});
