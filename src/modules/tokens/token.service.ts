import { createHash } from 'node:crypto';
import { nowIso, toIso } from '../../domain/clock.ts';
import { newId, randomToken } from '../../domain/ids.ts';
import type { Db } from '../../db/transaction.ts';
import { notFound } from '../../http/errors.ts';
import { toProgramContext, type ProgramContext } from '../programs/program.service.ts';

export const TOKEN_PREFIX = 'tdm_';
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
): Promise<IssuedToken> {
  const token = TOKEN_PREFIX + randomToken(32); // 256 random bits
  const row = {
    id: newId(),
    program_id: input.programId,
    name: input.name,
    prefix: token.slice(0, TOKEN_PREFIX.length + 6),
    token_hash: hashToken(token),
    kind: input.kind,
    integration: input.integration ?? null,
    created_by_user_id: input.createdByUserId ?? null,
    created_at: nowIso(),
    last_used_at: null,
    revoked_at: null,
  };
  await db.insertInto('api_tokens').values(row).execute();
  return { id: row.id, name: row.name, prefix: row.prefix, token, programId: row.program_id, createdAt: row.created_at };
}

export async function revokeToken(db: Db, tokenId: string): Promise<void> {
  const result = await db
    .updateTable('api_tokens')
    .set({ revoked_at: nowIso() })
    .where('id', '=', tokenId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) throw notFound('An active token with this id');
}

export interface Authenticated {
  tokenId: string;
  program: ProgramContext;
}

/** Resolves a presented bearer token to its program, or null when unknown or revoked. */
export async function authenticateToken(db: Db, token: string): Promise<Authenticated | null> {
  if (!token.startsWith(TOKEN_PREFIX) || token.length > 200) return null;
  const row = await db
    .selectFrom('api_tokens as t')
    .innerJoin('programs as p', 'p.id', 't.program_id')
    .select(['t.id as token_id', 't.last_used_at', 'p.id', 'p.name', 'p.currency', 'p.default_commission_rate', 'p.base_urls', 'p.referral_param'])
    .where('t.token_hash', '=', hashToken(token))
    .where('t.revoked_at', 'is', null)
    .executeTakeFirst();
  if (!row) return null;
  const now = Date.now();
  if (row.last_used_at === null || now - Date.parse(toIso(row.last_used_at)) > LAST_USED_RESOLUTION_MS) {
    await db.updateTable('api_tokens').set({ last_used_at: new Date(now).toISOString() }).where('id', '=', row.token_id).execute();
  }
  return { tokenId: row.token_id, program: toProgramContext(row) };
}
