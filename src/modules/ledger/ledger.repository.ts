import { sql, type Insertable, type RawBuilder, type Selectable } from 'kysely';
import { dialectOf, lockedOnPostgres, lockOrderAfter } from '../../db/dialect.ts';
import { compiledInsert, compiledQuery } from '../../db/compiled-query.ts';
import { mergedInKeyOrder } from '../../db/kept-rows.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';
import type { ClicksTable, CommissionEntriesTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { affiliateShardOf, newId } from '../../domain/ids.ts';
import { MAX_MINOR_UNITS } from '../../domain/money.ts';
import { toIso } from '../../domain/clock.ts';

// Every write to a counter column (affiliates', links', daily clicks) and every delete of
// credited sales: the ledger's statements, so the money rules in counters.ts have one place
// below them.

// The counters' statements, as SQL text each dialect runs alike. The PostgreSQL one-statement
// writes of a new sale or referral (sales/ and referrals/ repositories) put these same
// statements in their WITH, so each rule — which column moves, and the bound below — is written
// once, here. A growing total is bounded so that it never passes MAX_MINOR_UNITS (it could no
// longer be answered exactly as a JSON number); the statement then changes no row, and the
// caller refuses the change. Counters are aggregates, not edits: updated_at is left alone.

/** Deltas of an affiliate's counters; a value or a compiled query's placeholder each. */
export interface AffiliateCounterDeltas {
  referredUsers?: unknown;
  commission?: unknown;
  /** The sales credited to it, their totalEarned and what refunds took back of them (the sales list's totals by affiliate). */
  sales?: unknown;
  amount?: unknown;
  refunded?: unknown;
}

/** Moves an affiliate's counters; `bounded`: only while the commission total stays within MAX_MINOR_UNITS. */
export function affiliateCountersUpdate(affiliateId: unknown, delta: AffiliateCounterDeltas, bounded: boolean): RawBuilder<unknown> {
  const set: RawBuilder<unknown>[] = [];
  if (delta.referredUsers !== undefined) set.push(sql`number_of_referred_users = number_of_referred_users + ${delta.referredUsers}`);
  if (delta.commission !== undefined) set.push(sql`total_commission_earned = total_commission_earned + ${delta.commission}`);
  if (delta.sales !== undefined) set.push(sql`number_of_sales = number_of_sales + ${delta.sales}`);
  if (delta.amount !== undefined) set.push(sql`total_sales_amount = total_sales_amount + ${delta.amount}`);
  if (delta.refunded !== undefined) set.push(sql`total_refunded_amount = total_refunded_amount + ${delta.refunded}`);
  const bound = bounded ? sql` and total_commission_earned + ${delta.commission} <= ${sql.lit(MAX_MINOR_UNITS)}` : sql``;
  return sql`update affiliates set ${sql.join(set)} where id = ${affiliateId}${bound}`;
}

/** Deltas of a link's counters. */
export interface LinkCounterDeltas {
  referrals?: unknown;
  sales?: unknown;
  revenue?: unknown;
}

/**
 * Moves a link's counters; `bounded`: only while its revenue total stays within MAX_MINOR_UNITS.
 * `after` (a CTE of the same statement) makes it run after that one: see lockOrderAfter.
 */
export function linkCountersUpdate(linkId: unknown, delta: LinkCounterDeltas, bounded: boolean, after?: string): RawBuilder<unknown> {
  const set: RawBuilder<unknown>[] = [];
  if (delta.referrals !== undefined) set.push(sql`referrals = referrals + ${delta.referrals}`);
  if (delta.sales !== undefined) set.push(sql`sales = sales + ${delta.sales}`);
  if (delta.revenue !== undefined) set.push(sql`total_revenue = total_revenue + ${delta.revenue}`);
  const bound = bounded ? sql` and total_revenue + ${delta.revenue} <= ${sql.lit(MAX_MINOR_UNITS)}` : sql``;
  return sql`update affiliate_links set ${sql.join(set)} where id = ${linkId}${bound}${after === undefined ? sql`` : sql` and ${lockOrderAfter(after)}`}`;
}

type CounterShape = 'bounded' | 'unbounded';

/** What moves an affiliate's counters: its customers, and the sales credited to it (their commission, count, amounts, refunds). */
export interface AffiliateCounterMove {
  referredUsers: number;
  commission: number;
  sales?: number;
  amount?: number;
  refunded?: number;
}

const affiliateCountersQuery = compiledQuery<{ affiliateId: string } & Required<AffiliateCounterMove>, never, CounterShape>((_db, param, shape) =>
  affiliateCountersUpdate(
    param('affiliateId'),
    { referredUsers: param('referredUsers'), commission: param('commission'), sales: param('sales'), amount: param('amount'), refunded: param('refunded') },
    shape === 'bounded',
  ).$castTo<never>(),
);

const linkCountersQuery = compiledQuery<{ linkId: string; referrals: number; sales: number; revenue: number }, never, CounterShape>((_db, param, shape) =>
  linkCountersUpdate(param('linkId'), { referrals: param('referrals'), sales: param('sales'), revenue: param('revenue') }, shape === 'bounded').$castTo<never>(),
);

/** Moves the affiliate's counters by `delta`. False, and nothing changed, when the commission total would pass MAX_MINOR_UNITS. */
export async function addToAffiliateCounters(tx: Tx, affiliateId: string, delta: AffiliateCounterMove): Promise<boolean> {
  const bounded = delta.commission > 0;
  const { numAffectedRows } = await affiliateCountersQuery.run(tx, { affiliateId, sales: 0, amount: 0, refunded: 0, ...delta }, bounded ? 'bounded' : 'unbounded');
  return !bounded || numAffectedRows! > 0n;
}

/** Moves the link's counters by `delta`. False, and nothing changed, when the revenue total would pass MAX_MINOR_UNITS. */
export async function addToLinkCounters(tx: Tx, linkId: string, delta: { referrals: number; sales: number; revenue: number }): Promise<boolean> {
  const bounded = delta.revenue > 0;
  const { numAffectedRows } = await linkCountersQuery.run(tx, { linkId, ...delta }, bounded ? 'bounded' : 'unbounded');
  return !bounded || numAffectedRows! > 0n;
}

/** Adds a counted click to the affiliate's and the link's counters and to the link's day. */
export async function addClickToCounters(tx: Tx, click: Pick<ClicksTable, 'program_id' | 'affiliate_id' | 'day'> & { link_id: string }): Promise<void> {
  await tx.updateTable('affiliates').set((eb) => ({ number_of_clicks: eb('number_of_clicks', '+', 1) })).where('id', '=', click.affiliate_id).execute();
  await tx.updateTable('affiliate_links').set((eb) => ({ clicks: eb('clicks', '+', 1) })).where('id', '=', click.link_id).execute();
  await tx
    .insertInto('click_days')
    .values({ id: newId(), program_id: click.program_id, affiliate_id: click.affiliate_id, link_id: click.link_id, day: click.day, clicks: 1 })
    .onConflict((conflict) => conflict.columns(['link_id', 'day']).doUpdateSet({ clicks: sql`click_days.clicks + 1` }))
    .execute();
}

/** A sale's place in the counters: the affiliate and link it credits, its day (sale_days), and what it adds to them. */
export interface SaleCredit {
  affiliate_id: string;
  link_id: string | null;
  /** The sale's UTC day, YYYY-MM-DD (saleDayOf). */
  day: string;
  /** Minor units: its totalEarned and what refunds took back of it (its revenue is the difference). */
  amount: number;
  refunded: number;
  /** Minor units, net of refunds. */
  commission: number;
}

// sale_days (migration 2026-12-03T0400): a program's sales by UTC day and shard, kept with the
// counters so that totals and charts sum days, not sales.

/** The UTC day a sale counts on: the day of its `created_at`. */
export const saleDayOf = (createdAt: string | Date): string => toIso(createdAt).slice(0, 10);


/** What changes on one row of sale_days. */
export interface SaleDayChange {
  day: string;
  shard: string;
  sales: number;
  amount: number;
  refunded: number;
  commission: number;
}

const SALE_DAY_UPSERT = sql`on conflict (program_id, day, shard) do update set sales = sale_days.sales + excluded.sales, amount = sale_days.amount + excluded.amount, refunded = sale_days.refunded + excluded.refunded, commission = sale_days.commission + excluded.commission`;

/**
 * PostgreSQL: a new sale's upsert of its sale_days row as a sub-statement of a one-statement
 * write, run after the CTEs `after` (the row is the last a sale locks: see lockOrderAfter). Each
 * parameter cast, as in an INSERT … SELECT list they carry no column type.
 */
export function saleDayInsertAfter(after: readonly string[], change: { programId: unknown; day: unknown; shard: unknown; amount: unknown; commission: unknown }): RawBuilder<unknown> {
  return sql`insert into sale_days (program_id, day, shard, sales, amount, refunded, commission)
    select cast(${change.programId} as uuid), cast(${change.day} as text), cast(${change.shard} as text), 1, cast(${change.amount} as bigint), 0, cast(${change.commission} as bigint)
    where ${sql.join(after.map(lockOrderAfter), sql` and `)}
    ${SALE_DAY_UPSERT}`;
}

const saleDayQuery = compiledQuery<{ programId: string } & SaleDayChange, never>((_db, param) =>
  sql`insert into sale_days (program_id, day, shard, sales, amount, refunded, commission)
    values (${param('programId')}, ${param('day')}, ${param('shard')}, ${param('sales')}, ${param('amount')}, ${param('refunded')}, ${param('commission')})
    ${SALE_DAY_UPSERT}`.$castTo<never>(),
);

/**
 * Moves the program's sale_days rows by `changes`, merged per row and in one order (day, then
 * shard): the rows are the last a transaction locks, and two transactions that move several
 * (cascades) take them alike, so they never wait for each other in a circle.
 */
export async function addToSaleDays(tx: Tx, programId: string, changes: readonly SaleDayChange[]): Promise<void> {
  const rows = mergedInKeyOrder(changes, (change) => `${change.day} ${change.shard}`, ['sales', 'amount', 'refunded', 'commission']);
  for (const row of rows) await saleDayQuery.run(tx, { programId, ...row });
}

// unpaid_days (migration 2026-12-03T1000): a program's unpaid commission by the UTC day its
// entries fall due, shard, held or not, in a payout or not — moved by every write below that
// adds an unpaid entry or changes one's due date, hold, payout or paid state, so a program's
// balance sums days (ledgerBalance), not entries.

/** What changes on one row of unpaid_days: unpaid entries adding up to `amount` come (or go, negative). */
export interface UnpaidDayChange {
  dueDay: string;
  shard: string;
  held: 0 | 1;
  inPayout: 0 | 1;
  amount: number;
}

/** The fields of an entry that place it in unpaid_days. */
type PlacedEntry = Pick<EntryRow, 'affiliate_id' | 'due_at' | 'held_by' | 'payout_id'> & { amount: number | string };

/** An unpaid entry added to (sign 1) or taken from (sign -1) its row of unpaid_days. */
function unpaidDayChangeOf(entry: PlacedEntry, sign: 1 | -1): UnpaidDayChange {
  return {
    dueDay: toIso(entry.due_at).slice(0, 10),
    shard: affiliateShardOf(entry.affiliate_id),
    held: entry.held_by === null ? 0 : 1,
    inPayout: entry.payout_id === null ? 0 : 1,
    amount: sign * Number(entry.amount),
  };
}

/** An unpaid entry moved from where it was (`before`) to where it is (`after`). */
const unpaidDayMove = (before: PlacedEntry, after: PlacedEntry) => [unpaidDayChangeOf(before, -1), unpaidDayChangeOf(after, 1)];

const UNPAID_DAY_UPSERT = sql`on conflict (program_id, due_day, shard, held, in_payout) do update set amount = unpaid_days.amount + excluded.amount`;

const unpaidDayQuery = compiledQuery<{ programId: string } & UnpaidDayChange, never>((_db, param) =>
  sql`insert into unpaid_days (program_id, due_day, shard, held, in_payout, amount)
    values (${param('programId')}, ${param('dueDay')}, ${param('shard')}, ${param('held')}, ${param('inPayout')}, ${param('amount')})
    ${UNPAID_DAY_UPSERT}`.$castTo<never>(),
);

/**
 * Moves the program's unpaid_days rows by `changes`, merged per row and in one order (the
 * key's), so two transactions that move several rows take them alike; rows that do not move
 * are not written.
 */
export async function addToUnpaidDays(tx: Tx, programId: string, changes: readonly UnpaidDayChange[]): Promise<void> {
  const rows = mergedInKeyOrder(changes, (change) => `${change.dueDay} ${change.shard} ${change.held} ${change.inPayout}`, ['amount']);
  for (const row of rows) await unpaidDayQuery.run(tx, { programId, ...row });
}

/**
 * Deletes the unpaid_days rows that add up to nothing (a day whose entries were all paid): they
 * change no balance, and without this a program's rows would grow with its age, one per day,
 * shard and state it ever had. A concurrent move of such a row either comes first (the row is
 * then not 0) or inserts it again.
 */
export async function deleteEmptyUnpaidDays(db: Db): Promise<number> {
  const { numDeletedRows } = await db.deleteFrom('unpaid_days').where('amount', '=', 0).executeTakeFirst();
  return Number(numDeletedRows);
}

/**
 * PostgreSQL: a new sale's entry added to its unpaid_days row, as a sub-statement of the sale's
 * one-statement write, run after the CTEs `after` (the last row a sale locks). Nothing for an
 * entry of 0.
 */
export function unpaidDayInsertAfter(after: readonly string[], entry: { programId: unknown; dueDay: unknown; shard: unknown; amount: unknown }): RawBuilder<unknown> {
  return sql`insert into unpaid_days (program_id, due_day, shard, held, in_payout, amount)
    select cast(${entry.programId} as uuid), cast(${entry.dueDay} as text), cast(${entry.shard} as text), 0, 0, cast(${entry.amount} as bigint)
    where cast(${entry.amount} as bigint) <> 0 and ${sql.join(after.map(lockOrderAfter), sql` and `)}
    ${UNPAID_DAY_UPSERT}`;
}

/** A program's sales since `sinceDay` (YYYY-MM-DD) by day, net of refunds (minor units); days without sales are absent. */
export async function sumSaleDays(db: Db, programId: string, sinceDay: string): Promise<{ day: string; count: number; revenue: number; commission: number }[]> {
  const rows = await db
    .selectFrom('sale_days')
    .select(['day', sql<number | string>`sum(sales)`.as('count'), sql<number | string>`sum(amount - refunded)`.as('revenue'), sql<number | string>`sum(commission)`.as('commission')])
    .where('program_id', '=', programId)
    .where('day', '>=', sinceDay)
    .groupBy('day')
    .having(sql<number>`sum(sales)`, '<>', 0)
    .orderBy('day')
    .execute();
  return rows.map((r) => ({ day: r.day, count: Number(r.count), revenue: Number(r.revenue), commission: Number(r.commission) }));
}

/** A program's sales of all time, or of the UTC days [from, before) (minor units; commission net of refunds): the sum of its sale_days. */
export async function sumAllSaleDays(db: Db, programId: string, days: { from?: string; before?: string } = {}): Promise<{ count: number; amount: number; refunded: number; commission: number }> {
  const row = await db
    .selectFrom('sale_days')
    .select([
      sql<number | string>`coalesce(sum(sales), 0)`.as('count'),
      sql<number | string>`coalesce(sum(amount), 0)`.as('amount'),
      sql<number | string>`coalesce(sum(refunded), 0)`.as('refunded'),
      sql<number | string>`coalesce(sum(commission), 0)`.as('commission'),
    ])
    .where('program_id', '=', programId)
    .$if(days.from !== undefined, (q) => q.where('day', '>=', days.from!))
    .$if(days.before !== undefined, (q) => q.where('day', '<', days.before!))
    .executeTakeFirstOrThrow();
  return { count: Number(row.count), amount: Number(row.amount), refunded: Number(row.refunded), commission: Number(row.commission) };
}

/**
 * What the sales credited to an affiliate add up to, from its kept counters (the sales list
 * filtered by that affiliate alone): its sales, their amounts, what was refunded of them, and
 * their commission net of refunds (its totalCommissionEarned). Zeros for an affiliate not found.
 */
export async function sumAffiliateSales(db: Db, programId: string, affiliateId: string): Promise<{ count: number; amount: number; refunded: number; commission: number }> {
  const row = await db
    .selectFrom('affiliates')
    .select(['number_of_sales', 'total_sales_amount', 'total_refunded_amount', 'total_commission_earned'])
    .where('program_id', '=', programId)
    .where('id', '=', affiliateId)
    .executeTakeFirst();
  return {
    count: Number(row?.number_of_sales ?? 0),
    amount: Number(row?.total_sales_amount ?? 0),
    refunded: Number(row?.total_refunded_amount ?? 0),
    commission: Number(row?.total_commission_earned ?? 0),
  };
}

/**
 * Deletes the sales of a referral, or those of an affiliate's referrals that credit someone
 * else, and returns what each added to the counters. Deleting first takes the rows' locks in
 * the same order a refund does (sale, then affiliate), and the returned values are the rows as
 * they were deleted, so no concurrent refund is counted twice or lost.
 */
export type SalesOf = { referralId: string } | { referralsOfAffiliateCreditingOthers: string } | { affiliateId: string };

/** A sale deleted by a cascade: its id, for the ledger's void entry. */
export type VoidedSale = SaleCredit & { sale_id: number };

export async function deleteSalesOf(tx: Tx, programId: string, of: SalesOf): Promise<VoidedSale[]> {
  let q = tx.deleteFrom('sales').where('program_id', '=', programId);
  if ('referralId' in of) {
    q = q.where('referral_id', '=', of.referralId);
  } else if ('affiliateId' in of) {
    q = q.where('affiliate_id', '=', of.affiliateId);
  } else {
    const affiliateId = of.referralsOfAffiliateCreditingOthers;
    q = q.where('affiliate_id', '<>', affiliateId).where('referral_id', 'in', (eb) => eb.selectFrom('referrals as r').select('r.id').where('r.affiliate_id', '=', affiliateId));
  }
  const rows = await q
    .returning(['id', 'affiliate_id', 'link_id', 'created_at', 'total_earned', 'refunded_amount', sql<number | string>`commission - refunded_commission`.as('commission')])
    .execute();
  return rows.map((r) => ({
    sale_id: Number(r.id),
    affiliate_id: r.affiliate_id,
    link_id: r.link_id,
    day: saleDayOf(r.created_at),
    amount: Number(r.total_earned),
    refunded: Number(r.refunded_amount),
    commission: Number(r.commission),
  }));
}

export async function countSalesOf(db: Db | Tx, programId: string, of: { referralId: string } | { affiliateId: string }): Promise<number> {
  let q = db.selectFrom('sales').select((eb) => eb.fn.countAll().as('n')).where('program_id', '=', programId);
  q = 'referralId' in of ? q.where('referral_id', '=', of.referralId) : q.where('affiliate_id', '=', of.affiliateId);
  const { n } = await q.executeTakeFirstOrThrow();
  return Number(n);
}


const insertEntriesQuery = compiledInsert('commission_entries');

export async function insertEntries(tx: Tx, rows: Insertable<CommissionEntriesTable>[]): Promise<void> {
  // One entry (a sale's own, the common case) by a compiled statement; several in one insert.
  if (rows.length === 1) await insertEntriesQuery.run(tx, rows[0]!);
  else if (rows.length > 0) await tx.insertInto('commission_entries').values(rows).execute();
  for (const programId of new Set(rows.map((row) => row.program_id))) {
    const unpaid = rows.filter((row) => row.program_id === programId && (row.paid_at ?? null) === null);
    const placed = unpaid.map((row) => ({ affiliate_id: row.affiliate_id, due_at: row.due_at, held_by: row.held_by ?? null, payout_id: row.payout_id ?? null, amount: row.amount }));
    await addToUnpaidDays(tx, programId, placed.map((entry) => unpaidDayChangeOf(entry, 1)));
  }
}

/**
 * PostgreSQL: the insert of a sale's `sale` entry as a sub-statement of a one-statement write,
 * taking the sale's id from the CTE `from`. Its values as insertEntries would write them; each
 * cast, because parameters in an INSERT … SELECT list carry no column type.
 */
export function saleEntryInsertFrom(
  from: string,
  entry: { programId: unknown; affiliateId: unknown; amount: unknown; currency: unknown; dueAt: unknown; createdAt: unknown },
): RawBuilder<unknown> {
  return sql`insert into commission_entries (program_id, affiliate_id, sale_id, kind, amount, currency, due_at, created_at)
    select cast(${entry.programId} as uuid), cast(${entry.affiliateId} as uuid), ${sql.table(from)}.id, 'sale', cast(${entry.amount} as bigint),
      cast(${entry.currency} as text), cast(${entry.dueAt} as timestamptz), cast(${entry.createdAt} as timestamptz) from ${sql.table(from)}`;
}

/** What holds an entry back from falling due: a sale's open dispute, or (fraud review) a flag. */
export type HeldBy = NonNullable<CommissionEntriesTable['held_by']>;

/** Where each sale's own `sale` entry stands: when it falls due, whether a payout took it, and what holds it. */
export async function saleEntryStates(
  tx: Tx,
  programId: string,
  saleIds: number[],
): Promise<Map<number, { dueAt: string | Date; settled: boolean; heldBy: HeldBy | null }>> {
  if (saleIds.length === 0) return new Map();
  const rows = await tx
    .selectFrom('commission_entries')
    .select(['sale_id', 'due_at', 'payout_id', 'paid_at', 'held_by'])
    .where('program_id', '=', programId)
    .where('kind', '=', 'sale')
    .where('sale_id', 'in', saleIds)
    .execute();
  return new Map(rows.map((r) => [Number(r.sale_id), { dueAt: r.due_at, settled: r.payout_id !== null || r.paid_at !== null, heldBy: r.held_by }]));
}

export type EntryRow = Selectable<CommissionEntriesTable>;

export type EntryStatus = 'pending' | 'due' | 'held' | 'paid';

export interface EntryFilter {
  affiliateId?: string;
  saleId?: number;
  payoutId?: string;
  /** pending, due, held or paid at `now`. */
  status?: { is: EntryStatus; now: string };
}

// An entry's status, as SQL conditions and as a function of its row: one rule, here.
// paid: its payout was paid. held: unpaid and held (never due, outside every payout run, until
// released). due: unpaid, not held, its dueAt passed. pending: unpaid, not held, in its hold.

/** An entry's status at `now` (the rule the conditions below select by). */
export function entryStatusOf(row: Pick<EntryRow, 'paid_at' | 'held_by' | 'due_at'>, now: Date): EntryStatus {
  if (row.paid_at !== null) return 'paid';
  if (row.held_by !== null) return 'held';
  return Date.parse(toIso(row.due_at)) <= now.getTime() ? 'due' : 'pending';
}

export function listEntries(db: Db, programId: string, filter: EntryFilter, page: PageRequest): Promise<EntryRow[]> {
  let q = db.selectFrom('commission_entries as e').selectAll('e').where('e.program_id', '=', programId);
  if (filter.affiliateId !== undefined) q = q.where('e.affiliate_id', '=', filter.affiliateId);
  if (filter.saleId !== undefined) q = q.where('e.sale_id', '=', filter.saleId);
  if (filter.payoutId !== undefined) q = q.where('e.payout_id', '=', filter.payoutId);
  if (filter.status !== undefined) {
    const { is, now } = filter.status;
    if (is === 'paid') q = q.where('e.paid_at', 'is not', null);
    else if (is === 'held') q = q.where('e.paid_at', 'is', null).where('e.held_by', 'is not', null);
    else q = q.where('e.paid_at', 'is', null).where('e.held_by', 'is', null).where('e.due_at', is === 'due' ? '<=' : '>', now);
  }
  return pageQuery(q, 'e', page).execute();
}

export interface LedgerBalance {
  /** Sum of the entries not due yet: in their hold, or held. */
  pending: number;
  /** The part of `pending` held (a dispute, a flag): due only once released. */
  held: number;
  /** Past the hold, not held, not paid (in a pending payout or not). */
  due: number;
  /** The part of `due` in no payout: what the next run pays (or, when negative, the balance carried). */
  dueOutsidePayouts: number;
  paid: number;
}

/**
 * A program's ledger, or one affiliate's, in sums at `now` (minor units). Only the unpaid entries
 * are read (commission_entries_unpaid, a partial index holding what is summed): paid entries
 * never change, and every affiliate's entries add up to its `total_commission_earned`, so what
 * was paid is what was earned less what is unpaid. A deleted affiliate's entries add up to 0
 * (its sales are voided), so a program's sum over the affiliates it still has is its earned total.
 */
export async function ledgerBalance(db: Db | Tx, programId: string, now: string, affiliateId?: string): Promise<LedgerBalance> {
  if (affiliateId === undefined) return programBalance(db, programId, now);
  const due = sql`held_by is null and due_at <= ${now}`;
  // One statement, so the earned total and the unpaid sums are of one moment (one snapshot).
  const earned = db
    .selectFrom('affiliates')
    .select(sql<number | string>`coalesce(sum(total_commission_earned), 0)`.as('earned'))
    .where('program_id', '=', programId)
    .$if(affiliateId !== undefined, (q) => q.where('id', '=', affiliateId!));
  const row = await db
    .selectFrom('commission_entries')
    .select([
      sql<number | string>`coalesce(sum(case when held_by is not null or due_at > ${now} then amount else 0 end), 0)`.as('pending'),
      sql<number | string>`coalesce(sum(case when held_by is not null then amount else 0 end), 0)`.as('held'),
      sql<number | string>`coalesce(sum(case when ${due} then amount else 0 end), 0)`.as('due'),
      sql<number | string>`coalesce(sum(case when ${due} and payout_id is null then amount else 0 end), 0)`.as('open'),
      sql<number | string>`coalesce(sum(amount), 0)`.as('unpaid'),
      earned.as('earned'),
    ])
    .where('program_id', '=', programId)
    .where('paid_at', 'is', null)
    .$if(affiliateId !== undefined, (q) => q.where('affiliate_id', '=', affiliateId!))
    .executeTakeFirstOrThrow();
  return {
    pending: Number(row.pending),
    held: Number(row.held),
    due: Number(row.due),
    dueOutsidePayouts: Number(row.open),
    paid: Number(row.earned) - Number(row.unpaid),
  };
}

/**
 * A program's ledger in sums at `now`, from what is kept, in one statement (one snapshot): the
 * unpaid_days rows (held; not held and due before today; in no payout), today's unpaid entries
 * themselves (due at or before `now`, or later today), and what the program's sales earned
 * (sale_days: every affiliate's earned total is its sales' net commission).
 */
async function programBalance(db: Db | Tx, programId: string, now: string): Promise<LedgerBalance> {
  const today = now.slice(0, 10);
  const kept = (where: RawBuilder<unknown>) => sql<number | string>`(select coalesce(sum(amount), 0) from unpaid_days where program_id = ${programId} and ${where})`;
  const dueToday = (where: RawBuilder<unknown>) =>
    sql<number | string>`(select coalesce(sum(amount), 0) from commission_entries
      where program_id = ${programId} and paid_at is null and held_by is null and due_at >= ${`${today}T00:00:00.000Z`} and due_at <= ${now} and ${where})`;
  const { rows } = await sql<{ unpaid: number | string; held: number | string; due: number | string; due_today: number | string; open: number | string; open_today: number | string; earned: number | string }>`
    select ${kept(sql`true`)} as unpaid, ${kept(sql`held = 1`)} as held,
      ${kept(sql`held = 0 and due_day < ${today}`)} as due, ${dueToday(sql`true`)} as due_today,
      ${kept(sql`held = 0 and in_payout = 0 and due_day < ${today}`)} as open, ${dueToday(sql`payout_id is null`)} as open_today,
      (select coalesce(sum(commission), 0) from sale_days where program_id = ${programId}) as earned`.execute(db);
  const row = rows[0]!;
  const due = Number(row.due) + Number(row.due_today);
  return {
    pending: Number(row.unpaid) - due,
    held: Number(row.held),
    due,
    dueOutsidePayouts: Number(row.open) + Number(row.open_today),
    paid: Number(row.earned) - Number(row.unpaid),
  };
}

/**
 * Holds a sale's unpaid commission entries: in no payout, and in a pending payout too — its
 * amount is frozen, so it still pays them if it is paid, but if it fails they return held, not
 * due (releaseFromPayout only takes them out of the payout). Returns how many it held; amounts
 * and due dates never change.
 */
export async function holdSaleEntries(tx: Tx, programId: string, saleId: number, heldBy: HeldBy): Promise<number> {
  const entries = await lockedOnPostgres(tx, selectPlacedEntries(tx, programId).where('sale_id', '=', saleId).where('paid_at', 'is', null)).execute();
  if (entries.length === 0) return 0;
  await tx.updateTable('commission_entries').set({ held_by: heldBy }).where('id', 'in', entries.map((entry) => entry.id)).execute();
  const newlyHeld = entries.filter((entry) => entry.held_by === null);
  await addToUnpaidDays(tx, programId, newlyHeld.flatMap((entry) => unpaidDayMove(entry, { ...entry, held_by: heldBy })));
  return entries.length;
}

/** A program's entries as unpaid_days places them, with their id and paid state: read before a change moves them. */
function selectPlacedEntries(tx: Tx, programId: string) {
  return tx.selectFrom('commission_entries').select(['id', 'affiliate_id', 'due_at', 'held_by', 'payout_id', 'paid_at', 'amount']).where('program_id', '=', programId);
}

/** A sale's entries held by `heldBy` are released and fall due at `dueAt` (those a payout paid meanwhile too); returns how many moved. */
export async function releaseSaleEntries(tx: Tx, programId: string, saleId: number, heldBy: HeldBy, dueAt: string): Promise<number> {
  const entries = await lockedOnPostgres(tx, selectPlacedEntries(tx, programId).where('sale_id', '=', saleId).where('held_by', '=', heldBy)).execute();
  if (entries.length === 0) return 0;
  await tx.updateTable('commission_entries').set({ held_by: null, due_at: dueAt }).where('id', 'in', entries.map((entry) => entry.id)).execute();
  const unpaid = entries.filter((entry) => entry.paid_at === null);
  await addToUnpaidDays(tx, programId, unpaid.flatMap((entry) => unpaidDayMove(entry, { ...entry, held_by: null, due_at: dueAt })));
  return entries.length;
}

// The entries a payout run takes and what becomes of them: payouts/ asks, the ledger writes.

/** Affiliates (that still exist) whose open due entries add up to at least `minimum` and more than 0. */
export async function affiliatesOwed(db: Db | Tx, programId: string, now: string, minimum: number, affiliateId?: string): Promise<string[]> {
  let q = db
    .selectFrom('commission_entries as e')
    .innerJoin('affiliates as a', 'a.id', 'e.affiliate_id')
    .select('e.affiliate_id')
    .where('e.program_id', '=', programId)
    .where('e.payout_id', 'is', null)
    .where('e.paid_at', 'is', null)
    .where('e.held_by', 'is', null)
    .where('e.due_at', '<=', now);
  if (affiliateId !== undefined) q = q.where('e.affiliate_id', '=', affiliateId);
  const rows = await q
    .groupBy('e.affiliate_id')
    .having(sql<number>`sum(e.amount)`, '>', 0)
    .having(sql<number>`sum(e.amount)`, '>=', minimum)
    .orderBy('e.affiliate_id')
    .execute();
  return rows.map((row) => row.affiliate_id);
}

/** The open due entries of a batch of affiliates, locked: what payouts made now hold. */
export async function lockOpenDueEntries(tx: Tx, programId: string, affiliateIds: string[], now: string): Promise<OpenEntry[]> {
  const q = tx
    .selectFrom('commission_entries')
    .select(['id', 'affiliate_id', 'amount', 'due_at'])
    .where('program_id', '=', programId)
    .where('affiliate_id', 'in', affiliateIds)
    .where('payout_id', 'is', null)
    .where('paid_at', 'is', null)
    .where('held_by', 'is', null)
    .where('due_at', '<=', now)
    .orderBy('id');
  const rows = await lockedOnPostgres(tx, q).execute();
  return rows.map((row) => ({ id: Number(row.id), affiliateId: row.affiliate_id, amount: Number(row.amount), dueAt: row.due_at }));
}

export interface OpenEntry {
  id: number;
  affiliateId: string;
  amount: number;
  dueAt: string | Date;
}

const ID_BATCH = 1000;

/**
 * Puts entries into their affiliate's new payout (`payoutOf`: affiliate id → payout id),
 * addressed by their keys alone: the ids were read, program-scoped and locked, by
 * lockOpenDueEntries in this transaction. (With `program_id` in the condition too, SQLite
 * planned the update on the program's index and visited every entry of the program for each
 * payout: a run over 2,000 affiliates took 27 s.)
 */
export async function attachEntriesToPayouts(tx: Tx, programId: string, payoutOf: Map<string, string>, entries: OpenEntry[]): Promise<void> {
  const postgres = dialectOf(tx) === 'postgres';
  for (let i = 0; i < entries.length; i += ID_BATCH) {
    const chunk = entries.slice(i, i + ID_BATCH);
    const affiliates = [...new Set(chunk.map((entry) => entry.affiliateId))];
    const uuid = (value: string) => (postgres ? sql`cast(${value} as uuid)` : sql`${value}`);
    const payoutId = sql<string>`case ${sql.join(affiliates.map((id) => sql`when affiliate_id = ${id} then ${uuid(payoutOf.get(id)!)}`), sql` `)} end`;
    await tx
      .updateTable('commission_entries')
      .set({ payout_id: payoutId })
      .where(
        'id',
        'in',
        chunk.map((entry) => entry.id),
      )
      .execute();
  }
  // Open entries (not held, outside payouts) now in one.
  const open = (entry: OpenEntry) => ({ affiliate_id: entry.affiliateId, due_at: entry.dueAt, held_by: null, payout_id: null, amount: entry.amount });
  await addToUnpaidDays(tx, programId, entries.flatMap((entry) => unpaidDayMove(open(entry), { ...open(entry), payout_id: payoutOf.get(entry.affiliateId)! })));
}

/** A paid payout's entries are paid at its time. */
export async function markPayoutEntriesPaid(tx: Tx, programId: string, payoutId: string, paidAt: string): Promise<void> {
  const paid = await tx
    .updateTable('commission_entries')
    .set({ paid_at: paidAt })
    .where('program_id', '=', programId)
    .where('payout_id', '=', payoutId)
    .where('paid_at', 'is', null)
    .returning(['affiliate_id', 'due_at', 'held_by', 'payout_id', 'amount'])
    .execute();
  await addToUnpaidDays(tx, programId, paid.map((entry) => unpaidDayChangeOf(entry, -1)));
}

/** A failed payout's entries are due again, outside any payout (a held one stays held). */
export async function releaseFromPayout(tx: Tx, programId: string, payoutId: string): Promise<void> {
  const released = await tx
    .updateTable('commission_entries')
    .set({ payout_id: null })
    .where('program_id', '=', programId)
    .where('payout_id', '=', payoutId)
    .returning(['affiliate_id', 'due_at', 'held_by', 'paid_at', 'amount'])
    .execute();
  const unpaid = released.filter((entry) => entry.paid_at === null);
  await addToUnpaidDays(tx, programId, unpaid.flatMap((entry) => unpaidDayMove({ ...entry, payout_id: payoutId }, { ...entry, payout_id: null })));
}
