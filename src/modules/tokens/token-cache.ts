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
// that statement on almost every request. Revocation is honoured at once on every process: a
// change (revoking a token, changing a program) is announced on TOKEN_CHANGE_CHANNEL
// (db/change-watch.ts) and every app's cache is dropped when it hears it; on SQLite each
// process also checks the file's data_version (at most once a millisecond) before it trusts
// the cache. Only valid tokens are cached, so unknown ones cannot fill it. One cache per app
// (buildApp makes it).

const MAX_ENTRIES = 10_000;

export class TokenCache {
  private readonly entries = new Map<string, { auth: Authenticated; until: number }>();
  /** Bumped on every drop: a lookup that started before a drop must not store its older answer. */
  private generation = 0;

  /**
   * @param cacheMs how long a valid token's answer is reused, ms; 0 looks it up every time
   * @param trustCache whether the cache is current (no change by another process missed)
   */
  constructor(
    readonly cacheMs: number,
    private readonly trustCache: () => boolean,
  ) {}

  /** How long an answer may be reused now: 0 while the cache cannot be trusted. */
  usableFor(): number {
    return this.cacheMs > 0 && this.trustCache() ? this.cacheMs : 0;
  }

  get(tokenHash: string, now: number): Authenticated | null {
    const entry = this.entries.get(tokenHash);
    if (!entry) return null;
    if (entry.until > now) return entry.auth;
    this.entries.delete(tokenHash);
    return null;
  }

  currentGeneration(): number {
    return this.generation;
  }

  set(tokenHash: string, auth: Authenticated, until: number, lookupGeneration: number): void {
    if (lookupGeneration !== this.generation) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!); // the oldest
    this.entries.set(tokenHash, { auth, until });
  }

  /** Forgets every cached token: called when a revocation or a program change has committed. */
  forget(): void {
    this.generation++;
    this.entries.clear();
  }
}
