import { BlockList, isIP } from 'node:net';
import { lookup, type LookupAddress } from 'node:dns';
import { promisify } from 'node:util';

// The SSRF guard. A webhook URL is chosen by whoever holds a token, and the worker sends from
// inside the operator's network, so a URL must not reach the operator's own services: every
// address a host resolves to must be public, and only https is allowed. Checked when the
// subscription is made (a clear 422) and again at every connection (DNS can change): the
// sender connects through `guardedLookup`, so the address checked is the address dialled.
// WEBHOOK_ALLOW_PRIVATE_URLS=1 turns the guard off for local development and tests.

const blocked = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b:1::', 48], // local NAT64
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local (includes fd00:ec2::254, cloud metadata)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

/** An IPv4-mapped or -compatible IPv6 address (::ffff:10.0.0.1) → its IPv4 form. */
function embeddedIpv4(address: string): string | null {
  const match = /^::(?:ffff:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (match) return match[1]!;
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (!hex) return null;
  const [high, low] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** True for loopback, private, link-local, CGNAT, metadata, multicast and reserved addresses. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== null) return blocked.check(v4, 'ipv4');
    // 6to4 (2002::/16) embeds an IPv4 address in its next 32 bits.
    const sixToFour = /^2002:([0-9a-f]{1,4}):([0-9a-f]{1,4}):/i.exec(address);
    if (sixToFour) {
      const [high, low] = [parseInt(sixToFour[1]!, 16), parseInt(sixToFour[2]!, 16)];
      if (blocked.check(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`, 'ipv4')) return true;
    }
    return blocked.check(address, 'ipv6');
  }
  return true; // not an address at all: refuse
}

export class UnsafeUrlError extends Error {}

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

const lookupAll = promisify(lookup);

/** Resolves the URL's host and refuses it unless every address is public. */
export async function assertPublicHost(url: URL): Promise<void> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: LookupAddress[];
  if (isIP(host)) {
    addresses = [{ address: host, family: isIP(host) }];
  } else {
    try {
      addresses = await lookupAll(host, { all: true, verbatim: true });
    } catch {
      throw new UnsafeUrlError(`names a host (${host}) that could not be resolved`);
    }
  }
  const refused = addresses.find((a) => isPrivateAddress(a.address));
  if (refused) throw new UnsafeUrlError(`names a host (${host}) that resolves to ${refused.address}, a private, loopback or link-local address`);
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request: resolves as usual, then fails the connection when any resolved
 * address is private. Used at delivery time, so a host that turned private is never dialled.
 */
export function guardedLookup(hostname: string, options: { all?: boolean } & Record<string, unknown>, callback: LookupCallback): void {
  lookup(hostname, { ...options, all: true, verbatim: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const refused = addresses.find((a) => isPrivateAddress(a.address));
    if (refused) {
      return callback(Object.assign(new UnsafeUrlError(`refused: ${hostname} resolves to ${refused.address}, a private address`), { code: 'EPRIVATE' }), []);
    }
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}
