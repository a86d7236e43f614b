import { sql, type Insertable, type Selectable } from 'kysely';
import type { BillingConnectionsTable, BillingCustomersTable, BillingDisputesTable, BillingEventsTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';
import { deleteInBatches } from '../../db/batched-delete.ts';
import { dialectOf } from '../../db/dialect.ts';

export type BillingEventRow = Selectable<BillingEventsTable>;
export type BillingConnectionRow = Selectable<BillingConnectionsTable>;
export type BillingCustomerRow = Selectable<BillingCustomersTable>;

/** Saves a program's connection to a provider, or replaces its secret (connected since now; its last event kept). */
export async function saveBillingConnection(db: Db, row: Insertable<BillingConnectionsTable>): Promise<void> {
  await db
    .insertInto('billing_connections')
    .values(row)
    .onConflict((conflict) => conflict.columns(['program_id', 'provider', 'mode']).doUpdateSet({ secret_sealed: row.secret_sealed, connected_at: row.connected_at }))
    .execute();
}

/** Removes a program's connection to a provider; false when there was none. */
export async function deleteBillingConnection(db: Db, programId: string, provider: string, mode: BillingConnectionRow['mode']): Promise<boolean> {
  const { numDeletedRows } = await db.deleteFrom('billing_connections').where('program_id', '=', programId).where('provider', '=', provider).where('mode', '=', mode).executeTakeFirst();
  return Number(numDeletedRows) > 0;
}

/** A program's connections to one provider: its live side first, then its test side. */
export function findBillingConnectionsTo(db: Db, programId: string, provider: string): Promise<BillingConnectionRow[]> {
  return db.selectFrom('billing_connections').selectAll().where('program_id', '=', programId).where('provider', '=', provider).orderBy('mode').execute();
}

/** A program's connections (a few rows: one per provider and mode), by provider. */
export function listBillingConnections(db: Db, programId: string): Promise<BillingConnectionRow[]> {
  return db.selectFrom('billing_connections').selectAll().where('program_id', '=', programId).orderBy('provider').orderBy('mode').execute();
}

/** A verified event of the provider arrived at `at`: the connection's last event (never moved back by a slower twin). */
export async function touchBillingConnection(db: Db, programId: string, provider: string, mode: BillingConnectionRow['mode'], at: string): Promise<void> {
  await db
    .updateTable('billing_connections')
    .set({ last_event_at: at })
    .where('program_id', '=', programId)
    .where('provider', '=', provider)
    .where('mode', '=', mode)
    .where((eb) => eb.or([eb('last_event_at', 'is', null), eb('last_event_at', '<', at)]))
    .execute();
}

/**
 * Claims an event's id, before its work and in the same transaction: false for a redelivery
 * (nothing stored). A second delivery at the same moment waits on the first's row (PostgreSQL's
 * unique key; SQLite has one writer) and gets false once it commits, or the claim if it rolled back.
 */
export async function insertBillingEventOnce(tx: Tx, row: Insertable<BillingEventsTable>): Promise<boolean> {
  const inserted = await tx
    .insertInto('billing_events')
    .values(row)
    .onConflict((conflict) => conflict.columns(['program_id', 'provider', 'id']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

/** What came of a claimed event, written at the end of its work. */
export async function setBillingEventOutcome(
  tx: Tx,
  key: { programId: string; provider: string; id: string },
  outcome: Pick<BillingEventRow, 'outcome' | 'reason' | 'referral_id' | 'sale_id'> & Partial<Pick<BillingEventRow, 'waiting' | 'customer_id'>>,
): Promise<void> {
  await tx.updateTable('billing_events').set(outcome).where('program_id', '=', key.programId).where('provider', '=', key.provider).where('id', '=', key.id).execute();
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

/** Remembers which invoice a payment intent paid (a later refund names only the payment). */
export async function recordPayment(db: Db, programId: string, paymentIntent: string, invoiceId: string, now: string): Promise<void> {
  await db
    .insertInto('billing_payments')
    .values({ program_id: programId, payment_intent: paymentIntent, invoice_id: invoiceId, created_at: now })
    .onConflict((conflict) => conflict.columns(['program_id', 'payment_intent']).doNothing())
    .execute();
}

/**
 * Claims a part of a payment's refund the provider numbers (a Paddle adjustment), kept beside
 * the payments' references (billing_payments: the part's id, the payment it refunds): false when
 * it was claimed before — applied already. A second claim at the same moment waits on the first's
 * row (PostgreSQL's unique key; SQLite has one writer) and gets false once it commits.
 */
export async function claimRefundPart(tx: Tx, programId: string, partId: string, paymentId: string, now: string): Promise<boolean> {
  const inserted = await tx
    .insertInto('billing_payments')
    .values({ program_id: programId, payment_intent: partId, invoice_id: paymentId, created_at: now })
    .onConflict((conflict) => conflict.columns(['program_id', 'payment_intent']).doNothing())
    .returning('payment_intent')
    .executeTakeFirst();
  return inserted !== undefined;
}

/** A claimed refund part that could not be applied, given back so a later event of it can. */
export async function releaseRefundPart(tx: Tx, programId: string, partId: string): Promise<void> {
  await tx.deleteFrom('billing_payments').where('program_id', '=', programId).where('payment_intent', '=', partId).execute();
}

export async function invoiceOfPayment(db: Db, programId: string, paymentIntent: string): Promise<string | undefined> {
  const row = await db.selectFrom('billing_payments').select('invoice_id').where('program_id', '=', programId).where('payment_intent', '=', paymentIntent).executeTakeFirst();
  return row?.invoice_id;
}

/**
 * The condition of a waiting invoice, written as a literal: it is the partial indexes' own
 * condition (billing_events_waiting, billing_events_waiting_since), and a bound parameter in its
 * place would keep SQLite (and a generic PostgreSQL plan) from using them.
 */
const WAITING = sql.lit<'waiting'>('waiting');

/**
 * Serialises, on PostgreSQL, the two sides of one customer's waiting invoices until the
 * transaction ends: an invoice deciding to wait (after looking for the customer's referral) and
 * a referral settling the customer's waiting invoices (after making it). Whichever comes second
 * sees what the first committed, so an invoice never waits for a referral made at the same
 * moment. SQLite runs one writer at a time: nothing to do.
 */
export async function lockWaitingInvoicesOf(tx: Tx, programId: string, customerId: string): Promise<void> {
  if (dialectOf(tx) !== 'postgres') return;
  await sql`select pg_advisory_xact_lock(hashtext('tandem:billing-waiting'), hashtext(${`${programId}:${customerId}`}))`.execute(tx);
}

/**
 * How many invoices of the program wait, counted up to `upTo` (the cap: the count never reads
 * more index entries than that). On PostgreSQL it first takes the program's waiting lock until
 * the transaction ends, so two invoices deciding to wait at once are counted one after the
 * other and the cap holds exactly.
 */
export async function countWaitingInvoices(tx: Tx, programId: string, upTo: number): Promise<number> {
  if (dialectOf(tx) === 'postgres') await sql`select pg_advisory_xact_lock(hashtext('tandem:billing-waiting-count'), hashtext(${programId}))`.execute(tx);
  const row = await tx
    .selectFrom((eb) => eb.selectFrom('billing_events').select('id').where('program_id', '=', programId).where('outcome', '=', WAITING).limit(upTo).as('w'))
    .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Takes a customer's invoices waiting for their referral, received since `since` (oldest first,
 * at most `limit`), out of waiting and returns them: found through the partial index on
 * (program_id, customer_id) of the waiting rows, and marked in the same statement, so the
 * worker's expiry cannot ignore one the caller is turning into a sale. The caller writes each
 * one's outcome (settleBillingEvent) in the same transaction.
 */
export async function takeWaitingInvoicesOf(tx: Tx, programId: string, customerId: string, since: string, limit: number): Promise<BillingEventRow[]> {
  return tx
    .updateTable('billing_events')
    .set({ outcome: 'ignored', reason: 'being settled' })
    .where('program_id', '=', programId)
    .where('customer_id', '=', customerId)
    .where('outcome', '=', WAITING)
    .where((eb) =>
      eb(
        eb.refTuple('provider', 'id'),
        'in',
        eb
          .selectFrom('billing_events')
          .select(['provider', 'id'])
          .where('program_id', '=', programId)
          .where('customer_id', '=', customerId)
          .where('outcome', '=', WAITING)
          .where('created_at', '>=', since)
          .orderBy('created_at')
          .limit(limit)
          .$asTuple('provider', 'id'),
      ),
    )
    .returningAll()
    .execute();
}

/** A settled waiting invoice's outcome (its kept invoice is no longer needed). */
export async function settleBillingEvent(tx: Tx, row: Pick<BillingEventRow, 'program_id' | 'provider' | 'id'>, outcome: Pick<BillingEventRow, 'outcome' | 'reason' | 'referral_id' | 'sale_id'>): Promise<void> {
  await tx.updateTable('billing_events').set({ ...outcome, waiting: null }).where('program_id', '=', row.program_id).where('provider', '=', row.provider).where('id', '=', row.id).execute();
}

/**
 * One batch of the worker's expiry: at most `limit` invoices, of any program, that waited since
 * before `before` for a referral that never came, ignored with `reason`; returns how many. Found
 * through the partial index on the waiting rows' created_at; on PostgreSQL rows a request is
 * settling at this moment are skipped (SKIP LOCKED), never waited for, and the outer condition
 * is checked again on each row, so one settled meanwhile stays settled.
 */
export async function expireWaitingInvoicesBefore(db: Db, before: string, reason: string, limit: number): Promise<number> {
  const skipLocked = dialectOf(db) === 'postgres' ? sql`for update skip locked` : sql``;
  const result = await sql`
    update billing_events set outcome = 'ignored', reason = ${reason}, waiting = null
    where outcome = ${WAITING} and created_at < ${before}
      and (program_id, provider, id) in (
        select program_id, provider, id from billing_events
        where outcome = ${WAITING} and created_at < ${before}
        order by created_at limit ${limit} ${skipLocked})`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}

/** Billing events received before `before` (the worker's purge, with the event history); waiting ones are long ignored by then. */
export function purgeBillingEventsBefore(db: Db, before: string, deadline = Infinity): Promise<number> {
  return deleteInBatches(async (limit) => {
    const result = await sql`delete from billing_events where (program_id, provider, id) in (select program_id, provider, id from billing_events where created_at < ${before} limit ${limit})`.execute(db);
    return { numDeletedRows: result.numAffectedRows ?? 0n };
  }, undefined, deadline);
}

/**
 * The waiting payments of a customer, newest first (at most `limit`): a customer event that
 * credits nobody looks here for the referral a payment of theirs carried (billing.service.ts).
 */
export function findWaitingOf(db: Db, programId: string, customerId: string, limit: number): Promise<Pick<BillingEventRow, 'provider' | 'waiting'>[]> {
  return db
    .selectFrom('billing_events')
    .select(['provider', 'waiting'])
    .where('program_id', '=', programId)
    .where('customer_id', '=', customerId)
    .where('outcome', '=', WAITING)
    .orderBy('created_at', 'desc')
    .limit(limit)
    .execute();
}

/** Keeps (or refreshes) a customer a provider named with their e-mail while nothing credited them. */
export async function rememberBillingCustomer(db: Db, row: Insertable<BillingCustomersTable>): Promise<void> {
  await db
    .insertInto('billing_customers')
    .values(row)
    .onConflict((conflict) => conflict.columns(['program_id', 'provider', 'id']).doUpdateSet({ email: row.email, name: row.name, since: row.since, seen_at: row.seen_at }))
    .execute();
}

export function findBillingCustomer(db: Db, programId: string, provider: string, id: string): Promise<BillingCustomerRow | undefined> {
  return db.selectFrom('billing_customers').selectAll().where('program_id', '=', programId).where('provider', '=', provider).where('id', '=', id).executeTakeFirst();
}

/** Customers last named before `before` (the worker's purge, with the billing events that named them). */
export function purgeBillingCustomersBefore(db: Db, before: string, deadline = Infinity): Promise<number> {
  return deleteInBatches(async (limit) => {
    const result = await sql`delete from billing_customers where (program_id, provider, id) in (select program_id, provider, id from billing_customers where seen_at < ${before} limit ${limit})`.execute(db);
    return { numDeletedRows: result.numAffectedRows ?? 0n };
  }, undefined, deadline);
}
