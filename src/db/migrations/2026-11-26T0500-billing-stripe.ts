import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// Stripe connects to a program (issue 20): the program keeps its Stripe webhook signing secret
// encrypted (AES-256-GCM under an instance key), and every verified Stripe event is stored once
// with what came of it (billing_events: its id is the provider's, unique per program).
export async function up(db: Kysely<unknown>): Promise<void> {
  const pg = dialectOf(db) === 'postgres';
  const uuid = pg ? sql`uuid` : sql`text`;
  const time = pg ? sql`timestamptz(3)` : sql`text`;

  await db.schema.alterTable('programs').addColumn('stripe_secret_sealed', 'text').execute();
  await db.schema
    .createTable('billing_events')
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('referral_id', uuid)
    .addColumn('sale_id', pg ? sql`bigint` : sql`integer`)
    // What a waiting invoice needs to become a sale later (customer, amount, currency, invoice, paid time), as JSON; null otherwise.
    .addColumn('waiting', 'text')
    .addColumn('customer_id', 'text')
    .addPrimaryKeyConstraint('billing_events_pk', ['program_id', 'id'])
    .execute();
  // Waiting invoices of a customer, found when the customer is referred.
  await db.schema.createIndex('billing_events_waiting').on('billing_events').columns(['program_id', 'customer_id']).where(sql.ref('outcome'), '=', 'waiting').execute();
  // Which invoice a payment (intent) paid: how a refund of a charge finds its sale.
  await db.schema
    .createTable('billing_payments')
    .addColumn('program_id', uuid, (c) => c.notNull().references('programs.id').onDelete('cascade'))
    .addColumn('payment_intent', 'text', (c) => c.notNull())
    .addColumn('invoice_id', 'text', (c) => c.notNull())
    .addColumn('created_at', time, (c) => c.notNull())
    .addPrimaryKeyConstraint('billing_payments_pk', ['program_id', 'payment_intent'])
    .execute();
  await db.schema.createIndex('billing_events_received').on('billing_events').columns(['program_id', 'created_at', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('billing_payments').execute();
  await db.schema.dropTable('billing_events').execute();
  await db.schema.alterTable('programs').dropColumn('stripe_secret_sealed').execute();
}
