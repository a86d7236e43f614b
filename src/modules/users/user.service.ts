import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { systemClock, toIso, type Clock } from '../../domain/clock.ts';
import { newId } from '../../domain/ids.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { inTransaction, type Db, type Tx } from '../../db/transaction.ts';
import { serializeOnKey } from '../../db/dialect.ts';
import { ApiError, conflict, invalidField } from '../../domain/errors.ts';
import { normaliseEmail } from '../../domain/email.ts';
import { expireUserResetTokens } from './password-reset.repository.ts';

export interface User {
  id: string;
  email: string;
  createdAt: string;
}

const SCRYPT: ScryptOptions = { N: 2 ** 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const KEY_LENGTH = 32;

function scrypt(password: string, salt: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCallback(password, salt, KEY_LENGTH, SCRYPT, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

/** `scrypt$N$r$p$salt$hash`, all parameters kept so they can be raised later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, , , , salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scrypt(password, Buffer.from(salt, 'base64url'));
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

export const MIN_PASSWORD_LENGTH = 10;
// Bounds on what any form or command may send: e-mails as long as the API's, and passwords
// long enough for any passphrase but short enough that scrypt never hashes a 64 KiB body.
export const MAX_EMAIL_LENGTH = 254;
export const MAX_PASSWORD_LENGTH = 1024;

/** The field error of an e-mail or password over its bound, or null: checked before any work on them. */
export function overLongAccountField(fields: { email?: string; password?: string }): ApiError | null {
  if (fields.email !== undefined && normaliseEmail(fields.email).email.length > MAX_EMAIL_LENGTH) return invalidField('#/email', `must be at most ${MAX_EMAIL_LENGTH} characters`);
  if (fields.password !== undefined && fields.password.length > MAX_PASSWORD_LENGTH) return invalidField('#/password', `must be at most ${MAX_PASSWORD_LENGTH.toLocaleString('en-US')} characters`);
  return null;
}

/** Checks an account's e-mail and password; the row to insert (password hashed). */
async function newUserRow(input: { email: string; password: string }, clock: Clock) {
  const { email, key } = normaliseEmail(input.email);
  const overLong = overLongAccountField(input);
  if (overLong) throw overLong;
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) throw invalidField('#/email', 'must be an e-mail address');
  checkNewPassword(input.password);
  const now = clock().toISOString();
  return { id: newId(), email, email_key: key, password_hash: await hashPassword(input.password), created_at: now, updated_at: now };
}

/** A new password's rule (its upper bound is overLongAccountField's). */
export function checkNewPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) throw invalidField('#/password', `must be at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > MAX_PASSWORD_LENGTH) throw invalidField('#/password', `must be at most ${MAX_PASSWORD_LENGTH.toLocaleString('en-US')} characters`);
}

async function insertUser(db: Db | Tx, row: Awaited<ReturnType<typeof newUserRow>>): Promise<User> {
  try {
    await db.insertInto('users').values(row).execute();
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict('A user with this e-mail already exists.');
    throw error;
  }
  return { id: row.id, email: row.email, createdAt: row.created_at };
}

export async function createUser(db: Db, input: { email: string; password: string }, clock: Clock = systemClock): Promise<User> {
  return insertUser(db, await newUserRow(input, clock));
}

/**
 * Sign-up on an instance that opens it only to its first person (SIGNUP unset): the account,
 * or null when one exists already. Two first sign-ups at once make one account: the check and
 * the insert run under one lock (SQLite's write lock; an advisory lock on PostgreSQL).
 */
export async function createFirstUser(db: Db, input: { email: string; password: string }, clock: Clock = systemClock): Promise<User | null> {
  const row = await newUserRow(input, clock);
  return inTransaction(db, async (tx) => {
    await serializeOnKey(tx, 'tandem:first-user');
    if (await anyUserExists(tx)) return null;
    return insertUser(tx, row);
  });
}

export async function anyUserExists(db: Db | Tx): Promise<boolean> {
  return (await db.selectFrom('users').select('id').limit(1).executeTakeFirst()) !== undefined;
}

/**
 * Whether anyone may create an account now: SIGNUP=open|closed decides; unset, sign-up is open
 * only while the instance has no user, so whoever installs it becomes its operator.
 */
export async function signUpIsOpen(db: Db, signup: 'open' | 'closed' | null): Promise<boolean> {
  return signup === null ? !(await anyUserExists(db)) : signup === 'open';
}

/**
 * The one write of a password: the new hash, and every reset link the user still holds voided
 * in the same transaction — a link e-mailed (or printed by `tandem user reset-password`) before
 * the change must not undo it. Also ends every session of the user.
 */
export async function storePassword(tx: Tx, userId: string, passwordHash: string, now: string): Promise<void> {
  await tx.updateTable('users').set({ password_hash: passwordHash, updated_at: now }).where('id', '=', userId).execute();
  await expireUserResetTokens(tx, userId, now);
  await tx.deleteFrom('sessions').where('user_id', '=', userId).execute();
}

/** Changes a user's password (already checked by checkNewPassword): hashed first, then stored (storePassword) in one transaction. */
export async function setPassword(db: Db, userId: string, password: string, now: string): Promise<void> {
  const passwordHash = await hashPassword(password);
  await inTransaction(db, (tx) => storePassword(tx, userId, passwordHash, now));
}

/** A user as the operator's list shows it: the operator is the first account created (isOperator). */
export interface UserListing extends User {
  operator: boolean;
}

/** Every user of the instance, oldest first (the operator first); never a password or its hash. */
export async function listUsers(db: Db): Promise<UserListing[]> {
  const rows = await db.selectFrom('users').select(['id', 'email', 'created_at']).orderBy('created_at').orderBy('id').execute();
  return rows.map((row, i) => ({ id: row.id, email: row.email, createdAt: toIso(row.created_at), operator: i === 0 }));
}

export async function findUserByEmail(db: Db, email: string) {
  return db.selectFrom('users').selectAll().where('email_key', '=', normaliseEmail(email).key).executeTakeFirst();
}

export function requireUser<T>(user: T | undefined, email: string): T {
  if (!user) throw new ApiError('not_found', `No user with e-mail ${email}.`);
  return user;
}

/**
 * Whether the user is the instance's operator: the first account created (whoever installs
 * Tandem signs up first). Only the operator may change instance-wide settings, such as the
 * integrations allowed to use the connect flow; sign-up is open, so other accounts must not.
 */
export async function isOperator(db: Db, userId: string): Promise<boolean> {
  const first = await db.selectFrom('users').select('id').orderBy('created_at').orderBy('id').limit(1).executeTakeFirst();
  return first?.id === userId;
}
