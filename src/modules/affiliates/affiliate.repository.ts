import type { Selectable } from 'kysely';
import type { AffiliatesTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { pageQuery, type PageRequest } from '../../http/pagination.ts';

export type AffiliateRow = Selectable<AffiliatesTable> & { link: string | null };

/** Affiliates with their primary link string; every query is scoped to one program. */
function selectAffiliates(db: Db | Tx, programId: string) {
  return db
    .selectFrom('affiliates as a')
    .leftJoin('affiliate_links as l', (join) => join.onRef('l.affiliate_id', '=', 'a.id').on('l.is_primary', '=', 1))
    .selectAll('a')
    .select('l.link')
    .where('a.program_id', '=', programId);
}

export function findAffiliate(db: Db | Tx, programId: string, filter: { id?: string; emailKey?: string }) {
  let q = selectAffiliates(db, programId);
  if (filter.id !== undefined) q = q.where('a.id', '=', filter.id);
  if (filter.emailKey !== undefined) q = q.where('a.email_key', '=', filter.emailKey);
  return q.executeTakeFirst();
}

export function listAffiliates(db: Db, programId: string, page: PageRequest) {
  return pageQuery(selectAffiliates(db, programId), 'a', page).execute();
}

export async function insertAffiliate(tx: Tx, row: Selectable<AffiliatesTable>): Promise<void> {
  await tx.insertInto('affiliates').values(row).execute();
}

export async function addToAffiliateCounters(
  tx: Tx,
  affiliateId: string,
  delta: { referredUsers: number; commission: number },
): Promise<void> {
  // Counters are aggregates, not edits: updated_at is left alone.
  await tx
    .updateTable('affiliates')
    .set((eb) => ({
      number_of_referred_users: eb('number_of_referred_users', '+', delta.referredUsers),
      total_commission_earned: eb('total_commission_earned', '+', delta.commission),
    }))
    .where('id', '=', affiliateId)
    .execute();
}
