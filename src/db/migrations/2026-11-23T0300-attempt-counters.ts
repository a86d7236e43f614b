import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// Counters for login, sign-up and password attempts, per client address and per account. They
// live in the database so a limit holds across every process sharing it (PostgreSQL).
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  await db.schema
    .createTable('attempt_counters')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('window_started_at', pg ? sql`timestamptz(3)` : sql`text`, (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('attempt_counters_window').on('attempt_counters').column('window_started_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('attempt_counters').execute();
}
