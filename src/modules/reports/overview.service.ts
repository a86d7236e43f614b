import type { Db } from '../../db/transaction.ts';
import { countAffiliates } from '../affiliates/affiliate.repository.ts';
import { countReferrals } from '../referrals/referral.repository.ts';
import { sumSales, sumSalesByDay, type DailySales, type SaleTotals } from '../sales/sale.repository.ts';
import { countClicksByDay, totalClicks } from '../tracking/click.repository.ts';
import type { ProgramContext } from '../../domain/program-context.ts';

// The dashboard's overview of a program. Every figure is an aggregate computed by the
// database over the program's indexes; no rows are loaded to be counted here.

export interface ProgramTotals {
  affiliates: number;
  referrals: number;
  /** Clicks counted by the tracking script (the affiliates' stored counters). */
  clicks: number;
  /** Sales count and sums, in minor units of the program's currency. */
  sales: SaleTotals;
}

export async function getProgramTotals(db: Db, program: ProgramContext): Promise<ProgramTotals> {
  const [affiliates, referrals, clicks, sales] = await Promise.all([countAffiliates(db, program.id), countReferrals(db, program.id), totalClicks(db, program.id), sumSales(db, program.id)]);
  return { affiliates, referrals, clicks, sales };
}

const DAY_MS = 86_400_000;

/** A UTC day's sales (count and net sums) and the clicks counted that day. */
export interface DailyActivity extends DailySales {
  clicks: number;
}

/**
 * One entry per UTC day of the last `days` days (today included), zero where nothing was sold
 * or clicked. Both queries start at the window's first day, over (program_id, created_at) and
 * (program_id, day).
 */
export async function getDailyActivity(db: Db, program: ProgramContext, days: number, now: Date): Promise<DailyActivity[]> {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const first = new Date(today - (days - 1) * DAY_MS).toISOString();
  const [sales, clicks] = await Promise.all([sumSalesByDay(db, program.id, first), countClicksByDay(db, program.id, first.slice(0, 10))]);
  const salesByDay = new Map(sales.map((d) => [d.day, d]));
  const clicksByDay = new Map(clicks.map((d) => [d.day, d.clicks]));
  return Array.from({ length: days }, (_, i) => {
    const day = new Date(today - (days - 1 - i) * DAY_MS).toISOString().slice(0, 10);
    return { ...(salesByDay.get(day) ?? { day, count: 0, revenue: 0, commission: 0 }), clicks: clicksByDay.get(day) ?? 0 };
  });
}
