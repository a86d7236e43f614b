import { sql, type ColumnDefinitionBuilder, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// Event delivery: a resume-safe sequence on the outbox, subscriptions (REST hooks), one
// delivery row per (event, subscription) carrying its retry state and lease, and one row per
// HTTP attempt for the dashboard.
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const uuid = pg ? sql`uuid` : sql`text`;
  const time = pg ? sql`timestamptz(3)` : sql`text`;
  const bigint = pg ? sql`bigint` : sql`integer`;
  const serial = (c: ColumnDefinitionBuilder) =>
    pg ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey().autoIncrement();

  // Null until the sequencer numbers the event after it committed (see sequenceEvents).
  await db.schema.alterTable('events').addColumn('sequence', bigint).execute();
  await db.schema.createIndex('events_sequence').unique().on('events').column('sequence').execute();
  await db.schema.createIndex('events_program_sequence').on('events').columns(['program_id', 'sequence']).execute();
  await db.schema
    .createIndex('events_unsequenced')
    .on('events')
    .columns(['created_at', 'id'])
    .where(sql.ref('sequence'), 'is', null)
    .execute();

  // One row: the last sequence number given out. Its row lock serialises sequencers.
  await db.schema
    .createTable('outbox_state')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('last_sequence', bigint, (c) => c.notNull())
    .execute();
  await db.insertInto('outbox_state' as never).values({ id: 1, last_sequence: 0 } as never).execute();

  await db.schema
    .createTable('webhooks')
    .addColumn('id', uuid, (c) => c.primaryKey())
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    /** JSON array of event types, or ["*"]. */
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('token_id', uuid, (c) => c.references('api_tokens.id').onDelete('cascade'))
    .addColumn('failing_since', time)
    .addColumn('disabled_at', time)
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('updated_at', time, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhooks_list').on('webhooks').columns(['program_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('webhooks_token').on('webhooks').column('token_id').execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', bigint, serial)
    .addColumn('webhook_id', uuid, (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', time, (c) => c.notNull())
    .addColumn('lease_id', 'text')
    .addColumn('lease_expires_at', time)
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('updated_at', time, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .columns(['next_attempt_at', 'id'])
    .where(sql.ref('state'), '=', 'pending')
    .execute();
  await db.schema.createIndex('webhook_deliveries_webhook').on('webhook_deliveries').columns(['webhook_id', 'id']).execute();
  await db.schema.createIndex('webhook_deliveries_event').on('webhook_deliveries').columns(['event_id', 'webhook_id']).unique().execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('id', bigint, serial)
    .addColumn('delivery_id', bigint, (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
    .addColumn('webhook_id', uuid, (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('attempted_at', time, (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('response_excerpt', 'text')
    .addColumn('error', 'text')
    .execute();
  await db.schema.createIndex('webhook_attempts_list').on('webhook_attempts').columns(['webhook_id', 'attempted_at', 'id']).execute();
  await db.schema.createIndex('webhook_attempts_delivery').on('webhook_attempts').column('delivery_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['webhook_attempts', 'webhook_deliveries', 'webhooks', 'outbox_state']) await db.schema.dropTable(table).execute();
  for (const index of ['events_sequence', 'events_program_sequence', 'events_unsequenced']) await db.schema.dropIndex(index).execute();
  await db.schema.alterTable('events').dropColumn('sequence').execute();
}
