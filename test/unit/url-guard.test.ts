// The SSRF guard's rules (src/modules/webhooks/url-guard.ts), one describe per address range:
// each range is refused under its name, with the addresses just outside it accepted, so a range
// that grows or shrinks fails here. What the API answers and what the sender dials is in
// test/events/ssrf-guard.test.ts (real server, fake DNS). Pure rules: no server, no database.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { UnsafeUrlError, parseWebhookUrl, refusedAddressMessage, refusedAddressRange, urlHost } from '../../src/modules/webhooks/url-guard.ts';

/** Asserts every address is refused as `range`. */
function refusedAs(range: string, addresses: string[]): void {
  for (const address of addresses) assert.equal(refusedAddressRange(address), range, address);
}

/** Asserts every address may be dialled. */
function accepted(addresses: string[]): void {
  for (const address of addresses) assert.equal(refusedAddressRange(address), null, address);
}

describe('IPv4 loopback 127.0.0.0/8', () => {
  it('refuses the whole /8', () => refusedAs('loopback', ['127.0.0.1', '127.0.0.0', '127.1.2.3', '127.255.255.255']));
  it('accepts its neighbours', () => accepted(['126.255.255.255', '128.0.0.1']));
});

describe('IPv4 private 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 (RFC 1918)', () => {
  it('refuses each block from its first to its last address', () =>
    refusedAs('private', ['10.0.0.0', '10.0.0.1', '10.255.255.255', '172.16.0.0', '172.20.1.1', '172.31.255.255', '192.168.0.0', '192.168.1.1', '192.168.255.255']));
  it('accepts the addresses just outside each block', () =>
    accepted(['9.255.255.255', '11.0.0.0', '172.15.255.255', '172.32.0.0', '192.167.255.255', '192.169.0.0']));
});

describe('IPv4 link-local 169.254.0.0/16 (cloud metadata)', () => {
  it('refuses it, the metadata address first', () => refusedAs('linkLocal', ['169.254.169.254', '169.254.0.0', '169.254.255.255']));
  it('accepts its neighbours', () => accepted(['169.253.255.255', '169.255.0.0']));
});

describe('IPv4 shared address space 100.64.0.0/10 (carrier-grade NAT)', () => {
  it('refuses the /10', () => refusedAs('carrierGradeNat', ['100.64.0.0', '100.64.0.1', '100.127.255.255']));
  it('accepts its neighbours', () => accepted(['100.63.255.255', '100.128.0.0']));
});

describe('IPv4 "this network" 0.0.0.0/8', () => {
  it('refuses the /8', () => refusedAs('unspecified', ['0.0.0.0', '0.1.2.3', '0.255.255.255']));
  it('accepts the next block', () => accepted(['1.0.0.0']));
});

describe('IPv4 multicast 224.0.0.0/4 and broadcast', () => {
  it('refuses multicast', () => refusedAs('multicast', ['224.0.0.0', '224.0.0.1', '239.255.255.250', '239.255.255.255']));
  it('refuses the limited broadcast address', () => refusedAs('broadcast', ['255.255.255.255']));
  it('accepts the last unicast block before them', () => accepted(['223.255.255.255']));
});

describe('IPv4 reserved, documentation and benchmarking', () => {
  it('refuses 240.0.0.0/4, the documentation nets, 198.18.0.0/15, 192.0.0.0/24 and the 6to4 relay', () =>
    refusedAs('reserved', ['240.0.0.0', '255.255.255.254', '192.0.2.1', '198.51.100.7', '203.0.113.255', '198.18.0.0', '198.19.255.255', '192.0.0.8', '192.88.99.1']));
  it('refuses AS112 and AMT under their own names', () => {
    refusedAs('as112', ['192.31.196.1']);
    refusedAs('amt', ['192.52.193.1']);
  });
  it('accepts the address after the benchmarking block', () => accepted(['198.20.0.0']));
});

describe('IPv4 public unicast', () => {
  it('accepts plain public addresses', () => accepted(['8.8.8.8', '1.1.1.1', '93.184.216.34', '151.101.1.69']));
});

describe('IPv6 loopback ::1 and unspecified ::', () => {
  it('refuses them in every spelling', () => {
    refusedAs('loopback', ['::1', '0:0:0:0:0:0:0:1', '0000:0000:0000:0000:0000:0000:0000:0001']);
    refusedAs('unspecified', ['::', '0:0:0:0:0:0:0:0']);
  });
});

describe('IPv6 IPv4-mapped ::ffff:0:0/96 and IPv4-translated ::ffff:0:0:0/96', () => {
  it('refuses mapped addresses whatever IPv4 they carry, dotted or hex', () =>
    refusedAs('ipv4Mapped', ['::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:8.8.8.8', '::ffff:a9fe:a9fe']));
  it('refuses translated addresses (RFC 6145)', () => refusedAs('rfc6145', ['::ffff:0:127.0.0.1', '::ffff:0:7f00:1', '::ffff:0:8.8.8.8']));
});

describe('IPv6 IPv4-compatible ::/96 (the guard’s own list: ipaddr.js calls it unicast)', () => {
  it('refuses it, reading a dotted tail as the IPv4 it is (not as ::ffff:a.b.c.d)', () =>
    refusedAs('IPv4-compatible', ['::127.0.0.1', '::7f00:1', '::10.0.0.1', '::a9fe:a9fe', '::8.8.8.8', '::2', '::ffff']));
});

describe('IPv6 NAT64 64:ff9b::/96 and 64:ff9b:1::/48', () => {
  it('refuses both prefixes whatever IPv4 they carry', () =>
    refusedAs('rfc6052', ['64:ff9b::7f00:1', '64:ff9b::127.0.0.1', '64:ff9b::8.8.8.8', '64:ff9b:1::a00:1', '64:ff9b:1::1']));
  it('accepts the next /48', () => accepted(['64:ff9b:2::1']));
});

describe('IPv6 6to4 2002::/16 and Teredo 2001::/32', () => {
  it('refuses 6to4 whole', () => refusedAs('6to4', ['2002::1', '2002:7f00:1::', '2002:5db8:d822::1']));
  it('refuses Teredo whole', () => refusedAs('teredo', ['2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2']));
});

describe('IPv6 unique-local fc00::/7', () => {
  it('refuses the /7, the IPv6 metadata address included', () => refusedAs('uniqueLocal', ['fc00::', 'fc00::1', 'fd00:ec2::254', 'fdff:ffff::1']));
  it('accepts the address before it', () => accepted(['fbff::1']));
});

describe('IPv6 link-local fe80::/10, scoped addresses and site-local fec0::/10', () => {
  it('refuses link-local', () => refusedAs('linkLocal', ['fe80::1', 'febf:ffff::1']));
  it('refuses any address with a zone id, link-local by nature', () => refusedAs('scoped', ['fe80::1%eth0', 'fe80::1%1', '2606:4700::1111%eth0']));
  it('refuses site-local', () => refusedAs('deprecatedSiteLocal', ['fec0::1', 'feff::1']));
});

describe('IPv6 multicast ff00::/8', () => {
  it('refuses the /8', () => refusedAs('multicast', ['ff00::1', 'ff02::1', 'ff05::1:3', 'ffff::1']));
});

describe('IPv6 discard, documentation, benchmarking, ORCHID, segment routing', () => {
  it('refuses each under its name', () => {
    refusedAs('discard', ['100::1']);
    refusedAs('reserved', ['2001:db8::1', '3fff::1', '2001:1::1']);
    refusedAs('benchmarking', ['2001:2::1']);
    refusedAs('deprecatedOrchid', ['2001:10::1']);
    refusedAs('orchid2', ['2001:20::1']);
    refusedAs('segmentRouting', ['5f00::1']);
  });
  it('accepts the address after documentation', () => accepted(['2001:db9::1']));
});

describe('IPv6 public unicast', () => {
  it('accepts plain public addresses', () => accepted(['2606:4700::1111', '2001:4860:4860::8888', '2a00:1450:4001:80b::200e']));
});

describe('what is not an address', () => {
  it('is refused as such, never taken as public', () =>
    refusedAs('not an address', ['example.com', '', '1.2.3', '256.0.0.1', '127.0.0.1 ', '[::1]', '::1::2', 'localhost']));
});

describe('parseWebhookUrl: the form of a webhook URL', () => {
  it('accepts an absolute https URL with a path, a query and a port', () => {
    const url = parseWebhookUrl('https://hooks.example.com:8443/in?x=1', false);
    assert.equal(url.href, 'https://hooks.example.com:8443/in?x=1');
  });

  it('takes http only when private URLs are allowed, and nothing else even then', () => {
    assert.throws(() => parseWebhookUrl('http://hooks.example.com/', false), { message: 'must use https' });
    assert.equal(parseWebhookUrl('http://localhost:3000/in', true).host, 'localhost:3000');
    for (const raw of ['ftp://hooks.example.com/', 'file:///etc/passwd', 'gopher://x/', 'javascript:alert(1)']) {
      assert.throws(() => parseWebhookUrl(raw, false), /must use https/, raw);
      assert.throws(() => parseWebhookUrl(raw, true), /must use http or https/, raw);
    }
  });

  it('refuses a user name or password, a #fragment, a relative URL', () => {
    assert.throws(() => parseWebhookUrl('https://user:pw@hooks.example.com/', false), /user name or password/);
    assert.throws(() => parseWebhookUrl('https://user@hooks.example.com/', false), /user name or password/);
    assert.throws(() => parseWebhookUrl('https://hooks.example.com/in#x', false), /#fragment/);
    for (const raw of ['/in', 'hooks.example.com/in', '', 'https://']) assert.throws(() => parseWebhookUrl(raw, false), /absolute URL/, raw);
  });

  it('takes up to 2,000 characters', () => {
    const base = 'https://hooks.example.com/';
    assert.equal(parseWebhookUrl(base + 'a'.repeat(2000 - base.length), false).href.length, 2000);
    assert.throws(() => parseWebhookUrl(base + 'a'.repeat(2001 - base.length), false), /at most 2000 characters/);
  });

  it('throws UnsafeUrlError, which the routes turn into a 422', () => {
    assert.throws(() => parseWebhookUrl('http://x/', false), UnsafeUrlError);
  });
});

describe('urlHost and the number forms of IPv4', () => {
  it('gives the host the socket dials: IPv6 without brackets, names in lower case', () => {
    assert.equal(urlHost(new URL('https://[::1]:8443/x')), '::1');
    assert.equal(urlHost(new URL('https://[0:0::1]/')), '::1');
    assert.equal(urlHost(new URL('https://Hooks.Example.COM/')), 'hooks.example.com');
  });

  it('refuses loopback written as one number, in hex, in octal, or short', () => {
    for (const raw of ['https://2130706433/x', 'https://0x7f.1/', 'https://017700000001/', 'https://127.1/', 'https://0177.0.0.1/']) {
      assert.equal(refusedAddressRange(urlHost(parseWebhookUrl(raw, false))), 'loopback', raw);
    }
    assert.equal(refusedAddressRange(urlHost(parseWebhookUrl('https://0xa9fea9fe/', false))), 'linkLocal');
    assert.equal(refusedAddressRange(urlHost(parseWebhookUrl('https://[::FFFF:127.0.0.1]/', false))), 'ipv4Mapped');
  });
});

describe('refusedAddressMessage', () => {
  it('names the address, and the host when it was a name', () => {
    assert.equal(refusedAddressMessage('10.0.0.1', '10.0.0.1', 'private'), '10.0.0.1 is a private address (private), not a public one');
    assert.equal(refusedAddressMessage('intranet.example', '10.0.0.1', 'private'), 'intranet.example resolves to 10.0.0.1, a private address (private), not a public one');
  });
});
