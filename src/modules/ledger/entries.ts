import type { Tx } from '../../db/transaction.ts';
import { toIso } from '../../domain/clock.ts';
import { endOfHold } from '../../domain/commission.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { holdSaleEntries, insertEntries, releaseSaleEntries, saleEntryStates, type HeldBy } from './ledger.repository.ts';

// The commission ledger's rules (CONTRACT "Commission plans and the ledger"). Every change of
// what an affiliate earns appends an entry, in the transaction of the change:
// - a sale: +commission, due once the plan's hold has passed;
// - a refund, an edit that changes the commission, a void: the difference (− or +). While the
//   sale's own entry is unpaid and in no payout, the difference falls due with it (a payout
//   then pays the net); after that it is due at once and comes off the next payout.
// An entry's amount never changes. The entries of a sale add up to its net commission, and an
// affiliate's entries to its totalCommissionEarned (counters.ts moves that counter in the same
// transaction).

export type ChangeKind = 'refund' | 'adjustment' | 'void';

/** When a sale's own entry falls due: once the plan's hold has passed. */
export function saleEntryDueAt(program: ProgramContext, createdAt: string): string {
  return endOfHold(new Date(createdAt), program.plan.holdDays).toISOString();
}

/** Entries for changes of sales' commissions; a change of 0 earns nothing and writes nothing. */
export async function appendChangeEntries(
  tx: Tx,
  program: ProgramContext,
  kind: ChangeKind,
  changes: { saleId: number; affiliateId: string; amount: number }[],
  now: string,
): Promise<void> {
  const made = changes.filter((change) => change.amount !== 0);
  const states = await saleEntryStates(tx, program.id, made.map((change) => change.saleId));
  await insertEntries(
    tx,
    made.map((change) => {
      const state = states.get(change.saleId);
      return {
        program_id: program.id,
        affiliate_id: change.affiliateId,
        sale_id: change.saleId,
        kind,
        amount: change.amount,
        currency: program.currency,
        due_at: state && !state.settled ? toIso(state.dueAt) : now,
        // A change of a held sale (a refund during a dispute) waits with it.
        held_by: state && !state.settled ? state.heldBy : null,
        created_at: now,
      };
    }),
  );
}

/**
 * A disputed sale's commission waits: its unpaid entries, in a pending payout or not, are not
 * due until the dispute closes (a lost dispute then takes the commission back like a refund).
 * An entry in a pending payout stays in it (a payout's amount is frozen); if that payout fails,
 * the entry returns held. Runs in the caller's transaction, with the dispute's state.
 */
export function holdSaleCommission(tx: Tx, program: ProgramContext, saleId: number, heldBy: HeldBy): Promise<number> {
  return holdSaleEntries(tx, program.id, saleId, heldBy);
}

/** What held the sale's commission is over (the dispute closed): its entries held by it fall due at once. */
export function releaseSaleCommission(tx: Tx, program: ProgramContext, saleId: number, heldBy: HeldBy): Promise<number> {
  return releaseSaleEntries(tx, program.id, saleId, heldBy, program.clock().toISOString());
}
