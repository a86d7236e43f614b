import type { Db, Tx } from '../../db/transaction.ts';
import { inTransaction } from '../../db/transaction.ts';
import type { PageRequest } from '../../db/keyset.ts';
import { toIso } from '../../domain/clock.ts';
import { ApiError, invalidField, notFound } from '../../domain/errors.ts';
import { newId } from '../../domain/ids.ts';
import { fromMinorUnits } from '../../domain/money.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { recordEvent } from '../events/outbox.ts';
import { findAffiliate } from '../affiliates/affiliate.repository.ts';
import { queueMail } from '../mail/mail.service.ts';
import { payoutPaidMail } from '../mail/messages.ts';
import {
  affiliatesOwed,
  assignEntries,
  insertPayout,
  listPayouts,
  lockOpenDueEntries,
  lockPayout,
  lockProgramForPayouts,
  markEntriesPaid,
  releaseEntries,
  settlePayout,
  type PayoutFilter,
  type PayoutRow,
} from './payout.repository.ts';
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

/** POST /payouts (and the dashboard's and CLI's run): the payouts made, possibly none. */
export async function runPayouts(db: Db, program: ProgramContext, body: RunPayoutsBody): Promise<Payout[]> {
  return inTransaction(db, async (tx) => {
    if (body.affiliateId !== undefined && !(await findAffiliate(tx, program.id, { id: body.affiliateId }))) throw notFound('Affiliate');
    await lockProgramForPayouts(tx, program.id);
    const now = program.clock().toISOString();
    const made: Payout[] = [];
    let entriesTaken = 0;
    for (const affiliateId of await affiliatesOwed(tx, program.id, now, program.plan.minimumPayout, body.affiliateId)) {
      const payout = await payAffiliate(tx, program, affiliateId, now);
      if (!payout) continue;
      made.push(payout);
      entriesTaken += payout.entryCount;
      if (entriesTaken >= MAX_ENTRIES_PER_RUN) break;
    }
    return made;
  });
}

/** One affiliate's payout of its open due entries, read under lock (a refund may have landed since the sums). */
async function payAffiliate(tx: Tx, program: ProgramContext, affiliateId: string, now: string): Promise<Payout | null> {
  const entries = await lockOpenDueEntries(tx, program.id, affiliateId, now);
  const amount = entries.reduce((sum, entry) => sum + entry.amount, 0);
  if (amount <= 0 || amount < program.plan.minimumPayout) return null;
  const affiliate = await findAffiliate(tx, program.id, { id: affiliateId });
  if (!affiliate) return null;
  const row: PayoutRow = {
    id: newId(),
    program_id: program.id,
    affiliate_id: affiliateId,
    first_name: affiliate.first_name,
    last_name: affiliate.last_name,
    email: affiliate.email,
    payout_email: affiliate.payout_email || affiliate.email,
    payment_method: affiliate.payment_method,
    amount,
    currency: program.currency,
    status: 'pending',
    entry_count: entries.length,
    created_at: now,
    paid_at: null,
    method: null,
    reference: null,
    updated_at: now,
  };
  await insertPayout(tx, row);
  await assignEntries(
    tx,
    program.id,
    row.id,
    entries.map((entry) => entry.id),
  );
  const payout = serializePayout(row);
  await recordEvent(tx, program.id, 'payout.created', payout, now);
  return payout;
}

export function getPayoutPage(db: Db, program: ProgramContext, filter: PayoutFilter, page: PageRequest): Promise<PayoutRow[]> {
  return listPayouts(db, program.id, filter, page);
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
    if (changes.status === 'paid') await markEntriesPaid(tx, program.id, current.id, paidAt!);
    else await releaseEntries(tx, program.id, current.id);
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
