import { randomUUID } from 'node:crypto';
import type { Config } from '../../config.ts';
import type { Clock } from '../../domain/clock.ts';
import { purgeExpired } from '../maintenance/purge-expired.ts';
import { inTransaction, type Db } from '../../db/transaction.ts';
import { envelopeJson, hasUnsequencedEvents, purgeEventsBefore, sequenceEvents } from '../events/outbox.ts';
import { signatureHeader } from './signature.ts';
import { fanOutPass } from './fan-out.ts';
import { nextRound } from './round-robin.ts';
import { createWebhookSender, type SendResult, type WebhookSender } from './webhook-sender.ts';
import { webhookDnsFor } from './webhook-dns.ts';
import {
  claimDueDeliveries,
  assignDeliveryPrograms,
  programsWithDueDeliveries,
  readClaimedDeliveries,
  recordOutcomes,
  type ClaimedDelivery,
  type DeliveryOutcome,
} from './webhook.repository.ts';

// The delivery worker: runs inside `tandem serve` (unless WORKER=off) and as `tandem worker`.
// Everything it knows is in the database, so any number of them may run, on any process, and
// a killed one loses nothing: it numbers committed events (sequenceEvents), makes their
// deliveries program by program within each program's bound (fan-out.ts), leases due
// deliveries, sends them, and stores each attempt and its consequence (delivered, retry at,
// failed, endpoint gone or disabled).
//
// Fair shares: each pass visits the programs with pending deliveries in turn (round-robin,
// continuing where the last pass stopped) and leases at most PER_PROGRAM_IN_FLIGHT of a
// program's deliveries at once, so a program whose endpoints hang holds only its own share of
// the worker and every other program's deliveries still leave at the next pass.
//
// Per endpoint, deliveries go through one lane that starts them in sequence order, up to 16 at a
// time (one at a time while the endpoint is failing); a failure postpones the endpoint's other
// deliveries to the failed one's retry time (jittered), so a down endpoint is probed once per
// retry wave and does not burn the attempts of every queued event.
// Outcomes of all lanes are written together, one transaction per flush, not one per delivery:
// on SQLite every commit is a sync, and the worker must not take the write lock from requests
// more often than it has to. Should that transaction fail, each program's outcomes are written
// in a transaction of their own, so one program's trouble never undoes another's record.

export interface Logger {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface DeliveryWorker {
  start(): void;
  /** Stops taking work; in-flight sends finish (their timeout bounds the wait). */
  stop(): Promise<void>;
  /** Look for work now instead of at the next poll (called after a write commits). */
  wake(): void;
}

export interface WorkerOptions {
  db: Db;
  config: Config;
  clock: Clock;
  log: Logger;
  /** Idle wait between polls, ms. */
  pollMs?: number;
}

const CLAIM_BATCH = 500;
/** Deliveries of one program this worker has leased at once, at most (its share shrinks as more programs have work). */
const PER_PROGRAM_IN_FLIGHT = 32;
/** Programs visited per pass; more wait for the next pass, which starts after the last one visited. */
const PROGRAMS_PER_PASS = 100;
/** Deliveries made for one program per fan-out step. */
const FAN_OUT_ROWS_PER_STEP = 1000;
/**
 * Pause between two busy passes: under load, each pass then takes a larger batch, so the
 * worker's statements (and, on SQLite, its turns at the one write lock) per event stay few.
 */
const BUSY_PAUSE_MS = 50;
const MAX_IN_FLIGHT = 1000;
/**
 * A program with nothing in flight may still lease its share when MAX_IN_FLIGHT is taken (by
 * many programs whose endpoints hang), up to this many in all: a newcomer is never shut out.
 */
const HARD_MAX_IN_FLIGHT = 2 * MAX_IN_FLIGHT;
/** Deliveries one endpoint has in flight at once (started in sequence order); one while it is failing. */
const PER_ENDPOINT_CONCURRENCY = 16;
/** Outcomes written per transaction at most. */
const FLUSH_BATCH = 500;
const PURGE_EVERY_MS = 10 * 60_000;
const USER_AGENT = 'Tandem-Webhooks/1';

export function createDeliveryWorker(options: WorkerOptions): DeliveryWorker {
  const { db, config, clock, log } = options;
  const pollMs = options.pollMs ?? 200;
  // How long a claimed delivery stays this worker's; past it another worker may send it again
  // (so a worker killed mid-send delays its deliveries by this much, and loses none). Longer
  // than a few attempts' time limit, so a live worker never loses a lease it is still using.
  const leaseMs = 3 * config.webhookTimeoutMs + 5_000;
  const sender: WebhookSender = createWebhookSender({ timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivateUrls, dns: webhookDnsFor(config) });
  const lanes = new Map<string, Lane>();
  let inFlight = 0;
  /** Leased and not yet finished, per program. */
  const inFlightByProgram = new Map<string, number>();
  const settle = (programId: string) => {
    inFlight--;
    const left = (inFlightByProgram.get(programId) ?? 1) - 1;
    if (left > 0) inFlightByProgram.set(programId, left);
    else inFlightByProgram.delete(programId);
  };
  /** Where the next pass starts its round of programs (claims, fan-out). */
  let claimAfter: string | null = null;
  let fanOutAfter: string | null = null;
  let running = false;
  let loopDone: Promise<void> = Promise.resolve();
  let wakeUp: (() => void) | null = null;
  let lastPurge = 0;

  const wake = () => {
    const w = wakeUp;
    wakeUp = null;
    w?.();
  };
  const idle = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wakeUp = null;
        resolve();
      }, ms);
      wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  function retryOutcome(delivery: ClaimedDelivery, send: SendResult, now: Date): DeliveryOutcome['result'] {
    if (send.statusCode !== null && send.statusCode >= 200 && send.statusCode < 300) return { kind: 'delivered' };
    if (send.statusCode === 410) return { kind: 'gone' };
    const schedule = config.webhookRetrySchedule;
    const attempt = delivery.attempts + 1; // this one
    if (attempt > schedule.length) return { kind: 'failed' };
    const jitter = 0.8 + Math.random() * 0.4; // spreads retries of a burst apart
    return { kind: 'retry', nextAttemptAt: new Date(now.getTime() + Math.round(schedule[attempt - 1]! * jitter)).toISOString() };
  }

  async function sendOne(delivery: ClaimedDelivery): Promise<SendResult> {
    const body = envelopeJson({ ...delivery, id: delivery.event_id });
    const timestamp = Math.floor(clock().getTime() / 1000);
    return sender.send(
      delivery.url,
      {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'webhook-id': delivery.event_id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(delivery.secret, delivery.event_id, timestamp, body),
      },
      body,
      { programId: delivery.program_id },
    );
  }

  interface Leased {
    delivery: ClaimedDelivery;
    leaseId: string;
    leaseUntil: number;
  }

  // ---- outcomes: queued by the lanes, written together ----
  const unrecorded: { leaseId: string; outcome: DeliveryOutcome }[] = [];
  let flushing: Promise<void> | null = null;

  function record(leaseId: string, outcome: DeliveryOutcome) {
    unrecorded.push({ leaseId, outcome });
    startFlush();
  }

  function startFlush() {
    flushing ??= flush().finally(() => {
      flushing = null;
      if (unrecorded.length > 0) startFlush(); // queued after the loop looked
    });
  }

  async function flush() {
    while (unrecorded.length > 0) {
      const batch = unrecorded.splice(0, FLUSH_BATCH);
      const now = clock();
      const disableBefore = new Date(now.getTime() - config.webhookDisableAfterMs).toISOString();
      const write = (items: typeof batch) =>
        inTransaction(db, async (tx) => {
          const byLease = new Map<string, DeliveryOutcome[]>();
          for (const { leaseId, outcome } of items) byLease.set(leaseId, [...(byLease.get(leaseId) ?? []), outcome]);
          for (const [leaseId, outcomes] of byLease) await recordOutcomes(tx, leaseId, outcomes, now.toISOString(), disableBefore);
        });
      try {
        await write(batch);
      } catch (error) {
        log.warn({ err: error }, 'could not record a batch of webhook attempts; recording them program by program');
        const byProgram = new Map<string, typeof batch>();
        for (const item of batch) byProgram.set(item.outcome.delivery.program_id, [...(byProgram.get(item.outcome.delivery.program_id) ?? []), item]);
        for (const [programId, items] of byProgram) {
          try {
            await write(items);
          } catch (programError) {
            // Not recorded: the leases run out and another pass sends them again (at least once).
            log.error({ err: programError, programId }, 'could not record webhook attempts');
          }
        }
      }
    }
  }

  /** One endpoint's queue of leased deliveries, started in order, up to PER_ENDPOINT_CONCURRENCY at a time. */
  class Lane {
    readonly queue: Leased[] = [];
    active = 0;
    failing = false;
    constructor(readonly webhookId: string) {}

    /** A failing endpoint is probed with one delivery at a time. */
    concurrency() {
      return this.failing ? 1 : PER_ENDPOINT_CONCURRENCY;
    }

    push(item: Leased) {
      this.queue.push(item);
      this.pump();
    }

    pump() {
      while (this.active < this.concurrency() && this.queue.length > 0) {
        const item = this.queue.shift()!;
        // Stopping, or a lease that could run out before the answer: give it back unsent.
        if (!running || item.leaseUntil - clock().getTime() < config.webhookTimeoutMs + 5_000) {
          settle(item.delivery.program_id);
          void releaseLeases([item], null);
          continue;
        }
        this.active++;
        void this.send(item).finally(() => {
          this.active--;
          settle(item.delivery.program_id);
          this.pump();
          wake();
        });
      }
      // Drained (sent, or given back unsent): the lane goes, so stop() and the map see no idle lanes.
      if (this.active === 0 && this.queue.length === 0 && lanes.get(this.webhookId) === this) lanes.delete(this.webhookId);
    }

    async send({ delivery, leaseId }: Leased) {
      const sent = await sendOne(delivery);
      const done = clock();
      const result = retryOutcome(delivery, sent, done);
      record(leaseId, {
        delivery,
        result,
        attempt: {
          attempted_at: new Date(done.getTime() - sent.durationMs).toISOString(),
          status_code: sent.statusCode,
          duration_ms: sent.durationMs,
          response_excerpt: sent.excerpt,
          error: sent.error,
        },
      });
      this.failing = result.kind !== 'delivered';
      if (result.kind !== 'delivered' && this.queue.length > 0) {
        // The endpoint is failing: its other leased deliveries wait for this one's retry time
        // instead of being sent into the same failure.
        const rest = this.queue.splice(0);
        for (const item of rest) settle(item.delivery.program_id);
        const retryAt = result.kind === 'retry' ? result.nextAttemptAt : new Date(done.getTime() + (config.webhookRetrySchedule[0] ?? 5000)).toISOString();
        await releaseLeases(rest, retryAt);
      }
    }
  }

  /** Gives leased deliveries back unsent: due at `retryAt`, or when they were due (null). */
  async function releaseLeases(items: { delivery: ClaimedDelivery; leaseId: string }[], retryAt: string | null) {
    try {
      for (const leaseId of new Set(items.map((i) => i.leaseId))) {
        const ids = items.filter((i) => i.leaseId === leaseId).map((i) => i.delivery.id);
        for (let i = 0; i < ids.length; i += 500) {
          await db
            .updateTable('webhook_deliveries')
            .set({ lease_id: null, lease_expires_at: null, ...(retryAt === null ? {} : { next_attempt_at: retryAt }) })
            .where('id', 'in', ids.slice(i, i + 500))
            .where('lease_id', '=', leaseId)
            .execute();
        }
      }
    } catch (error) {
      log.error({ err: error }, 'could not release webhook deliveries (their lease will expire)');
    }
  }

  /**
   * Leases due deliveries program by program, round-robin from where the last pass stopped,
   * and hands them to their endpoints' lanes. Each program gets a share: PER_PROGRAM_IN_FLIGHT,
   * less when many programs have work (MAX_IN_FLIGHT split between them, at least 1), less what
   * it has in flight here. A program with nothing in flight gets its share even when the
   * worker is full (up to HARD_MAX_IN_FLIGHT), so hanging endpoints of many programs cannot
   * shut out another. Returns how many it leased.
   */
  async function claimAndDispatch(): Promise<number> {
    const now = clock();
    const nowIso = now.toISOString();
    const leaseId = randomUUID();
    const leaseUntil = now.getTime() + leaseMs;
    const programs = await nextRound(claimAfter, PROGRAMS_PER_PASS, (from, limit) => programsWithDueDeliveries(db, from, nowIso, limit));
    const busyPrograms = new Set([...inFlightByProgram.keys(), ...programs]).size;
    const fairShare = Math.max(1, Math.min(PER_PROGRAM_IN_FLIGHT, Math.floor(MAX_IN_FLIGHT / busyPrograms)));
    let leased = inFlight;
    let visited: string | null = null;
    const ids: (number | string)[] = [];
    for (const programId of programs) {
      if (leased >= HARD_MAX_IN_FLIGHT) break;
      visited = programId;
      const held = inFlightByProgram.get(programId) ?? 0;
      // A full worker still serves a program with nothing in flight.
      const room = held === 0 ? HARD_MAX_IN_FLIGHT - leased : MAX_IN_FLIGHT - leased;
      const share = Math.min(fairShare - held, room, CLAIM_BATCH);
      if (share <= 0) continue;
      const claimed = await claimDueDeliveries(db, { programId, now: nowIso, leaseId, leaseUntil: new Date(leaseUntil).toISOString(), limit: share });
      ids.push(...claimed);
      leased += claimed.length;
    }
    // The next pass starts after the last program this one reached, so none loses its turn; a
    // round that reached the end of a short list starts again from the first.
    if (visited !== null) claimAfter = visited === programs.at(-1) && programs.length < PROGRAMS_PER_PASS ? null : visited;
    // Counted as read back: a delivery whose endpoint was deleted meanwhile is simply gone.
    for (const delivery of await readClaimedDeliveries(db, ids)) {
      inFlight++;
      inFlightByProgram.set(delivery.program_id, (inFlightByProgram.get(delivery.program_id) ?? 0) + 1);
      let lane = lanes.get(delivery.webhook_id);
      if (!lane) lanes.set(delivery.webhook_id, (lane = new Lane(delivery.webhook_id)));
      if (delivery.failing_since !== null && lane.active === 0) lane.failing = true;
      lane.push({ delivery, leaseId, leaseUntil });
    }
    return ids.length;
  }

  /** Makes deliveries for numbered events, program by program within each program's bound. */
  async function fanOut(): Promise<number> {
    const { made, next } = await fanOutPass(
      db,
      { maxPendingPerProgram: config.webhookMaxPendingPerProgram, maxRowsPerStep: FAN_OUT_ROWS_PER_STEP, maxPrograms: PROGRAMS_PER_PASS },
      clock().toISOString(),
      fanOutAfter,
      (error, programId) => log.error({ err: error, programId }, "could not make a program's webhook deliveries; trying again next pass"),
    );
    fanOutAfter = next;
    return made;
  }

  async function purgeIfDue() {
    const now = clock().getTime();
    if (now - lastPurge < PURGE_EVERY_MS) return;
    lastPurge = now;
    const cutoff = new Date(now - config.eventRetentionDays * 86_400_000).toISOString();
    const purged = await purgeEventsBefore(db, cutoff);
    if (purged > 0) log.debug({ purged, cutoff }, 'purged old events');
    const expired = await purgeExpired(db, new Date(now), config);
    if (Object.values(expired).some((n) => n > 0)) log.debug(expired, 'purged expired sessions, connect codes, idempotency keys, attempt counters and old click rows');
  }

  async function loop() {
    while (running) {
      // Each step on its own: a failing one (the database away, say) does not keep the others
      // from running, so a delivery due now still leaves if numbering or fan-out fails.
      let failed = false;
      const step = async (what: string, work: () => Promise<number>) => {
        try {
          return await work();
        } catch (error) {
          if (running) log.error({ err: error }, `webhook worker: ${what} failed; retrying`);
          failed = true;
          return 0;
        }
      };
      // A read-only probe first: an idle worker then writes nothing (no WAL churn, no dead rows).
      const numbered = await step('numbering events', async () => ((await hasUnsequencedEvents(db)) ? sequenceEvents(db) : 0));
      const made = await step('fan-out', async () => {
        const adopted = await assignDeliveryPrograms(db);
        if (adopted > 0) log.warn({ adopted }, 'gave their program to deliveries made by a process of the previous release');
        return adopted + (await fanOut());
      });
      const claimed = await step('claiming deliveries', claimAndDispatch);
      await step('purge', async () => (await purgeIfDue(), 0));
      if (!running) break;
      if (numbered > 0 || made > 0 || claimed > 0) await new Promise((resolve) => setTimeout(resolve, BUSY_PAUSE_MS));
      else await idle(failed ? 1000 : pollMs);
    }
  }

  return {
    start() {
      if (running) return;
      running = true;
      loopDone = loop();
    },
    async stop() {
      if (!running) return;
      running = false;
      wake();
      // Lanes finish their current round (bounded by the send timeout) and give the rest back.
      // The wait is bounded too: a database that stopped answering must not hang a shutdown
      // (whatever is still leased goes out again once its lease expires).
      const finished = (async () => {
        await loopDone;
        while (lanes.size > 0 || flushing !== null) await new Promise((r) => setTimeout(r, 20));
      })();
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, config.webhookTimeoutMs + 5_000)));
      await Promise.race([finished, bound]);
      clearTimeout(timer);
      sender.close();
    },
    wake,
  };
}
