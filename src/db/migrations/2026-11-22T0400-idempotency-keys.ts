import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('program_id', pg ? sql`uuid` : sql`text`, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_type', 'text')
    .addColumn('response_body', 'text')
    .addColumn('created_at', pg ? sql`timestamptz(3)` : sql`text`, (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['program_id', 'key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_created').on('idempotency_keys').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').execute();
}
