import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../db/transaction.ts';
import type { Clock } from '../domain/clock.ts';
import { addressKey } from '../http/client-address.ts';
import { ApiError } from '../domain/errors.ts';
import { countAttempt, uncountAttempt, type AttemptLimit } from '../modules/throttling/attempt-counter.ts';
import { normaliseEmail } from '../domain/email.ts';
import { trustedDevice } from './device-cookie.ts';

// Login, sign-up and password change are limited only for requests that passed the CSRF check
// (these run in the route handler, after it), so a bare POST from anywhere counts for nothing:
// - per client address (an IPv6 address by its /64, one subscriber's network), every attempt of
//   one kind: a guesser on one address is slowed without
//   touching users elsewhere (behind a balancer the address is right only with TRUST_PROXY);
// - logins per account, split by who tries (OWASP's device cookies): a browser with a valid
//   device cookie for the account (it logged in there before) counts on its own; every other
//   attempt counts in the account's "untrusted" bucket, and only those are refused when it is
//   full. Guesses spread over many addresses still stop, and a stranger's never stop the owner
//   on a known device. A device cookie over its limit is untrusted until its window ends;
// - wrong current passwords on the password form per account, apart from logins: the form
//   needs the account's session, so no stranger can spend that limit.
// Sign-up is limited per address only: a refused sign-up is no guess at a password, and
// counting it would let anyone lock a user out by signing up with their e-mail. A success
// takes its own count back, so that only failures add up on an account or device.

export const ADDRESS_LIMIT: AttemptLimit = { max: 10, windowMs: 60_000 };
export const UNTRUSTED_LOGIN_LIMIT: AttemptLimit = { max: 10, windowMs: 15 * 60_000 };
export const DEVICE_LOGIN_LIMIT: AttemptLimit = { max: 10, windowMs: 15 * 60_000 };
export const PASSWORD_CHANGE_LIMIT: AttemptLimit = { max: 10, windowMs: 15 * 60_000 };

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const accountOf = (email: string) => sha256(normaliseEmail(email).key);

function inWords(seconds: number): string {
  if (seconds < 60) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? '' : 's'}`;
}

function refuse(reply: FastifyReply, seconds: number, message: string): never {
  reply.header('retry-after', String(seconds));
  throw new ApiError('rate_limited', `${message} Try again in ${inWords(seconds)}.`);
}

/**
 * Counts one attempt under `key` (an atomic upsert, so parallel guesses cannot all slip under
 * the limit); throws a 429 with Retry-After when it is over the limit.
 */
async function countOrRefuse(db: Db, reply: FastifyReply, key: string, limit: AttemptLimit, now: Date, message: string): Promise<void> {
  const wait = await countAttempt(db, key, limit, now);
  if (wait !== null) refuse(reply, wait, message);
}

const countAddress = (db: Db, request: FastifyRequest, reply: FastifyReply, form: 'login' | 'signup' | 'password' | 'portal-login' | 'password-reset', now: Date) =>
  countOrRefuse(db, reply, `${form}:address:${addressKey(request.ip)}`, ADDRESS_LIMIT, now, 'Too many attempts from your network.');

/**
 * Counts a login attempt for the client's address and for the device or, without a trusted
 * device cookie, the account's untrusted bucket; throws a 429 when one is over its limit.
 * Returns the counter charged for the account (null without an e-mail), for forgiveAttempt
 * after a success. Call before any other work.
 */
export async function throttleLogin(db: Db, clock: Clock, request: FastifyRequest, reply: FastifyReply, deviceKey: Buffer, email: string | undefined): Promise<string | null> {
  const now = clock();
  await countAddress(db, request, reply, 'login', now);
  if (!email) return null;
  const device = trustedDevice(deviceKey, request, email, now);
  if (device) {
    const deviceCounter = `login:device:${sha256(device)}`;
    if ((await countAttempt(db, deviceCounter, DEVICE_LOGIN_LIMIT, now)) === null) return deviceCounter;
  }
  const untrusted = `login:untrusted:${accountOf(email)}`;
  await countOrRefuse(db, reply, untrusted, UNTRUSTED_LOGIN_LIMIT, now, 'Too many failed logins to this account from devices it was not used on; a device you logged in on before can still log in.');
  return untrusted;
}

/** Counts a sign-up for the client's address; throws a 429 when it is over its limit. */
export async function throttleSignUp(db: Db, clock: Clock, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  await countAddress(db, request, reply, 'signup', clock());
}

/**
 * Counts a password change (by the logged-in user of `email`) for the client's address and
 * the account; throws a 429 when one is over its limit. Returns the account's counter.
 */
export async function throttlePasswordChange(db: Db, clock: Clock, request: FastifyRequest, reply: FastifyReply, email: string): Promise<string> {
  const now = clock();
  await countAddress(db, request, reply, 'password', now);
  const account = `password:account:${accountOf(email)}`;
  await countOrRefuse(db, reply, account, PASSWORD_CHANGE_LIMIT, now, 'Too many wrong current passwords for this account.');
  return account;
}

/** Login e-mails to one address of one program's portal: a few per window, then none (no inbox is flooded). */
const PORTAL_LOGIN_EMAIL_LIMIT: AttemptLimit = { max: 3, windowMs: 15 * 60_000 };

/**
 * Counts a portal "e-mail me a link" for the client's address (a 429 past its limit) and, for
 * `email`, in that program; false when that e-mail address had its links for now — the caller
 * sends nothing and answers the same, and the links already sent still work (nobody locked out).
 */
export async function throttlePortalLogin(db: Db, clock: Clock, request: FastifyRequest, reply: FastifyReply, programId: string, email: string): Promise<boolean> {
  const now = clock();
  await countAddress(db, request, reply, 'portal-login', now);
  return (await countAttempt(db, `portal-login:email:${programId}:${accountOf(email)}`, PORTAL_LOGIN_EMAIL_LIMIT, now)) === null;
}

/** "Forgot password?" e-mails to one account: a few per window, then none (no inbox is flooded). */
const PASSWORD_RESET_EMAIL_LIMIT: AttemptLimit = { max: 3, windowMs: 15 * 60_000 };

/**
 * Counts a "forgot password?" request for the client's address (a 429 past its limit) and for
 * `email`; false when that address had its links for now — the caller sends nothing and answers
 * the same, and links already sent still work (nobody locked out).
 */
export async function throttlePasswordReset(db: Db, clock: Clock, request: FastifyRequest, reply: FastifyReply, email: string): Promise<boolean> {
  const now = clock();
  await countAddress(db, request, reply, 'password-reset', now);
  return (await countAttempt(db, `password-reset:email:${accountOf(email)}`, PASSWORD_RESET_EMAIL_LIMIT, now)) === null;
}

/** Takes back the count of an attempt that succeeded (the counter a throttle returned). */
export async function forgiveAttempt(db: Db, counter: string | null): Promise<void> {
  if (counter) await uncountAttempt(db, counter);
}
