import type { Readable } from 'node:stream';
import { csvLine } from '../../domain/csv.ts';
import { toIso } from '../../domain/clock.ts';
import { millionthsToRate } from '../../domain/commission.ts';
import { minorToDecimalText } from '../../domain/money.ts';
import type { PageOrder } from '../../db/keyset.ts';
import { streamKeysetList } from '../../db/keyset-stream.ts';
import type { Db } from '../../db/transaction.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { listAffiliates, type AffiliateListFilter, type AffiliateRow } from './affiliate.repository.ts';

// The dashboard's affiliate list as a CSV file: what its filters show, in their order, at most
// AFFILIATES_CSV_ROWS affiliates; amounts exact in the program's currency (from the stored minor
// units), the affiliate's own rate (empty: the program's default), formula-safe cells
// (domain/csv.ts).
// The file is streamed (db/keyset-stream.ts): the list is read by its keyset in batches, each
// batch's lines written before the next read. Each batch is its own read, so a file downloaded
// while affiliates join or earn may hold rows as of different moments of the list; keyset order
// gives no affiliate twice, and none skipped of those that existed at the start and kept their
// sort key (the commission earned, in that order).

/** Affiliates in one CSV download; past it the page says the file holds the first ones. */
export const AFFILIATES_CSV_ROWS = 10_000;

const HEADER = ['id', 'first_name', 'last_name', 'email', 'link', 'status', 'approval', 'commission_rate', 'referrals', 'clicks', 'currency', 'commission_earned', 'payout_email', 'payment_method', 'created_at'];

/** One batch of affiliates as CSV lines. */
function linesOf(program: ProgramContext, affiliates: AffiliateRow[]): string {
  const money = (minor: number | string) => minorToDecimalText(minor, program.currency);
  let csv = '';
  for (const a of affiliates) {
    csv += csvLine([a.id, a.first_name, a.last_name, a.email, a.link ?? '', a.status, a.approval, a.commission_rate === null ? '' : millionthsToRate(a.commission_rate), Number(a.number_of_referred_users), Number(a.number_of_clicks), program.currency, money(a.total_commission_earned), a.payout_email ?? '', a.payment_method ?? '', toIso(a.created_at)]);
  }
  return csv;
}

/**
 * The file of the affiliates `filter` matches (null: a filter that names nothing, so the file holds
 * only its header), as a stream; its first batch is read before it returns, so an error there is thrown here.
 */
export function exportAffiliatesCsv(db: Db, program: ProgramContext, filter: AffiliateListFilter | null, order: PageOrder): Promise<Readable> {
  return streamKeysetList({
    head: csvLine(HEADER),
    order,
    maxRows: AFFILIATES_CSV_ROWS,
    readPage: (page) => (filter === null ? Promise.resolve([]) : listAffiliates(db, program.id, page, filter)),
    textOf: (affiliates) => linesOf(program, affiliates),
  });
}
