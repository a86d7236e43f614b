// Events reach subscribers (CONTRACT.md "Events"): REST-hook subscriptions, signed deliveries
// to a real receiver on 127.0.0.1, retries, 410, the outbox's all-or-nothing, and isolation.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { programContext, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { recordEvent } from '../../src/modules/events/outbox.ts';
import { inTransaction } from '../../src/db/transaction.ts';

let n = 0;
const email = (p = 'cust') => `${p}-${++n}-${process.pid}@example.com`;

async function affiliate(api: ApiClient) {
  const res = await api.post('/affiliates', { firstName: 'Ada', lastName: 'Lovelace', email: email('aff') });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; link: string };
}

async function subscribe(api: ApiClient, url: string, events: string[] = ['*']) {
  const res = await api.post('/webhooks', { url, events });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; url: string; events: string[]; secret: string; createdAt: string };
}

describe('webhooks', () => {
  let t: TestServer;
  let api: ApiClient;
  let receiver: WebhookReceiver;

  before(async () => {
    t = await startTestServer({ webhookAllowPrivateUrls: true, webhookRetrySchedule: [100, 100, 200, 200, 400] });
    api = await t.createTenant({ commissionRate: 20 });
    receiver = await startWebhookReceiver();
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  it('POST /webhooks answers 201 with the secret once; GET lists it without the secret; DELETE removes it', async () => {
    const created = await subscribe(api, receiver.url + '/crud', ['sale.created', 'referral.created', 'sale.created']);
    assert.deepEqual(Object.keys(created).sort(), ['createdAt', 'events', 'id', 'secret', 'url']);
    assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.deepEqual(created.events, ['sale.created', 'referral.created'], 'duplicates dropped, order kept');
    const list = await api.get('/webhooks');
    assert.equal(list.status, 200);
    const listed = list.body.find((w: { id: string }) => w.id === created.id);
    assert.deepEqual(listed, { id: created.id, url: created.url, events: created.events, createdAt: created.createdAt, disabledAt: null });
    assert.ok(!JSON.stringify(list.body).includes(created.secret), 'the secret is never shown again');

    const byQuery = await api.request('DELETE', `/webhooks?id=${created.id}`);
    assert.equal(byQuery.status, 200);
    assert.equal(byQuery.body.id, created.id);
    assertProblem(await api.request('DELETE', `/webhooks?id=${created.id}`), 404, 'not_found');

    const again = await subscribe(api, receiver.url + '/crud2', ['*']);
    const byBody = await api.request('DELETE', '/webhooks', { id: again.id });
    assert.equal(byBody.status, 200, JSON.stringify(byBody.body));
    assert.equal((await api.get('/webhooks')).body.some((w: { id: string }) => w.id === again.id), false);
  });

  it('refuses a URL the program already subscribed with 409 conflict naming the existing webhook, even when subscribes race', async () => {
    const first = await subscribe(api, receiver.url + '/twice', ['sale.created']);
    // The same URL as the parser normalises it (scheme case, dot segments, spaces around), whatever the events.
    const rest = receiver.url.slice('http://'.length);
    for (const url of [receiver.url + '/twice', `HTTP://${rest}/twice`, receiver.url + '/a/../twice', ` ${receiver.url}/twice `]) {
      const again = await api.post('/webhooks', { url, events: ['*'] });
      assertProblem(again, 409, 'conflict');
      assert.equal(again.body.existingId, first.id, url);
      assert.match(again.body.detail, new RegExp(`already sends events to ${receiver.url.replaceAll('.', '\\.')}/twice \\(webhook ${first.id}\\)`));
    }
    assert.equal((await api.get('/webhooks')).body.filter((w: { url: string }) => w.url === first.url).length, 1);
    // Another path, or another program, is another endpoint.
    const slash = await subscribe(api, receiver.url + '/twice/', ['*']);
    const other = await t.createTenant();
    assert.equal((await other.post('/webhooks', { url: first.url, events: ['*'] })).status, 201);

    // Subscribes of one URL at the same moment: one wins, every other gets the 409 (the
    // program's lock serialises them; there is no unique index to fall back on).
    const raced = await Promise.all(Array.from({ length: 30 }, () => api.post('/webhooks', { url: receiver.url + '/raced', events: ['*'] })));
    assert.deepEqual(raced.map((r) => r.status).sort(), [201, ...Array<number>(29).fill(409)], JSON.stringify(raced.map((r) => r.body)));
    const winner = raced.find((r) => r.status === 201)!.body.id;
    for (const r of raced.filter((r) => r.status === 409)) assert.equal(r.body.existingId, winner);

    // Once deleted, the URL may be subscribed again.
    assert.equal((await api.request('DELETE', `/webhooks?id=${first.id}`)).status, 200);
    const renewed = await subscribe(api, receiver.url + '/twice', ['*']);
    for (const id of [renewed.id, winner, slash.id]) assert.equal((await api.request('DELETE', `/webhooks?id=${id}`)).status, 200);
  });

  it('refuses bad subscriptions with 422 and stores nothing', async () => {
    const before = (await api.get('/webhooks')).body.length;
    assertProblem(await api.post('/webhooks', { url: receiver.url, events: ['sale.exploded'] }), 422, 'validation_failed', '#/events/0');
    assertProblem(await api.post('/webhooks', { url: receiver.url, events: [] }), 422, 'validation_failed', '#/events');
    // webhook.test goes only to the endpoint it is sent to from the dashboard: not subscribable.
    assertProblem(await api.post('/webhooks', { url: receiver.url, events: ['webhook.test'] }), 422, 'validation_failed', '#/events/0');
    assertProblem(await api.post('/webhooks', { url: receiver.url, events: ['*', 'sale.created'] }), 422, 'validation_failed', '#/events');
    assertProblem(await api.post('/webhooks', { url: 'not a url', events: ['*'] }), 422, 'validation_failed', '#/url');
    assertProblem(await api.post('/webhooks', { url: 'ftp://127.0.0.1/x', events: ['*'] }), 422, 'validation_failed', '#/url');
    assertProblem(await api.post('/webhooks', { url: 'https://user:pw@example.com/x', events: ['*'] }), 422, 'validation_failed', '#/url');
    assertProblem(await api.post('/webhooks', { events: ['*'] }), 422, 'validation_failed', '#/url');
    assertProblem(await api.request('DELETE', '/webhooks'), 422, 'validation_failed', '#/id');
    assertProblem(await api.request('DELETE', '/webhooks?id=nope'), 422, 'validation_failed', '#/id');
    assert.equal((await api.get('/webhooks')).body.length, before);
  });

  it('delivers sale.created, signed per Standard Webhooks, within a second of the POST', async () => {
    const hook = await subscribe(api, receiver.url + '/sales', ['sale.created']);
    const aff = await affiliate(api);
    const customer = email();
    assert.equal((await api.post('/referrals', { name: 'Cy', email: customer, referredUserExternalId: `cus-${n}`, affiliateId: aff.link })).status, 201);
    const posted = Date.now();
    const sale = await api.post('/sales', { email: customer, totalEarned: 49.99, externalInvoiceId: `in-${n}` });
    assert.equal(sale.status, 201);
    const mine = () => receiver.received.filter((r) => r.json?.data?.id === sale.body.id);
    await receiver.waitFor(() => mine().length > 0, 3000, 'sale.created');
    const delivery = mine()[0]!;
    assert.ok(delivery.receivedAt - posted < 1000, `delivered ${delivery.receivedAt - posted} ms after the POST`);

    // The envelope: the resource exactly as the API returned it.
    assert.deepEqual(Object.keys(delivery.json).sort(), ['data', 'id', 'livemode', 'programId', 'sequence', 'timestamp', 'type']);
    assert.equal(delivery.json.type, 'sale.created');
    assert.equal(delivery.json.programId, api.programId);
    assert.deepEqual(delivery.json.data, sale.body);
    assert.match(delivery.json.id, /^evt_/);
    assert.ok(Number.isSafeInteger(delivery.json.sequence) && delivery.json.sequence > 0);
    assert.equal(delivery.headers['webhook-id'], delivery.json.id);
    assert.equal(delivery.headers['content-type'], 'application/json');
    assert.ok(!delivery.headers['user-agent']!.includes('node'), 'our own user agent');
    // Only the subscribed type reached this URL (the affiliate and referral made above did not).
    const salesPath = new URL(receiver.url + '/sales').pathname;
    assert.deepEqual([...new Set(receiver.received.filter((r) => r.path === salesPath).map((r) => r.json?.type))], ['sale.created']);

    // The npm standardwebhooks package verifies it; a tampered body or a stale timestamp fails.
    const verifier = new Webhook(hook.secret);
    const headers = { 'webhook-id': delivery.headers['webhook-id']!, 'webhook-timestamp': delivery.headers['webhook-timestamp']!, 'webhook-signature': delivery.headers['webhook-signature']! };
    assert.deepEqual(verifier.verify(delivery.body, headers), delivery.json);
    assert.throws(() => verifier.verify(delivery.body.replace('"sale.created"', '"sale.createx"'), headers), /signature/i);
    const stale = { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 3600) };
    assert.throws(() => verifier.verify(delivery.body, stale), /timestamp/i);
    assert.throws(() => new Webhook(`whsec_${Buffer.from('another key of 32 bytes, really!').toString('base64')}`).verify(delivery.body, headers), /signature/i);

    // Each attempt is stored with its status and excerpt.
    // (Recorded once the answer is in, a moment after the receiver saw the request.)
    let attempts = await rawDb(t).selectFrom('webhook_attempts').selectAll().where('webhook_id', '=', hook.id).execute();
    for (let i = 0; i < 100 && attempts.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      attempts = await rawDb(t).selectFrom('webhook_attempts').selectAll().where('webhook_id', '=', hook.id).execute();
    }
    assert.equal(attempts.length, 1);
    assert.equal(attempts[0]!.status_code, 200);
    assert.equal(attempts[0]!.response_excerpt, 'ok');
    await api.request('DELETE', `/webhooks?id=${hook.id}`);
  });

  it('a change that rolls back produces no event and no delivery', async () => {
    await subscribe(api, receiver.url + '/rollback', ['*']);
    const db = rawDb(t);
    const events = async () => Number((await db.selectFrom('events').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    const before = await events();
    // A code at its limit: the sale fails at the redemption, after the customer row was written in the same transaction.
    const aff = await affiliate(api);
    const coupon = await api.post('/coupons', { name: 'Ten', couponType: 'PERCENTAGE', percentOff: 10, duration: 'once' });
    assert.equal(coupon.status, 201, JSON.stringify(coupon.body));
    const promoCode = `ROLL${n}`;
    const code = await api.post('/promotional-codes', { couponId: coupon.body.id, code: promoCode, affiliateId: aff.id, maxRedemptions: 1 });
    assert.equal(code.status, 201, JSON.stringify(code.body));
    const types = async () => (await db.selectFrom('events').select('type').execute()).map((e) => e.type);
    assert.ok((await types()).includes('coupon.created') && (await types()).includes('promotional_code.created'));
    const first = await api.post('/sales', { promoCode, name: 'First Customer', email: email(), totalEarned: 10 });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    const afterSetup = await events();
    assert.ok(afterSetup >= before + 6, 'affiliate, coupon, code, referral, redemption and sale events');
    const failed = await api.post('/sales', { promoCode, name: 'New Customer', email: email(), totalEarned: 10 });
    assertProblem(failed, 422, 'promo_code_exhausted');
    assert.equal(await events(), afterSetup, 'no event from the failed sale');
    assert.equal(await db.selectFrom('referrals').select('id').where('name', '=', 'New Customer').executeTakeFirst(), undefined, 'the new customer rolled back too');
  });

  it('retries while the receiver is down and delivers every event once it is back', async () => {
    const down = await startWebhookReceiver('/down');
    const hook = await subscribe(api, down.url, ['affiliate.created']);
    await down.pause();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await affiliate(api)).id);
    // Let attempts fail (connection refused), then come back.
    let failedAttempts = await rawDb(t).selectFrom('webhook_attempts').selectAll().where('webhook_id', '=', hook.id).execute();
    for (let i = 0; i < 250 && failedAttempts.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 20));
      failedAttempts = await rawDb(t).selectFrom('webhook_attempts').selectAll().where('webhook_id', '=', hook.id).execute();
    }
    assert.ok(failedAttempts.length >= 1 && failedAttempts.every((a) => a.status_code === null && /ECONNREFUSED/.test(a.error ?? '')), JSON.stringify(failedAttempts));
    await down.resume();
    await down.waitFor((r) => ids.every((id) => r.some((d) => d.json?.data?.id === id)), 8000, 'every affiliate.created');
    // (Answers are recorded a moment after they arrive.)
    let delivered = await rawDb(t).selectFrom('webhook_deliveries').select(['state']).where('webhook_id', '=', hook.id).execute();
    for (let i = 0; i < 150 && !delivered.every((d) => d.state === 'delivered'); i++) {
      await new Promise((r) => setTimeout(r, 20));
      delivered = await rawDb(t).selectFrom('webhook_deliveries').select(['state']).where('webhook_id', '=', hook.id).execute();
    }
    assert.equal(delivered.length, ids.length, 'one delivery per event');
    assert.ok(delivered.every((d) => d.state === 'delivered'), JSON.stringify(delivered));
    await down.close();
  });

  it('gives up after the last retry (state failed), and a 410 Gone removes the subscription', async () => {
    const failing = await startWebhookReceiver('/failing');
    failing.respondWith(500, 'boom');
    const hook = await subscribe(api, failing.url, ['link.created']);
    const aff = await affiliate(api);
    const link = await api.post('/links', { affiliateId: aff.id, link: `fail-${n}` });
    assert.equal(link.status, 201, JSON.stringify(link.body));
    // 1 attempt + 5 retries on the test schedule (about 1 s).
    await failing.waitFor((r) => r.length >= 6, 8000, 'six attempts');
    const db = rawDb(t);
    const waitState = async () => {
      for (let i = 0; i < 100; i++) {
        const d = await db.selectFrom('webhook_deliveries').selectAll().where('webhook_id', '=', hook.id).executeTakeFirstOrThrow();
        if (d.state === 'failed') return d;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error('never failed');
    };
    const final = await waitState();
    assert.equal(final.attempts, 6);
    const attempts = await db.selectFrom('webhook_attempts').selectAll().where('webhook_id', '=', hook.id).execute();
    assert.equal(attempts.length, 6);
    assert.ok(attempts.every((a) => a.status_code === 500 && a.response_excerpt === 'boom'));
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(failing.received.length, 6, 'no attempt after the last retry');

    failing.respondWith(410, 'gone');
    assert.equal((await api.post('/links', { affiliateId: aff.id, link: `gone-${n}` })).status, 201);
    await failing.waitFor((r) => r.length === 7, 3000, 'the 410 attempt');
    for (let i = 0; i < 50 && (await api.get('/webhooks')).body.some((w: { id: string }) => w.id === hook.id); i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal((await api.get('/webhooks')).body.some((w: { id: string }) => w.id === hook.id), false, '410 removed the subscription');
    assert.equal((await api.post('/links', { affiliateId: aff.id, link: `after-${n}` })).status, 201);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(failing.received.length, 7, 'nothing sent after 410');
    await failing.close();
  });

  it("one program's token never sees or deletes another's subscriptions, nor receives its events", async () => {
    const other = await t.createTenant();
    const otherReceiver = await startWebhookReceiver('/other');
    const mine = await subscribe(api, receiver.url + '/isolation', ['*']);
    const theirs = await subscribe(other, otherReceiver.url, ['*']);
    assert.equal((await other.get('/webhooks')).body.some((w: { id: string }) => w.id === mine.id), false);
    assertProblem(await other.request('DELETE', `/webhooks?id=${mine.id}`), 404, 'not_found');
    assert.equal((await api.get('/webhooks')).body.some((w: { id: string }) => w.id === mine.id), true, 'still there');
    const created = await affiliate(api);
    await receiver.waitFor((r) => r.some((d) => d.json?.data?.id === created.id), 3000, 'own event');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(otherReceiver.received.length, 0, "program B's endpoint got none of program A's events");
    await other.request('DELETE', `/webhooks?id=${theirs.id}`);
    await otherReceiver.close();
  });

  it('revoking the token that subscribed deletes its subscriptions', async () => {
    const { issueToken, revokeToken } = await import('../../src/modules/tokens/token.service.ts');
    const { apiClient } = await import('../helpers/test-server.ts');
    const db = rawDb(t);
    const key = await issueToken(db, { programId: api.programId, name: 'zap', kind: 'connect' });
    const zap = apiClient(t.url, key.token, api.programId);
    const hook = await subscribe(zap, receiver.url + '/zap', ['sale.created']);
    const kept = await subscribe(api, receiver.url + '/kept', ['sale.created']);
    await revokeToken(db, key.id);
    const ids = (await api.get('/webhooks')).body.map((w: { id: string }) => w.id);
    assert.ok(!ids.includes(hook.id), "the revoked token's subscription is gone");
    assert.ok(ids.includes(kept.id), "another token's subscription stays");
  });
});

describe('webhook URLs without WEBHOOK_ALLOW_PRIVATE_URLS', () => {
  let t: TestServer;
  let api: ApiClient;
  before(async () => {
    t = await startTestServer({ webhookAllowPrivateUrls: false });
    api = await t.createTenant();
  });
  after(() => t.close());

  it('refuses plain http, and loopback, private, link-local, CGNAT and metadata addresses, with 422', async () => {
    // Only refusals: nothing here is ever sent a request.
    for (const url of [
      'http://hooks.example.com/x',
      'https://127.0.0.1/x',
      'https://localhost/x',
      'https://10.1.2.3/x',
      'https://172.16.0.1/x',
      'https://192.168.1.1/x',
      'https://169.254.169.254/latest/meta-data',
      'https://100.64.0.1/x',
      'https://0.0.0.0/x',
      'https://[::1]/x',
      'https://[fd00:ec2::254]/x',
      'https://[fe80::1]/x',
      'https://[::ffff:127.0.0.1]/x',
      'https://[::ffff:a9fe:a9fe]/x',
      'https://2130706433/x', // 127.0.0.1 as one number
      'https://0x7f.1/x',
    ]) {
      const res = await api.post('/webhooks', { url, events: ['*'] });
      assertProblem(res, 422, 'validation_failed', '#/url');
      assert.match(res.body.detail, /refused/, url);
    }
    assert.equal((await api.get('/webhooks')).body.length, 0);
  });
});

describe('delivery rules', () => {
  it('checks the address again at delivery time: a URL allowed then is refused once private URLs are not', async () => {
    const { loadConfig } = await import('../../src/config.ts');
    const { startServer } = await import('../../src/server.ts');
    const permissive = await startTestServer({ webhookAllowPrivateUrls: true, worker: false });
    const receiver = await startWebhookReceiver('/rebinding');
    try {
      const api = await permissive.createTenant();
      const hook = await subscribe(api, receiver.url, ['*']);
      await permissive.server.close();
      // The same database served by a process without WEBHOOK_ALLOW_PRIVATE_URLS (as if DNS had changed).
      const strict = await startServer(loadConfig({}, { ...permissive.config, webhookAllowPrivateUrls: false, worker: true }));
      try {
        const { apiClient } = await import('../helpers/test-server.ts');
        const client = apiClient(strict.url, api.token, api.programId);
        assert.equal((await client.post('/affiliates', { firstName: 'A', lastName: 'B', email: email() })).status, 201);
        const db = strict.database.db;
        let attempt;
        for (let i = 0; i < 100 && !attempt; i++) {
          attempt = await db.selectFrom('webhook_attempts').selectAll().where('webhook_id', '=', hook.id).executeTakeFirst();
          if (!attempt) await new Promise((r) => setTimeout(r, 30));
        }
        assert.ok(attempt, 'an attempt was recorded');
        assert.equal(attempt.status_code, null);
        assert.match(attempt.error ?? '', /refused: 127\.0\.0\.1 is a private address/);
        assert.equal(receiver.received.length, 0, 'nothing was sent');
      } finally {
        await strict.close();
      }
    } finally {
      await permissive.database.drop();
      await receiver.close();
    }
  });

  it('disables an endpoint that failed every attempt for the threshold, and skips it until re-enabled', async () => {
    const t = await startTestServer({ webhookAllowPrivateUrls: true, webhookRetrySchedule: [50, 50, 50, 50], webhookDisableAfterMs: 100 });
    const receiver = await startWebhookReceiver('/disable');
    try {
      const api = await t.createTenant();
      receiver.respondWith(503);
      const hook = await subscribe(api, receiver.url, ['affiliate.created']);
      await affiliate(api);
      let listed;
      for (let i = 0; i < 100; i++) {
        listed = (await api.get('/webhooks')).body.find((w: { id: string }) => w.id === hook.id);
        if (listed.disabledAt !== null) break;
        await new Promise((r) => setTimeout(r, 30));
      }
      assert.match(listed.disabledAt, /^\d{4}-\d\d-\d\dT/, 'disabled after failing for longer than the threshold');
      const attemptsWhenDisabled = receiver.received.length;
      receiver.respondWith(200);
      const missed = await affiliate(api);
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(receiver.received.length, attemptsWhenDisabled, 'a disabled endpoint gets nothing');
      const { enableWebhook } = await import('../../src/modules/webhooks/webhook.service.ts');
      await enableWebhook(rawDb(t), await programContext(t, api.programId), hook.id);
      await receiver.waitFor((r) => r.some((d) => d.json?.data?.id === missed.id), 3000, 'the missed event after re-enabling');
    } finally {
      await t.close();
      await receiver.close();
    }
  });

  it('purges events older than the retention period, with their deliveries, and keeps newer ones', async () => {
    const t = await startTestServer({ worker: false });
    try {
      const api = await t.createTenant();
      const db = rawDb(t);
      const old = new Date(Date.now() - 31 * 86_400_000).toISOString();
      // Written as the server writes events (numbered at once on SQLite, by the sequencer on PostgreSQL).
      const oldId = await inTransaction(db, (tx) => recordEvent(tx, api.programId, 'webhook.test', {}, old));
      await affiliate(api);
      const { createPeriodicWorker } = await import('../../src/modules/maintenance/periodic-worker.ts');
      const { purgeJob } = await import('../../src/modules/maintenance/purge-job.ts');
      const logs: string[] = [];
      const log = { error: (o: object, m: string) => logs.push(m), warn: () => {}, debug: () => {} };
      const worker = createPeriodicWorker(purgeJob, { db, config: t.config, clock: () => new Date(), log });
      worker.start();
      for (let i = 0; i < 100; i++) {
        if ((await db.selectFrom('events').select('id').where('id', '=', oldId).executeTakeFirst()) === undefined) break;
        await new Promise((r) => setTimeout(r, 30));
      }
      await worker.stop();
      const ids = (await db.selectFrom('events').select(['id', 'type']).where('program_id', '=', api.programId).execute()).map((e) => e.type);
      assert.deepEqual(ids, ['affiliate.created'], 'the 31-day-old event is gone, today’s stays');
      assert.deepEqual(logs, []);
    } finally {
      await t.close();
    }
  });
});
