import { sql } from 'kysely';
import { dialectOf } from '../../db/dialect.ts';
import { afterCommit, type Tx } from '../../db/transaction.ts';
import type { ProgramContext } from '../../domain/program-context.ts';

/** What a valid bearer token stands for: its id and its program. */
export interface Authenticated {
  tokenId: string;
  program: ProgramContext;
}

// Every API request carries its token's answer (http/auth.ts sets it).
declare module 'fastify' {
  interface FastifyRequest {
    auth: Authenticated;
  }
}

// Every API call authenticates its bearer token; caching the answer for a few seconds saves
// that statement on almost every request. Revocation is honoured at once on every process: the
// process that revokes (or changes a program) drops its whole cache after the transaction
// commits, and tells the others through the database (announceTokenChange: NOTIFY on
// PostgreSQL, which every serving process LISTENs for; on SQLite each process checks the
// file's data_version before it trusts the cache — db/change-watch.ts). Only valid tokens are
// cached, so unknown ones cannot fill it.

/** The channel token and program changes are announced on (PostgreSQL LISTEN/NOTIFY). */
export const TOKEN_CHANGE_CHANNEL = 'tandem_token_changes';

/**
 * In the changing transaction: every process forgets its cached tokens once it commits (this
 * one on commit; others through the notification, which PostgreSQL delivers only on commit).
 */
export async function announceTokenChange(tx: Tx): Promise<void> {
  if (dialectOf(tx) === 'postgres') await sql`select pg_notify(${TOKEN_CHANGE_CHANNEL}, '')`.execute(tx);
  afterCommit(tx, forgetCachedTokens);
}

const MAX_ENTRIES = 10_000;
const entries = new Map<string, { auth: Authenticated; until: number }>();
/** Bumped on every drop: a lookup that started before a drop must not store its older answer. */
let generation = 0;

export function cachedAuth(tokenHash: string, now: number): Authenticated | null {
  const entry = entries.get(tokenHash);
  if (!entry) return null;
  if (entry.until > now) return entry.auth;
  entries.delete(tokenHash);
  return null;
}

export function cacheGeneration(): number {
  return generation;
}

export function cacheAuth(tokenHash: string, auth: Authenticated, until: number, lookupGeneration: number): void {
  if (lookupGeneration !== generation) return;
  if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!); // the oldest
  entries.set(tokenHash, { auth, until });
}

/** Forgets every cached token: call after a revocation or a program change has committed. */
export function forgetCachedTokens(): void {
  generation++;
  entries.clear();
}
