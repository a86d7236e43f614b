import type { Insertable, Selectable } from 'kysely';
import type { AuthorizationCodesTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';

export type AuthorizationCodeRow = Selectable<AuthorizationCodesTable>;

export async function insertAuthorizationCode(db: Db, row: Insertable<AuthorizationCodesTable>): Promise<void> {
  await db.insertInto('authorization_codes').values(row).execute();
}

export function selectAuthorizationCode(db: Db | Tx, codeHash: string) {
  return db.selectFrom('authorization_codes').selectAll().where('code_hash', '=', codeHash).executeTakeFirst();
}

/**
 * Marks a live code of this integration used, in one conditional statement: of any number of
 * concurrent requests (any process), exactly one sees a row updated. Returns whether this one did.
 */
export async function consumeAuthorizationCode(tx: Tx, codeHash: string, integration: string, nowIso: string): Promise<boolean> {
  const result = await tx
    .updateTable('authorization_codes')
    .set({ used_at: nowIso })
    .where('code_hash', '=', codeHash)
    .where('integration', '=', integration)
    .where('used_at', 'is', null)
    .where('expires_at', '>', nowIso)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

export async function recordIssuedToken(tx: Tx, codeHash: string, tokenId: string): Promise<void> {
  await tx.updateTable('authorization_codes').set({ token_id: tokenId }).where('code_hash', '=', codeHash).execute();
}
