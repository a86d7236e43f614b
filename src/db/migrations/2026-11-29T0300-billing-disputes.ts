import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// Each Stripe dispute's state (issue 29 item 6): the latest event of it that was applied (its
// Stripe `created` time and the dispute's status), and when it closed. An event older than the
// state, or any event after the close, changes nothing: a redelivered or late
// charge.dispute.created no longer holds a won dispute's commission again, forever.
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const time = pg ? sql`timestamptz(3)` : sql`text`;
  await db.schema
    .createTable('billing_disputes')
    .addColumn('program_id', pg ? sql`uuid` : sql`text`, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('sale_id', pg ? sql`bigint` : sql`integer`)
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('event_created_at', time, (c) => c.notNull())
    .addColumn('closed_at', time)
    .addColumn('updated_at', time, (c) => c.notNull())
    .addPrimaryKeyConstraint('billing_disputes_pk', ['program_id', 'id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('billing_disputes').execute();
}
