import type { Insertable } from 'kysely';
import type { ApiTokensTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';
import { compiledQuery } from '../../db/compiled-query.ts';
import { PROGRAM_CONTEXT_COLUMNS, type ContextRow } from '../programs/program.service.ts';

// All SQL of tokens/: api_tokens is written here only.

export type TokenKind = 'api_key' | 'connect';

export async function insertToken(db: Db, row: Insertable<ApiTokensTable>): Promise<void> {
  await db.insertInto('api_tokens').values(row).execute();
}

/** Marks the token revoked unless it already is (or is not of `scope`'s program and kind); whether this call revoked it. */
export async function revokeTokenRow(tx: Tx, tokenId: string, now: string, scope?: { programId: string; kind: TokenKind }): Promise<boolean> {
  let update = tx.updateTable('api_tokens').set({ revoked_at: now }).where('id', '=', tokenId).where('revoked_at', 'is', null);
  if (scope) update = update.where('program_id', '=', scope.programId).where('kind', '=', scope.kind);
  const result = await update.executeTakeFirst();
  return result.numUpdatedRows !== 0n;
}

/** A live token by its hash, with the columns of its program's tenant context (one statement, compiled once). */
const tokenQuery = compiledQuery<{ tokenHash: string }, ContextRow & { token_id: string; last_used_at: string | Date | null }>((db, param) =>
  db
    .selectFrom('api_tokens as t')
    .innerJoin('programs as p', 'p.id', 't.program_id')
    .select(['t.id as token_id', 't.last_used_at', ...PROGRAM_CONTEXT_COLUMNS.map((column) => `p.${column}` as const)])
    .where('t.token_hash', '=', param('tokenHash'))
    .where('t.revoked_at', 'is', null) as never,
);

export function findLiveTokenWithProgram(db: Db, tokenHash: string) {
  return tokenQuery.first(db, { tokenHash });
}

const tokenUsedQuery = compiledQuery<{ id: string; at: string }, never>((db, param) =>
  db.updateTable('api_tokens').set({ last_used_at: param('at') }).where('id', '=', param('id')),
);

export async function setTokenLastUsed(db: Db, id: string, at: string): Promise<void> {
  await tokenUsedQuery.run(db, { id, at });
}

/** A program's tokens with what a list shows: never the secret or its hash. */
function programTokenRows(db: Db, programId: string) {
  return db
    .selectFrom('api_tokens as t')
    .leftJoin('users as u', 'u.id', 't.created_by_user_id')
    .select(['t.id', 't.name', 't.prefix', 't.kind', 't.integration', 't.created_at', 't.last_used_at', 't.revoked_at', 'u.email as created_by_email'])
    .where('t.program_id', '=', programId);
}

export type TokenListRow = Awaited<ReturnType<typeof listTokensOfKind>>[number];

/** A page of a program's tokens of one kind, newest first, revoked ones included. */
export function listTokensOfKind(db: Db, programId: string, kind: TokenKind, page: PageRequest) {
  return pageQuery(programTokenRows(db, programId).where('t.kind', '=', kind), 't', page).execute();
}

/** Every token of a program, newest first, revoked ones included. */
export function listAllTokens(db: Db, programId: string): Promise<TokenListRow[]> {
  return programTokenRows(db, programId).orderBy('t.created_at', 'desc').orderBy('t.id', 'desc').execute();
}
