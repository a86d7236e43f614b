import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// One table of billing connections (issue 32): a program connects each provider by its secret,
// sealed as the Stripe secret was (AES-256-GCM under the instance key), on its live side (test
// mode, issue 33, adds the test side under the same key). `last_event_at` is when the provider's
// newest verified event arrived, for the dashboard and `tandem billing list`. The Stripe secret a
// program kept in its own row moves here, with the time of its newest event (connected since: the
// program's last change, the nearest time it kept); the column goes.
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const uuid = pg ? sql`uuid` : sql`text`;
  const time = pg ? sql`timestamptz(3)` : sql`text`;

  await db.schema
    .createTable('billing_connections')
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull().check(sql`mode in ('live', 'test')`))
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('connected_at', time, (c) => c.notNull())
    .addColumn('last_event_at', time)
    .addPrimaryKeyConstraint('billing_connections_pk', ['program_id', 'provider', 'mode'])
    .execute();
  await sql`insert into billing_connections (program_id, provider, mode, secret_sealed, connected_at, last_event_at)
    select p.id, 'stripe', 'live', p.stripe_secret_sealed, p.updated_at,
      (select max(e.created_at) from billing_events e where e.program_id = p.id and e.provider = 'stripe')
    from programs p where p.stripe_secret_sealed is not null`.execute(db);
  await db.schema.alterTable('programs').dropColumn('stripe_secret_sealed').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('programs').addColumn('stripe_secret_sealed', 'text').execute();
  await sql`update programs set stripe_secret_sealed = (select c.secret_sealed from billing_connections c
    where c.program_id = programs.id and c.provider = 'stripe' and c.mode = 'live')`.execute(db);
  await db.schema.dropTable('billing_connections').execute();
}
