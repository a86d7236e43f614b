import type { Insertable, Selectable } from 'kysely';
import type { BillingEventsTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';

export type BillingEventRow = Selectable<BillingEventsTable>;

/** Stores an event unless the program has it already; false for a redelivery (nothing stored). */
export async function insertBillingEventOnce(tx: Tx, row: Insertable<BillingEventsTable>): Promise<boolean> {
  const inserted = await tx
    .insertInto('billing_events')
    .values(row)
    .onConflict((conflict) => conflict.columns(['program_id', 'id']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function setBillingEventOutcome(tx: Tx, programId: string, id: string, outcome: Pick<BillingEventRow, 'outcome' | 'reason' | 'referral_id' | 'sale_id'>): Promise<void> {
  await tx.updateTable('billing_events').set(outcome).where('program_id', '=', programId).where('id', '=', id).execute();
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

export async function lastBillingEventAt(db: Db, programId: string): Promise<string | Date | undefined> {
  const row = await db.selectFrom('billing_events').select('created_at').where('program_id', '=', programId).orderBy('created_at', 'desc').limit(1).executeTakeFirst();
  return row?.created_at;
}
