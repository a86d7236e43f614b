import { sql, type Insertable, type Selectable } from 'kysely';
import { dialectOf } from '../../db/dialect.ts';
import type { SalesTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';

export type SaleRow = Selectable<SalesTable>;

export interface SaleFilter {
  id?: number;
  affiliateId?: string;
  referralId?: string;
  /** Sales created at or after this instant (ISO 8601). */
  createdFrom?: string;
  /** Sales created before this instant (ISO 8601). */
  createdBefore?: string;
}

function selectSales(db: Db | Tx, programId: string, filter: SaleFilter) {
  let q = db.selectFrom('sales as s').selectAll('s').where('s.program_id', '=', programId);
  if (filter.id !== undefined) q = q.where('s.id', '=', filter.id);
  if (filter.affiliateId !== undefined) q = q.where('s.affiliate_id', '=', filter.affiliateId);
  if (filter.referralId !== undefined) q = q.where('s.referral_id', '=', filter.referralId);
  if (filter.createdFrom !== undefined) q = q.where('s.created_at', '>=', filter.createdFrom);
  if (filter.createdBefore !== undefined) q = q.where('s.created_at', '<', filter.createdBefore);
  return q;
}

export function findSale(db: Db | Tx, programId: string, filter: SaleFilter) {
  return selectSales(db, programId, filter).executeTakeFirst();
}

export function listSales(db: Db, programId: string, filter: SaleFilter, page: PageRequest) {
  return pageQuery(selectSales(db, programId, filter), 's', page).execute();
}

export async function insertSale(tx: Tx, row: Insertable<SalesTable>): Promise<number> {
  const { id } = await tx.insertInto('sales').values(row).returning('id').executeTakeFirstOrThrow();
  return Number(id);
}

/** The sale that holds an invoice id in the program, if any. */
export async function findSaleIdByInvoice(db: Db | Tx, programId: string, invoiceKey: string): Promise<number | undefined> {
  const row = await db.selectFrom('sales').select('id').where('program_id', '=', programId).where('invoice_key', '=', invoiceKey).executeTakeFirst();
  return row && Number(row.id);
}

export async function customerHasSale(tx: Tx, referralId: string): Promise<boolean> {
  const row = await tx.selectFrom('sales').select('id').where('referral_id', '=', referralId).limit(1).executeTakeFirst();
  return row !== undefined;
}

export interface SaleTotals {
  count: number;
  /** Minor units. */
  revenue: number;
  commission: number;
}

/** Count and sums of a program's sales, by the database (over the (program_id, …) index). */
export async function sumSales(db: Db, programId: string): Promise<SaleTotals> {
  const row = await db
    .selectFrom('sales')
    .select((eb) => [
      eb.fn.countAll().as('count'),
      eb.fn.coalesce(eb.fn.sum('total_earned'), sql.lit(0)).as('revenue'),
      eb.fn.coalesce(eb.fn.sum('commission'), sql.lit(0)).as('commission'),
    ])
    .where('program_id', '=', programId)
    .executeTakeFirstOrThrow();
  return { count: Number(row.count), revenue: Number(row.revenue), commission: Number(row.commission) };
}

export interface DailySales extends SaleTotals {
  /** The UTC day, YYYY-MM-DD. */
  day: string;
}

/** Sales per UTC day since an instant, summed by the database; days without sales are absent. */
export async function sumSalesByDay(db: Db, programId: string, since: string): Promise<DailySales[]> {
  // Timestamps are ISO text on SQLite and timestamptz on PostgreSQL.
  const day = dialectOf(db) === 'postgres'
    ? sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')`
    : sql<string>`substr(created_at, 1, 10)`;
  const rows = await db
    .selectFrom('sales')
    .select((eb) => [day.as('day'), eb.fn.countAll().as('count'), eb.fn.sum('total_earned').as('revenue'), eb.fn.sum('commission').as('commission')])
    .where('program_id', '=', programId)
    .where('created_at', '>=', since)
    .groupBy(day)
    .orderBy(day)
    .execute();
  return rows.map((r) => ({ day: r.day, count: Number(r.count), revenue: Number(r.revenue), commission: Number(r.commission) }));
}
