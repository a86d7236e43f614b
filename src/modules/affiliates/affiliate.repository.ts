import { affiliateShardOf } from '../../domain/ids.ts';
import { mergedInKeyOrder } from '../../db/kept-rows.ts';
import { countMatching, LIKE_READ, SEARCH_COUNT_CAP, searchCondition, searchedFrom, searchReadOf, searchTextOf, type MatchCount, type SearchRead } from '../../db/text-search.ts';
import { sql, type Selectable, type Updateable } from 'kysely';
import type { AffiliatesTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { compiledNewestFirstList, pageQuery, type PageRequest } from '../../db/keyset.ts';
import { compiledQuery } from '../../db/compiled-query.ts';
import { dialectOf, lockedOnPostgres } from '../../db/dialect.ts';
import type { ColumnSet } from '../../db/joined-rows.ts';

export type AffiliateRow = Selectable<AffiliatesTable> & { link: string | null; primary_link_id: string | null };

/**
 * Affiliates with their primary link (string and id); every query is scoped to one program. A
 * search read through SQLite's trigram table starts there (db/text-search.ts); the caller adds its `like`.
 */
function selectAffiliates(db: Db | Tx, programId: string, search?: string, read: SearchRead = LIKE_READ) {
  return searchedFrom(db, 'affiliates', 'a', db.selectFrom('affiliates as a'), search, read)
    .leftJoin('affiliate_links as l', (join) => join.onRef('l.affiliate_id', '=', 'a.id').on('l.is_primary', '=', 1))
    .selectAll('a')
    .select(['l.link', 'l.id as primary_link_id'])
    .where('a.program_id', '=', programId);
}

/** One affiliate by id, by e-mail key, or by both (both must match). */
const affiliateQuery = compiledQuery<{ programId: string; id: string; emailKey: string }, AffiliateRow, 'id' | 'email' | 'id-email'>((db, param, shape) => {
  let q = selectAffiliates(db, param('programId'));
  if (shape !== 'email') q = q.where('a.id', '=', param('id'));
  if (shape !== 'id') q = q.where('a.email_key', '=', param('emailKey'));
  return q;
});

export function findAffiliate(db: Db | Tx, programId: string, filter: { id?: string; emailKey?: string }): Promise<AffiliateRow | undefined> {
  const { id, emailKey } = filter;
  if (id === undefined && emailKey === undefined) return selectAffiliates(db, programId).executeTakeFirst();
  const shape = id === undefined ? 'email' : emailKey === undefined ? 'id' : 'id-email';
  return affiliateQuery.first(db, { programId, id: id!, emailKey: emailKey! }, shape);
}

/** Every affiliate column, for reading an affiliate beside another table (joined-rows.ts). */
export const AFFILIATE_COLUMNS: ColumnSet<AffiliatesTable> = {
  id: true, program_id: true, first_name: true, last_name: true, email: true, email_key: true, email_verified: true, image: true,
  payout_email: true, payment_method: true, commission_rate: true, status: true, approval: true, portal_generation: true, number_of_referred_users: true, number_of_clicks: true,
  total_commission_earned: true, number_of_sales: true, total_sales_amount: true, total_refunded_amount: true, created_at: true, updated_at: true,
};

/** Portal sign-ups waiting for the merchant, oldest first (the approval queue), and how many there are. */
export async function pendingAffiliates(db: Db, programId: string, limit: number): Promise<{ rows: Selectable<AffiliatesTable>[]; count: number }> {
  const where = db.selectFrom('affiliates').where('program_id', '=', programId).where('approval', '=', 'pending');
  const [rows, { n }] = await Promise.all([
    where.selectAll().orderBy('created_at').orderBy('id').limit(limit).execute(),
    where.select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, count: Number(n) };
}

/** The dashboard's filters of the affiliate list. */
export interface AffiliateListFilter {
  /** Name or e-mail contains (ignoring case). */
  search?: string;
  status?: 'active' | 'inactive';
}

const searchOf = (filter: AffiliateListFilter) => searchTextOf(filter.search);

/**
 * A text search reads SQLite's trigram table (db/text-search.ts) unless the text matches more
 * affiliates than the cap in it; then, as on PostgreSQL without pg_trgm, it walks the program's
 * list index newest first and stops at a full page (common words are found fast). The `like`
 * decides either way.
 */
function filteredAffiliates(db: Db, programId: string, filter: AffiliateListFilter, read: SearchRead) {
  const search = searchOf(filter);
  let q = selectAffiliates(db, programId, search, read);
  if (search !== undefined) q = q.where(searchCondition('affiliates', 'a', search, read));
  if (filter.status !== undefined) q = q.where('a.status', '=', filter.status);
  return q;
}

/** The API's page of affiliates: newest first, no filter (compiled once per shape). */
const newestAffiliates = compiledNewestFirstList<Record<string, never>, AffiliateRow>([], 'a', (db, programId) => selectAffiliates(db, programId));

/** A page of the program's affiliates; `cap`: see searchReadOf (a test sets it lower). */
export async function listAffiliates(db: Db, programId: string, page: PageRequest, filter: AffiliateListFilter = {}, cap = SEARCH_COUNT_CAP): Promise<AffiliateRow[]> {
  if (filter.search === undefined && filter.status === undefined && page.order === undefined) return newestAffiliates(db, programId, {}, page);
  const read = await searchReadOf(db, 'affiliates', searchOf(filter), cap);
  return pageQuery(filteredAffiliates(db, programId, filter, read), 'a', page).execute();
}

/**
 * How many affiliates the dashboard's filter matches: a status alone from the kept counts, a
 * search counted no further than `cap` + 1 (db/text-search.ts).
 */
export async function countFilteredAffiliates(db: Db, programId: string, filter: AffiliateListFilter, cap = SEARCH_COUNT_CAP): Promise<MatchCount> {
  const search = searchOf(filter);
  if (search === undefined) return sumAffiliateCounts(db, programId, filter.status);
  return countMatching(db, filteredAffiliates(db, programId, filter, await searchReadOf(db, 'affiliates', search, cap)), cap);
}

/**
 * A program's affiliates and what their kept counters add up to: every referred customer is
 * counted on the affiliate it credits (a deleted affiliate's customers go with it), every click
 * on the affiliate whose link it was. The affiliates come from the kept counts, the referrals
 * and clicks from the kept totals of the affiliates' counters.
 */
export async function sumAffiliateCounters(db: Db, programId: string): Promise<{ affiliates: number; referrals: number; clicks: number }> {
  const [affiliates, row] = await Promise.all([
    sumAffiliateCounts(db, programId),
    // Kept by triggers on affiliates (migration 2026-12-03T1100): 16 rows, not the affiliates.
    db
      .selectFrom('affiliate_counter_totals')
      .select([sql<number | string>`coalesce(sum(referrals), 0)`.as('referrals'), sql<number | string>`coalesce(sum(clicks), 0)`.as('clicks')])
      .where('program_id', '=', programId)
      .executeTakeFirstOrThrow(),
  ]);
  return { affiliates, referrals: Number(row.referrals), clicks: Number(row.clicks) };
}

// affiliate_counts (migration 2026-12-03T0800): a program's affiliates per shard and status,
// kept by every write that adds one, removes one or changes its status, so counts sum at most
// 32 rows, not the affiliates.


/** One affiliate counted in (`affiliates: 1`) or out (`-1`) of its status. */
export interface AffiliateCountChange {
  affiliateId: string;
  status: AffiliatesTable['status'];
  affiliates: number;
}

const affiliateCountQuery = compiledQuery<{ programId: string; shard: string; status: string; affiliates: number }, never>((_db, param) =>
  sql`insert into affiliate_counts (program_id, shard, status, affiliates)
    values (${param('programId')}, ${param('shard')}, ${param('status')}, ${param('affiliates')})
    on conflict (program_id, shard, status) do update set affiliates = affiliate_counts.affiliates + excluded.affiliates`.$castTo<never>(),
);

/**
 * Moves the program's affiliate_counts by `changes`, merged per row and in one order (shard,
 * then status). Callers run it last in their transaction: its rows are the last a transaction
 * locks (after the affiliate's, its links', its sales' sale_days), so two transactions never
 * wait for each other in a circle, and a status change takes its two rows as any other does.
 */
export async function addToAffiliateCounts(tx: Tx, programId: string, changes: readonly AffiliateCountChange[]): Promise<void> {
  const counted = changes.map((change) => ({ shard: affiliateShardOf(change.affiliateId), status: change.status, affiliates: change.affiliates }));
  for (const row of mergedInKeyOrder(counted, (change) => `${change.shard} ${change.status}`, ['affiliates'])) await affiliateCountQuery.run(tx, { programId, ...row });
}

/** How many affiliates the program has (of one status, if given): the sum of its kept counts. */
async function sumAffiliateCounts(db: Db, programId: string, status?: AffiliatesTable['status']): Promise<number> {
  let q = db.selectFrom('affiliate_counts').select(sql<number | string>`coalesce(sum(affiliates), 0)`.as('n')).where('program_id', '=', programId);
  if (status !== undefined) q = q.where('status', '=', status);
  const row = await q.executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Names and e-mails of the given affiliates of a program, to label lists of referrals and sales.
 * One bound id per affiliate: callers pass those of one dashboard page (PAGE_SIZE rows) or of
 * one streamed CSV batch (STREAM_BATCH_ROWS, 500).
 */
export function findAffiliateNames(db: Db, programId: string, ids: string[]) {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('affiliates')
    .select(['id', 'first_name', 'last_name', 'email'])
    .where('program_id', '=', programId)
    .where('id', 'in', [...new Set(ids)])
    .execute();
}

/** Who a payout run pays, for the affiliates of one batch (a bounded list of ids). */
export function findPayees(db: Db | Tx, programId: string, ids: string[]) {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('affiliates')
    .select(['id', 'first_name', 'last_name', 'email', 'payout_email', 'payment_method'])
    .where('program_id', '=', programId)
    .where('id', 'in', ids)
    .execute();
}

/**
 * One affiliate, its row locked until the transaction ends (PostgreSQL: FOR NO KEY UPDATE, which
 * waits for another change of the row but not for a referral, sale or link being recorded for
 * it; SQLite runs one writer at a time): for a change that reads the row before it writes.
 */
export function lockAffiliate(tx: Tx, programId: string, id: string): Promise<AffiliateRow | undefined> {
  const q = selectAffiliates(tx, programId).where('a.id', '=', id);
  return (dialectOf(tx) === 'postgres' ? q.forNoKeyUpdate('a') : q).executeTakeFirst();
}

/**
 * The affiliate to delete, its row locked until the transaction ends (PostgreSQL): a referral,
 * sale, link or code being recorded for it holds a key-share lock, so the delete waits for it
 * and sees it, or it fails its foreign key after the delete.
 */
export function findAffiliateForDelete(tx: Tx, programId: string, id: string) {
  const q = selectAffiliates(tx, programId).where('a.id', '=', id);
  return lockedOnPostgres(tx, q, 'a').executeTakeFirst();
}

/** How many referrals, sales and promotional codes name the affiliate (one statement). */
export async function countAffiliateDependents(db: Db | Tx, id: string): Promise<{ referrals: number; sales: number; codes: number }> {
  const row = await db
    .selectNoFrom((eb) => [
      eb.selectFrom('referrals').select((e) => e.fn.countAll().as('n')).where('affiliate_id', '=', id).as('referrals'),
      eb.selectFrom('sales').select((e) => e.fn.countAll().as('n')).where('affiliate_id', '=', id).as('sales'),
      eb.selectFrom('promotional_codes').select((e) => e.fn.countAll().as('n')).where('affiliate_id', '=', id).as('codes'),
    ])
    .executeTakeFirstOrThrow();
  return { referrals: Number(row.referrals), sales: Number(row.sales), codes: Number(row.codes) };
}

export async function deleteAffiliateRow(tx: Tx, id: string): Promise<void> {
  await tx.deleteFrom('affiliates').where('id', '=', id).execute();
}

/** `endPortalAccess`: also raise the portal generation, ending every portal session and login link the affiliate holds, for good. */
export async function updateAffiliateRow(db: Db | Tx, programId: string, id: string, changes: Updateable<AffiliatesTable>, options: { endPortalAccess?: boolean } = {}): Promise<void> {
  let update = db.updateTable('affiliates').set(changes);
  if (options.endPortalAccess) update = update.set((eb) => ({ portal_generation: eb('portal_generation', '+', 1) }));
  await update.where('program_id', '=', programId).where('id', '=', id).execute();
}

export async function insertAffiliate(tx: Tx, row: Selectable<AffiliatesTable>): Promise<void> {
  await tx.insertInto('affiliates').values(row).execute();
}

