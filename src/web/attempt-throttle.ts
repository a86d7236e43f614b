import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../db/transaction.ts';
import type { Clock } from '../domain/clock.ts';
import { ApiError } from '../domain/errors.ts';
import { countAttempt, uncountAttempt, type AttemptLimit } from '../modules/throttling/attempt-counter.ts';
import { normaliseEmail } from '../modules/users/user.service.ts';

// Login, sign-up and password change are limited twice, and only for requests that passed the
// CSRF check (these run in the route handler, after it), so a bare POST from anywhere counts
// for nothing:
// - per client address, every attempt of one kind: a guesser on one address is slowed without
//   touching users elsewhere (behind a balancer the address is right only with TRUST_PROXY);
// - per account (the e-mail), failed logins and password changes together: guesses spread over
//   many addresses still stop. A locked account unlocks by itself when its window ends. Sign-up
//   is limited per address only: a refused sign-up is no guess at a password, and counting it
//   would let anyone lock a user out by signing up with their e-mail.

type GuardedForm = 'login' | 'signup' | 'password';

export const ADDRESS_LIMIT: AttemptLimit = { max: 10, windowMs: 60_000 };
export const ACCOUNT_LIMIT: AttemptLimit = { max: 10, windowMs: 15 * 60_000 };

const accountKey = (email: string) => `account:${createHash('sha256').update(normaliseEmail(email).key).digest('hex')}`;

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
 * Counts this attempt for the client's address and, when it names an account, for the account
 * (each one atomic upsert, so parallel guesses cannot all slip under the limit); throws a 429
 * (with Retry-After) when either is over its limit. Call before any other work, and
 * forgiveAttempt after a success, so that only failures add up on an account.
 */
export async function throttleAttempt(db: Db, clock: Clock, request: FastifyRequest, reply: FastifyReply, form: GuardedForm, email?: string): Promise<void> {
  const now = clock();
  const addressWait = await countAttempt(db, `${form}:address:${request.ip}`, ADDRESS_LIMIT, now);
  if (addressWait !== null) refuse(reply, addressWait, 'Too many attempts from your network.');
  if (!email) return;
  const accountWait = await countAttempt(db, accountKey(email), ACCOUNT_LIMIT, now);
  if (accountWait !== null) refuse(reply, accountWait, 'Too many failed attempts for this account.');
}

/** Takes back an account's count for an attempt that succeeded. */
export async function forgiveAttempt(db: Db, email: string): Promise<void> {
  await uncountAttempt(db, accountKey(email));
}
