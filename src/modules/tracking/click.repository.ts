import { sql } from 'kysely';
import type { ClicksTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';

/** Records a click unless the visitor already clicked the link that UTC day; true when counted. */
export async function insertClickOnce(tx: Tx, row: ClicksTable): Promise<boolean> {
  const inserted = await tx
    .insertInto('clicks')
    .values(row)
    .onConflict((conflict) => conflict.columns(['link_id', 'visitor_key', 'day']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function addClickToCounters(tx: Tx, affiliateId: string, linkId: string): Promise<void> {
  await tx.updateTable('affiliates').set((eb) => ({ number_of_clicks: eb('number_of_clicks', '+', 1) })).where('id', '=', affiliateId).execute();
  await tx.updateTable('affiliate_links').set((eb) => ({ clicks: eb('clicks', '+', 1) })).where('id', '=', linkId).execute();
}

export interface DailyClicks {
  /** UTC day, YYYY-MM-DD. */
  day: string;
  clicks: number;
}

/** Clicks per UTC day from `sinceDay` on (over the (program_id, day) index); days without clicks are absent. */
export async function countClicksByDay(db: Db, programId: string, sinceDay: string, affiliateId?: string): Promise<DailyClicks[]> {
  let q = db
    .selectFrom('clicks')
    .select(['day', sql<number | string>`count(*)`.as('clicks')])
    .where('program_id', '=', programId)
    .where('day', '>=', sinceDay);
  if (affiliateId !== undefined) q = q.where('affiliate_id', '=', affiliateId);
  const rows = await q.groupBy('day').orderBy('day').execute();
  return rows.map((r) => ({ day: r.day, clicks: Number(r.clicks) }));
}

/** The program's stored click total (the sum of its affiliates' counters). */
export async function totalClicks(db: Db, programId: string): Promise<number> {
  const { n } = await db
    .selectFrom('affiliates')
    .select(sql<number | string>`coalesce(sum(number_of_clicks), 0)`.as('n'))
    .where('program_id', '=', programId)
    .executeTakeFirstOrThrow();
  return Number(n);
}
