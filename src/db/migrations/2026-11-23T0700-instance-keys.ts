import type { Kysely } from 'kysely';

// Secrets of the instance that every process must share (the key that signs list cursors):
// kept in the database, created by the first process that needs one, copied by migrate-data.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('instance_keys')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('instance_keys').execute();
}
