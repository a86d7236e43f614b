import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

// The SSRF guard. A webhook URL is chosen by whoever holds a token, and the worker sends from
// inside the operator's network, so a URL must not reach the operator's own services: every
// address a host resolves to must be plain public unicast, and only https is allowed. Checked
// when the subscription is made (a clear 422) and again at every connection (DNS can change):
// the sender connects through webhook-dns.ts's lookup, so the address checked is the address
// dialled. WEBHOOK_ALLOW_PRIVATE_URLS=1 turns the guard off for local development and tests.

/**
 * IPv6 ranges ipaddr.js calls plain unicast that are not: IPv4-compatible addresses
 * (::a.b.c.d, deprecated by RFC 4291, which some stacks still route to the embedded IPv4).
 * Site-local fec0::/10 and documentation 2001:db8::/32 are listed too so that the refusal
 * does not depend on the library's version knowing them.
 */
const REFUSED_IPV6_UNICAST: Array<[ipaddr.IPv6, number, string]> = [
  [ipaddr.IPv6.parse('::'), 96, 'IPv4-compatible'],
  [ipaddr.IPv6.parse('fec0::'), 10, 'site-local'],
  [ipaddr.IPv6.parse('2001:db8::'), 32, 'documentation'],
];

/**
 * ipaddr.js reads "::a.b.c.d" as "::ffff:a.b.c.d" (a different address); writing the dotted
 * tail as two hex groups first keeps the address's real bits.
 */
function parseIpv6(address: string): ipaddr.IPv6 {
  const hex = address.replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_, a, b, c, d) =>
    `${((Number(a) << 8) | Number(b)).toString(16)}:${((Number(c) << 8) | Number(d)).toString(16)}`,
  );
  return ipaddr.IPv6.parse(hex);
}

/**
 * Why an address may not be dialled (its range: "loopback", "private", "rfc6052", "6to4",
 * "IPv4-compatible"…), or null for a plain public unicast address. Every range ipaddr.js
 * names is refused — for IPv4 the RFC 1918 private ranges, loopback, link-local (cloud
 * metadata 169.254.169.254), CGNAT, "this network", multicast, broadcast, documentation,
 * benchmarking and reserved; for IPv6 also every form that embeds or maps IPv4 (::ffff:0:0/96,
 * ::ffff:0:0:0/96, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16 and Teredo
 * 2001::/32 whole, whatever IPv4 they carry), unique-local (fd00:ec2::254, metadata),
 * link-local, site-local — plus the unicast-looking forms above.
 */
export function refusedAddressRange(address: string): string | null {
  const family = isIP(address);
  if (family === 4) {
    const range = ipaddr.IPv4.parse(address).range();
    return range === 'unicast' ? null : range;
  }
  if (family === 6) {
    if (address.includes('%')) return 'scoped'; // a zone id: link-local by nature
    const parsed = parseIpv6(address);
    const range = parsed.range();
    if (range !== 'unicast') return range;
    return REFUSED_IPV6_UNICAST.find(([network, prefix]) => parsed.match(network, prefix))?.[2] ?? null;
  }
  return 'not an address';
}

export class UnsafeUrlError extends Error {}

/** The message of a refusal, the same at subscribe time and at delivery. */
export function refusedAddressMessage(host: string, address: string, range: string): string {
  const what = `a private address (${range}), not a public one`;
  return host === address ? `${address} is ${what}` : `${host} resolves to ${address}, ${what}`;
}

const MAX_URL_LENGTH = 2000;

/** Parses and checks the form of a webhook URL (no DNS): https (or http when allowed), no credentials. */
export function parseWebhookUrl(raw: string, allowPrivate: boolean): URL {
  if (raw.length > MAX_URL_LENGTH) throw new UnsafeUrlError(`must be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeUrlError('must be an absolute URL');
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    throw new UnsafeUrlError(allowPrivate ? 'must use http or https' : 'must use https');
  }
  if (url.username !== '' || url.password !== '') throw new UnsafeUrlError('must not carry a user name or password');
  if (url.hash !== '') throw new UnsafeUrlError('must not have a #fragment');
  return url;
}

/** The host of a parsed URL as DNS or the socket takes it: IPv6 literals without brackets. */
export function urlHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}
