import type { Selectable } from 'kysely';
import type { AffiliateLinksTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
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

export function findLink(db: Db | Tx, programId: string, filter: { id?: string; link?: string }) {
  let q = db
    .selectFrom('affiliate_links as l')
    .innerJoin('affiliates as a', 'a.id', 'l.affiliate_id')
    .selectAll('l')
    .select(['a.first_name as affiliate_first_name', 'a.last_name as affiliate_last_name', 'a.email as affiliate_email'])
    .where('l.program_id', '=', programId);
  if (filter.id !== undefined) q = q.where('l.id', '=', filter.id);
  if (filter.link !== undefined) q = q.where('l.link_key', '=', linkKey(filter.link));
  return q.executeTakeFirst();
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

export async function insertLink(tx: Tx, row: LinkRow): Promise<void> {
  await tx.insertInto('affiliate_links').values(row).execute();
}

export async function renameLink(tx: Tx, id: string, link: string, updatedAt: string): Promise<void> {
  await tx.updateTable('affiliate_links').set({ link, link_key: linkKey(link), updated_at: updatedAt }).where('id', '=', id).execute();
}

export async function addToLinkCounters(tx: Tx, linkId: string, delta: { referrals: number; sales: number; revenue: number }): Promise<void> {
  await tx
    .updateTable('affiliate_links')
    .set((eb) => ({
      referrals: eb('referrals', '+', delta.referrals),
      sales: eb('sales', '+', delta.sales),
      total_revenue: eb('total_revenue', '+', delta.revenue),
    }))
    .where('id', '=', linkId)
    .execute();
}
