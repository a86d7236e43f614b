import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Config } from '../config.ts';

// The site's cookies: the attributes every one of them carries, and the signature of the values
// that must come back unaltered (the anonymous CSRF cookie, device cookies).

/** The attributes of every Tandem cookie: HttpOnly, SameSite=Lax, Secure when SITE_URL is https. */
export function cookieOptions(config: Config) {
  return { httpOnly: true, sameSite: 'lax' as const, secure: config.siteUrl.startsWith('https:'), path: '/' };
}

/** HMAC-SHA256 of `text` under `key`, base64url. */
export const hmac = (key: Buffer | string, text: string) => createHmac('sha256', key).update(text).digest('base64url');

/** Compares two texts in constant time (for their length). */
export function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
