import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// Affiliates log in to their portal without a password (issue 19): a one-time link by e-mail
// (15 minutes) or handed out by the merchant's app (5 minutes), stored as a SHA-256 hash, bound
// to one affiliate of one program, used once. Portal sessions are apart from merchants'.
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const uuid = pg ? sql`uuid` : sql`text`;
  const time = pg ? sql`timestamptz(3)` : sql`text`;

  await db.schema
    .createTable('portal_login_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('affiliate_id', uuid, (c) => c.notNull().references('affiliates.id').onDelete('cascade'))
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('expires_at', time, (c) => c.notNull())
    .addColumn('used_at', time)
    .addColumn('created_at', time, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('portal_login_tokens_expires').on('portal_login_tokens').column('expires_at').execute();
  await db.schema.createIndex('portal_login_tokens_affiliate').on('portal_login_tokens').column('affiliate_id').execute();

  await db.schema
    .createTable('portal_sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('affiliate_id', uuid, (c) => c.notNull().references('affiliates.id').onDelete('cascade'))
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('expires_at', time, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('portal_sessions_expires').on('portal_sessions').column('expires_at').execute();
  await db.schema.createIndex('portal_sessions_affiliate').on('portal_sessions').column('affiliate_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('portal_sessions').execute();
  await db.schema.dropTable('portal_login_tokens').execute();
}
