import { sql, type Insertable, type Selectable } from 'kysely';
import type { BillingDisputesTable, BillingEventsTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';
import { deleteInBatches } from '../../db/batched-delete.ts';

export type BillingEventRow = Selectable<BillingEventsTable>;

/**
 * Claims an event's id, before its work and in the same transaction: false for a redelivery
 * (nothing stored). A second delivery at the same moment waits on the first's row (PostgreSQL's
 * unique key; SQLite has one writer) and gets false once it commits, or the claim if it rolled back.
 */
export async function insertBillingEventOnce(tx: Tx, row: Insertable<BillingEventsTable>): Promise<boolean> {
  const inserted = await tx
    .insertInto('billing_events')
    .values(row)
    .onConflict((conflict) => conflict.columns(['program_id', 'id']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

/** What came of a claimed event, written at the end of its work. */
export async function setBillingEventOutcome(tx: Tx, programId: string, id: string, outcome: Pick<BillingEventRow, 'outcome' | 'reason' | 'referral_id' | 'sale_id'> & Partial<Pick<BillingEventRow, 'waiting' | 'customer_id'>>): Promise<void> {
  await tx.updateTable('billing_events').set(outcome).where('program_id', '=', programId).where('id', '=', id).execute();
}

export type DisputeRow = Selectable<BillingDisputesTable>;

/**
 * Records a dispute event as the dispute's state, unless the state already recorded is newer
 * (its event's `created` later) or closed: true when recorded. Decided in one statement under
 * the dispute's row, so two events of one dispute at once are ordered there.
 */
export async function recordDisputeState(tx: Tx, row: Insertable<BillingDisputesTable>): Promise<boolean> {
  const recorded = await tx
    .insertInto('billing_disputes')
    .values(row)
    .onConflict((conflict) =>
      conflict
        .columns(['program_id', 'id'])
        .doUpdateSet((eb) => ({
          sale_id: eb.ref('excluded.sale_id'),
          status: eb.ref('excluded.status'),
          event_created_at: eb.ref('excluded.event_created_at'),
          closed_at: eb.ref('excluded.closed_at'),
          updated_at: eb.ref('excluded.updated_at'),
        }))
        .where('billing_disputes.closed_at', 'is', null)
        .where((eb) => eb('billing_disputes.event_created_at', '<=', eb.ref('excluded.event_created_at'))),
    )
    .returning('id')
    .executeTakeFirst();
  return recorded !== undefined;
}

export function findDispute(tx: Tx, programId: string, id: string): Promise<DisputeRow | undefined> {
  return tx.selectFrom('billing_disputes').selectAll().where('program_id', '=', programId).where('id', '=', id).executeTakeFirst();
}

export function listBillingEvents(db: Db, programId: string, page: PageRequest): Promise<BillingEventRow[]> {
  return pageQuery(db.selectFrom('billing_events as b').selectAll('b').where('b.program_id', '=', programId), 'b', page).execute();
}

export async function setStripeSecret(db: Db, programId: string, sealed: string | null, now: string): Promise<void> {
  await db.updateTable('programs').set({ stripe_secret_sealed: sealed, updated_at: now }).where('id', '=', programId).execute();
}

export async function stripeSecretOf(db: Db, programId: string): Promise<string | null | undefined> {
  const row = await db.selectFrom('programs').select('stripe_secret_sealed').where('id', '=', programId).executeTakeFirst();
  return row?.stripe_secret_sealed;
}

/** Remembers which invoice a payment intent paid (a later refund names only the payment). */
export async function recordPayment(db: Db, programId: string, paymentIntent: string, invoiceId: string, now: string): Promise<void> {
  await db
    .insertInto('billing_payments')
    .values({ program_id: programId, payment_intent: paymentIntent, invoice_id: invoiceId, created_at: now })
    .onConflict((conflict) => conflict.columns(['program_id', 'payment_intent']).doNothing())
    .execute();
}

export async function invoiceOfPayment(db: Db, programId: string, paymentIntent: string): Promise<string | undefined> {
  const row = await db.selectFrom('billing_payments').select('invoice_id').where('program_id', '=', programId).where('payment_intent', '=', paymentIntent).executeTakeFirst();
  return row?.invoice_id;
}

/** A customer's invoices waiting for their referral, received since `since`, oldest first. */
export function waitingInvoicesOf(db: Db, programId: string, customerId: string, since: string): Promise<BillingEventRow[]> {
  return db
    .selectFrom('billing_events')
    .selectAll()
    .where('program_id', '=', programId)
    .where('outcome', '=', 'waiting')
    .where('customer_id', '=', customerId)
    .where('created_at', '>=', since)
    .orderBy('created_at')
    .limit(100)
    .execute();
}

/** Invoices that waited past `before` for a referral that never came: ignored, with the reason. */
export async function expireWaitingInvoices(db: Db, programId: string, before: string): Promise<void> {
  await db
    .updateTable('billing_events')
    .set({ outcome: 'ignored', reason: 'the customer was not referred within 24 hours of the invoice', waiting: null })
    .where('program_id', '=', programId)
    .where('outcome', '=', 'waiting')
    .where('created_at', '<', before)
    .execute();
}

export async function settleBillingEvent(db: Db, programId: string, id: string, outcome: Pick<BillingEventRow, 'outcome' | 'reason' | 'referral_id' | 'sale_id'>): Promise<void> {
  await db.updateTable('billing_events').set({ ...outcome, waiting: null }).where('program_id', '=', programId).where('id', '=', id).where('outcome', '=', 'waiting').execute();
}

/** Billing events received before `before` (the worker's purge, with the event history); waiting ones are long ignored by then. */
export function purgeBillingEventsBefore(db: Db, before: string): Promise<number> {
  return deleteInBatches(async (limit) => {
    const result = await sql`delete from billing_events where (program_id, id) in (select program_id, id from billing_events where created_at < ${before} limit ${limit})`.execute(db);
    return { numDeletedRows: result.numAffectedRows ?? 0n };
  });
}

/** Waiting invoices whose customer has been referred meanwhile (by the API or the dashboard), with the referral, at most `limit`. */
export function waitingInvoicesOfReferredCustomers(db: Db, programId: string, limit: number): Promise<(BillingEventRow & { found_referral_id: string; referred_at: string | Date })[]> {
  return db
    .selectFrom('billing_events as b')
    .innerJoin('referrals as r', (join) => join.onRef('r.program_id', '=', 'b.program_id').onRef('r.external_id_key', '=', 'b.customer_id'))
    .selectAll('b')
    .select(['r.id as found_referral_id', 'r.created_at as referred_at'])
    .where('b.program_id', '=', programId)
    .where('b.outcome', '=', 'waiting')
    .limit(limit)
    .execute();
}
