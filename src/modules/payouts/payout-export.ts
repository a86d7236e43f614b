import { csvLine, machineField as exact } from '../../domain/csv.ts';
import { minorToDecimalText } from '../../domain/money.ts';
import { pageOf, type PagePosition, type PageRequest } from '../../db/keyset.ts';
import type { Db } from '../../db/transaction.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { listPayouts, type PayoutFilter, type PayoutRow } from './payout.repository.ts';
import { serializePayout } from './payout.service.ts';

// Payout files (docs/payouts.md#exports), one row per payout:
// - csv: every field of the payout, with a header row;
// - paypal: PayPal Payouts' bulk file — no header; recipient, amount, currency, customer id
//   (≤ 30 characters, no spaces), note, wallet; one currency per file, at most 5,000 rows;
// - wise: Wise's batch template ("send by e-mail"), fixed headers; at most 1,000 rows.
// The recipient is the affiliate's payout e-mail (its e-mail when it has none). Amounts carry
// the currency's decimals (JPY none).
// Cells (domain/csv.ts, docs/payouts.md#exports): what people typed — names, the payment method,
// the merchant's method and reference, the note with the program's name — is text, made
// formula-safe (a ' before any formula start, quoted at any separator). What Tandem wrote or
// validated — ids, amounts, currencies, statuses, times, e-mail addresses — is a machine field
// (`exact`): a provider reads it back, so an address or amount starting with + or - is written
// as it is (a ' would send the money nowhere).
// A file is built whole, unlike the dashboard's list CSVs (db/keyset-stream.ts): it is one page
// of at most EXPORT_ROW_LIMITS payouts (about a megabyte), the API's answer names the next page
// in its Link header — the page's last row, known only once the page is read, before the first
// byte is sent — and PayPal and Wise take a file of at most their limit, uploaded whole.

export const EXPORT_ROW_LIMITS = { csv: 5000, paypal: 5000, wise: 1000 } as const;
export type ExportFormat = keyof typeof EXPORT_ROW_LIMITS;

const line = csvLine;

const amountText = (row: PayoutRow) => minorToDecimalText(row.amount, row.currency);

const CSV_HEADER = ['id', 'affiliateId', 'firstName', 'lastName', 'email', 'payoutEmail', 'paymentMethod', 'amount', 'currency', 'status', 'entryCount', 'createdAt', 'paidAt', 'method', 'reference'];
const WISE_HEADER = ['name', 'recipientEmail', 'paymentReference', 'receiverType', 'amountCurrency', 'amount', 'sourceCurrency', 'targetCurrency'];

/** PayPal's customer id: at most 30 characters without spaces — the payout id's first 30 hex digits. */
function paypalCustomerId(row: PayoutRow): string {
  return row.id.replace(/-/g, '').slice(0, 30);
}

/** Wise's payment reference: short enough for every currency's limit (GBP 18). */
function wiseReference(row: PayoutRow): string {
  return `TDM-${row.id.replace(/-/g, '').slice(0, 8)}`;
}

export function exportPayouts(format: ExportFormat, rows: PayoutRow[], programName: string): string {
  switch (format) {
    case 'csv':
      return (
        line(CSV_HEADER) +
        rows
          .map((row) => {
            const p = serializePayout(row);
            return line([
              exact(p.id), exact(p.affiliateId), p.affiliate.firstName, p.affiliate.lastName, exact(p.affiliate.email), exact(p.affiliate.payoutEmail), p.affiliate.paymentMethod,
              exact(amountText(row)), exact(p.currency), exact(p.status), p.entryCount, exact(p.createdAt), p.paidAt === null ? null : exact(p.paidAt), p.method, p.reference,
            ]);
          })
          .join('')
      );
    case 'paypal':
      return rows.map((row) => line([exact(row.payout_email), exact(amountText(row)), exact(row.currency), exact(paypalCustomerId(row)), `Affiliate commission from ${programName}`.slice(0, 400), exact('PAYPAL')])).join('');
    case 'wise':
      return (
        line(WISE_HEADER) +
        rows.map((row) => line([`${row.first_name} ${row.last_name}`, exact(row.payout_email), exact(wiseReference(row)), exact('PERSON'), exact(row.currency), exact(amountText(row)), exact(row.currency), exact(row.currency)])).join('')
      );
  }
}

/** A page of the program's payouts (at most the format's rows) as a file of `format`, and where the next page starts when more follow. */
export async function exportPayoutPage(db: Db, program: ProgramContext, format: ExportFormat, filter: PayoutFilter, page: PageRequest): Promise<{ file: string; next?: PagePosition }> {
  const { items, next } = pageOf(await listPayouts(db, program.id, filter, page), page);
  const file = exportPayouts(format, items, program.name);
  return next === undefined ? { file } : { file, next };
}
