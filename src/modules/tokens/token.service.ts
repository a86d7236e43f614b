import { createHash } from 'node:crypto';
import { systemClock, toIso, type Clock } from '../../domain/clock.ts';
import { isUuid, newId, randomToken } from '../../domain/ids.ts';
import { inTransaction, type Db, type Tx } from '../../db/transaction.ts';
import type { Authenticated, TokenCache } from './token-cache.ts';
import { announceChange, TOKEN_CHANGE_CHANNEL } from '../../db/change-watch.ts';
import { getProgram, toProgramContext } from '../programs/program.service.ts';
import { deleteWebhooksOfToken } from '../webhooks/webhook.repository.ts';
import { notFound } from '../../domain/errors.ts';
import { mapPage, pageOf, type Page, type PageRequest } from '../../db/keyset.ts';
import {
  findLiveTokenWithProgram,
  insertToken,
  listAllTokens,
  listTokensOfKind,
  revokeTokenRow,
  setTokenLastUsed,
  type TokenKind,
  type TokenListRow,
} from './token.repository.ts';

export type { TokenKind } from './token.repository.ts';

export const TOKEN_PREFIX = 'tdm_';
/** A test key's prefix: a token of a program's test side (test mode), told apart at a glance. */
export const TEST_TOKEN_PREFIX = 'tdm_test_';
/** How often last_used_at is refreshed; writing it on every call would cost a write per read. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** Tokens are stored only as SHA-256 hashes; a lookup by hash reveals nothing about other tokens. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export interface IssuedToken {
  id: string;
  name: string;
  prefix: string;
  /** The secret itself: returned once, never stored. */
  token: string;
  programId: string;
  createdAt: string;
}

export async function issueToken(
  db: Db,
  input: { programId: string; name: string; kind: 'api_key' | 'connect'; integration?: string | null; createdByUserId?: string | null },
  clock: Clock = systemClock,
): Promise<IssuedToken> {
  // The prefix says the side: a test side's tokens read tdm_test_… (the program decides, not the caller).
  const testSide = (await getProgram(db, input.programId)).live_program_id !== null;
  const prefix = testSide ? TEST_TOKEN_PREFIX : TOKEN_PREFIX;
  const token = prefix + randomToken(32); // 256 random bits
  const row = {
    id: newId(),
    program_id: input.programId,
    name: input.name,
    prefix: token.slice(0, prefix.length + 6),
    token_hash: hashToken(token),
    kind: input.kind,
    integration: input.integration ?? null,
    created_by_user_id: input.createdByUserId ?? null,
    created_at: clock().toISOString(),
    last_used_at: null,
    revoked_at: null,
  };
  await insertToken(db, row);
  return { id: row.id, name: row.name, prefix: row.prefix, token, programId: row.program_id, createdAt: row.created_at };
}

export async function revokeToken(db: Db, tokenId: string, clock: Clock = systemClock): Promise<void> {
  if (!(await inTransaction(db, (tx) => revokeTokenIfActive(tx, tokenId, clock)))) throw notFound('An active token with this id');
}

/**
 * Revokes the token unless it already is (or is not of `scope`'s program and kind); returns
 * whether this call revoked it. The subscriptions a tool made with the token go with it (a
 * disconnected Zap fires no more), and this process's token cache is dropped on commit.
 */
export async function revokeTokenIfActive(tx: Tx, tokenId: string, clock: Clock, scope?: { programId: string; kind: TokenKind }): Promise<boolean> {
  if (!(await revokeTokenRow(tx, tokenId, clock().toISOString(), scope))) return false;
  await deleteWebhooksOfToken(tx, tokenId);
  await announceChange(tx, TOKEN_CHANGE_CHANNEL);
  return true;
}

/**
 * Resolves a presented bearer token to its program, or null when unknown or revoked. A valid
 * token's answer is reused for `cacheMs` while the cache can be trusted (token-cache.ts).
 */
export async function authenticateToken(db: Db, token: string, cache?: TokenCache, clock: Clock = systemClock): Promise<Authenticated | null> {
  if (!token.startsWith(TOKEN_PREFIX) || token.length > 200) return null;
  const tokenHash = hashToken(token);
  const startedAt = clock().getTime();
  const cacheMs = cache?.usableFor() ?? 0;
  const cached = cacheMs > 0 ? cache!.get(tokenHash, startedAt) : null;
  if (cached) return cached;
  const generation = cache?.currentGeneration() ?? 0;
  const row = await findLiveTokenWithProgram(db, tokenHash);
  if (!row) return null;
  if (row.last_used_at === null || startedAt - Date.parse(toIso(row.last_used_at)) > LAST_USED_RESOLUTION_MS) {
    await setTokenLastUsed(db, row.token_id, new Date(startedAt).toISOString());
  }
  const auth = { tokenId: row.token_id, program: toProgramContext(row, clock) };
  if (cacheMs > 0) cache!.set(tokenHash, auth, startedAt + cacheMs, generation);
  return auth;
}

/** A token as the dashboard lists it: never the secret or its hash. */
export interface TokenSummary {
  id: string;
  name: string;
  prefix: string;
  kind: TokenKind;
  integration: string | null;
  /** Who created the key or connected the app, when known. */
  createdByEmail: string | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/** A page of a program's tokens of one kind, newest first, revoked ones included. */
export async function listProgramTokens(db: Db, programId: string, kind: TokenKind, page: PageRequest): Promise<Page<TokenSummary>> {
  return mapPage(pageOf(await listTokensOfKind(db, programId, kind, page), page), toTokenSummary);
}

/** Every token of a program, API keys and connected apps alike, newest first, revoked ones included (`tandem key list`). */
export async function listAllProgramTokens(db: Db, programId: string): Promise<TokenSummary[]> {
  const rows = await listAllTokens(db, programId);
  return rows.map(toTokenSummary);
}

function toTokenSummary(row: TokenListRow): TokenSummary {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    kind: row.kind,
    integration: row.integration,
    createdByEmail: row.created_by_email,
    createdAt: toIso(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : toIso(row.last_used_at),
    revokedAt: row.revoked_at === null ? null : toIso(row.revoked_at),
  };
}

/**
 * Revokes an active token of this program and kind (the dashboard's Revoke buttons): a token of
 * another program, of the other kind, or already revoked is "not found". Effective on this
 * process's next API call (the token cache is dropped on commit).
 */
export async function revokeProgramToken(db: Db, programId: string, kind: TokenKind, tokenId: string, clock: Clock = systemClock): Promise<void> {
  const revoked = isUuid(tokenId) && (await inTransaction(db, (tx) => revokeTokenIfActive(tx, tokenId, clock, { programId, kind })));
  if (!revoked) throw notFound('An active token with this id');
}
