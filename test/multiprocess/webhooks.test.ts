// Webhook delivery across real process boundaries: a server killed with SIGKILL in the middle
// of deliveries loses none; two PostgreSQL processes deliver no event twice; `tandem worker`
// delivers for servers started with WORKER=off.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDatabase } from '../../src/db/database.ts';
import { createTestDatabase, testDialect, type TestDatabase } from '../helpers/test-database.ts';
import { apiClient, type ApiClient } from '../helpers/test-server.ts';
import { seedTenant, startServerProcess, startServerProcesses, startWorkerProcess, type ServerProcess, type Tenant } from '../helpers/server-process.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';

// Short timeout (so a lease, 3 × timeout + 5 s, expires within the test) and quick retries.
const WORKER_ENV = { WEBHOOK_ALLOW_PRIVATE_URLS: '1', WEBHOOK_TIMEOUT_MS: '1000', WEBHOOK_RETRY_SCHEDULE: '200ms,200ms,500ms,1s,1s,2s' };

let n = 0;
async function createAffiliates(api: ApiClient, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await api.post('/affiliates', { firstName: 'Kill', lastName: 'Nine', email: `mp-${++n}-${process.pid}-${Date.now()}@example.com` });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    ids.push(res.body.id);
  }
  return ids;
}

const receivedIds = (receiver: WebhookReceiver) => receiver.received.map((r) => r.json?.data?.id as string);

describe(`webhook delivery across processes (${testDialect})`, () => {
  let database: TestDatabase;
  let tenant: Tenant;
  let receiver: WebhookReceiver;
  const running: ServerProcess[] = [];

  before(async () => {
    database = await createTestDatabase();
    tenant = await seedTenant(database.url);
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    await Promise.all(running.map((s) => s.stop()));
    await receiver.close();
    await database.drop();
  });

  async function start(env: Record<string, string> = {}) {
    const server = await startServerProcess({ databaseUrl: database.url, env: { ...WORKER_ENV, ...env } });
    running.push(server);
    return server;
  }

  async function subscribe(api: ApiClient, path: string): Promise<string> {
    const res = await api.post('/webhooks', { url: receiver.url + path, events: ['affiliate.created'] });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.id;
  }

  it('SIGKILL in the middle of deliveries loses none: after a restart every event arrives', async () => {
    const server = await start();
    const api = apiClient(server.url, tenant.token, tenant.programId);
    const hook = await subscribe(api, '/kill');
    receiver.received.length = 0;
    receiver.delay(150); // deliveries are in flight when the kill comes
    const ids = await createAffiliates(api, 30);
    await receiver.waitFor((r) => r.length >= 3, 10_000, 'the first deliveries');
    await server.kill();
    const beforeRestart = new Set(receivedIds(receiver));
    assert.ok(ids.some((id) => !beforeRestart.has(id)), 'the kill came before every event was delivered');
    receiver.delay(0);
    const restarted = await start();
    await receiver.waitFor((r) => ids.every((id) => r.some((d) => d.json?.data?.id === id)), 30_000, 'every event after the restart');
    const db = openDatabase({ databaseUrl: database.url });
    try {
      // The deliveries settle once the answers are recorded.
      for (let i = 0; i < 100; i++) {
        const states = await db.db.selectFrom('webhook_deliveries').select('state').where('webhook_id', '=', hook).execute();
        if (states.length === 30 && states.every((s) => s.state === 'delivered')) break;
        assert.ok(i < 99, `deliveries did not settle: ${JSON.stringify(states)}`);
        await sleep(100);
      }
    } finally {
      await db.close();
    }
    assert.equal((await apiClient(restarted.url, tenant.token, tenant.programId).request('DELETE', `/webhooks?id=${hook}`)).status, 200);
    await restarted.stop();
  });

  it('tandem worker delivers for servers started with WORKER=off', async () => {
    const server = await start({ WORKER: 'off' });
    const api = apiClient(server.url, tenant.token, tenant.programId);
    const hook = await subscribe(api, '/separate-worker');
    receiver.received.length = 0;
    const ids = await createAffiliates(api, 5);
    await sleep(800);
    assert.equal(receiver.received.filter((r) => ids.includes(r.json?.data?.id)).length, 0, 'no worker, no delivery');
    const worker = startWorkerProcess({ databaseUrl: database.url, env: { ...WORKER_ENV, LOG_LEVEL: 'error' } });
    let code: number | null;
    try {
      await receiver.waitFor((r) => ids.every((id) => r.some((d) => d.json?.data?.id === id)), 15_000, 'deliveries by tandem worker');
    } finally {
      code = await worker.stop();
    }
    assert.equal(code, 0, `tandem worker exits 0 on SIGTERM:\n${worker.output()}`);
    assert.equal((await api.request('DELETE', `/webhooks?id=${hook}`)).status, 200);
    await server.stop();
  });

  it('two PostgreSQL processes share the deliveries and send no event twice', { skip: testDialect !== 'postgres' && 'one process per SQLite file' }, async () => {
    const servers = await startServerProcesses(2, { databaseUrl: database.url, env: WORKER_ENV });
    running.push(...servers);
    const clients = servers.map((s) => apiClient(s.url, tenant.token, tenant.programId));
    await subscribe(clients[0]!, '/two-processes');
    receiver.received.length = 0;
    const ids = (await Promise.all(clients.flatMap((c) => [createAffiliates(c, 50), createAffiliates(c, 50)]))).flat();
    await receiver.waitFor((r) => ids.every((id) => r.some((d) => d.json?.data?.id === id)), 30_000, 'all 200 events');
    await sleep(1000); // a duplicate would arrive by now
    const mine = receiver.received.filter((r) => r.path === '/hooks/two-processes');
    assert.ok(mine.every((r) => ids.includes(r.json?.data?.id)));
    assert.equal(mine.length, ids.length, 'each event delivered exactly once');
    assert.equal(new Set(mine.map((r) => r.headers['webhook-id'])).size, ids.length);
  });
});
