import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// "Forgot password?" (issue 21 item 2): a one-time reset link, 256 random bits kept only as
// their SHA-256 hash, bound to one user, valid 30 minutes, used once.
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const time = pg ? sql`timestamptz(3)` : sql`text`;
  await db.schema
    .createTable('password_reset_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', pg ? sql`uuid` : sql`text`, (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('expires_at', time, (c) => c.notNull())
    .addColumn('used_at', time)
    .addColumn('created_at', time, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('password_reset_tokens_expires').on('password_reset_tokens').column('expires_at').execute();
  await db.schema.createIndex('password_reset_tokens_user').on('password_reset_tokens').column('user_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('password_reset_tokens').execute();
}
