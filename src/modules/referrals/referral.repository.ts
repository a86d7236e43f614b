import { sql, type Selectable, type Updateable } from 'kysely';
import { countMatching, LIKE_READ, SEARCH_COUNT_CAP, searchCondition, searchedFrom, searchReadOf, searchTextOf, type MatchCount, type SearchRead } from '../../db/text-search.ts';
import type { ReferralsTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { compiledNewestFirstList, pageQuery, type PageRequest } from '../../db/keyset.ts';
import { compiledInsert, compiledQuery, filterShape, placeholderFilter, type ParamOf } from '../../db/compiled-query.ts';
import { dialectOf, lockedOnPostgres } from '../../db/dialect.ts';
import { toIso } from '../../domain/clock.ts';
import { eventInsertFrom, recordEventJson } from '../events/outbox.ts';
import { addToAffiliateCounters, addToLinkCounters, affiliateCountersUpdate, linkCountersUpdate } from '../ledger/ledger.repository.ts';
import { prefixedColumns, splitPrefixed } from '../../db/joined-rows.ts';
import { AFFILIATE_COLUMNS, type AffiliateRow } from '../affiliates/affiliate.repository.ts';

export type ReferralRow = Selectable<ReferralsTable>;

export interface ReferralFilter {
  id?: string;
  emailKey?: string;
  affiliateId?: string;
  externalId?: string;
  /** The dashboard's filters: name or e-mail contains (ignoring case), status, created in [from, before). */
  search?: string;
  status?: 'active' | 'inactive';
  createdFrom?: string;
  createdBefore?: string;
}

function selectReferrals(db: Db | Tx, programId: string, filter: ReferralFilter, searchRead: SearchRead = LIKE_READ) {
  const search = searchOf(filter);
  let q = searchedFrom(db, 'referrals', 'r', db.selectFrom('referrals as r'), search, searchRead).selectAll('r').where('r.program_id', '=', programId);
  if (filter.id !== undefined) q = q.where('r.id', '=', filter.id);
  if (filter.emailKey !== undefined) q = q.where('r.email_key', '=', filter.emailKey);
  if (filter.affiliateId !== undefined) q = q.where('r.affiliate_id', '=', filter.affiliateId);
  if (filter.externalId !== undefined) q = q.where('r.referred_user_external_id', '=', filter.externalId);
  if (search !== undefined) q = q.where(searchCondition('referrals', 'r', search, searchRead));
  if (filter.status !== undefined) q = q.where('r.status', '=', filter.status);
  if (filter.createdFrom !== undefined) q = q.where('r.created_at', '>=', filter.createdFrom);
  if (filter.createdBefore !== undefined) q = q.where('r.created_at', '<', filter.createdBefore);
  return q;
}

const searchOf = (filter: ReferralFilter) => searchTextOf(filter.search);

/**
 * How many referrals a filter matches (every page), counted no further than `cap`: a filter
 * matching most of a big program (a status, a year) costs what one matching ten thousand does.
 */
export async function countReferrals(db: Db, programId: string, filter: ReferralFilter, cap = SEARCH_COUNT_CAP): Promise<MatchCount> {
  return countMatching(db, selectReferrals(db, programId, filter, await searchReadOf(db, 'referrals', searchOf(filter), cap)), cap);
}

/** The filter fields a compiled query binds (the dashboard's search changes the SQL). */
const BOUND_FIELDS = ['id', 'emailKey', 'affiliateId', 'externalId', 'status', 'createdFrom', 'createdBefore'] as const;
type BoundFilter = Pick<ReferralFilter, (typeof BOUND_FIELDS)[number]>;

const referralQuery = compiledQuery<{ programId: string } & BoundFilter, ReferralRow, string>((db, param, shape) =>
  selectReferrals(db, param('programId'), placeholderFilter(param as ParamOf<Required<BoundFilter>>, shape)),
);

export function findReferral(db: Db | Tx, programId: string, filter: ReferralFilter): Promise<ReferralRow | undefined> {
  if (filter.search === undefined) return referralQuery.first(db, { programId, ...filter }, filterShape(filter, BOUND_FIELDS));
  return selectReferrals(db, programId, filter).executeTakeFirst();
}

/**
 * A referral with the affiliate it credits (and that affiliate's primary link), in one
 * statement: what a sale for a known customer needs.
 */
export async function findReferralWithAffiliate(
  db: Db | Tx,
  programId: string,
  filter: { id: string } | { emailKey: string },
): Promise<{ referral: ReferralRow; affiliate: AffiliateRow } | undefined> {
  const row = await referralWithAffiliateQuery.first(db, { programId, ...filter }, 'id' in filter ? 'id' : 'email');
  if (!row) return undefined;
  const [affiliate, referral] = splitPrefixed(row, 'affiliate__');
  return { referral: referral as ReferralRow, affiliate: affiliate as AffiliateRow };
}

const referralWithAffiliateQuery = compiledQuery<{ programId: string; id?: string; emailKey?: string }, Record<string, unknown>, 'id' | 'email'>((db, param, shape) => {
  const q = db
    .selectFrom('referrals as r')
    .innerJoin('affiliates as a', 'a.id', 'r.affiliate_id')
    .leftJoin('affiliate_links as l', (join) => join.onRef('l.affiliate_id', '=', 'a.id').on('l.is_primary', '=', 1))
    .selectAll('r')
    .select(prefixedColumns('a', AFFILIATE_COLUMNS, 'affiliate__') as never)
    .select(['l.link as affiliate__link', 'l.id as affiliate__primary_link_id'])
    .where('r.program_id', '=', param('programId'));
  return (shape === 'id' ? q.where('r.id', '=', param('id')!) : q.where('r.email_key', '=', param('emailKey')!)) as never;
});

/** The referral that holds a customer's external id in the program, if any. */
export async function findReferralIdByExternalId(db: Db | Tx, programId: string, externalId: string): Promise<string | undefined> {
  const row = await db.selectFrom('referrals').select('id').where('program_id', '=', programId).where('external_id_key', '=', externalId).executeTakeFirst();
  return row?.id;
}

const newestReferrals = compiledNewestFirstList<BoundFilter, ReferralRow>(BOUND_FIELDS, 'r', selectReferrals);

/** A page of the referrals a filter matches; `cap`: see searchReadOf (a test sets it lower). */
export async function listReferrals(db: Db, programId: string, filter: ReferralFilter, page: PageRequest, cap = SEARCH_COUNT_CAP): Promise<ReferralRow[]> {
  if (filter.search === undefined && page.order === undefined) return newestReferrals(db, programId, filter, page);
  const read = await searchReadOf(db, 'referrals', searchOf(filter), cap);
  return pageQuery(selectReferrals(db, programId, filter, read), 'r', page).execute();
}

const insertReferralQuery = compiledInsert('referrals');
const insertReferralUnlessEmailTakenQuery = compiledInsert('referrals', (insert) =>
  insert.onConflict((conflict) => conflict.columns(['program_id', 'email_key']).doNothing()).returning('id'),
);

const REFERRAL_COLUMNS = [
  'id', 'program_id', 'affiliate_id', 'link_id', 'promotional_code_id', 'name', 'email', 'email_key', 'referred_user_external_id', 'external_id_key',
  'plan', 'status', 'created_at', 'updated_at',
] as const satisfies readonly (keyof ReferralRow)[];

/**
 * PostgreSQL: a new referral and every write that goes with it in one statement (one round trip
 * instead of four): the row, the affiliate's and the link's referral counters (the ledger's
 * statements) and the referral.created event (the outbox's; its data given as JSON text). A
 * taken e-mail or external id fails the statement as the insert alone would. Shapes: with or
 * without a link.
 */
const newReferralQuery = compiledQuery<ReferralRow & { eventId: string; eventData: string }, { id: string }, 'link' | 'no-link'>((_db, param, shape) => {
  const affiliateUpdate = affiliateCountersUpdate(param('affiliate_id'), { referredUsers: sql.lit(1) }, false);
  // The link's row is locked after the affiliate's (the order of every transaction, see lockOrderAfter).
  const linkUpdate = shape === 'link' ? linkCountersUpdate(param('link_id'), { referrals: sql.lit(1) }, false, 'a') : sql`select 1 where false`;
  const event = eventInsertFrom('r', {
    id: param('eventId'),
    programId: param('program_id'),
    type: 'referral.created',
    data: sql`cast(${param('eventData')} as text)`,
    createdAt: param('created_at'),
  });
  return sql`with r as (insert into referrals (${sql.join(REFERRAL_COLUMNS.map((column) => sql.ref(column)))})
      values (${sql.join(REFERRAL_COLUMNS.map((column) => param(column)))}) returning id),
    a as (${affiliateUpdate} returning 1),
    l as (${linkUpdate}),
    v as (${event})
    select id from r`;
});

/**
 * Writes a new referral with what goes with it: the affiliate's and the link's referral counters
 * and its referral.created event. PostgreSQL in one statement; SQLite statement by statement
 * through the same ledger and outbox functions.
 */
export async function insertReferralWithItsWrites(tx: Tx, row: ReferralRow, event: { eventId: string; eventData: string }): Promise<void> {
  if (dialectOf(tx) === 'postgres') {
    await newReferralQuery.run(tx, { ...row, ...event }, row.link_id === null ? 'no-link' : 'link');
    return;
  }
  await insertReferralQuery.run(tx, row);
  await addToAffiliateCounters(tx, row.affiliate_id, { referredUsers: 1, commission: 0 });
  if (row.link_id !== null) await addToLinkCounters(tx, row.link_id, { referrals: 1, sales: 0, revenue: 0 });
  await recordEventJson(tx, event.eventId, row.program_id, 'referral.created', event.eventData, toIso(row.created_at));
}

/** Inserts the referral unless the program has its e-mail already; false when it did nothing. */
export async function insertReferralUnlessEmailTaken(tx: Tx, row: ReferralRow): Promise<boolean> {
  return (await insertReferralUnlessEmailTakenQuery.first(tx, row)) !== undefined;
}

/**
 * The referral to delete, its row locked until the transaction ends (PostgreSQL; SQLite has one
 * writer at a time). A sale being recorded for the customer holds a key-share lock on it, so
 * the sales deleted next include every one that committed before, and a later one fails its
 * foreign key instead of vanishing with the referral uncounted.
 */
export function findReferralForDelete(tx: Tx, programId: string, id: string) {
  const q = selectReferrals(tx, programId, { id });
  return lockedOnPostgres(tx, q, 'r').executeTakeFirst();
}

/** Locks an affiliate's referrals (PostgreSQL), for the same reason, before the affiliate is deleted. */
export async function lockReferralsOfAffiliate(tx: Tx, affiliateId: string): Promise<void> {
  await lockedOnPostgres(tx, tx.selectFrom('referrals').select('id').where('affiliate_id', '=', affiliateId)).execute();
}

export async function updateReferralRow(tx: Tx, id: string, changes: Updateable<ReferralsTable>): Promise<void> {
  await tx.updateTable('referrals').set(changes).where('id', '=', id).execute();
}

export async function deleteReferralRow(tx: Tx, id: string): Promise<void> {
  await tx.deleteFrom('referrals').where('id', '=', id).execute();
}

/**
 * Holds the customer's row until the transaction ends (a no-op update takes the row lock on
 * PostgreSQL; SQLite transactions are serial anyway), so two concurrent sales of one customer
 * cannot both see "no earlier sale" for a firstTimeOrder code.
 */
export async function lockReferral(tx: Tx, id: string): Promise<void> {
  await lockReferralQuery.run(tx, { id });
}

const lockReferralQuery = compiledQuery<{ id: string }, never>((db, param) =>
  db.updateTable('referrals').set((eb) => ({ updated_at: eb.ref('updated_at') })).where('id', '=', param('id')),
);
