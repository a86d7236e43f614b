import { sql } from 'kysely';
import { timestampValue } from '../../db/dialect.ts';
import { inTransaction, type Db, type Tx } from '../../db/transaction.ts';
import { nextRound } from './round-robin.ts';

// Fan-out: one pending delivery per (numbered event, subscription of its program that wants
// its type). It runs in the webhook worker only, program by program, each program from its own
// watermark (webhook_fanout.last_sequence) and only while the program has fewer than its bound
// of pending deliveries: beyond the bound its new events wait, numbered and kept, until its
// endpoints catch up. So one request can no longer create hundreds of thousands of rows at
// once, and no program's burst delays another's deliveries.
//
// A subscription gets the events numbered after it was made (after_sequence), whatever time
// they report; disabled ones still get theirs, held until the
// endpoint is re-enabled (up to MAX_HELD_PER_ENDPOINT), so re-enabling delivers what it missed. `webhook.test` goes only where
// it is sent. Subscriptions store their types as a JSON array, so `"type"` with its quotes
// matches whole names.

/** Deliveries held for one disabled endpoint at most: past it, its new events are not queued for it. */
export const MAX_HELD_PER_ENDPOINT = 1000;

export interface FanOutLimits {
  /** Pending deliveries a program may have; at the bound its events wait. */
  maxPendingPerProgram: number;
  /** Deliveries made for one program in one step. */
  maxRowsPerStep: number;
  /** Programs served in one pass (round-robin after `after`). */
  maxPrograms: number;
}

/** Starts fan-out for a program that gets its first subscription: from the events numbered after now. */
export async function startFanOut(tx: Tx, programId: string): Promise<void> {
  await sql`
    insert into webhook_fanout (program_id, last_sequence)
    select ${programId}, last_sequence from outbox_state where id = 1
    on conflict (program_id) do nothing`.execute(tx);
}

/** Programs with numbered events past their watermark, in program-id order after `after`. */
async function programsToFanOut(db: Db, after: string | null, limit: number): Promise<string[]> {
  let q = db
    .selectFrom('webhook_fanout as f')
    .select('f.program_id')
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('events as e')
          .select('e.id')
          .whereRef('e.program_id', '=', 'f.program_id')
          .whereRef('e.sequence', '>', 'f.last_sequence'),
      ),
    )
    .orderBy('f.program_id')
    .limit(limit);
  if (after !== null) q = q.where('f.program_id', '>', after);
  return (await q.execute()).map((r) => r.program_id);
}

/** Counts a program's pending deliveries, up to `bound` (an index range read that stops there). */
async function countPendingDeliveries(db: Db | Tx, programId: string, bound: number): Promise<number> {
  const row = await db
    .selectFrom((eb) =>
      eb.selectFrom('webhook_deliveries').select('id').where('program_id', '=', programId).where('state', '=', 'pending').limit(bound).as('pending'),
    )
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * The program's disabled endpoints whose held queue is at MAX_HELD_PER_ENDPOINT (`full`), and
 * how many more the least roomy of the others can hold (`room`; Infinity with none).
 */
async function heldQueues(tx: Tx, programId: string): Promise<{ full: string[]; room: number }> {
  const disabled = await tx.selectFrom('webhooks').select('id').where('program_id', '=', programId).where('disabled_at', 'is not', null).execute();
  const full: string[] = [];
  let room = Infinity;
  for (const { id } of disabled) {
    const held = await tx
      .selectFrom((eb) => eb.selectFrom('webhook_deliveries').select('id').where('webhook_id', '=', id).where('state', '=', 'held').limit(MAX_HELD_PER_ENDPOINT).as('held'))
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirstOrThrow();
    const left = MAX_HELD_PER_ENDPOINT - Number(held.n);
    if (left <= 0) full.push(id);
    else room = Math.min(room, left);
  }
  return { full, room };
}

/** One program's step: deliveries for its next events, as many as its bound leaves room for. Returns the rows made. */
async function fanOutProgram(db: Db, programId: string, limits: FanOutLimits, now: string): Promise<number> {
  return inTransaction(db, async (tx) => {
    // The watermark row's lock serialises this program's fan-out across workers.
    const mark = await tx
      .updateTable('webhook_fanout')
      .set((eb) => ({ last_sequence: eb.ref('last_sequence') }))
      .where('program_id', '=', programId)
      .returning('last_sequence')
      .executeTakeFirst();
    if (!mark) return 0;
    const from = Number(mark.last_sequence);
    const room = limits.maxPendingPerProgram - (await countPendingDeliveries(tx, programId, limits.maxPendingPerProgram));
    if (room <= 0) return 0;
    const subscriptions = await tx
      .selectFrom('webhooks')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .where('program_id', '=', programId)
      .executeTakeFirstOrThrow();
    // A disabled endpoint keeps a queue for when it is re-enabled, up to its cap; past it, it
    // misses events (they can be polled) rather than grow without bound.
    const held = await heldQueues(tx, programId);
    const full = held.full;
    // Each event makes at most one row per subscription: take as many events as keep the step
    // within both bounds (the pending bound is at least the subscription cap, so an empty queue
    // always has room for one event).
    const perEvent = Math.max(1, Number(subscriptions.n));
    // …and no disabled endpoint's held queue past its cap (an event makes at most one row each).
    const events = Math.min(Math.floor(Math.min(room, limits.maxRowsPerStep) / perEvent), held.room);
    if (events === 0) return 0;
    const last = await tx
      .selectFrom((eb) =>
        eb
          .selectFrom('events')
          .select('sequence')
          .where('program_id', '=', programId)
          .where('sequence', '>', from)
          .orderBy('sequence')
          .limit(events)
          .as('next'),
      )
      .select((eb) => eb.fn.max('sequence').as('upTo'))
      .executeTakeFirst();
    if (last?.upTo === null || last?.upTo === undefined) return 0;
    const upTo = Number(last.upTo);
    const at = timestampValue(tx, now);
    const skipFull = full.length === 0 ? sql`` : sql`and w.id not in (${sql.join(full)})`;
    // ON CONFLICT: a process of the previous release (a rolling upgrade) may have made some of
    // these rows already, in its own sequencer.
    const made = await sql`
      insert into webhook_deliveries (webhook_id, program_id, event_id, state, attempts, next_attempt_at, created_at, updated_at)
      select w.id, w.program_id, e.id, case when w.disabled_at is null then 'pending' else 'held' end, 0, ${at}, ${at}, ${at}
      from events e join webhooks w on w.program_id = e.program_id
      where e.program_id = ${programId} and e.sequence > ${from} and e.sequence <= ${upTo}
        and e.type <> 'webhook.test'
        and e.sequence > w.after_sequence
        and (w.events = '["*"]' or w.events like '%"' || e.type || '"%')
        ${skipFull}
      order by e.sequence, w.id
      on conflict (event_id, webhook_id) do nothing`.execute(tx);
    await tx.updateTable('webhook_fanout').set({ last_sequence: upTo }).where('program_id', '=', programId).execute();
    return Number(made.numAffectedRows ?? 0n);
  });
}

/**
 * One fan-out pass over the programs with events waiting, round-robin: `after` is where the
 * previous pass stopped. Returns the deliveries made and where to start the next pass.
 */
export async function fanOutPass(
  db: Db,
  limits: FanOutLimits,
  now: string,
  after: string | null,
  onError: (error: unknown, programId: string) => void,
): Promise<{ made: number; next: string | null }> {
  const programs = await nextRound(after, limits.maxPrograms, (from, limit) => programsToFanOut(db, from, limit));
  let made = 0;
  for (const programId of programs) {
    // One program's failure (its subscriptions deleted mid-step, say) is its own: the others go on.
    try {
      made += await fanOutProgram(db, programId, limits, now);
    } catch (error) {
      onError(error, programId);
    }
  }
  return { made, next: programs.length === limits.maxPrograms ? programs[programs.length - 1]! : null };
}
