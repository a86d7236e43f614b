import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// Billing providers beyond Stripe (issue 32):
// - a billing event's id is unique per program and provider (billing_events_pk gains `provider`):
//   each provider numbers its events on its own, and one provider's id never swallows another's;
// - billing_customers: a customer a provider named with their e-mail, while nothing credits them
//   yet. Paddle's transactions carry the referral (custom_data) but not the e-mail, which comes
//   in its customer events, in either order: the one that comes second finds the other here or
//   among the waiting payments. Kept as long as billing events are (the worker's purge).
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const uuid = pg ? sql`uuid` : sql`text`;
  const time = pg ? sql`timestamptz(3)` : sql`text`;

  if (pg) {
    await sql`alter table billing_events drop constraint billing_events_pk, add constraint billing_events_pk primary key (program_id, provider, id)`.execute(db);
  } else {
    // SQLite changes a primary key by copying the table (its indexes go with the old one).
    await sql`create table billing_events_new (
      program_id text not null references programs (id) on delete cascade,
      id text not null, provider text not null, type text not null, created_at text not null,
      outcome text not null, reason text, referral_id text, sale_id integer, waiting text, customer_id text,
      constraint billing_events_pk primary key (program_id, provider, id))`.execute(db);
    await sql`insert into billing_events_new (program_id, id, provider, type, created_at, outcome, reason, referral_id, sale_id, waiting, customer_id)
      select program_id, id, provider, type, created_at, outcome, reason, referral_id, sale_id, waiting, customer_id from billing_events`.execute(db);
    await sql`drop table billing_events`.execute(db);
    await sql`alter table billing_events_new rename to billing_events`.execute(db);
    await sql`create index billing_events_waiting on billing_events (program_id, customer_id, created_at) where outcome = 'waiting'`.execute(db);
    await sql`create index billing_events_waiting_since on billing_events (created_at) where outcome = 'waiting'`.execute(db);
    await sql`create index billing_events_received on billing_events (program_id, created_at, id)`.execute(db);
    await sql`create index billing_events_age on billing_events (created_at)`.execute(db);
  }

  await db.schema
    .createTable('billing_customers')
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('since', time)
    .addColumn('seen_at', time, (c) => c.notNull())
    .addPrimaryKeyConstraint('billing_customers_pk', ['program_id', 'provider', 'id'])
    .execute();
  await db.schema.createIndex('billing_customers_age').on('billing_customers').column('seen_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('billing_customers').execute();
  if (dialectOf(db) === 'postgres') {
    // An id two providers share keeps the older event (the key can hold only one).
    await sql`delete from billing_events a using billing_events b
      where a.program_id = b.program_id and a.id = b.id and (a.created_at, a.provider) > (b.created_at, b.provider)`.execute(db);
    await sql`alter table billing_events drop constraint billing_events_pk, add constraint billing_events_pk primary key (program_id, id)`.execute(db);
    return;
  }
  await sql`create table billing_events_old (
    program_id text not null references programs (id) on delete cascade,
    id text not null, provider text not null, type text not null, created_at text not null,
    outcome text not null, reason text, referral_id text, sale_id integer, waiting text, customer_id text,
    constraint billing_events_pk primary key (program_id, id))`.execute(db);
  // An id two providers share keeps the older event (the key could hold only one).
  await sql`insert or ignore into billing_events_old select program_id, id, provider, type, created_at, outcome, reason, referral_id, sale_id, waiting, customer_id from billing_events order by created_at`.execute(db);
  await sql`drop table billing_events`.execute(db);
  await sql`alter table billing_events_old rename to billing_events`.execute(db);
  await sql`create index billing_events_waiting on billing_events (program_id, customer_id, created_at) where outcome = 'waiting'`.execute(db);
  await sql`create index billing_events_waiting_since on billing_events (created_at) where outcome = 'waiting'`.execute(db);
  await sql`create index billing_events_received on billing_events (program_id, created_at, id)`.execute(db);
  await sql`create index billing_events_age on billing_events (created_at)`.execute(db);
}
