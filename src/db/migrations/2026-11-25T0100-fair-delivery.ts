import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// Fair webhook delivery (issue 17): deliveries carry their program, so the worker can take due
// work program by program (round-robin) instead of oldest first across everyone; fan-out moves
// out of the sequencer into a per-program step with a watermark, so it runs in the worker only
// and stops at a bound of pending deliveries per program.
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const uuid = pg ? sql`uuid` : sql`text`;
  const bigint = pg ? sql`bigint` : sql`integer`;

  await db.schema
    .alterTable('webhook_deliveries')
    .addColumn('program_id', uuid, (c) => c.references('programs.id').onDelete('cascade'))
    .execute();
  await sql`update webhook_deliveries set program_id = (select w.program_id from webhooks w where w.id = webhook_deliveries.webhook_id)`.execute(db);
  // A program's due work, oldest first; and the skip-scan over programs with pending work.
  await db.schema
    .createIndex('webhook_deliveries_program_due')
    .on('webhook_deliveries')
    .columns(['program_id', 'next_attempt_at', 'id'])
    .where(sql.ref('state'), '=', 'pending')
    .execute();
  // An endpoint's waiting deliveries, postponed together when it fails.
  await db.schema
    .createIndex('webhook_deliveries_webhook_pending')
    .on('webhook_deliveries')
    .columns(['webhook_id', 'next_attempt_at'])
    .where(sql.ref('state'), '=', 'pending')
    .execute();
  // A disabled endpoint's held queue, counted against its cap at fan-out.
  await db.schema
    .createIndex('webhook_deliveries_webhook_held')
    .on('webhook_deliveries')
    .columns(['webhook_id', 'id'])
    .where(sql.ref('state'), '=', 'held')
    .execute();
  // Rows a process of the previous release inserted during a rolling upgrade, without their
  // program: the worker gives them one (normally empty, so it costs nothing).
  await db.schema
    .createIndex('webhook_deliveries_without_program')
    .on('webhook_deliveries')
    .column('id')
    .where(sql.ref('program_id'), 'is', null)
    .execute();
  await db.schema.dropIndex('webhook_deliveries_due').execute();

  // Per program with subscriptions: the last event sequence whose deliveries have been made.
  await db.schema
    .createTable('webhook_fanout')
    .addColumn('program_id', uuid, (c) => c.primaryKey().references('programs.id').onDelete('cascade'))
    .addColumn('last_sequence', bigint, (c) => c.notNull())
    .execute();
  // Everything numbered so far was fanned out by the sequencer of the previous version.
  await sql`insert into webhook_fanout (program_id, last_sequence)
    select distinct w.program_id, (select last_sequence from outbox_state where id = 1) from webhooks w`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('webhook_fanout').execute();
  await db.schema.dropIndex('webhook_deliveries_without_program').execute();
  await db.schema.dropIndex('webhook_deliveries_webhook_held').execute();
  await db.schema.dropIndex('webhook_deliveries_webhook_pending').execute();
  await db.schema.dropIndex('webhook_deliveries_program_due').execute();
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .columns(['next_attempt_at', 'id'])
    .where(sql.ref('state'), '=', 'pending')
    .execute();
  await db.schema.alterTable('webhook_deliveries').dropColumn('program_id').execute();
}
