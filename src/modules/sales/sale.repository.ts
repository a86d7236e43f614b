import { affiliateShardOf } from '../../domain/ids.ts';
import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import { dialectOf } from '../../db/dialect.ts';
import { toIso } from '../../domain/clock.ts';
import { eventInsertFrom, recordEventJson } from '../events/outbox.ts';
import {
  addToAffiliateCounters,
  addToLinkCounters,
  addToSaleDays,
  affiliateCountersUpdate,
  insertEntries,
  linkCountersUpdate,
  saleDayInsertAfter,
  saleDayOf,
  saleEntryInsertFrom,
  unpaidDayInsertAfter,
} from '../ledger/ledger.repository.ts';
import type { SaleRefundsTable, SalesTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { compiledNewestFirstList, pageQuery, type PageRequest } from '../../db/keyset.ts';
import { compiledInsert, compiledQuery, filterShape, placeholderFilter, type ParamOf } from '../../db/compiled-query.ts';
import { LIKE_READ, SEARCH_COUNT_CAP, searchCondition, searchedFrom, searchReadOf, searchTextOf, type SearchRead } from '../../db/text-search.ts';

export type SaleRow = Selectable<SalesTable>;

export interface SaleFilter {
  id?: number;
  affiliateId?: string;
  referralId?: string;
  externalId?: string;
  /** Sales created at or after this instant (ISO 8601). */
  createdFrom?: string;
  /** Sales created before this instant (ISO 8601). */
  createdBefore?: string;
  /** The customer's name or e-mail contains this text (ignoring case): the dashboard's search. */
  search?: string;
  /** none: nothing refunded; partial: some; full: all. */
  refunded?: 'none' | 'partial' | 'full';
}

function selectSales(db: Db | Tx, programId: string, filter: SaleFilter, searchRead: SearchRead = LIKE_READ) {
  const search = searchOf(filter);
  let q = searchedFrom(db, 'sales', 's', db.selectFrom('sales as s'), search, searchRead).selectAll('s').where('s.program_id', '=', programId);
  if (filter.id !== undefined) q = q.where('s.id', '=', filter.id);
  if (filter.affiliateId !== undefined) q = q.where('s.affiliate_id', '=', filter.affiliateId);
  if (filter.referralId !== undefined) q = q.where('s.referral_id', '=', filter.referralId);
  if (filter.externalId !== undefined) q = q.where('s.external_id', '=', filter.externalId);
  if (filter.createdFrom !== undefined) q = q.where('s.created_at', '>=', filter.createdFrom);
  if (filter.createdBefore !== undefined) q = q.where('s.created_at', '<', filter.createdBefore);
  if (search !== undefined) q = q.where(searchCondition('sales', 's', search, searchRead));
  if (filter.refunded === 'none') q = q.where('s.refunded_amount', '=', 0);
  if (filter.refunded === 'partial') q = q.where('s.refunded_amount', '>', 0).where(sql<boolean>`s.refunded_amount < s.total_earned`);
  if (filter.refunded === 'full') q = q.where(sql<boolean>`s.refunded_amount = s.total_earned`);
  return q;
}

const searchOf = (filter: SaleFilter) => searchTextOf(filter.search);

/** The filter fields a compiled query binds (the dashboard's search and refunded filters change the SQL). */
const BOUND_FIELDS = ['id', 'affiliateId', 'referralId', 'externalId', 'createdFrom', 'createdBefore'] as const;
type BoundFilter = Pick<SaleFilter, (typeof BOUND_FIELDS)[number]>;
const isBound = (filter: SaleFilter) => filter.search === undefined && filter.refunded === undefined;

const saleQuery = compiledQuery<{ programId: string } & BoundFilter, SaleRow, string>((db, param, shape) =>
  selectSales(db, param('programId'), placeholderFilter(param as ParamOf<Required<BoundFilter>>, shape)),
);

export function findSale(db: Db | Tx, programId: string, filter: SaleFilter): Promise<SaleRow | undefined> {
  if (isBound(filter)) return saleQuery.first(db, { programId, ...filter }, filterShape(filter, BOUND_FIELDS));
  return selectSales(db, programId, filter).executeTakeFirst();
}

const newestSales = compiledNewestFirstList<BoundFilter, SaleRow>(BOUND_FIELDS, 's', selectSales);

/** A page of the sales a filter matches; `searchCap`: see searchReadOf (a test sets it lower). */
export async function listSales(db: Db, programId: string, filter: SaleFilter, page: PageRequest, searchCap = SEARCH_COUNT_CAP): Promise<SaleRow[]> {
  if (isBound(filter) && page.order === undefined) return newestSales(db, programId, filter, page);
  const read = await searchReadOf(db, 'sales', searchOf(filter), searchCap);
  return pageQuery(selectSales(db, programId, filter, read), 's', page).execute();
}

export interface FilteredSaleTotals {
  count: number;
  /** Minor units. */
  amount: number;
  refunded: number;
  /** Net of refunds. */
  commission: number;
}

/** A search that matches more sales than the cap (SEARCH_COUNT_CAP): its totals are not added up. */
export interface CappedSaleTotals {
  moreThan: number;
}

/** What a filtered list adds up to (every page, not only the one shown); a search's past SEARCH_COUNT_CAP sales only says so. */
export async function sumFilteredSales(db: Db, programId: string, filter: SaleFilter, searchCap = SEARCH_COUNT_CAP): Promise<FilteredSaleTotals | CappedSaleTotals> {
  const searching = searchOf(filter) !== undefined;
  const matching = selectSales(db, programId, filter, await searchReadOf(db, 'sales', searchOf(filter), searchCap)).clearSelect().select(['s.total_earned', 's.refunded_amount', 's.commission', 's.refunded_commission']);
  // A search adds up no more than the cap and one: one more says "more than" (one statement either way).
  const row = await db
    .selectFrom((searching ? matching.limit(searchCap + 1) : matching).as('m'))
    .select((eb) => [
      eb.fn.countAll().as('count'),
      sql<number | string>`coalesce(sum(m.total_earned), 0)`.as('amount'),
      sql<number | string>`coalesce(sum(m.refunded_amount), 0)`.as('refunded'),
      sql<number | string>`coalesce(sum(m.commission - m.refunded_commission), 0)`.as('commission'),
    ])
    .executeTakeFirstOrThrow();
  if (Number(row.count) > searchCap) return { moreThan: searchCap };
  return { count: Number(row.count), amount: Number(row.amount), refunded: Number(row.refunded), commission: Number(row.commission) };
}

/** A sale's refunds, oldest first. */
export function listSaleRefunds(db: Db, programId: string, saleId: number) {
  return db.selectFrom('sale_refunds').selectAll().where('program_id', '=', programId).where('sale_id', '=', saleId).orderBy('created_at').orderBy('id').execute();
}

const insertSaleQuery = compiledInsert('sales', (insert) => insert.returning('id'));

export async function insertSale(tx: Tx, row: Insertable<SalesTable>): Promise<number> {
  const { id } = (await insertSaleQuery.first(tx, row))!;
  return Number(id);
}

/** What a new sale's write binds besides the sale's row. */
export interface NewSaleWrites {
  currency: string;
  /** When its ledger entry falls due (the ledger's rule: entries.ts saleEntryDueAt). */
  dueAt: string;
  eventId: string;
  /** The sale.created event's data as JSON text without its leading `{"id":N,` — the id is the database's. */
  eventDataAfterId: string;
}

const SALE_COLUMNS = [
  'program_id', 'affiliate_id', 'referral_id', 'link_id', 'promotional_code_id', 'external_id', 'external_invoice_id', 'invoice_key', 'name',
  'email', 'total_earned', 'commission_rate', 'commission', 'commission_rule', 'commission_flat', 'refunded_amount', 'refunded_commission',
  'created_at', 'updated_at',
] as const;
type NewSaleRow = { [K in (typeof SALE_COLUMNS)[number]]: SaleRow[K] };
type NewSaleParams = NewSaleRow & NewSaleWrites & { day: string; shard: string; dueDay: string };

/**
 * Which counters a new sale moves (ledger rules, as countSales applies them): the affiliate's
 * sales, their amount and its commission total (bounded when the commission grows it); the
 * link's sales, and its revenue total (bounded) when revenue grows, when the sale has a link.
 */
type NewSaleShape = `${'affiliate-commission' | 'affiliate'} ${'link-revenue' | 'link' | 'no-link'}`;

function newSaleShape(row: NewSaleRow): NewSaleShape {
  return `${Number(row.commission) > 0 ? 'affiliate-commission' : 'affiliate'} ${row.link_id === null ? 'no-link' : Number(row.total_earned) > 0 ? 'link-revenue' : 'link'}`;
}

/**
 * PostgreSQL: the new sale and every write that goes with it in one statement (one round trip
 * instead of five). Each sub-statement is the ledger's or the outbox's own (ledger.repository,
 * events/outbox): the affiliate's and the link's counters, bounded; the sale's ledger entry; its
 * sale.created event. The counters report how many rows they changed, so the caller can refuse
 * a total that would pass its ceiling (the transaction then rolls back, the inserts with it).
 */
const newSaleQuery = compiledQuery<NewSaleParams, { id: number | string; affiliate_rows: number | string; link_rows: number | string }, NewSaleShape>((_db, param, shape) => {
  const [affiliate, link] = shape!.split(' ');
  const none = sql`select 1 where false`;
  const affiliateDelta = { commission: param('commission'), sales: sql.lit(1), amount: param('total_earned') };
  const affiliateUpdate = sql`${affiliateCountersUpdate(param('affiliate_id'), affiliateDelta, affiliate === 'affiliate-commission')} returning 1`;
  // The link's row is locked after the affiliate's (the order of every transaction, see lockOrderAfter).
  const linkUpdate =
    link === 'no-link'
      ? none
      : sql`${linkCountersUpdate(param('link_id'), { sales: sql.lit(1), revenue: param('total_earned') }, link === 'link-revenue', 'a')} returning 1`;
  const entry = saleEntryInsertFrom('s', {
    programId: param('program_id'),
    affiliateId: param('affiliate_id'),
    amount: param('commission'),
    currency: param('currency'),
    dueAt: param('dueAt'),
    createdAt: param('created_at'),
  });
  const event = eventInsertFrom('s', {
    id: param('eventId'),
    programId: param('program_id'),
    type: 'sale.created',
    data: sql`'{"id":' || s.id || ',' || cast(${param('eventDataAfterId')} as text)`,
    createdAt: param('created_at'),
  });
  // The program's sale_days row last of all (after the affiliate's and the link's rows).
  const saleDay = saleDayInsertAfter(['a', 'l'], { programId: param('program_id'), day: param('day'), shard: param('shard'), amount: param('total_earned'), commission: param('commission') });
  // Its entry's unpaid_days row after that (the order every transaction locks them in).
  const unpaidDay = unpaidDayInsertAfter(['d'], { programId: param('program_id'), dueDay: param('dueDay'), shard: param('shard'), amount: param('commission') });
  return sql`with s as (insert into sales (${sql.join(SALE_COLUMNS.map((column) => sql.ref(column)))}) values (${sql.join(SALE_COLUMNS.map((column) => param(column)))}) returning id),
    a as (${affiliateUpdate}),
    l as (${linkUpdate}),
    d as (${saleDay} returning 1),
    u as (${unpaidDay}),
    e as (${entry}),
    v as (${event})
    select s.id, (select count(*) from a) as affiliate_rows, (select count(*) from l) as link_rows from s`;
});

/**
 * Writes a new sale with what goes with it — the counters it adds to, its ledger entry, its
 * sale.created event — and returns its id and whether each counter it moves moved (false: it would
 * have passed MAX_MINOR_UNITS; the caller refuses the sale). PostgreSQL in one statement; SQLite, in
 * process, statement by statement through the same ledger and outbox functions.
 */
export async function insertSaleWithItsWrites(tx: Tx, row: NewSaleRow, writes: NewSaleWrites): Promise<{ id: number; affiliateMoved: boolean; linkMoved: boolean }> {
  const shape = newSaleShape(row);
  const [, link] = shape.split(' ');
  if (dialectOf(tx) === 'postgres') {
    const placed = { day: saleDayOf(row.created_at), shard: affiliateShardOf(row.affiliate_id), dueDay: writes.dueAt.slice(0, 10) };
    const result = (await newSaleQuery.first(tx, { ...row, ...writes, ...placed }, shape))!;
    return { id: Number(result.id), affiliateMoved: Number(result.affiliate_rows) > 0, linkMoved: link === 'no-link' || Number(result.link_rows) > 0 };
  }
  const id = await insertSale(tx, row);
  const commission = Number(row.commission);
  const affiliateMoved = await addToAffiliateCounters(tx, row.affiliate_id, { referredUsers: 0, commission, sales: 1, amount: Number(row.total_earned) });
  const linkMoved = link === 'no-link' || (await addToLinkCounters(tx, row.link_id!, { referrals: 0, sales: 1, revenue: Number(row.total_earned) }));
  if (!affiliateMoved || !linkMoved) return { id, affiliateMoved, linkMoved };
  await addToSaleDays(tx, row.program_id, [{ day: saleDayOf(row.created_at), shard: affiliateShardOf(row.affiliate_id), sales: 1, amount: Number(row.total_earned), refunded: 0, commission }]);
  await insertEntries(tx, [
    { program_id: row.program_id, affiliate_id: row.affiliate_id, sale_id: id, kind: 'sale', amount: commission, currency: writes.currency, due_at: writes.dueAt, created_at: row.created_at },
  ]);
  await recordEventJson(tx, writes.eventId, row.program_id, 'sale.created', `{"id":${id},${writes.eventDataAfterId}`, toIso(row.created_at));
  return { id, affiliateMoved, linkMoved };
}

/** The sale that holds an invoice id in the program, if any. */
export async function findSaleIdByInvoice(db: Db | Tx, programId: string, invoiceKey: string): Promise<number | undefined> {
  const row = await db.selectFrom('sales').select('id').where('program_id', '=', programId).where('invoice_key', '=', invoiceKey).executeTakeFirst();
  return row && Number(row.id);
}

/**
 * Reads a sale and holds its row until the transaction ends (a no-op update takes the row lock
 * on PostgreSQL; SQLite transactions are serial anyway), so two concurrent refunds or edits of
 * one sale each see the other's result and can never refund more than was paid.
 */
export async function lockSale(tx: Tx, programId: string, filter: { id: number } | { invoiceKey: string }): Promise<SaleRow | undefined> {
  let q = tx.updateTable('sales').set((eb) => ({ refunded_amount: eb.ref('refunded_amount') })).where('program_id', '=', programId);
  q = 'id' in filter ? q.where('id', '=', filter.id) : q.where('invoice_key', '=', filter.invoiceKey);
  return q.returningAll().executeTakeFirst();
}

export async function updateSaleRow(tx: Tx, programId: string, id: number, changes: Updateable<SalesTable>): Promise<void> {
  await tx.updateTable('sales').set(changes).where('program_id', '=', programId).where('id', '=', id).execute();
}

export async function deleteSaleRow(tx: Tx, programId: string, id: number): Promise<void> {
  await tx.deleteFrom('sales').where('program_id', '=', programId).where('id', '=', id).execute();
}

export async function insertRefund(tx: Tx, row: Insertable<SaleRefundsTable>): Promise<void> {
  await tx.insertInto('sale_refunds').values(row).execute();
}

/** How many sales the customer has: the plan's maxSalesPerCustomer counts them. */
export async function countCustomerSales(tx: Tx, referralId: string): Promise<number> {
  const { n } = await tx.selectFrom('sales').select((eb) => eb.fn.countAll().as('n')).where('referral_id', '=', referralId).executeTakeFirstOrThrow();
  return Number(n);
}

export async function customerHasSale(tx: Tx, referralId: string): Promise<boolean> {
  const row = await tx.selectFrom('sales').select('id').where('referral_id', '=', referralId).limit(1).executeTakeFirst();
  return row !== undefined;
}

