import { sql, type Kysely } from 'kysely';

// A program records an invoice once and a customer's external id once: a retried billing
// webhook must not pay a second commission. The unique keys live in their own nullable
// columns, filled for new rows; rows recorded before this rule keep working: of any duplicates
// already stored, the first holds the key and the rest keep null (nulls never collide), so the
// upgrade never fails on old data.
export async function up(db: Kysely<unknown>): Promise<void> {
  // One pass each (a grouped or ranked subquery, not a correlated one per row), so the upgrade
  // stays linear on a large table.
  await db.schema.alterTable('sales').addColumn('invoice_key', 'text').execute();
  await sql`
    update sales set invoice_key = external_invoice_id
    where id in (select min(id) from sales where external_invoice_id <> '' group by program_id, external_invoice_id)`.execute(db);
  await db.schema.createIndex('sales_invoice_key').unique().on('sales').columns(['program_id', 'invoice_key']).execute();

  await db.schema.alterTable('referrals').addColumn('external_id_key', 'text').execute();
  await sql`
    update referrals set external_id_key = referred_user_external_id
    where id in (
      select id from (
        select id, row_number() over (partition by program_id, referred_user_external_id order by created_at, id) as n
        from referrals where referred_user_external_id <> ''
      ) ranked where n = 1
    )`.execute(db);
  await db.schema.createIndex('referrals_external_id_key').unique().on('referrals').columns(['program_id', 'external_id_key']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('referrals_external_id_key').execute();
  await db.schema.alterTable('referrals').dropColumn('external_id_key').execute();
  await db.schema.dropIndex('sales_invoice_key').execute();
  await db.schema.alterTable('sales').dropColumn('invoice_key').execute();
}
