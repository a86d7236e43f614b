import type { Insertable } from 'kysely';
import type { PortalLoginTokensTable, PortalSessionsTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';

export async function insertLoginToken(tx: Db | Tx, row: Insertable<PortalLoginTokensTable>): Promise<void> {
  await tx.insertInto('portal_login_tokens').values(row).execute();
}

/** Whom a link, or a session, is for: the affiliate, and its portal generation then. */
export interface PortalHolder {
  affiliate_id: string;
  affiliate_generation: number;
}

/** The affiliate a login link would sign in, while it is unused and unexpired (nothing changes). */
export async function findUsableToken(db: Db, programId: string, tokenHash: string, now: string): Promise<PortalHolder | undefined> {
  return db
    .selectFrom('portal_login_tokens')
    .select(['affiliate_id', 'affiliate_generation'])
    .where('token_hash', '=', tokenHash)
    .where('program_id', '=', programId)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
}

/** Uses a login link: one statement, so of two clicks at once exactly one signs in. */
export async function consumeToken(tx: Tx, programId: string, tokenHash: string, now: string): Promise<(PortalHolder & { purpose: string }) | undefined> {
  return tx
    .updateTable('portal_login_tokens')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('program_id', '=', programId)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning(['affiliate_id', 'affiliate_generation', 'purpose'])
    .executeTakeFirst();
}

export async function insertPortalSession(tx: Tx, row: Insertable<PortalSessionsTable>): Promise<void> {
  await tx.insertInto('portal_sessions').values(row).execute();
}

export async function findPortalSession(db: Db, programId: string, idHash: string, now: string): Promise<PortalHolder | undefined> {
  return db
    .selectFrom('portal_sessions')
    .select(['affiliate_id', 'affiliate_generation'])
    .where('id_hash', '=', idHash)
    .where('program_id', '=', programId)
    .where('expires_at', '>', now)
    .executeTakeFirst();
}

export async function deletePortalSession(db: Db, idHash: string): Promise<void> {
  await db.deleteFrom('portal_sessions').where('id_hash', '=', idHash).execute();
}
