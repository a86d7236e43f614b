import type { Selectable } from 'kysely';
import type { AffiliateLinksTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';
import { lockedOnPostgres } from '../../db/dialect.ts';
import { newId } from '../../domain/ids.ts';

export type LinkRow = Selectable<AffiliateLinksTable>;
export type LinkWithAffiliateRow = LinkRow & { affiliate_first_name: string; affiliate_last_name: string; affiliate_email: string };

export function linkKey(link: string): string {
  return link.toLowerCase();
}

export function newLinkRow(programId: string, affiliateId: string, link: string, isPrimary: boolean, now: string): LinkRow {
  return {
    id: newId(),
    program_id: programId,
    affiliate_id: affiliateId,
    link,
    link_key: linkKey(link),
    is_primary: isPrimary ? 1 : 0,
    clicks: 0,
    referrals: 0,
    sales: 0,
    total_revenue: 0,
    created_at: now,
    updated_at: now,
  };
}

export interface LinkFilter {
  id?: string;
  link?: string;
  affiliateId?: string;
}

/** Links with their affiliate's name and e-mail; every query is scoped to one program. */
function selectLinks(db: Db | Tx, programId: string, filter: LinkFilter) {
  let q = db
    .selectFrom('affiliate_links as l')
    .innerJoin('affiliates as a', 'a.id', 'l.affiliate_id')
    .selectAll('l')
    .select(['a.first_name as affiliate_first_name', 'a.last_name as affiliate_last_name', 'a.email as affiliate_email'])
    .where('l.program_id', '=', programId);
  if (filter.id !== undefined) q = q.where('l.id', '=', filter.id);
  if (filter.link !== undefined) q = q.where('l.link_key', '=', linkKey(filter.link));
  if (filter.affiliateId !== undefined) q = q.where('l.affiliate_id', '=', filter.affiliateId);
  return q;
}

export function findLink(db: Db | Tx, programId: string, filter: LinkFilter) {
  return selectLinks(db, programId, filter).executeTakeFirst();
}

/**
 * The link to delete, its row locked until the transaction ends (PostgreSQL; SQLite has one
 * writer at a time). A referral or sale being recorded through the link holds a key-share lock
 * on it, so the dependents check that follows sees every one that committed before the delete.
 */
export function findLinkForDelete(tx: Tx, programId: string, filter: LinkFilter) {
  const q = selectLinks(tx, programId, filter);
  return lockedOnPostgres(tx, q, 'l').executeTakeFirst();
}

export function listLinks(db: Db, programId: string, filter: LinkFilter, page: PageRequest) {
  return pageQuery(selectLinks(db, programId, filter), 'l', page).execute();
}

/** An affiliate's links, its own link first (an affiliate has a handful, not thousands). */
export function listLinksOfAffiliate(db: Db | Tx, programId: string, affiliateId: string, limit = 100) {
  return db
    .selectFrom('affiliate_links')
    .selectAll()
    .where('program_id', '=', programId)
    .where('affiliate_id', '=', affiliateId)
    .orderBy('is_primary', 'desc')
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

/** How many links an affiliate has, its own included. */
export async function countLinksOfAffiliate(db: Db | Tx, programId: string, affiliateId: string): Promise<number> {
  const { n } = await db
    .selectFrom('affiliate_links')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('program_id', '=', programId)
    .where('affiliate_id', '=', affiliateId)
    .executeTakeFirstOrThrow();
  return Number(n);
}

export async function insertLink(tx: Tx, row: LinkRow): Promise<void> {
  await tx.insertInto('affiliate_links').values(row).execute();
}

export async function renameLink(tx: Tx, id: string, link: string, updatedAt: string): Promise<void> {
  await tx.updateTable('affiliate_links').set({ link, link_key: linkKey(link), updated_at: updatedAt }).where('id', '=', id).execute();
}


/** Whether a referral or a sale is credited through the link (they would lose it: FK SET NULL). */
export async function linkHasDependents(tx: Tx, programId: string, linkId: string): Promise<boolean> {
  const referral = await tx.selectFrom('referrals').select('id').where('program_id', '=', programId).where('link_id', '=', linkId).limit(1).executeTakeFirst();
  if (referral) return true;
  const sale = await tx.selectFrom('sales').select('id').where('program_id', '=', programId).where('link_id', '=', linkId).limit(1).executeTakeFirst();
  return sale !== undefined;
}

/** Deletes a link; its referrals and sales keep their affiliate and lose the link (FK SET NULL). */
export async function deleteLinkRow(tx: Tx, programId: string, id: string): Promise<void> {
  await tx.deleteFrom('affiliate_links').where('program_id', '=', programId).where('id', '=', id).execute();
}
