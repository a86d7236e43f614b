import { sql, type Kysely } from 'kysely';

// Indexes whose column is null on most new rows hold only the rows that have a value (issue
// 22): a new event has no sequence until the worker numbers it, a ledger entry no payout until
// one takes it, most sales no invoice id or promotional code. A full index stores an entry for
// every null too, so each insert wrote one more index page for nothing: a sale wrote 28.8
// SQLite WAL pages, 23.7 with these (measured over 1 000 sales of the bench's data set). Every
// query that uses them names a value (`= ?`, `> ?`, `is not null`), which implies the
// condition, so both databases still use them.
const PARTIAL: { name: string; table: string; columns: string[]; unique?: boolean; column: string }[] = [
  { name: 'events_sequence', table: 'events', columns: ['sequence'], unique: true, column: 'sequence' },
  { name: 'events_program_sequence', table: 'events', columns: ['program_id', 'sequence'], column: 'sequence' },
  { name: 'commission_entries_payout', table: 'commission_entries', columns: ['payout_id'], column: 'payout_id' },
  { name: 'sales_invoice_key', table: 'sales', columns: ['program_id', 'invoice_key'], unique: true, column: 'invoice_key' },
  { name: 'sales_promotional_code', table: 'sales', columns: ['promotional_code_id'], column: 'promotional_code_id' },
];

async function recreate(db: Kysely<unknown>, partial: boolean): Promise<void> {
  for (const index of PARTIAL) {
    await db.schema.dropIndex(index.name).execute();
    let create = db.schema.createIndex(index.name).on(index.table).columns(index.columns);
    if (index.unique) create = create.unique();
    if (partial) create = create.where(sql.ref(index.column), 'is not', null);
    await create.execute();
  }
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await recreate(db, true);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await recreate(db, false);
}
