import ipaddr from 'ipaddr.js';

/**
 * The client's address as limits and visitor keys count it: an IPv4 address whole (an
 * IPv4-mapped IPv6 address as its IPv4 form), an IPv6 address by its /64 — one subscriber's
 * network, in which anyone holding it can pick any of 2^64 addresses.
 */
export function addressKey(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const address = ipaddr.process(ip);
  if (address.kind() === 'ipv4') return address.toString();
  const prefix = (address as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `${prefix.join(':')}::/64`;
}
