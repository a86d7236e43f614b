import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// A subscription gets the events written after it was made (issue 29): fan-out compared the
// subscription's creation time with the event's `created_at`, which is the time the event
// reports (a Stripe sale carries the invoice's payment time), so an endpoint made at 15:21
// never got the sale of an invoice paid at 14:22 and received at 15:22. A subscription now
// keeps the last event number at its creation; it gets the events numbered after it.
export async function up(db: Kysely<unknown>): Promise<void> {
  const bigint = dialectOf(db) === 'postgres' ? sql`bigint` : sql`integer`;
  await db.schema.alterTable('webhooks').addColumn('after_sequence', bigint, (c) => c.notNull().defaultTo(0)).execute();
  // Existing subscriptions: the last event of their program numbered and dated before them — the
  // closest their creation time tells (fan-out is past it already unless it lags behind).
  await sql`
    update webhooks set after_sequence = coalesce(
      (select max(e.sequence) from events e where e.program_id = webhooks.program_id and e.sequence is not null and e.created_at < webhooks.created_at), 0)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhooks').dropColumn('after_sequence').execute();
}
