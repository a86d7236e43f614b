import { sql, type Insertable, type Selectable } from 'kysely';
import { dialectOf } from '../../db/dialect.ts';
import type { WebhookAttemptsTable, WebhooksTable } from '../../db/schema.ts';
import { inTransaction, type Db, type Tx } from '../../db/transaction.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';

// All SQL of subscriptions, deliveries and attempts. Every query of a subscription is scoped
// by program_id; the worker's queries cross programs by design (it serves them all).

export type WebhookRow = Selectable<WebhooksTable>;

/**
 * A new subscription, starting after the last event numbered now (`after_sequence`): it gets
 * the events written from here on, whatever time they report. (On PostgreSQL, createWebhook
 * numbers what has committed first, in the same transaction.)
 */
export function insertWebhook(db: Db, row: Omit<Insertable<WebhooksTable>, 'after_sequence'>) {
  return db
    .insertInto('webhooks')
    .values({ ...row, after_sequence: sql<number>`(select last_sequence from outbox_state where id = 1)` })
    .execute();
}

/** Serialises the program's subscribes until the transaction ends (PostgreSQL; SQLite has one writer). */
export async function lockProgram(tx: Tx, programId: string): Promise<void> {
  // NO KEY UPDATE: subscribes of the program wait for each other, while inserts that merely
  // reference the program (its events, sales, deliveries: KEY SHARE) go on.
  if (dialectOf(tx) === 'postgres') await tx.selectFrom('programs').select('id').where('id', '=', programId).forNoKeyUpdate().execute();
}

/**
 * Whether the token is still unrevoked, read under a share lock on PostgreSQL: a revocation in
 * progress is waited for, and one that comes later waits for this transaction.
 */
export async function tokenStillActive(tx: Tx, tokenId: string): Promise<boolean> {
  let q = tx.selectFrom('api_tokens').select('revoked_at').where('id', '=', tokenId);
  if (dialectOf(tx) === 'postgres') q = q.forShare();
  const row = await q.executeTakeFirst();
  return row !== undefined && row.revoked_at === null;
}

export function countWebhooks(db: Db | Tx, programId: string): Promise<number> {
  return db
    .selectFrom('webhooks')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('program_id', '=', programId)
    .executeTakeFirstOrThrow()
    .then((r) => Number(r.n));
}

/** The program's subscription to exactly this URL (as stored: normalised by the URL parser), if any. */
export function findWebhookByUrl(tx: Tx, programId: string, url: string) {
  return tx.selectFrom('webhooks').select('id').where('program_id', '=', programId).where('url', '=', url).executeTakeFirst();
}

export function findWebhook(db: Db | Tx, programId: string, id: string) {
  return db.selectFrom('webhooks').selectAll().where('program_id', '=', programId).where('id', '=', id).executeTakeFirst();
}

export function listWebhooks(db: Db, programId: string, page: PageRequest) {
  return pageQuery(db.selectFrom('webhooks as w').selectAll('w').where('w.program_id', '=', programId), 'w', page).execute();
}

/** Deletes one subscription of the program; returns the deleted row. */
export async function deleteWebhookRow(db: Db, programId: string, id: string): Promise<WebhookRow | undefined> {
  return db.deleteFrom('webhooks').where('program_id', '=', programId).where('id', '=', id).returningAll().executeTakeFirst();
}

/** Deletes the subscriptions a token made (the token was revoked). */
export function deleteWebhooksOfToken(db: Db | Tx, tokenId: string) {
  return db.deleteFrom('webhooks').where('token_id', '=', tokenId).execute();
}

/** Re-enables an endpoint; its held deliveries are due at once. */
export function setWebhookEnabled(db: Db, programId: string, id: string, now: string) {
  return inTransaction(db, async (tx) => {
    const result = await tx
      .updateTable('webhooks')
      .set({ disabled_at: null, failing_since: null, updated_at: now })
      .where('program_id', '=', programId)
      .where('id', '=', id)
      .executeTakeFirst();
    await tx
      .updateTable('webhook_deliveries')
      .set({ state: 'pending', next_attempt_at: now, updated_at: now })
      .where('webhook_id', '=', id)
      .where('state', '=', 'held')
      .execute();
    return result;
  });
}

/** Per subscription: deliveries waiting, and the newest attempt's time and status. `webhookIds`: one page of subscriptions (bound one by one). */
export async function webhookDeliveryStats(db: Db, webhookIds: string[]) {
  if (webhookIds.length === 0) return new Map<string, { pending: number; failed: number }>();
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => ['webhook_id', 'state', eb.fn.countAll<number | string>().as('n')])
    .where('webhook_id', 'in', webhookIds)
    .where('state', 'in', ['pending', 'held', 'failed'])
    .groupBy(['webhook_id', 'state'])
    .execute();
  const stats = new Map<string, { pending: number; failed: number }>();
  for (const id of webhookIds) stats.set(id, { pending: 0, failed: 0 });
  // Held deliveries (of a disabled endpoint) are waiting too.
  for (const r of rows) stats.get(r.webhook_id)![r.state === 'failed' ? 'failed' : 'pending'] += Number(r.n);
  return stats;
}

/** The delivery of one event to one subscription, with its latest attempt (if any yet). */
export async function findDeliveryOfEvent(db: Db, webhookId: string, eventId: string) {
  const delivery = await db
    .selectFrom('webhook_deliveries')
    .select(['id', 'state', 'attempts', 'next_attempt_at'])
    .where('event_id', '=', eventId)
    .where('webhook_id', '=', webhookId)
    .executeTakeFirst();
  if (!delivery) return undefined;
  const attempt = await db
    .selectFrom('webhook_attempts')
    .select(['attempted_at', 'status_code', 'duration_ms', 'response_excerpt', 'error'])
    .where('webhook_id', '=', webhookId)
    .where('delivery_id', '=', delivery.id)
    .orderBy('attempted_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return { delivery, attempt };
}

/** A subscription's attempts, newest first, with the event type. */
export function listAttempts(db: Db, webhookId: string, page: PageRequest) {
  const q = db
    .selectFrom('webhook_attempts as a')
    .innerJoin('webhook_deliveries as d', 'd.id', 'a.delivery_id')
    .innerJoin('events as e', 'e.id', 'a.event_id')
    .select(['a.id', 'a.attempted_at as created_at', 'a.event_id', 'e.type as event_type', 'a.status_code', 'a.duration_ms', 'a.response_excerpt', 'a.error', 'd.id as delivery_id', 'd.state as delivery_state'])
    .where('a.webhook_id', '=', webhookId);
  // Attempts page by their time, as other lists do by created_at.
  const { createdAfter, after, limit } = page;
  let qq = q;
  if (createdAfter !== undefined) qq = qq.where('a.attempted_at', '>', createdAfter);
  if (after) qq = qq.where(sql<boolean>`(a.attempted_at, a.id) < (${after.createdAt}, ${after.id})`);
  return qq.orderBy('a.attempted_at', 'desc').orderBy('a.id', 'desc').limit(limit + 1).execute();
}

/** Puts deliveries back in the queue at once, as if new (replay). Returns how many. */
export async function requeueDeliveries(db: Db, webhookId: string, filter: { eventId?: string; failedSince?: string }, now: string): Promise<number> {
  let q = db
    .updateTable('webhook_deliveries')
    .set({ state: 'pending', attempts: 0, next_attempt_at: now, lease_id: null, lease_expires_at: null, updated_at: now })
    .where('webhook_id', '=', webhookId);
  if (filter.eventId !== undefined) q = q.where('event_id', '=', filter.eventId);
  if (filter.failedSince !== undefined) q = q.where('state', '=', 'failed').where('updated_at', '>=', filter.failedSince);
  const result = await q.executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export function insertDelivery(tx: Tx, webhook: { id: string; program_id: string }, eventId: string, now: string) {
  return tx
    .insertInto('webhook_deliveries')
    .values({ webhook_id: webhook.id, program_id: webhook.program_id, event_id: eventId, state: 'pending', attempts: 0, next_attempt_at: now, created_at: now, updated_at: now })
    .execute();
}

// ---- the worker -------------------------------------------------------------------------

/** Moves an endpoint's waiting (not leased) deliveries due before `retryAt` to `retryAt`. */
export function postponeEndpoint(db: Db | Tx, webhookId: string, retryAt: string, now: string) {
  return db
    .updateTable('webhook_deliveries')
    .set({ next_attempt_at: retryAt })
    .where('webhook_id', '=', webhookId)
    .where('state', '=', 'pending')
    .where('next_attempt_at', '<', retryAt)
    .where((w) => w.or([w('lease_expires_at', 'is', null), w('lease_expires_at', '<', now)]))
    .execute();
}

export interface ClaimedDelivery {
  id: number | string;
  attempts: number;
  webhook_id: string;
  url: string;
  secret: string;
  failing_since: string | Date | null;
  event_id: string;
  program_id: string;
  type: string;
  data: string;
  created_at: string | Date;
  sequence: number | string | null;
  /** The event's program's link to its live program: set on a test side (the envelope's livemode false). */
  live_program_id: string | null;
}

/**
 * Programs with deliveries due now (pending, not leased), in program-id order after `after`
 * (null: from the start): a loose index scan over the pending-deliveries index, one probe per
 * program with pending deliveries however many each has waiting, then one probe each for
 * whether any is due, so programs in backoff do not take turns.
 */
export async function programsWithDueDeliveries(db: Db, after: string | null, now: string, limit: number): Promise<string[]> {
  const start = after === null ? sql`` : sql`and program_id > ${after}`;
  const result = await sql<{ program_id: string }>`
    with recursive p(program_id) as (
      select (select program_id from webhook_deliveries where state = 'pending' and program_id is not null ${start} order by program_id limit 1)
      union all
      select (select d.program_id from webhook_deliveries d where d.state = 'pending' and d.program_id > p.program_id order by d.program_id limit 1)
      from p where p.program_id is not null
    )
    select p.program_id from p
    where p.program_id is not null
      and exists (
        select 1 from webhook_deliveries d
        where d.program_id = p.program_id and d.state = 'pending' and d.next_attempt_at <= ${now}
          and (d.lease_expires_at is null or d.lease_expires_at < ${now})
      )
    limit ${limit}`.execute(db);
  return result.rows.map((r) => String(r.program_id));
}

/**
 * Gives their program to deliveries a process of the previous release made during a rolling
 * upgrade (it did not know the column); until then the fair claim cannot see them.
 */
export async function assignDeliveryPrograms(db: Db): Promise<number> {
  // A read over an index that is normally empty first: the usual pass writes nothing.
  const stray = await db.selectFrom('webhook_deliveries').select('id').where('program_id', 'is', null).limit(1).executeTakeFirst();
  if (!stray) return 0;
  const result = await sql`
    update webhook_deliveries set program_id = (select w.program_id from webhooks w where w.id = webhook_deliveries.webhook_id)
    where id in (select id from webhook_deliveries where program_id is null limit 1000)`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}

/**
 * Takes up to `limit` due deliveries of one program for this worker: marks them with a lease
 * that another worker honours until it expires (so a worker that dies mid-send only delays
 * them). On PostgreSQL, SKIP LOCKED lets concurrent workers take disjoint batches without
 * waiting; on SQLite the single writer makes the UPDATE atomic. Oldest first within the
 * program, so one endpoint receives its events in sequence order where possible. Returns the ids.
 */
export async function claimDueDeliveries(
  db: Db,
  options: { programId: string; now: string; leaseId: string; leaseUntil: string; limit: number },
): Promise<(number | string)[]> {
  const pg = dialectOf(db) === 'postgres';
  const { programId, now, leaseId, leaseUntil, limit } = options;
  const claimed = await db
    .updateTable('webhook_deliveries')
    .set({ lease_id: leaseId, lease_expires_at: leaseUntil })
    .where('id', 'in', (eb) => {
      let due = eb
        .selectFrom('webhook_deliveries as d')
        .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
        .innerJoin('events as e', 'e.id', 'd.event_id')
        .select('d.id')
        .where('d.program_id', '=', programId)
        .where('d.state', '=', 'pending')
        .where('d.next_attempt_at', '<=', now)
        .where((w) => w.or([w('d.lease_expires_at', 'is', null), w('d.lease_expires_at', '<', now)]))
        .where('w.disabled_at', 'is', null)
        .where('e.sequence', 'is not', null)
        .orderBy('d.next_attempt_at')
        .orderBy('d.id')
        .limit(limit);
      if (pg) due = due.forUpdate('d').skipLocked();
      return due;
    })
    .returning('id')
    .execute();
  return claimed.map((c) => c.id);
}

/** Claimed deliveries with what sending them needs, read by primary key (never by scanning for the lease). */
export function readClaimedDeliveries(db: Db, ids: (number | string)[]): Promise<ClaimedDelivery[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .innerJoin('programs as p', 'p.id', 'e.program_id')
    .select(['d.id', 'd.attempts', 'd.webhook_id', 'w.url', 'w.secret', 'w.failing_since', 'e.id as event_id', 'e.program_id', 'e.type', 'e.data', 'e.created_at', 'e.sequence', 'p.live_program_id'])
    .where('d.id', 'in', ids)
    .orderBy('d.id')
    .execute() as Promise<ClaimedDelivery[]>;
}

/**
 * Gives leased deliveries back unsent, only while lease `leaseId` is still on them: due at
 * `retryAt`, or when they were due (null). 500 ids a statement.
 */
export async function releaseLeases(db: Db, leaseId: string, ids: (number | string)[], retryAt: string | null): Promise<void> {
  for (let i = 0; i < ids.length; i += 500) {
    await db
      .updateTable('webhook_deliveries')
      .set({ lease_id: null, lease_expires_at: null, ...(retryAt === null ? {} : { next_attempt_at: retryAt }) })
      .where('id', 'in', ids.slice(i, i + 500))
      .where('lease_id', '=', leaseId)
      .execute();
  }
}

export interface DeliveryOutcome {
  delivery: ClaimedDelivery;
  attempt: Omit<Insertable<WebhookAttemptsTable>, 'id' | 'delivery_id' | 'webhook_id' | 'event_id'>;
  /** delivered; retry at `nextAttemptAt`; failed for good; or the endpoint answered 410. */
  result: { kind: 'delivered' } | { kind: 'retry'; nextAttemptAt: string } | { kind: 'failed' } | { kind: 'gone' };
}

/**
 * Stores a batch of attempts and their consequences in one transaction. Each delivery is
 * updated only while this worker's lease is on it, so a late answer after the lease expired
 * (and another worker took over) does not overwrite the newer state. Outcomes of endpoints or
 * deliveries deleted meanwhile (their program removed the subscription) are dropped, not
 * written: they would break the foreign keys and roll the whole batch back. The endpoints are
 * locked first (KEY SHARE on PostgreSQL, the lock a DELETE of the endpoint waits on), then the
 * deliveries, the order a DELETE's cascade takes them, so the two never deadlock.
 */
export async function recordOutcomes(tx: Tx, leaseId: string, batch: DeliveryOutcome[], now: string, disableFailingSince: string): Promise<void> {
  const pg = dialectOf(tx) === 'postgres';
  const webhookIds = [...new Set(batch.map((o) => o.delivery.webhook_id))];
  let liveWebhooks = tx.selectFrom('webhooks').select('id').where('id', 'in', webhookIds).orderBy('id');
  if (pg) liveWebhooks = liveWebhooks.forKeyShare();
  const live = new Set((await liveWebhooks.execute()).map((r) => r.id));
  const held = new Set<string>();
  const candidates = batch.filter((o) => live.has(o.delivery.webhook_id)).map((o) => o.delivery.id);
  for (let i = 0; i < candidates.length; i += 500) {
    let ours = tx.selectFrom('webhook_deliveries').select('id').where('id', 'in', candidates.slice(i, i + 500)).where('lease_id', '=', leaseId).orderBy('id');
    if (pg) ours = ours.forUpdate();
    for (const r of await ours.execute()) held.add(String(r.id));
  }
  const outcomes = batch.filter((o) => held.has(String(o.delivery.id)));
  const delivered = outcomes.filter((o) => o.result.kind === 'delivered').map((o) => o.delivery.id);
  for (let i = 0; i < delivered.length; i += 500) {
    await tx
      .updateTable('webhook_deliveries')
      .set((eb) => ({ state: 'delivered', attempts: eb('attempts', '+', 1), lease_id: null, lease_expires_at: null, updated_at: now }))
      .where('id', 'in', delivered.slice(i, i + 500))
      .where('lease_id', '=', leaseId)
      .execute();
  }
  for (const { delivery, result } of outcomes) {
    if (result.kind === 'retry' || result.kind === 'failed') {
      await tx
        .updateTable('webhook_deliveries')
        .set((eb) => ({
          state: result.kind === 'failed' ? 'failed' : 'pending',
          attempts: eb('attempts', '+', 1),
          next_attempt_at: result.kind === 'retry' ? result.nextAttemptAt : now,
          lease_id: null,
          lease_expires_at: null,
          updated_at: now,
        }))
        .where('id', '=', delivery.id)
        .where('lease_id', '=', leaseId)
        .execute();
    }
  }
  const attempts = outcomes
    .filter((o) => o.result.kind !== 'gone')
    .map((o) => ({ ...o.attempt, delivery_id: o.delivery.id, webhook_id: o.delivery.webhook_id, event_id: o.delivery.event_id }));
  for (let i = 0; i < attempts.length; i += 500) await tx.insertInto('webhook_attempts').values(attempts.slice(i, i + 500)).execute();

  // Per endpoint: a success ends a failing run; a failure starts one, and a run as long as the
  // disable threshold disables the endpoint; 410 Gone removes the subscription.
  const byWebhook = new Map<string, DeliveryOutcome['result']['kind'][]>();
  for (const o of outcomes) byWebhook.set(o.delivery.webhook_id, [...(byWebhook.get(o.delivery.webhook_id) ?? []), o.result.kind]);
  for (const [webhookId, kinds] of byWebhook) {
    if (kinds.includes('gone')) {
      await tx.deleteFrom('webhooks').where('id', '=', webhookId).execute();
    } else if (kinds.includes('delivered')) {
      await tx.updateTable('webhooks').set({ failing_since: null }).where('id', '=', webhookId).where('failing_since', 'is not', null).execute();
    } else {
      await tx.updateTable('webhooks').set({ failing_since: now }).where('id', '=', webhookId).where('failing_since', 'is', null).execute();
      // The endpoint is down: its other waiting deliveries wait for the same retry time, so it
      // is probed once per retry wave instead of taking a turn for every queued event.
      const retryAt = outcomes
        .filter((o) => o.delivery.webhook_id === webhookId && o.result.kind === 'retry')
        .map((o) => (o.result as { nextAttemptAt: string }).nextAttemptAt)
        .sort()[0];
      if (retryAt !== undefined) await postponeEndpoint(tx, webhookId, retryAt, now);
      const disabled = await tx
        .updateTable('webhooks')
        .set({ disabled_at: now, updated_at: now })
        .where('id', '=', webhookId)
        .where('disabled_at', 'is', null)
        .where('failing_since', '<=', disableFailingSince)
        .executeTakeFirst();
      // Its queue waits out of the due index, so claims never wade through it.
      if (disabled.numUpdatedRows > 0n) {
        await tx.updateTable('webhook_deliveries').set({ state: 'held', updated_at: now }).where('webhook_id', '=', webhookId).where('state', '=', 'pending').execute();
      }
    }
  }
}
