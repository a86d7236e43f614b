import { sql, type Kysely } from 'kysely';

// A held commission entry is a state, not a date (issue 30): a disputed sale's entries were held
// by a due date of 9999-12-31, which the API, the dashboard and the portal showed as a due date.
// `held_by` names what holds an entry (`dispute` now, `flag` with fraud review); while it is set
// the entry reads `held`, `dueAt: null`, and no payout run takes it. Existing held entries keep
// their hold, with a real date in `due_at` (their own creation: a release sets the time anyway).
const FAR_FUTURE = '9999-01-01T00:00:00.000Z';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('commission_entries').addColumn('held_by', 'text').execute();
  await sql`update commission_entries set held_by = 'dispute', due_at = created_at where due_at >= ${FAR_FUTURE}`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`update commission_entries set due_at = '9999-12-31T00:00:00.000Z' where held_by is not null and paid_at is null`.execute(db);
  await db.schema.alterTable('commission_entries').dropColumn('held_by').execute();
}
