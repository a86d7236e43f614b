import type { Db, Tx } from '../../db/transaction.ts';
import { inTransaction, withoutBeforeCommit } from '../../db/transaction.ts';
import { setImmediate } from 'node:timers/promises';
import { mapPage, pageOf, type Page, type PageRequest } from '../../db/keyset.ts';
import { toIso } from '../../domain/clock.ts';
import { ApiError, invalidField, notFound } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { fromMinorUnits } from '../../domain/money.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { recordEvent, recordEvents } from '../events/outbox.ts';
import { findAffiliate, findPayees } from '../affiliates/affiliate.repository.ts';
import { queueMail } from '../mail/mail.service.ts';
import { payoutPaidMail } from '../mail/messages.ts';
import { insertPayouts, listPayouts, lockPayout, lockProgramForPayouts, settlePayout, type PayoutFilter, type PayoutRow } from './payout.repository.ts';
import {
  affiliatesOwed,
  attachEntriesToPayouts,
  lockOpenDueEntries,
  markPayoutEntriesPaid,
  releaseFromPayout,
  type OpenEntry,
} from '../ledger/ledger.repository.ts';
import type { Payout, RunPayoutsBody, UpdatePayoutBody } from './payout.schema.ts';

// Payouts (CONTRACT "Payouts", docs/payouts.md): a run makes one pending payout per affiliate
// whose due balance is positive and at least the plan's minimum, holding exactly those entries;
// its amount and recipient are frozen then. Marking it paid pays its entries; failed returns
// them to due. Runs of one program take turns on the program's row.

/** The most entries one run takes; an affiliate's entries are never split, so a run may stop early and the next goes on. */
export const MAX_ENTRIES_PER_RUN = 100_000;

export function serializePayout(row: PayoutRow): Payout {
  return {
    id: row.id,
    affiliateId: row.affiliate_id,
    affiliate: {
      id: row.affiliate_id,
      firstName: row.first_name,
      lastName: row.last_name,
      email: row.email,
      payoutEmail: row.payout_email,
      paymentMethod: row.payment_method,
    },
    amount: fromMinorUnits(row.amount, row.currency),
    currency: row.currency,
    status: row.status,
    entryCount: Number(row.entry_count),
    createdAt: toIso(row.created_at),
    paidAt: row.paid_at === null ? null : toIso(row.paid_at),
    method: row.method,
    reference: row.reference,
  };
}

/**
 * Affiliates paid per transaction of a run. A run commits after each batch and lets other
 * work in before the next (issue 29: one transaction over 20,000 affiliates held SQLite's only
 * write lock for minutes); a batch takes tens of milliseconds.
 */
export const PAYOUT_BATCH_AFFILIATES = 200;

/**
 * POST /payouts (and the dashboard's and CLI's run): the payouts made, possibly none. The
 * affiliates owed are read first; each batch of them is paid in its own transaction, under the
 * program's payout lock, each affiliate's entries read again under lock (an entry can go into
 * one payout only, whatever runs or refunds land between batches). An affiliate owed only after
 * the run started is left for the next run.
 */
export async function runPayouts(db: Db, program: ProgramContext, body: RunPayoutsBody): Promise<Payout[]> {
  if (body.affiliateId !== undefined && !(await findAffiliate(db, program.id, { id: body.affiliateId }))) throw notFound('Affiliate');
  const startedAt = program.clock().toISOString();
  const owed = await affiliatesOwed(db, program.id, startedAt, program.plan.minimumPayout, body.affiliateId);
  const made: Payout[] = [];
  let entriesTaken = 0;
  for (let start = 0; start < owed.length && entriesTaken < MAX_ENTRIES_PER_RUN; start += PAYOUT_BATCH_AFFILIATES) {
    if (start > 0) await setImmediate(); // the requests that arrived meanwhile go first
    const batch = owed.slice(start, start + PAYOUT_BATCH_AFFILIATES);
    const entriesLeft = MAX_ENTRIES_PER_RUN - entriesTaken;
    // A batch's transaction answers nothing: the run's answer is every batch's payouts, stored
    // for an Idempotency-Key once the run is over (a retry after a crash runs what is left).
    const paid = await withoutBeforeCommit(() => inTransaction(db, (tx) => payBatch(tx, program, batch, entriesLeft)));
    for (const payout of paid) entriesTaken += payout.entryCount;
    made.push(...paid);
  }
  return made;
}

/**
 * The payouts of a batch of affiliates, each of its open due entries read under lock (a refund
 * may have landed since the run read its sums), in set-wise statements: entries, payees,
 * payouts, their entries, their events. Stops taking affiliates once `entriesLeft` are taken
 * (an affiliate's entries are never split).
 */
async function payBatch(tx: Tx, program: ProgramContext, affiliateIds: string[], entriesLeft: number): Promise<Payout[]> {
  await lockProgramForPayouts(tx, program.id);
  const now = program.clock().toISOString();
  const entriesOf = new Map<string, OpenEntry[]>();
  for (const entry of await lockOpenDueEntries(tx, program.id, affiliateIds, now)) {
    const own = entriesOf.get(entry.affiliateId);
    if (own) own.push(entry);
    else entriesOf.set(entry.affiliateId, [entry]);
  }
  const payees = new Map((await findPayees(tx, program.id, [...entriesOf.keys()])).map((payee) => [payee.id, payee]));
  const rows: PayoutRow[] = [];
  const taken: OpenEntry[] = [];
  for (const affiliateId of affiliateIds) {
    if (taken.length >= entriesLeft) break;
    const entries = entriesOf.get(affiliateId) ?? [];
    const amount = entries.reduce((sum, entry) => sum + entry.amount, 0);
    const payee = payees.get(affiliateId);
    if (amount <= 0 || amount < program.plan.minimumPayout || !payee) continue;
    rows.push({
      id: newId(),
      program_id: program.id,
      affiliate_id: affiliateId,
      first_name: payee.first_name,
      last_name: payee.last_name,
      email: payee.email,
      payout_email: payee.payout_email || payee.email,
      payment_method: payee.payment_method,
      amount,
      currency: program.currency,
      status: 'pending',
      entry_count: entries.length,
      created_at: now,
      paid_at: null,
      method: null,
      reference: null,
      updated_at: now,
    });
    taken.push(...entries);
  }
  await insertPayouts(tx, rows);
  await attachEntriesToPayouts(tx, program.id, new Map(rows.map((row) => [row.affiliate_id, row.id])), taken);
  const payouts = rows.map(serializePayout);
  await recordEvents(tx, program.id, 'payout.created', payouts, now);
  return payouts;
}

export async function getPayoutPage(db: Db, program: ProgramContext, filter: PayoutFilter, page: PageRequest): Promise<Page<Payout>> {
  return mapPage(pageOf(await listPayouts(db, program.id, filter, page), page), serializePayout);
}

/**
 * PUT /payouts: a pending payout is marked paid (its entries paid) or failed (its entries due
 * again, outside any payout). A paid or failed payout never changes again.
 */
export async function updatePayout(db: Db, program: ProgramContext, body: UpdatePayoutBody): Promise<Payout> {
  const now = program.clock();
  let paidAt: string | null = null;
  if (body.status === 'paid') {
    paidAt = body.paidAt === undefined ? now.toISOString() : new Date(body.paidAt).toISOString();
    if (Date.parse(paidAt) > now.getTime()) throw invalidField('#/paidAt', 'must not be in the future');
  } else if (body.paidAt !== undefined) {
    throw invalidField('#/paidAt', 'is only for status "paid"');
  }
  return inTransaction(db, async (tx) => {
    const current = await lockPayout(tx, program.id, body.payoutId);
    if (!current) throw notFound('Payout');
    if (current.status !== 'pending') throw new ApiError('conflict', `The payout is already ${current.status}; a paid or failed payout never changes.`);
    if (paidAt !== null && Date.parse(paidAt) < Date.parse(toIso(current.created_at))) throw invalidField('#/paidAt', 'must not be before the payout was made');
    const changes = {
      status: body.status as 'paid' | 'failed',
      paid_at: paidAt,
      method: body.method ?? null,
      reference: body.reference ?? null,
      updated_at: now.toISOString(),
    };
    await settlePayout(tx, program.id, current.id, changes);
    if (changes.status === 'paid') await markPayoutEntriesPaid(tx, program.id, current.id, paidAt!);
    else await releaseFromPayout(tx, program.id, current.id);
    const payout = serializePayout({ ...current, ...changes });
    if (changes.status === 'paid') {
      await recordEvent(tx, program.id, 'payout.paid', payout, now.toISOString());
      await queueMail(tx, program.id, payoutPaidMail(program, payout), now.toISOString());
    } else {
      await recordEvent(tx, program.id, 'payout.failed', payout, now.toISOString());
    }
    return payout;
  });
}
