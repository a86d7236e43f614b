import { createHmac, timingSafeEqual } from 'node:crypto';

/** Whether two texts are equal, in time that does not tell how much of them matched (secrets, signatures). */
export function sameSecret(expected: string, given: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** HMAC-SHA256 of `data` under `key`, as lowercase hex. */
export function hmacSha256Hex(key: string | Buffer, data: string | Buffer): string {
  return createHmac('sha256', key).update(data).digest('hex');
}
