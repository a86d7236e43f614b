import type { Authenticated } from './token.service.ts';

// Every API call authenticates its bearer token; caching the answer for a few seconds saves
// that statement on almost every request. Revocation is honoured at once on the process that
// revokes (the whole cache is dropped after the revoking transaction commits, as it is after a
// program's settings change); another process may honour it up to the cache's lifetime later
// (docs/api.md). Only valid tokens are cached, so unknown ones cannot fill it.

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
