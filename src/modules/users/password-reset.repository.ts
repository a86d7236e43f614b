import type { Insertable } from 'kysely';
import type { PasswordResetTokensTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';

export async function insertResetToken(tx: Db | Tx, row: Insertable<PasswordResetTokensTable>): Promise<void> {
  await tx.insertInto('password_reset_tokens').values(row).execute();
}

/** The user a reset link would reset, while it is unused and unexpired (nothing changes). */
export async function findUsableResetToken(db: Db, tokenHash: string, now: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('password_reset_tokens')
    .select('user_id')
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return row?.user_id;
}

/** Uses a reset link: one statement, so of two submissions at once exactly one resets. */
export async function consumeResetToken(tx: Tx, tokenHash: string, now: string): Promise<string | undefined> {
  const row = await tx
    .updateTable('password_reset_tokens')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning('user_id')
    .executeTakeFirst();
  return row?.user_id;
}

/** After a reset, the user's other links stop working (an older e-mail cannot undo the new password). */
export async function expireUserResetTokens(tx: Tx, userId: string, now: string): Promise<void> {
  await tx.updateTable('password_reset_tokens').set({ used_at: now }).where('user_id', '=', userId).where('used_at', 'is', null).execute();
}
