import { sql, type Kysely } from 'kysely';

// Waiting Stripe invoices are read only by what they wait for (issue 29, item 5), never scanned
// by a request. Both indexes hold only the waiting rows:
// - billing_events_waiting, now (program_id, customer_id, created_at): a referral finds its
//   customer's invoices of the last 24 hours, and a program's waiting invoices are counted up to
//   the cap, without reading any other row (with created_at in it SQLite no longer prefers the
//   program's whole history by billing_events_received for the time condition);
// - billing_events_waiting_since (created_at): the worker finds the invoices that waited past
//   their 24 hours, oldest first and a batch at a time, across programs.
const waiting = (db: Kysely<unknown>, name: string, columns: string[]) =>
  db.schema.createIndex(name).on('billing_events').columns(columns).where(sql.ref('outcome'), '=', 'waiting').execute();

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('billing_events_waiting').execute();
  await waiting(db, 'billing_events_waiting', ['program_id', 'customer_id', 'created_at']);
  await waiting(db, 'billing_events_waiting_since', ['created_at']);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('billing_events_waiting_since').execute();
  await db.schema.dropIndex('billing_events_waiting').execute();
  await waiting(db, 'billing_events_waiting', ['program_id', 'customer_id']);
}
