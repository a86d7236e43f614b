// The SSRF guard (issue 17 item 8): every address that is not plain public unicast is refused
// — at subscribe time (422) and again by the sender at delivery, which must refuse without
// dialling. Nothing here sends a request anywhere but loopback: subscribing to an address
// literal sends nothing, and the sender's connections are watched (and stopped) below.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { startFakeDns, type FakeDns } from '../helpers/fake-dns.ts';
import { refusedAddressRange } from '../../src/modules/webhooks/url-guard.ts';
import { WebhookDns } from '../../src/modules/webhooks/webhook-dns.ts';
import { createWebhookSender } from '../../src/modules/webhooks/webhook-sender.ts';

/** Webhook URLs on address literals, and the range (as the refusal names it) each falls in. */
const REFUSED_LITERALS: Array<[url: string, range: string]> = [
  // IPv4: loopback, RFC 1918, link-local and cloud metadata, CGNAT, "this network"
  ['https://127.0.0.1/x', 'loopback'],
  ['https://127.255.255.254:8443/x', 'loopback'],
  ['https://10.0.0.1/x', 'private'],
  ['https://10.255.255.255/x', 'private'],
  ['https://172.16.0.1/x', 'private'],
  ['https://172.31.255.254/x', 'private'],
  ['https://192.168.0.1/x', 'private'],
  ['https://169.254.169.254/latest/meta-data', 'linkLocal'],
  ['https://169.254.0.1/x', 'linkLocal'],
  ['https://100.64.0.1/x', 'carrierGradeNat'],
  ['https://100.127.255.254/x', 'carrierGradeNat'],
  ['https://0.0.0.0/x', 'unspecified'],
  ['https://0.1.2.3/x', 'unspecified'],
  // IPv4: multicast, broadcast, reserved, documentation, benchmarking, 6to4 relay, AS112, AMT
  ['https://224.0.0.1/x', 'multicast'],
  ['https://239.255.255.250/x', 'multicast'],
  ['https://255.255.255.255/x', 'broadcast'],
  ['https://240.0.0.1/x', 'reserved'],
  ['https://192.0.0.8/x', 'reserved'],
  ['https://192.0.2.1/x', 'reserved'],
  ['https://198.51.100.7/x', 'reserved'],
  ['https://203.0.113.9/x', 'reserved'],
  ['https://198.18.0.1/x', 'reserved'],
  ['https://192.88.99.1/x', 'reserved'],
  ['https://192.31.196.1/x', 'as112'],
  ['https://192.52.193.1/x', 'amt'],
  // IPv4 written as the URL parser also reads it: one number, hex, octal, short forms
  ['https://2130706433/x', 'loopback'],
  ['https://0x7f.1/x', 'loopback'],
  ['https://017700000001/x', 'loopback'],
  ['https://127.1/x', 'loopback'],
  ['https://0177.0.0.1/x', 'loopback'],
  ['https://0xa9fea9fe/x', 'linkLocal'],
  ['https://0/x', 'unspecified'],
  ['https://0x0a.0.0.1/x', 'private'],
  // IPv6: loopback, unspecified
  ['https://[::1]/x', 'loopback'],
  ['https://[::1]:8443/x', 'loopback'],
  ['https://[0:0:0:0:0:0:0:1]/x', 'loopback'],
  ['https://[::]/x', 'unspecified'],
  // IPv4-mapped ::ffff:0:0/96, dotted and hex, private and public IPv4 alike
  ['https://[::ffff:127.0.0.1]/x', 'ipv4Mapped'],
  ['https://[::ffff:7f00:1]/x', 'ipv4Mapped'],
  ['https://[::ffff:a9fe:a9fe]/x', 'ipv4Mapped'],
  ['https://[::ffff:10.0.0.1]/x', 'ipv4Mapped'],
  ['https://[::ffff:93.184.216.34]/x', 'ipv4Mapped'],
  ['https://[0:0:0:0:0:ffff:7f00:1]/x', 'ipv4Mapped'],
  // IPv4-translated ::ffff:0:0:0/96 (RFC 6145)
  ['https://[::ffff:0:7f00:1]/x', 'rfc6145'],
  ['https://[::ffff:0:127.0.0.1]/x', 'rfc6145'],
  // IPv4-compatible ::/96 (ipaddr.js calls it unicast; the guard does not)
  ['https://[::127.0.0.1]/x', 'IPv4-compatible'],
  ['https://[::7f00:1]/x', 'IPv4-compatible'],
  ['https://[::a9fe:a9fe]/x', 'IPv4-compatible'],
  ['https://[::10.0.0.1]/x', 'IPv4-compatible'],
  // NAT64: well-known 64:ff9b::/96 and local-use 64:ff9b:1::/48, whatever IPv4 they carry
  ['https://[64:ff9b::7f00:1]/x', 'rfc6052'],
  ['https://[64:ff9b::127.0.0.1]/x', 'rfc6052'],
  ['https://[64:ff9b::a9fe:a9fe]/x', 'rfc6052'],
  ['https://[64:ff9b::5db8:d822]/x', 'rfc6052'],
  ['https://[64:ff9b:1::a00:1]/x', 'rfc6052'],
  // 6to4 2002::/16 and Teredo 2001::/32, refused whole
  ['https://[2002:7f00:1::]/x', '6to4'],
  ['https://[2002:a9fe:a9fe::1]/x', '6to4'],
  ['https://[2002:5db8:d822::1]/x', '6to4'],
  ['https://[2001::1]/x', 'teredo'],
  ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/x', 'teredo'],
  // unique-local (incl. the IPv6 metadata address), link-local, site-local, multicast
  ['https://[fc00::1]/x', 'uniqueLocal'],
  ['https://[fd00:ec2::254]/x', 'uniqueLocal'],
  ['https://[fe80::1]/x', 'linkLocal'],
  ['https://[febf::1]/x', 'linkLocal'],
  ['https://[fec0::1]/x', 'deprecatedSiteLocal'],
  ['https://[feff::1]/x', 'deprecatedSiteLocal'],
  ['https://[ff02::1]/x', 'multicast'],
  ['https://[ff05::1:3]/x', 'multicast'],
  // discard, documentation, benchmarking, ORCHID, segment routing
  ['https://[100::1]/x', 'discard'],
  ['https://[2001:db8::1]/x', 'reserved'],
  ['https://[3fff::1]/x', 'reserved'],
  ['https://[2001:2::1]/x', 'benchmarking'],
  ['https://[2001:10::1]/x', 'deprecatedOrchid'],
  ['https://[2001:20::1]/x', 'orchid2'],
  ['https://[5f00::1]/x', 'segmentRouting'],
];

/** Names the guard resolves (RFC 6761 loopback, or the fake DNS below) to refused addresses. */
const REFUSED_NAMES: Array<[url: string, shown: RegExp]> = [
  ['https://localhost/x', /localhost resolves to 127\.0\.0\.1, a private address \(loopback\)/],
  ['https://LOCALHOST./x', /localhost\. resolves to 127\.0\.0\.1, a private address \(loopback\)/],
  ['https://api.localhost/x', /api\.localhost resolves to 127\.0\.0\.1, a private address \(loopback\)/],
  ['https://good.test/x', /good\.test resolves to 127\.0\.0\.1, a private address \(loopback\)/],
  ['https://nat64.test/x', /nat64\.test resolves to 64:ff9b::7f00:1, a private address \(rfc6052\)/],
  ['https://mixed.test/x', /mixed\.test resolves to 10\.0\.0\.7, a private address \(private\)/],
];

/** Public addresses: accepted. Subscribing sends nothing, so none of them is contacted. (1572395042 is 93.184.216.34: another path, or it would be the same URL.) */
const ACCEPTED = ['https://93.184.216.34/hook', 'https://1572395042/other-hook', 'https://1.1.1.1:8443/x', 'https://[2606:4700::1111]/hook', 'https://[2001:4860:4860::8888]/x', 'https://public.test/hook'];

describe('SSRF guard at subscribe time (WEBHOOK_ALLOW_PRIVATE_URLS off)', () => {
  let t: TestServer;
  let api: ApiClient;
  let dns: FakeDns;
  before(async () => {
    dns = await startFakeDns();
    // No worker: the public subscriptions accepted below must never be sent anything.
    t = await startTestServer({ webhookAllowPrivateUrls: false, webhookDnsServers: [dns.server], worker: false });
    api = await t.createTenant();
  });
  after(async () => {
    await t.close();
    await dns.close();
  });

  it(`refuses each of ${REFUSED_LITERALS.length} non-public address literals with 422, naming its range, and stores nothing`, async () => {
    assert.ok(REFUSED_LITERALS.length >= 68);
    for (const [url, range] of REFUSED_LITERALS) {
      const res = await api.post('/webhooks', { url, events: ['*'] });
      assertProblem(res, 422, 'validation_failed', '#/url');
      // …and names the setting that lifts the refusal, for people with a local receiver.
      assert.match(res.body.detail, new RegExp(`^The webhook URL is refused: .* is a private address \\(${range}\\), not a public one\\. To reach a receiver on this machine or your network .*WEBHOOK_ALLOW_PRIVATE_URLS=1 \\(for local development only\\)\\.$`), url);
      assert.match(res.body.errors[0].detail, /WEBHOOK_ALLOW_PRIVATE_URLS=1/, url);
    }
    assert.equal((await api.get('/webhooks')).body.length, 0);
    assert.deepEqual(dns.queries, [], 'address literals are never looked up');
  });

  it('refuses names that resolve to a non-public address, even when another address is public', async () => {
    for (const [url, shown] of REFUSED_NAMES) {
      const res = await api.post('/webhooks', { url, events: ['*'] });
      assertProblem(res, 422, 'validation_failed', '#/url');
      assert.match(res.body.detail, shown, url);
    }
    assert.ok(!dns.queries.some((q) => q.includes('localhost')), 'localhost is answered without a query (RFC 6761)');
    assert.equal((await api.get('/webhooks')).body.length, 0);
  });

  it('refuses a name with no address with a clear 422', async () => {
    const res = await api.post('/webhooks', { url: 'https://nowhere.test/x', events: ['*'] });
    assertProblem(res, 422, 'validation_failed', '#/url');
    assert.match(res.body.detail, /its host could not be resolved: nowhere\.test has no A or AAAA record/);
    assert.doesNotMatch(res.body.detail, /WEBHOOK_ALLOW_PRIVATE_URLS/, 'a refusal the setting does not lift does not name it');
  });

  it('refuses plain http naming WEBHOOK_ALLOW_PRIVATE_URLS, and form errors the setting does not lift without it', async () => {
    const http = await api.post('/webhooks', { url: 'http://receiver.example/hooks', events: ['*'] });
    assertProblem(http, 422, 'validation_failed', '#/url');
    assert.match(http.body.detail, /^The webhook URL is refused: it must use https\. To reach .*WEBHOOK_ALLOW_PRIVATE_URLS=1/);
    assert.match(http.body.errors[0].detail, /^must use https\. To reach .*WEBHOOK_ALLOW_PRIVATE_URLS=1/);
    for (const url of ['https://user:secret@receiver.example/hooks', 'ftp://receiver.example/hooks', 'not a url']) {
      const res = await api.post('/webhooks', { url, events: ['*'] });
      assertProblem(res, 422, 'validation_failed', '#/url');
      assert.doesNotMatch(res.body.detail, /WEBHOOK_ALLOW_PRIVATE_URLS/, url);
    }
    assert.equal((await api.get('/webhooks')).body.length, 0);
    assert.deepEqual(dns.queries.filter((q) => q.startsWith('receiver.example')), [], 'nothing refused by its form is looked up');
  });

  it('accepts public unicast addresses and names', async () => {
    for (const url of ACCEPTED) {
      const res = await api.post('/webhooks', { url, events: ['*'] });
      assert.equal(res.status, 201, `${url}: ${JSON.stringify(res.body)}`);
    }
    assert.equal((await api.get('/webhooks')).body.length, ACCEPTED.length);
  });
});

describe('the classification of addresses as DNS answers them', () => {
  it('reads dotted IPv4 tails by their real bits, refuses zone ids and non-addresses, and passes public unicast', () => {
    for (const [address, range] of [
      ['::127.0.0.1', 'IPv4-compatible'], // ipaddr.js alone would call this ::ffff:127.0.0.1
      ['::ffff:127.0.0.1', 'ipv4Mapped'],
      ['::ffff:0:10.0.0.1', 'rfc6145'],
      ['64:ff9b::10.0.0.1', 'rfc6052'],
      ['2002:c000:0201::1', '6to4'],
      ['fe80::1%eth0', 'scoped'],
      ['2606:4700::1111%1', 'scoped'],
      ['example.com', 'not an address'],
      ['127.0.0.1.', 'not an address'],
      ['93.184.216.34', null],
      ['2606:4700::1111', null],
      ['2a00:1450:4001:81c::200e', null],
    ] as const) {
      assert.equal(refusedAddressRange(address), range, address);
    }
  });
});

describe('SSRF guard at delivery time: the sender refuses without dialling', () => {
  let dns: FakeDns;
  const dialled: string[] = [];
  const realConnect = net.Socket.prototype.connect;
  before(async () => {
    dns = await startFakeDns();
    // Records every address the sender would connect to — a literal when the socket starts, a
    // name once its lookup (the guard) answers — and stops any that is not loopback, so that a
    // broken guard fails this test instead of reaching the network.
    const isLoopback = (address: string) => address === '127.0.0.1' || address === '::1';
    net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
      const options = args[0] as { host?: string; lookup?: (...a: any[]) => void };
      const host = options.host ?? '';
      if (net.isIP(host)) {
        dialled.push(host);
        if (!isLoopback(host)) {
          process.nextTick(() => this.destroy(new Error(`test: would have dialled ${host}`)));
          return this;
        }
      } else if (options.lookup) {
        const guarded = options.lookup;
        options.lookup = (name: string, lookupOptions: unknown, callback: (error: Error | null, ...rest: any[]) => void) =>
          guarded(name, lookupOptions, (error: Error | null, address: string | Array<{ address: string }>, family?: number) => {
            if (error) return callback(error, address, family);
            const addresses = typeof address === 'string' ? [address] : address.map((a) => a.address);
            dialled.push(...addresses);
            if (!addresses.every(isLoopback)) return callback(new Error(`test: would have dialled ${addresses.join(', ')}`), []);
            callback(null, address, family);
          });
      }
      return (realConnect as (...a: unknown[]) => net.Socket).apply(this, args);
    } as typeof net.Socket.prototype.connect;
  });
  after(async () => {
    net.Socket.prototype.connect = realConnect;
    await dns.close();
  });

  it('refuses every literal of the table and every name that resolves to a refused address, and dials none', async () => {
    const resolver = new WebhookDns({ webhookDnsTimeoutMs: 2000, webhookDnsServers: [dns.server], webhookDnsLookupsPerProgram: 4 });
    const sender = createWebhookSender({ timeoutMs: 3000, allowPrivate: false, dns: resolver });
    try {
      for (const [url, range] of REFUSED_LITERALS) {
        const result = await sender.send(url, { 'content-type': 'application/json' }, '{}', { programId: 'p1' });
        assert.equal(result.statusCode, null, url);
        assert.match(result.error ?? '', new RegExp(`^refused: .* is a private address \\(${range}\\), not a public one$`), url);
      }
      for (const [url, shown] of REFUSED_NAMES) {
        const result = await sender.send(url, { 'content-type': 'application/json' }, '{}', { programId: 'p1' });
        assert.equal(result.statusCode, null, url);
        assert.match(result.error ?? '', new RegExp(`^refused: ${shown.source}`), url);
      }
      assert.deepEqual(dialled, [], 'no address was dialled');
      assert.ok(dns.queries.includes('mixed.test A'), 'names were looked up through the webhook resolver');
    } finally {
      sender.close();
    }
  });
});
