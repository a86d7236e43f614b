import type { Db } from '../../db/transaction.ts';
import { mapPage, pageOf, type Page, type PageRequest } from '../../db/keyset.ts';
import { toIso } from '../../domain/clock.ts';
import { fromMinorUnits } from '../../domain/money.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import type { CommissionEntry, CommissionsQuery } from './commission.schema.ts';

import { entryStatusOf, ledgerBalance, listEntries, type EntryRow, type EntryStatus, type LedgerBalance } from './ledger.repository.ts';


export function serializeEntry(row: EntryRow, program: ProgramContext, now: Date): CommissionEntry {
  const status = entryStatusOf(row, now);
  return {
    id: Number(row.id),
    affiliateId: row.affiliate_id,
    saleId: row.sale_id === null ? null : Number(row.sale_id),
    payoutId: row.payout_id,
    kind: row.kind,
    amount: fromMinorUnits(row.amount, row.currency),
    currency: row.currency,
    status,
    // A held entry has no due date until it is released (CONTRACT: no sentinel values).
    dueAt: status === 'held' ? null : toIso(row.due_at),
    createdAt: toIso(row.created_at),
    ...(status === 'held' ? { heldBy: row.held_by! } : {}),
  };
}

/** GET /commissions: a page of the ledger, newest first, each entry's status at `now`. */
export async function getEntryPage(db: Db, program: ProgramContext, query: Omit<CommissionsQuery, 'limit' | 'cursor' | 'createdAfter'>, page: PageRequest, now: Date): Promise<Page<CommissionEntry>> {
  const { status, ...filter } = query;
  const rows = await listEntries(db, program.id, { ...filter, status: status === undefined ? undefined : { is: status as EntryStatus, now: now.toISOString() } }, page);
  return mapPage(pageOf(rows, page), (row) => serializeEntry(row, program, now));
}

/** Pending, due and paid commission of the program, or of one affiliate, at the program's "now", in major units. */
export async function getLedgerBalance(db: Db, program: ProgramContext, affiliateId?: string): Promise<LedgerBalance> {
  const minor = await ledgerBalance(db, program.id, program.clock().toISOString(), affiliateId);
  return {
    pending: fromMinorUnits(minor.pending, program.currency),
    held: fromMinorUnits(minor.held, program.currency),
    due: fromMinorUnits(minor.due, program.currency),
    dueOutsidePayouts: fromMinorUnits(minor.dueOutsidePayouts, program.currency),
    paid: fromMinorUnits(minor.paid, program.currency),
  };
}
