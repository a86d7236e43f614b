import type { Db } from '../../db/transaction.ts';
import { getAffiliateCounterTotals } from '../affiliates/affiliate.service.ts';
import { sumAllSaleDays, sumSaleDays } from '../ledger/ledger.repository.ts';
import { countClicksByDay } from '../tracking/click.repository.ts';
import type { ProgramContext } from '../../domain/program-context.ts';

// The dashboard's overview of a program, from what is kept rather than from the rows: sales
// from the program's sale_days (a few rows a day, however many sales), referrals and clicks
// from the affiliates' counters, clicks by day from the click days. Nothing here reads the
// program's sales or referrals.

/** Count and sums of sales, net of refunds, in minor units of the program's currency. */
export interface SaleTotals {
  count: number;
  revenue: number;
  commission: number;
}

export interface ProgramTotals {
  affiliates: number;
  /** The referred customers (the affiliates' stored counters). */
  referrals: number;
  /** Clicks counted by the tracking script (the affiliates' stored counters). */
  clicks: number;
  sales: SaleTotals;
}

export async function getProgramTotals(db: Db, program: ProgramContext): Promise<ProgramTotals> {
  const [counters, sales] = await Promise.all([getAffiliateCounterTotals(db, program), sumAllSaleDays(db, program.id)]);
  return { ...counters, sales: { count: sales.count, revenue: sales.amount - sales.refunded, commission: sales.commission } };
}

const DAY_MS = 86_400_000;

/** A UTC day's sales (count and net sums) and the clicks counted that day. */
export interface DailyActivity extends SaleTotals {
  /** YYYY-MM-DD. */
  day: string;
  clicks: number;
}

/**
 * One entry per UTC day of the last `days` days (today included), zero where nothing was sold
 * or clicked. Both queries start at the window's first day, over the keys of sale_days and
 * click days (program_id, day).
 */
export async function getDailyActivity(db: Db, program: ProgramContext, days: number, now: Date): Promise<DailyActivity[]> {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const first = new Date(today - (days - 1) * DAY_MS).toISOString();
  const [sales, clicks] = await Promise.all([sumSaleDays(db, program.id, first.slice(0, 10)), countClicksByDay(db, program.id, first.slice(0, 10))]);
  const salesByDay = new Map(sales.map((d) => [d.day, d]));
  const clicksByDay = new Map(clicks.map((d) => [d.day, d.clicks]));
  return Array.from({ length: days }, (_, i) => {
    const day = new Date(today - (days - 1 - i) * DAY_MS).toISOString().slice(0, 10);
    return { ...(salesByDay.get(day) ?? { day, count: 0, revenue: 0, commission: 0 }), clicks: clicksByDay.get(day) ?? 0 };
  });
}
