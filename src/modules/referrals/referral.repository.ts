import type { Selectable } from 'kysely';
import type { ReferralsTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';
import { prefixedColumns, splitPrefixed } from '../../db/joined-rows.ts';
import { AFFILIATE_COLUMNS, type AffiliateRow } from '../affiliates/affiliate.repository.ts';

export type ReferralRow = Selectable<ReferralsTable>;

export interface ReferralFilter {
  id?: string;
  emailKey?: string;
  affiliateId?: string;
}

function selectReferrals(db: Db | Tx, programId: string, filter: ReferralFilter) {
  let q = db.selectFrom('referrals as r').selectAll('r').where('r.program_id', '=', programId);
  if (filter.id !== undefined) q = q.where('r.id', '=', filter.id);
  if (filter.emailKey !== undefined) q = q.where('r.email_key', '=', filter.emailKey);
  if (filter.affiliateId !== undefined) q = q.where('r.affiliate_id', '=', filter.affiliateId);
  return q;
}

export function findReferral(db: Db | Tx, programId: string, filter: ReferralFilter) {
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
  let q = db
    .selectFrom('referrals as r')
    .innerJoin('affiliates as a', 'a.id', 'r.affiliate_id')
    .leftJoin('affiliate_links as l', (join) => join.onRef('l.affiliate_id', '=', 'a.id').on('l.is_primary', '=', 1))
    .selectAll('r')
    .select(prefixedColumns('a', AFFILIATE_COLUMNS, 'affiliate__') as never)
    .select(['l.link as affiliate__link', 'l.id as affiliate__primary_link_id'])
    .where('r.program_id', '=', programId);
  q = 'id' in filter ? q.where('r.id', '=', filter.id) : q.where('r.email_key', '=', filter.emailKey);
  const row = (await q.executeTakeFirst()) as Record<string, unknown> | undefined;
  if (!row) return undefined;
  const [affiliate, referral] = splitPrefixed(row, 'affiliate__');
  return { referral: referral as ReferralRow, affiliate: affiliate as AffiliateRow };
}

/** The referral that holds a customer's external id in the program, if any. */
export async function findReferralIdByExternalId(db: Db | Tx, programId: string, externalId: string): Promise<string | undefined> {
  const row = await db.selectFrom('referrals').select('id').where('program_id', '=', programId).where('external_id_key', '=', externalId).executeTakeFirst();
  return row?.id;
}

export function listReferrals(db: Db, programId: string, filter: ReferralFilter, page: PageRequest) {
  return pageQuery(selectReferrals(db, programId, filter), 'r', page).execute();
}

export async function countReferrals(db: Db, programId: string): Promise<number> {
  const { n } = await db.selectFrom('referrals').select((eb) => eb.fn.countAll().as('n')).where('program_id', '=', programId).executeTakeFirstOrThrow();
  return Number(n);
}

export async function insertReferral(tx: Tx, row: ReferralRow): Promise<void> {
  await tx.insertInto('referrals').values(row).execute();
}

/**
 * Holds the customer's row until the transaction ends (a no-op update takes the row lock on
 * PostgreSQL; SQLite transactions are serial anyway), so two concurrent sales of one customer
 * cannot both see "no earlier sale" for a firstTimeOrder code.
 */
export async function lockReferral(tx: Tx, id: string): Promise<void> {
  await tx.updateTable('referrals').set((eb) => ({ updated_at: eb.ref('updated_at') })).where('id', '=', id).execute();
}
