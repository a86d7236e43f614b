import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { normaliseEmail } from '../domain/email.ts';
import { cookieOptions, hmac, sameText } from './cookies.ts';

// OWASP's device cookies: a browser that has logged in to an account keeps a signed cookie
// for that account, and its login attempts are counted apart from everyone else's, so a
// stranger's failed guesses can never stop the owner from logging in on a known device.
// Stateless: a random nonce, an expiry, and the HMAC-SHA256 of both and the account's e-mail
// key under the instance key `device` (the e-mail is signed, not stored in the cookie).

export const DEVICE_COOKIE = 'tandem_device';
export const DEVICE_COOKIE_DAYS = 365;

const signedValue = (key: Buffer, nonce: string, expiresAt: number, email: string) =>
  `${nonce}.${expiresAt}.${hmac(key, `device:${nonce}:${expiresAt}:${normaliseEmail(email).key}`)}`;

/**
 * The id of the request's device (its cookie's nonce) when it carries a device cookie signed
 * for the account of `email` and not yet expired; null when absent, malformed, altered,
 * expired or made for another account.
 */
export function trustedDevice(key: Buffer, request: FastifyRequest, email: string, now: Date): string | null {
  const value = request.cookies[DEVICE_COOKIE];
  if (!value || value.length > 200) return null;
  const [nonce, expiresAt] = value.split('.');
  if (!nonce || !expiresAt || !/^[0-9]{1,13}$/.test(expiresAt) || Number(expiresAt) <= Math.floor(now.getTime() / 1000)) return null;
  return sameText(value, signedValue(key, nonce, Number(expiresAt), email)) ? nonce : null;
}

/**
 * Gives the browser a fresh device cookie for the account that just logged in (or signed up).
 * One per browser: it replaces the cookie of an account logged in there before. Sent only to
 * /login, where it is read.
 */
export function issueDeviceCookie(config: Config, reply: FastifyReply, key: Buffer, email: string, now: Date): void {
  const expiresAt = Math.floor(now.getTime() / 1000) + DEVICE_COOKIE_DAYS * 86_400;
  const value = signedValue(key, randomBytes(24).toString('base64url'), expiresAt, email);
  reply.setCookie(DEVICE_COOKIE, value, { ...cookieOptions(config), path: '/login', maxAge: DEVICE_COOKIE_DAYS * 86_400 });
}
