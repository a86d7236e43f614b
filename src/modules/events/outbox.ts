import { sql, type RawBuilder } from 'kysely';
import { toIso } from '../../domain/clock.ts';
import { randomToken } from '../../domain/ids.ts';
import { inTransaction, type Db, type Tx } from '../../db/transaction.ts';
import { compiledInsert, compiledQuery } from '../../db/compiled-query.ts';
import { dialectOf } from '../../db/dialect.ts';
import { deleteInBatches } from '../../db/batched-delete.ts';

/** Every event type of CONTRACT.md; a subscription may name any of them before it first occurs. */
export const EVENT_TYPES = [
  'affiliate.created',
  'affiliate.updated',
  'affiliate.deleted',
  'referral.created',
  'referral.updated',
  'referral.deleted',
  'sale.created',
  'sale.updated',
  'sale.deleted',
  'sale.refunded',
  'link.created',
  'link.updated',
  'link.deleted',
  'coupon.created',
  'coupon.updated',
  'coupon.deleted',
  'promotional_code.created',
  'promotional_code.updated',
  'promotional_code.deleted',
  'promotional_code.redeemed',
  'webhook.test',
  'payout.created',
  'payout.paid',
  'payout.failed',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** The types a subscription may name; `webhook.test` only ever goes where it is sent. */
export const SUBSCRIBABLE_EVENT_TYPES = EVENT_TYPES.filter((type) => type !== 'webhook.test');

/**
 * Writes an event in the caller's transaction (the outbox pattern): it commits with the
 * change it reports or not at all. `data` is the resource exactly as the API returns it.
 * The event has no sequence yet: see sequenceEvents.
 */
/** A new event's id. */
export function newEventId(): string {
  return `evt_${randomToken(18)}`;
}

export async function recordEvent(tx: Tx, programId: string, type: EventType, data: unknown, at: string): Promise<string> {
  const id = newEventId();
  await recordEventJson(tx, id, programId, type, JSON.stringify(data), at);
  return id;
}

/** recordEvent with its id chosen and its data as JSON text already (a one-statement write's SQLite side). */
export async function recordEventJson(tx: Tx, id: string, programId: string, type: EventType, json: string, at: string): Promise<void> {
  const sequence = dialectOf(tx) === 'sqlite' ? await reserveSequences(tx, 1) : null;
  await insertEventQuery.run(tx, { id, program_id: programId, type, data: json, created_at: at, sequence });
}

/**
 * PostgreSQL: the insert of an event as a sub-statement of a one-statement write (a new sale or
 * referral), one per row of the CTE `from`, so it is written only if that row is; `data` is an
 * SQL expression (it may read the row's id). Unnumbered, as recordEvent writes it on PostgreSQL.
 * Each value is cast: parameters in an INSERT … SELECT list carry no column type.
 */
export function eventInsertFrom(
  from: string,
  event: { id: unknown; programId: unknown; type: EventType; data: RawBuilder<unknown>; createdAt: unknown },
): RawBuilder<unknown> {
  return sql`insert into events (id, program_id, type, data, created_at, sequence)
    select cast(${event.id} as text), cast(${event.programId} as uuid), ${sql.lit(event.type)}, ${event.data}, cast(${event.createdAt} as timestamptz), null
    from ${sql.table(from)}`;
}

const insertEventQuery = compiledInsert('events');

/** recordEvent for many changes of one type at once (bulk generation), 500 rows per statement. */
export async function recordEvents(tx: Tx, programId: string, type: EventType, data: unknown[], at: string): Promise<void> {
  const last = dialectOf(tx) === 'sqlite' && data.length > 0 ? await reserveSequences(tx, data.length) : null;
  const rows = data.map((item, i) => ({
    id: newEventId(),
    program_id: programId,
    type,
    data: JSON.stringify(item),
    created_at: at,
    sequence: last === null ? null : last - data.length + 1 + i,
  }));
  for (let i = 0; i < rows.length; i += 500) await tx.insertInto('events').values(rows.slice(i, i + 500)).execute();
}

const advanceSequence = compiledQuery<{ count: number }, { last_sequence: number }>((db, param) =>
  db
    .updateTable('outbox_state')
    .set((eb) => ({ last_sequence: eb('last_sequence', '+', param('count')) }))
    .where('id', '=', 1)
    .returning('last_sequence'),
);

/**
 * SQLite: the next `count` event numbers, taken in the writing transaction; the last of them.
 * One writer at a time (transactions begin IMMEDIATE, in every process) means events commit in
 * the order they are numbered, so an event is numbered as it is written, and the sequencer's
 * second write of every event row is saved. A transaction that rolls back takes its numbers
 * back with it.
 */
async function reserveSequences(tx: Tx, count: number): Promise<number> {
  const row = await advanceSequence.first(tx, { count });
  if (row === undefined) throw new Error('outbox_state has no row: the database is not migrated');
  return Number(row.last_sequence);
}

/** How many events one sequencing step numbers at most (it holds the outbox lock meanwhile). */
const SEQUENCE_BATCH = 1000;

/**
 * Numbers committed events that have no sequence yet, in one short transaction (on PostgreSQL;
 * SQLite numbers events as it writes them, see reserveSequences). Returns how many events it
 * numbered. Deliveries to subscriptions are made later, program by program, by
 * the webhook worker (webhooks/fan-out.ts): numbering stays cheap and bounded wherever it runs,
 * a poll included.
 *
 * Why numbers are given after commit rather than by a database sequence at insert: on
 * PostgreSQL, concurrent transactions draw sequence values in one order and commit in another,
 * so a reader that saw 11 could later find 10 appear and, resuming "after 11", skip it. Here an
 * event is numbered only once it is visible (committed), and sequencers are serialised by the
 * row lock on outbox_state held until they commit; so every event numbered later gets a larger
 * number than every event a reader has already seen. The resume cursor is therefore safe, and
 * writers never wait on each other for it: the cost is one extra statement per batch, paid by
 * the worker. On SQLite writers wait on each other anyway, so numbering at insert costs no
 * waiting (events written by an older release without a number are still numbered here).
 */
export async function sequenceEvents(db: Db): Promise<number> {
  return inTransaction(db, numberCommittedEvents);
}

/**
 * Numbers what committed before the caller's transaction, in it, so that a new subscription
 * starts after it (webhooks' createWebhook, after_sequence): PostgreSQL numbers events just after
 * they commit; SQLite numbers them as it writes them, so there is nothing to do. A backlog beyond
 * a few batches is left to the worker.
 */
export async function numberEventsCommittedBefore(tx: Tx): Promise<void> {
  if (dialectOf(tx) !== 'postgres') return;
  for (let batch = 0; batch < 5; batch++) if ((await numberCommittedEvents(tx)) === 0) break;
}

/**
 * One sequencing step inside the caller's transaction (sequenceEvents; a new subscription, so
 * that what committed before it is numbered before it, see webhooks' createWebhook). Holds the
 * outbox lock until the transaction ends.
 */
export async function numberCommittedEvents(tx: Tx): Promise<number> {
  // Taking the row lock first: a concurrent sequencer waits here until this one commits.
  const state = await tx
    .updateTable('outbox_state')
    .set((eb) => ({ last_sequence: eb.ref('last_sequence') }))
    .where('id', '=', 1)
    .returning('last_sequence')
    .executeTakeFirstOrThrow();
  const last = Number(state.last_sequence);
  const numbered = await sql`
    update events set sequence = ${last} + numbered.n
    from (
      select id, row_number() over (order by created_at, id) as n
      from (select id, created_at from events where sequence is null order by created_at, id limit ${SEQUENCE_BATCH}) as pending
    ) as numbered
    where events.id = numbered.id`.execute(tx);
  const count = Number(numbered.numAffectedRows ?? 0n);
  if (count === 0) return 0;
  await tx.updateTable('outbox_state').set({ last_sequence: last + count }).where('id', '=', 1).execute();
  return count;
}

export interface EventRow {
  id: string;
  program_id: string;
  type: string;
  data: string;
  created_at: string | Date;
  sequence: number | string | null;
}

/**
 * The envelope as JSON text, built around the stored `data` text so that it is not parsed
 * and re-serialised: the bytes signed are the bytes sent.
 */
export function envelopeJson(row: EventRow, livemode: boolean): string {
  const head = { id: row.id, type: row.type, timestamp: toIso(row.created_at), programId: row.program_id, sequence: Number(row.sequence), livemode };
  return `${JSON.stringify(head).slice(0, -1)},"data":${row.data}}`;
}

/** Whether any committed event still waits for its number (an index-only probe). */
export async function hasUnsequencedEvents(db: Db): Promise<boolean> {
  const row = await db.selectFrom('events').select('id').where('sequence', 'is', null).limit(1).executeTakeFirst();
  return row !== undefined;
}

/** Rows read per statement while filling a page of events, so a page never reads far past its byte budget. */
const EVENT_READ_CHUNK = 50;

/**
 * A program's numbered events after a sequence, oldest first (polling): at most `limit` of them
 * and, past the first, no more than `maxBytes` of envelope JSON — a page of large events stops
 * early and the caller's next page resumes after its last event.
 */
export async function listEventsAfter(
  db: Db,
  programId: string,
  query: { after: number; types?: string[]; limit: number; maxBytes: number; livemode: boolean },
): Promise<{ envelopes: string[]; lastSequence: number }> {
  // Deduplicated, the list is bounded by EVENT_TYPES whatever the query string repeats.
  const types = query.types && query.types.length > 0 ? [...new Set(query.types)] : undefined;
  const envelopes: string[] = [];
  let bytes = 2; // the array's brackets
  let after = query.after;
  const page = () => ({ envelopes, lastSequence: after });
  for (;;) {
    const want = Math.min(EVENT_READ_CHUNK, query.limit - envelopes.length);
    let q = db
      .selectFrom('events')
      .select(['id', 'program_id', 'type', 'data', 'created_at', 'sequence'])
      .where('program_id', '=', programId)
      .where('sequence', '>', after);
    if (types) q = q.where('type', 'in', types);
    const rows = await q.orderBy('sequence').limit(want).execute();
    for (const row of rows) {
      const json = envelopeJson(row, query.livemode);
      const size = Buffer.byteLength(json) + (envelopes.length > 0 ? 1 : 0); // and its comma
      if (envelopes.length > 0 && bytes + size > query.maxBytes) return page();
      envelopes.push(json);
      bytes += size;
      after = Number(row.sequence);
    }
    if (rows.length < want || envelopes.length >= query.limit) return page();
  }
}

/** Events deleted per statement by the purge (bound parameters stay few). */
const EVENT_PURGE_BATCH = 500;

/**
 * Deletes events created before `cutoff` (their deliveries and attempts go with them), oldest
 * sequence first, a batch at a time, over the sequence index every event already has: one
 * statement pair per batch, whatever the number of programs. Numbers follow commit order, so
 * the walk stops at the first event still young; a rare older straggler numbered after it goes
 * at a later purge. Stops at `deadline` (a `performance.now()` time), the rest left for the next pass.
 */
export function purgeEventsBefore(db: Db, cutoff: string, deadline = Infinity): Promise<number> {
  return deleteInBatches(
    async (limit) => {
      const oldest = await db.selectFrom('events').select(['id', 'created_at']).where('sequence', 'is not', null).orderBy('sequence').limit(limit).execute();
      const young = oldest.findIndex((row) => toIso(row.created_at) >= cutoff);
      const old = young === -1 ? oldest : oldest.slice(0, young);
      if (old.length > 0) await db.deleteFrom('events').where('id', 'in', old.map((row) => row.id)).execute();
      return { numDeletedRows: BigInt(old.length) };
    },
    EVENT_PURGE_BATCH,
    deadline,
  );
}

/** Sale events read at most, looking for one sale's: a busy program's sale page stays cheap. */
export const SALE_EVENTS_SCANNED = 2000;

/**
 * The events about one sale (sale.created, .updated, .refunded, .deleted), oldest first: found
 * among the program's first SALE_EVENTS_SCANNED sale events since the sale was made (over the
 * (program_id, created_at, id) index), so the work is bounded however busy the program is.
 */
export async function listSaleEvents(db: Db, programId: string, saleId: number, since: string): Promise<EventRow[]> {
  const rows = await db
    .selectFrom('events')
    .selectAll()
    .where('program_id', '=', programId)
    .where('created_at', '>=', since)
    .where('type', 'in', ['sale.created', 'sale.updated', 'sale.refunded', 'sale.deleted'])
    .orderBy('created_at')
    .orderBy('id')
    .limit(SALE_EVENTS_SCANNED)
    .execute();
  return rows.filter((row) => (JSON.parse(row.data) as { id?: unknown }).id === saleId);
}
