import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// Browser sessions, the operator's allowed integrations (the connect flow's tools) and the
// flow's single-use authorization codes.
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const uuid = pg ? sql`uuid` : sql`text`;
  const time = pg ? sql`timestamptz(3)` : sql`text`;

  await db.schema
    .createTable('sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', uuid, (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('csrf_secret', 'text', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('expires_at', time, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sessions_user').on('sessions').column('user_id').execute();
  await db.schema.createIndex('sessions_expires').on('sessions').column('expires_at').execute();

  await db.schema
    .createTable('integrations')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('display_name', 'text', (c) => c.notNull())
    /** JSON array of exact redirect URIs. */
    .addColumn('redirect_uris', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text')
    .addColumn('client_secret_hash', 'text')
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('updated_at', time, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('authorization_codes')
    .addColumn('code_hash', 'text', (c) => c.primaryKey())
    .addColumn('integration', 'text', (c) => c.notNull())
    .addColumn('redirect_uri', 'text', (c) => c.notNull())
    .addColumn('user_id', uuid, (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('code_challenge', 'text')
    .addColumn('expires_at', time, (c) => c.notNull())
    .addColumn('used_at', time)
    /** The token issued from this code: revoked if the code is presented again. */
    .addColumn('token_id', uuid)
    .addColumn('created_at', time, (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['authorization_codes', 'integrations', 'sessions']) await db.schema.dropTable(table).execute();
}
