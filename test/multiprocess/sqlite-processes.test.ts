// Two `tandem serve` processes on one SQLite file (README, "Several processes on one SQLite
// file"): found safe by reading the code, shown here with real processes. Writes from both at
// once all succeed and leave exact counters (SQLite's one write lock, taken up front by every
// transaction, with busy_timeout); a unique key raced from both is one 201 and 409s; a key
// revoked on one process's dashboard is refused by the other on its next request (the token
// cache listens to SQLite's data_version); and both delivery workers share the webhook queue
// through their leases, each event reaching the receiver once.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { createTestDatabase, testDialect, type TestDatabase } from '../helpers/test-database.ts';
import { apiClient, type ApiClient } from '../helpers/test-server.ts';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.ts';
import { BrowserSession, uniqueEmail } from '../helpers/browser-session.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { assertCountersMatchRows, assertLedgerMatchesCounters } from '../helpers/recount.ts';
import { tally } from './invariants.ts';

describe('two server processes on one SQLite file', { skip: testDialect !== 'sqlite' && 'SQLite only (PostgreSQL processes: concurrency.test.ts)' }, () => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  const servers: ServerProcess[] = [];
  let receiver: WebhookReceiver;
  let merchant: BrowserSession;
  let program: { id: string; base: string };
  let token: string;
  let clients: ApiClient[];

  before(async () => {
    database = await createTestDatabase('sqlite');
    // Both with their webhook worker (the default), private URLs allowed for the receiver on
    // 127.0.0.1. One after the other, each kept as soon as it runs, so that `after` stops
    // whatever started even if the second fails to (a busy machine).
    for (let i = 0; i < 2; i++) {
      servers.push(await startServerProcess({ databaseUrl: database.url, startTimeoutMs: 90_000, env: { WEBHOOK_ALLOW_PRIVATE_URLS: '1', TOKEN_CACHE_MS: '60000' } }));
    }
    handle = openDatabase({ databaseUrl: database.url });
    receiver = await startWebhookReceiver();
    // The account, its program and its key, made on the first process's dashboard.
    merchant = await BrowserSession.signUp(servers[0]!.url, uniqueEmail('sqlite-two'));
    program = await merchant.createProgram({ name: 'Two Processes', domain: 'two.example', commissionRate: '20' });
    token = (await merchant.createApiKey(program.base, 'shared key')).token;
    clients = servers.map((s) => apiClient(s.url, token, program.id));
  });

  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await receiver?.close();
    await handle?.close();
    await database?.drop();
  });

  it('takes writes from both at once: every one answered, counters exact, each event delivered once', async () => {
    const hook = await clients[1]!.post('/webhooks', { url: `${receiver.url}/two`, events: ['sale.created'] });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));

    const SALES = 120;
    let next = 0;
    const outcomes: { status: number; body: unknown }[] = [];
    // 16 lanes, each alternating processes: an affiliate on one, its sale on the other.
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let n = next++; n < SALES; n = next++) {
          const affiliate = await clients[n % 2]!.post('/affiliates', { firstName: 'Lane', lastName: `N${n}`, email: uniqueEmail(`lane${n}`) });
          outcomes.push(affiliate);
          if (affiliate.status !== 201) continue;
          outcomes.push(await clients[(n + 1) % 2]!.post('/sales', { referralId: affiliate.body.id, name: 'Buyer', email: uniqueEmail(`buyer${n}`), totalEarned: 10 + n, externalInvoiceId: `inv_${n}` }));
        }
      }),
    );
    assert.deepEqual(tally(outcomes as never), { 201: 2 * SALES }, JSON.stringify(outcomes.filter((o) => o.status !== 201).slice(0, 3)));
    await assertCountersMatchRows(handle.db, program.id);
    await assertLedgerMatchesCounters(handle.db, program.id);

    // Both workers deliver (each leases its own deliveries): every sale.created arrives once.
    await receiver.waitFor((r) => new Set(r.map((d) => d.json?.id)).size >= SALES, 30_000, 'every sale.created');
    await new Promise((resolve) => setTimeout(resolve, 500)); // a duplicate would arrive now
    const ids = receiver.received.map((d) => d.json?.id as string);
    assert.equal(ids.length, SALES, `${ids.length - new Set(ids).size} event(s) delivered twice`);
    assert.equal(new Set(ids).size, SALES);
  });

  it('races a unique key from both processes: one 201, the rest 409, no 500', async () => {
    const email = uniqueEmail('raced');
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => clients[i % 2]!.post('/affiliates', { firstName: 'Raced', lastName: 'Twice', email })));
    assert.deepEqual(tally(answers), { 201: 1, '409 conflict': 19 });
  });

  it('a key revoked on one process is refused by the other on its next request', async () => {
    const other = clients[1]!;
    assert.equal((await other.get('/me')).status, 200, 'cached by the second process (TOKEN_CACHE_MS=60000)');
    const keyId = (await handle.db.selectFrom('api_tokens').select('id').where('program_id', '=', program.id).where('kind', '=', 'api_key').executeTakeFirstOrThrow()).id;
    const revoked = await merchant.submit(`${program.base}/keys`, `${program.base}/keys/${keyId}/revoke`, {});
    assert.equal(revoked.status, 303, revoked.text.slice(0, 300));
    assert.equal((await other.get('/me')).status, 401);
    assert.equal((await clients[0]!.get('/me')).status, 401);
  });
});
