import type { Insertable, Selectable } from 'kysely';
import type { IntegrationsTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';

export type IntegrationRow = Selectable<IntegrationsTable>;

export function selectIntegrations(db: Db) {
  return db.selectFrom('integrations').selectAll().orderBy('name').execute();
}

export function selectIntegration(db: Db | Tx, name: string) {
  return db.selectFrom('integrations').selectAll().where('name', '=', name).executeTakeFirst();
}

export async function insertIntegration(db: Db, row: Insertable<IntegrationsTable>): Promise<void> {
  await db.insertInto('integrations').values(row).execute();
}

/** Deletes the integration and its unused authorization codes; returns whether it existed. */
export async function deleteIntegration(tx: Tx, name: string): Promise<boolean> {
  await tx.deleteFrom('authorization_codes').where('integration', '=', name).where('used_at', 'is', null).execute();
  const result = await tx.deleteFrom('integrations').where('name', '=', name).executeTakeFirst();
  return result.numDeletedRows > 0n;
}
