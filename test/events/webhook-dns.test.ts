// Webhook DNS kept apart per program (issue 17 item 1): host names go to c-ares with their own
// deadline, each program has a bounded number of lookups running and a bounded queue, so a
// tenant whose names never answer delays nobody else's subscribe or delivery. A fake DNS
// server on 127.0.0.1 answers good.test and public.test and never answers *.blackhole.test.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { setMaxListeners } from 'node:events';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { MAX_WAITING_LOOKUPS, WebhookDns, WebhookDnsError } from '../../src/modules/webhooks/webhook-dns.ts';
import { createWebhookSender, type SendResult } from '../../src/modules/webhooks/webhook-sender.ts';
import { checkWebhookUrl } from '../../src/modules/webhooks/webhook.service.ts';
import type { ApiError } from '../../src/domain/errors.ts';
import { startTestServer, type ApiResponse } from '../helpers/test-server.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { startFakeDns, type FakeDns } from '../helpers/fake-dns.ts';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';

const HOSTILE_LOOKUPS = 12;

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

const blackholeNamesAsked = (dns: FakeDns) => new Set(dns.queries.filter((q) => q.includes('.blackhole.test ')).map((q) => q.split(' ')[0])).size;

describe('webhook DNS isolation', () => {
  let dns: FakeDns;
  before(async () => {
    dns = await startFakeDns();
  });
  after(() => dns.close());

  it("subscribe: a tenant's never-answering host names do not slow another tenant's subscribe (guard on)", async () => {
    const t = await startTestServer({ webhookAllowPrivateUrls: false, webhookDnsServers: [dns.server], webhookDnsTimeoutMs: 3000, worker: false });
    try {
      const hostile = await t.createTenant();
      const other = await t.createTenant();
      const attacks = Array.from({ length: HOSTILE_LOOKUPS }, (_, i) =>
        timed(() => hostile.post('/webhooks', { url: `https://${i}.blackhole.test/hook`, events: ['*'] })),
      );
      await sleep(300); // the hostile lookups are out
      const { value: res, ms } = await timed(() => other.post('/webhooks', { url: 'https://public.test/hook', events: ['*'] }));
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.ok(ms < 1500, `the other tenant's subscribe took ${Math.round(ms)} ms`);

      for (const { value, ms: hostileMs } of await Promise.all(attacks)) {
        assertProblem(value as ApiResponse, 422, 'validation_failed', '#/url');
        assert.match(value.body.detail, /^The webhook URL is refused: its host could not be resolved: DNS did not answer for \d+\.blackhole\.test within 3000 ms\.$/);
        assert.ok(hostileMs >= 2900, `a hostile subscribe answered after ${Math.round(hostileMs)} ms, before the DNS timeout`);
      }
      assert.equal(blackholeNamesAsked(dns) >= 4, true, 'the hostile names were asked of the DNS server');
      assert.equal((await hostile.get('/webhooks')).body.length, 0);
    } finally {
      await t.close();
    }
  });

  it("delivery: the sender reaches good.test promptly while another program's sends hang in DNS (private URLs allowed)", async () => {
    const receiver = await startWebhookReceiver('/hook');
    const port = new URL(receiver.url).port;
    const resolver = new WebhookDns({ webhookDnsTimeoutMs: 2000, webhookDnsServers: [dns.server], webhookDnsLookupsPerProgram: 4 });
    const sender = createWebhookSender({ timeoutMs: 10_000, allowPrivate: true, dns: resolver });
    try {
      const stuck: Array<Promise<SendResult>> = Array.from({ length: HOSTILE_LOOKUPS }, (_, i) =>
        sender.send(`http://${i}.sends.blackhole.test/hook`, { 'content-type': 'application/json' }, '{}', { programId: 'hostile-program' }),
      );
      await sleep(300);
      const result = await sender.send(`http://good.test:${port}/hook`, { 'content-type': 'application/json' }, '{"ok":true}', { programId: 'other-program' });
      assert.equal(result.statusCode, 200, JSON.stringify(result));
      assert.ok(result.durationMs < 1000, `the delivery took ${result.durationMs} ms`);
      assert.equal(receiver.received.length, 1);
      assert.equal(receiver.received[0]!.body, '{"ok":true}');

      for (const hung of await Promise.all(stuck)) {
        assert.equal(hung.statusCode, null);
        assert.match(hung.error ?? '', /^ETIMEOUT: DNS did not answer for \d+\.sends\.blackhole\.test within 2000 ms$/);
      }
      assert.equal(receiver.received.length, 1, 'nothing else arrived');
    } finally {
      sender.close();
      await receiver.close();
    }
  });

  it('bounds each program: a few lookups run, more wait in its own queue, past the queue they fail at once; abandoned ones leave it', async () => {
    const resolver = new WebhookDns({ webhookDnsTimeoutMs: 1000, webhookDnsServers: [dns.server], webhookDnsLookupsPerProgram: 2 });
    const before = dns.queries.length;
    const abandon = new AbortController();
    setMaxListeners(2 + MAX_WAITING_LOOKUPS, abandon.signal); // one signal for all, unlike a sender's
    const hostile = Array.from({ length: 2 + MAX_WAITING_LOOKUPS }, (_, i) =>
      resolver.resolve(`${i}.bound.blackhole.test`, { programId: 'hostile', allowPrivate: true, signal: abandon.signal }).then(
        () => 'resolved',
        (error: Error) => (error instanceof WebhookDnsError ? error.code : error.name),
      ),
    );
    await sleep(100);
    assert.equal(new Set(dns.queries.slice(before).map((q) => q.split(' ')[0]).filter((name) => name!.endsWith('.bound.blackhole.test'))).size, 2, 'two names asked at once for the program');

    const { value: busy, ms } = await timed(() =>
      resolver.resolve('one-more.blackhole.test', { programId: 'hostile', allowPrivate: true }).then(
        () => null,
        (error: unknown) => error,
      ),
    );
    assert.ok(busy instanceof WebhookDnsError && busy.code === 'EBUSY', String(busy));
    assert.match((busy as Error).message, /too many webhook DNS lookups are waiting for this program \(64\)/);
    assert.ok(ms < 100, `the refusal took ${Math.round(ms)} ms`);

    // A subscribe meeting the full queue is told to come back: 429, not a 5xx.
    await assert.rejects(checkWebhookUrl('https://one-more.blackhole.test/hook', { allowPrivate: false, dns: resolver, programId: 'hostile' }), (error: ApiError) => {
      assert.equal(error.status, 429);
      assert.equal(error.code, 'rate_limited');
      assert.match(error.detail, /Too many webhook host lookups are waiting for this program/);
      return true;
    });

    const other = await timed(() => resolver.resolve('public.test', { programId: 'other', allowPrivate: false }));
    assert.deepEqual(other.value, [{ address: '93.184.216.34', family: 4 }]);
    assert.ok(other.ms < 500, `another program's lookup took ${Math.round(other.ms)} ms`);

    abandon.abort();
    const outcomes = await Promise.all(hostile);
    assert.equal(outcomes.filter((o) => o === 'ETIMEOUT').length, 2, 'the two running lookups time out');
    assert.equal(outcomes.filter((o) => o === 'AbortError').length, MAX_WAITING_LOOKUPS, 'the waiting ones left the queue when abandoned');
    assert.equal(new Set(dns.queries.slice(before).map((q) => q.split(' ')[0]).filter((name) => name!.endsWith('.bound.blackhole.test'))).size, 2, 'abandoned lookups never asked');
  });

  it('answers localhost and names under it with loopback without a query, and resolves A and AAAA (IPv4 first)', async () => {
    const resolver = new WebhookDns({ webhookDnsTimeoutMs: 1000, webhookDnsServers: [dns.server], webhookDnsLookupsPerProgram: 4 });
    const before = dns.queries.length;
    const loopback = [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ];
    for (const name of ['localhost', 'localhost.', 'LocalHost', 'app.localhost']) {
      assert.deepEqual(await resolver.resolve(name, { allowPrivate: true }), loopback, name);
    }
    assert.equal(dns.queries.length, before, 'no query for localhost');
    assert.deepEqual(await resolver.resolve('good.test', { allowPrivate: true }), [{ address: '127.0.0.1', family: 4 }]);
    assert.deepEqual(await resolver.resolve('nat64.test', { allowPrivate: true }), [{ address: '64:ff9b::7f00:1', family: 6 }]);
    assert.deepEqual(dns.queries.slice(before).sort(), ['good.test A', 'good.test AAAA', 'nat64.test A', 'nat64.test AAAA']);
    await assert.rejects(resolver.resolve('nowhere.test', { allowPrivate: true }), (error: WebhookDnsError) => error.code === 'ENOTFOUND');
  });

  it('reads WEBHOOK_DNS_* settings: servers with ports, bounded timeout and per-program lookups', () => {
    const config = loadConfig({ WEBHOOK_DNS_SERVERS: '127.0.0.1:5353, [::1]:53, 9.9.9.9', WEBHOOK_DNS_TIMEOUT_MS: '3000', WEBHOOK_DNS_LOOKUPS_PER_PROGRAM: '8' });
    assert.deepEqual(config.webhookDnsServers, ['127.0.0.1:5353', '[::1]:53', '9.9.9.9']);
    assert.equal(config.webhookDnsTimeoutMs, 3000);
    assert.equal(config.webhookDnsLookupsPerProgram, 8);
    const defaults = loadConfig({});
    assert.deepEqual([defaults.webhookDnsServers, defaults.webhookDnsTimeoutMs, defaults.webhookDnsLookupsPerProgram], [[], 2000, 4]);
    for (const env of [
      { WEBHOOK_DNS_SERVERS: 'dns.example.com' },
      { WEBHOOK_DNS_SERVERS: '127.0.0.1:0' },
      { WEBHOOK_DNS_SERVERS: '[127.0.0.1]:53' },
      { WEBHOOK_DNS_SERVERS: Array(9).fill('1.1.1.1').join(',') },
      { WEBHOOK_DNS_TIMEOUT_MS: '50' },
      { WEBHOOK_DNS_LOOKUPS_PER_PROGRAM: '0' },
    ]) {
      assert.throws(() => loadConfig(env), ConfigError, JSON.stringify(env));
    }
  });
});
