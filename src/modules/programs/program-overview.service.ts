import type { Db } from '../../db/transaction.ts';
import { countAffiliates } from '../affiliates/affiliate.repository.ts';
import { countReferrals } from '../referrals/referral.repository.ts';
import { sumSales, sumSalesByDay, type DailySales, type SaleTotals } from '../sales/sale.repository.ts';
import type { ProgramContext } from './program.service.ts';

// The dashboard's overview of a program. Every figure is an aggregate computed by the
// database over the program's indexes; no rows are loaded to be counted here.

export interface ProgramTotals {
  affiliates: number;
  referrals: number;
  /** Sales count and sums, in minor units of the program's currency. */
  sales: SaleTotals;
}

export async function getProgramTotals(db: Db, program: ProgramContext): Promise<ProgramTotals> {
  const [affiliates, referrals, sales] = await Promise.all([countAffiliates(db, program.id), countReferrals(db, program.id), sumSales(db, program.id)]);
  return { affiliates, referrals, sales };
}

const DAY_MS = 86_400_000;

/** One entry per UTC day of the last `days` days (today included), zero where nothing was sold. */
export async function getDailySales(db: Db, program: ProgramContext, days: number, now: Date): Promise<DailySales[]> {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const first = today - (days - 1) * DAY_MS;
  const byDay = new Map((await sumSalesByDay(db, program.id, new Date(first).toISOString())).map((d) => [d.day, d]));
  return Array.from({ length: days }, (_, i) => {
    const day = new Date(first + i * DAY_MS).toISOString().slice(0, 10);
    return byDay.get(day) ?? { day, count: 0, revenue: 0, commission: 0 };
  });
}
