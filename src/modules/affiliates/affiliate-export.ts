import { csvLine } from '../../domain/csv.ts';
import { toIso } from '../../domain/clock.ts';
import { millionthsToRate } from '../../domain/commission.ts';
import { minorToDecimalText } from '../../domain/money.ts';
import type { PageOrder } from '../../db/keyset.ts';
import type { Db } from '../../db/transaction.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { listAffiliates, type AffiliateListFilter } from './affiliate.repository.ts';

// The dashboard's affiliate list as a CSV file: what its filters show, in their order, at most
// AFFILIATES_CSV_ROWS affiliates; amounts exact in the program's currency (from the stored minor
// units), the affiliate's own rate (empty: the program's default), formula-safe cells
// (domain/csv.ts).

/** Affiliates in one CSV download; past it the page says the file holds the first ones. */
export const AFFILIATES_CSV_ROWS = 10_000;

const HEADER = ['id', 'first_name', 'last_name', 'email', 'link', 'status', 'approval', 'commission_rate', 'referrals', 'clicks', 'currency', 'commission_earned', 'payout_email', 'payment_method', 'created_at'];

export async function exportAffiliatesCsv(db: Db, program: ProgramContext, filter: AffiliateListFilter, order: PageOrder): Promise<string> {
  const rows = await listAffiliates(db, program.id, { limit: AFFILIATES_CSV_ROWS - 1, order }, filter);
  const money = (minor: number | string) => minorToDecimalText(minor, program.currency);
  let csv = csvLine(HEADER);
  for (const a of rows.slice(0, AFFILIATES_CSV_ROWS)) {
    csv += csvLine([a.id, a.first_name, a.last_name, a.email, a.link ?? '', a.status, a.approval, a.commission_rate === null ? '' : millionthsToRate(a.commission_rate), Number(a.number_of_referred_users), Number(a.number_of_clicks), program.currency, money(a.total_commission_earned), a.payout_email ?? '', a.payment_method ?? '', toIso(a.created_at)]);
  }
  return csv;
}
