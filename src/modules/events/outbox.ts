import { sql } from 'kysely';
import { toIso, type Clock } from '../../domain/clock.ts';
import { randomToken } from '../../domain/ids.ts';
import { inTransaction, type Db, type Tx } from '../../db/transaction.ts';
import { timestampValue } from '../../db/dialect.ts';
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
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** The types a subscription may name; `webhook.test` only ever goes where it is sent. */
export const SUBSCRIBABLE_EVENT_TYPES = EVENT_TYPES.filter((type) => type !== 'webhook.test');

/**
 * Writes an event in the caller's transaction (the outbox pattern): it commits with the
 * change it reports or not at all. `data` is the resource exactly as the API returns it.
 * The event has no sequence yet: see sequenceEvents.
 */
export async function recordEvent(tx: Tx, programId: string, type: EventType, data: unknown, at: string): Promise<string> {
  const id = `evt_${randomToken(18)}`;
  await tx
    .insertInto('events')
    .values({ id, program_id: programId, type, data: JSON.stringify(data), created_at: at, sequence: null })
    .execute();
  return id;
}

/** recordEvent for many changes of one type at once (bulk generation), 500 rows per statement. */
export async function recordEvents(tx: Tx, programId: string, type: EventType, data: unknown[], at: string): Promise<void> {
  const rows = data.map((item) => ({ id: `evt_${randomToken(18)}`, program_id: programId, type, data: JSON.stringify(item), created_at: at, sequence: null }));
  for (let i = 0; i < rows.length; i += 500) await tx.insertInto('events').values(rows.slice(i, i + 500)).execute();
}

/** How many events one sequencing step numbers at most (it holds the outbox lock meanwhile). */
const SEQUENCE_BATCH = 1000;

/**
 * Numbers committed events that have no sequence yet, in one short transaction, and creates
 * their deliveries to the program's subscriptions. Returns how many events it numbered.
 *
 * Why numbers are given after commit rather than by a database sequence at insert: on
 * PostgreSQL, concurrent transactions draw sequence values in one order and commit in another,
 * so a reader that saw 11 could later find 10 appear and, resuming "after 11", skip it. Here an
 * event is numbered only once it is visible (committed), and sequencers are serialised by the
 * row lock on outbox_state held until they commit; so every event numbered later gets a larger
 * number than every event a reader has already seen. The resume cursor is therefore safe on
 * both dialects (SQLite has one writer at a time anyway), and writers never wait on each other
 * for it: the cost is one extra statement per batch, paid by the worker.
 */
export async function sequenceEvents(db: Db, clock: Clock): Promise<number> {
  return inTransaction(db, async (tx) => {
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
    await fanOut(tx, last, last + count, clock());
    return count;
  });
}

/**
 * One pending delivery per (new event, subscription of its program that wants its type).
 * Subscriptions made after the event are skipped; disabled ones still get theirs, held until
 * the endpoint is re-enabled, so re-enabling delivers what it missed. `webhook.test` goes only where it is sent.
 * Subscriptions store their types as a JSON array, so `"type"` with its quotes matches whole names.
 */
async function fanOut(tx: Tx, after: number, upTo: number, now: Date): Promise<void> {
  const at = timestampValue(tx, now.toISOString());
  await sql`
    insert into webhook_deliveries (webhook_id, event_id, state, attempts, next_attempt_at, created_at, updated_at)
    select w.id, e.id, case when w.disabled_at is null then 'pending' else 'held' end, 0, ${at}, ${at}, ${at}
    from events e join webhooks w on w.program_id = e.program_id
    where e.sequence > ${after} and e.sequence <= ${upTo}
      and e.type <> 'webhook.test'
      and w.created_at <= e.created_at
      and (w.events = '["*"]' or w.events like '%"' || e.type || '"%')
    order by e.sequence, w.id`.execute(tx);
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
export function envelopeJson(row: EventRow): string {
  const head = { id: row.id, type: row.type, timestamp: toIso(row.created_at), programId: row.program_id, sequence: Number(row.sequence) };
  return `${JSON.stringify(head).slice(0, -1)},"data":${row.data}}`;
}

/** Whether any committed event still waits for its number (an index-only probe). */
export async function hasUnsequencedEvents(db: Db): Promise<boolean> {
  const row = await db.selectFrom('events').select('id').where('sequence', 'is', null).limit(1).executeTakeFirst();
  return row !== undefined;
}

/** A program's numbered events after a sequence, oldest first (polling). */
export function listEventsAfter(db: Db, programId: string, query: { after: number; types?: string[]; limit: number }): Promise<EventRow[]> {
  let q = db
    .selectFrom('events')
    .select(['id', 'program_id', 'type', 'data', 'created_at', 'sequence'])
    .where('program_id', '=', programId)
    .where('sequence', '>', query.after);
  // Deduplicated, the list is bounded by EVENT_TYPES whatever the query string repeats.
  if (query.types && query.types.length > 0) q = q.where('type', 'in', [...new Set(query.types)]);
  return q.orderBy('sequence').limit(query.limit).execute();
}

/**
 * Deletes events created before `cutoff` (their deliveries and attempts go with them), a
 * program and a batch at a time, over the (program_id, created_at) index every event already
 * has, so no index is kept on every event for a job that runs every few minutes.
 */
export async function purgeEventsBefore(db: Db, cutoff: string): Promise<number> {
  let total = 0;
  const programs = await db.selectFrom('programs').select('id').execute();
  for (const { id: programId } of programs) {
    total += await deleteInBatches((limit) =>
      db
        .deleteFrom('events')
        .where('id', 'in', (eb) => eb.selectFrom('events').select('id').where('program_id', '=', programId).where('created_at', '<', cutoff).limit(limit))
        .executeTakeFirst(),
    );
  }
  return total;
}
