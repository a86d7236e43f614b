import type { Readable } from 'node:stream';
import { csvLine } from '../../domain/csv.ts';
import { toIso } from '../../domain/clock.ts';
import { millionthsToRate } from '../../domain/commission.ts';
import { minorToDecimalText } from '../../domain/money.ts';
import type { PageOrder } from '../../db/keyset.ts';
import { streamKeysetList } from '../../db/keyset-stream.ts';
import type { Db } from '../../db/transaction.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { getAffiliateNames } from '../affiliates/affiliate.service.ts';
import { listSales, type SaleFilter, type SaleRow } from './sale.repository.ts';

// The dashboard's sale list as a CSV file: what its filters show, in their order, at most
// SALES_CSV_ROWS sales, each with its affiliate's name and e-mail; amounts exact in the
// program's currency (from the stored minor units), the commission before and after refunds,
// formula-safe cells (domain/csv.ts).
// The file is streamed (db/keyset-stream.ts): the list is read by its keyset in batches, each
// batch's affiliates named, its lines written, then the next read. Each batch is its own read,
// so a file downloaded while sales arrive may hold rows as of different moments of the list;
// keyset order gives no sale twice, and none skipped of those that existed at the start and
// kept their sort keys (amount, commission).

/** Sales in one CSV download; past it the page says the file holds the first ones. */
export const SALES_CSV_ROWS = 10_000;

const HEADER = ['id', 'created_at', 'customer_name', 'customer_email', 'affiliate_id', 'affiliate_name', 'affiliate_email', 'currency', 'amount', 'refunded', 'commission_rate', 'commission', 'commission_refunded', 'commission_net', 'invoice_id', 'external_id'];

/** One batch of sales as CSV lines, their affiliates named. */
async function linesOf(db: Db, program: ProgramContext, sales: SaleRow[]): Promise<string> {
  // One read for the batch: at most STREAM_BATCH_ROWS distinct affiliates, one bound id each.
  const names = await getAffiliateNames(db, program, [...new Set(sales.map((s) => s.affiliate_id))]);
  const currency = program.currency;
  const money = (minor: number | string) => minorToDecimalText(minor, currency);
  let csv = '';
  for (const s of sales) {
    const affiliate = names.get(s.affiliate_id);
    const net = Number(s.commission) - Number(s.refunded_commission);
    csv += csvLine([
      Number(s.id), toIso(s.created_at), s.name, s.email, s.affiliate_id, affiliate?.name ?? '', affiliate?.email ?? '', currency,
      money(s.total_earned), money(s.refunded_amount), millionthsToRate(s.commission_rate),
      money(s.commission), money(s.refunded_commission), money(net), s.external_invoice_id, s.external_id,
    ]);
  }
  return csv;
}

/**
 * The file of the sales `filter` matches (null: a filter that names nothing, so the file holds
 * only its header), as a stream; its first batch is read before it returns, so an error there
 * is thrown here.
 */
export function exportSalesCsv(db: Db, program: ProgramContext, filter: SaleFilter | null, order: PageOrder): Promise<Readable> {
  return streamKeysetList({
    head: csvLine(HEADER),
    order,
    maxRows: SALES_CSV_ROWS,
    readPage: (page) => (filter === null ? Promise.resolve([]) : listSales(db, program.id, filter, page)),
    textOf: (sales) => linesOf(db, program, sales),
  });
}
