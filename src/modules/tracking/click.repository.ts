import { sql } from 'kysely';
import { deleteInBatches } from '../../db/batched-delete.ts';
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


export interface DailyClicks {
  /** UTC day, YYYY-MM-DD. */
  day: string;
  clicks: number;
}

/**
 * Clicks per UTC day from `sinceDay` on, from the daily counts (over the (program_id, day)
 * index), so purged click rows still count; days without clicks are absent.
 */
export async function countClicksByDay(db: Db, programId: string, sinceDay: string, affiliateId?: string): Promise<DailyClicks[]> {
  let q = db
    .selectFrom('click_days')
    .select(['day', sql<number | string>`sum(clicks)`.as('clicks')])
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

/**
 * Deletes the click rows of UTC days before `beforeDay`, in batches (the clicks_day index).
 * Their counts stay in the affiliates', links' and daily counters.
 */
export function purgeClicksBefore(db: Db, beforeDay: string, deadline = Infinity): Promise<number> {
  return deleteInBatches((limit) =>
    db
      .deleteFrom('clicks')
      .where('id', 'in', (eb) => eb.selectFrom('clicks').select('id').where('day', '<', beforeDay).limit(limit))
      .executeTakeFirst(),
    undefined,
    deadline,
  );
}

export interface LastClickRow {
  created_at: string | Date;
  landing_url: string;
  /** Null when the link was deleted since. */
  link: string | null;
  first_name: string;
  last_name: string;
}

/**
 * The program's newest stored click, with its link and affiliate. Read newest day first over
 * the (program_id, day) index, then that day's rows by time: no index of its own, so counting
 * a click (the hot path) writes nothing more for it.
 */
export function findLastClick(db: Db, programId: string): Promise<LastClickRow | undefined> {
  return db
    .selectFrom('clicks as c')
    .innerJoin('affiliates as a', 'a.id', 'c.affiliate_id')
    .leftJoin('affiliate_links as l', 'l.id', 'c.link_id')
    .select(['c.created_at', 'c.landing_url', 'l.link', 'a.first_name', 'a.last_name'])
    .where('c.program_id', '=', programId)
    .orderBy('c.day', 'desc')
    .orderBy('c.created_at', 'desc')
    .limit(1)
    .executeTakeFirst() as Promise<LastClickRow | undefined>;
}
