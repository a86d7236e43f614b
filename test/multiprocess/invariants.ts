import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.ts';
import type { ApiClient, ApiResponse } from '../helpers/test-server.ts';

// Shared by the multiprocess tests: the counters kept on affiliates and links must always be
// the aggregates of the rows they count — a half-written sale or a lost update breaks them.

export interface CounterMismatch {
  table: 'affiliates' | 'affiliate_links';
  id: string;
  column: string;
  stored: number;
  actual: number;
}

/** Every counter of the program that differs from the sum or count over its rows (SQL, both dialects). */
export async function counterMismatches(db: Kysely<Database>, programId: string): Promise<CounterMismatch[]> {
  const affiliates = await sql<{ id: string; commission: unknown; sum_commission: unknown; referred: unknown; count_referrals: unknown }>`
    select a.id,
      a.total_commission_earned as commission,
      (select coalesce(sum(s.commission), 0) from sales s where s.affiliate_id = a.id) as sum_commission,
      a.number_of_referred_users as referred,
      (select count(*) from referrals r where r.affiliate_id = a.id) as count_referrals
    from affiliates a where a.program_id = ${programId}`.execute(db);
  const links = await sql<{ id: string; sales: unknown; count_sales: unknown; revenue: unknown; sum_revenue: unknown; referrals: unknown; count_referrals: unknown }>`
    select l.id,
      l.sales, (select count(*) from sales s where s.link_id = l.id) as count_sales,
      l.total_revenue as revenue, (select coalesce(sum(s.total_earned), 0) from sales s where s.link_id = l.id) as sum_revenue,
      l.referrals, (select count(*) from referrals r where r.link_id = l.id) as count_referrals
    from affiliate_links l where l.program_id = ${programId}`.execute(db);
  const mismatches: CounterMismatch[] = [];
  const compare = (table: CounterMismatch['table'], id: string, column: string, stored: unknown, actual: unknown) => {
    if (Number(stored) !== Number(actual)) mismatches.push({ table, id, column, stored: Number(stored), actual: Number(actual) });
  };
  for (const a of affiliates.rows) {
    compare('affiliates', a.id, 'total_commission_earned', a.commission, a.sum_commission);
    compare('affiliates', a.id, 'number_of_referred_users', a.referred, a.count_referrals);
  }
  for (const l of links.rows) {
    compare('affiliate_links', l.id, 'sales', l.sales, l.count_sales);
    compare('affiliate_links', l.id, 'total_revenue', l.revenue, l.sum_revenue);
    compare('affiliate_links', l.id, 'referrals', l.referrals, l.count_referrals);
  }
  return mismatches;
}

/** A response, or the reason there was none (the process died, the connection reset). */
export type Outcome = ApiResponse | { status: 0; error: string };

export async function attempt(client: ApiClient, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Outcome> {
  try {
    return await client.request(method, path, body, headers);
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return { status: 0, error: cause?.code ?? cause?.message ?? String(error) };
  }
}

/** `{ "201": 50, "422 promo_code_exhausted": 250 }`, for assertion messages. */
export function tally(outcomes: Outcome[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outcomes) {
    const key = o.status === 0 ? `no response (${(o as { error: string }).error})` : o.status >= 400 ? `${o.status} ${(o as ApiResponse).body?.code}` : String(o.status);
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}
