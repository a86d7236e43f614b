import { randomUUID } from 'node:crypto';
import type { Config } from '../../config.ts';
import type { Clock } from '../../domain/clock.ts';
import { purgeExpired } from '../maintenance/purge-expired.ts';
import { inTransaction, type Db } from '../../db/transaction.ts';
import { envelopeJson, hasUnsequencedEvents, purgeEventsBefore, sequenceEvents } from '../events/outbox.ts';
import { signatureHeader } from './signature.ts';
import { createWebhookSender, type SendResult, type WebhookSender } from './webhook-sender.ts';
import { claimDueDeliveries, recordOutcomes, type ClaimedDelivery, type DeliveryOutcome } from './webhook.repository.ts';

// The delivery worker: runs inside `tandem serve` (unless WORKER=off) and as `tandem worker`.
// Everything it knows is in the database, so any number of them may run, on any process, and
// a killed one loses nothing: it numbers committed events (sequenceEvents, which also creates
// their deliveries), leases due deliveries, sends them, and stores each attempt and its
// consequence (delivered, retry at, failed, endpoint gone or disabled).
//
// Per endpoint, deliveries go through one lane that starts them in sequence order, up to 16 at a
// time; a failure postpones the endpoint's other leased deliveries to the failed one's retry
// time, so a down endpoint is not hammered and does not burn the attempts of every queued event.
// Outcomes of all lanes are written together, one transaction per flush, not one per delivery:
// on SQLite every commit is a sync, and the worker must not take the write lock from requests
// more often than it has to.

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
/**
 * Pause between two busy passes: under load, each pass then takes a larger batch, so the
 * worker's statements (and, on SQLite, its turns at the one write lock) per event stay few.
 */
const BUSY_PAUSE_MS = 50;
const MAX_IN_FLIGHT = 1000;
/** Deliveries one endpoint has in flight at once (started in sequence order). */
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
  const sender: WebhookSender = createWebhookSender({ timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivateUrls });
  const lanes = new Map<string, Lane>();
  let inFlight = 0;
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
      const byLease = new Map<string, DeliveryOutcome[]>();
      for (const { leaseId, outcome } of batch) byLease.set(leaseId, [...(byLease.get(leaseId) ?? []), outcome]);
      try {
        await inTransaction(db, async (tx) => {
          for (const [leaseId, outcomes] of byLease) await recordOutcomes(tx, leaseId, outcomes, now.toISOString(), disableBefore);
        });
      } catch (error) {
        // Not recorded: the leases run out and another pass sends them again (at least once).
        log.error({ err: error }, 'could not record webhook attempts');
      }
    }
  }

  /** One endpoint's queue of leased deliveries, started in order, up to PER_ENDPOINT_CONCURRENCY at a time. */
  class Lane {
    readonly queue: Leased[] = [];
    active = 0;
    constructor(readonly webhookId: string) {}

    push(item: Leased) {
      this.queue.push(item);
      this.pump();
    }

    pump() {
      while (this.active < PER_ENDPOINT_CONCURRENCY && this.queue.length > 0) {
        const item = this.queue.shift()!;
        // Stopping, or a lease that could run out before the answer: give it back unsent.
        if (!running || item.leaseUntil - clock().getTime() < config.webhookTimeoutMs + 5_000) {
          inFlight--;
          void releaseLeases([item], null);
          continue;
        }
        this.active++;
        void this.send(item).finally(() => {
          this.active--;
          inFlight--;
          if (this.queue.length > 0) this.pump();
          else if (this.active === 0 && lanes.get(this.webhookId) === this) lanes.delete(this.webhookId);
          wake();
        });
      }
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
      if (result.kind !== 'delivered' && this.queue.length > 0) {
        // The endpoint is failing: its other leased deliveries wait for this one's retry time
        // instead of being sent into the same failure.
        const rest = this.queue.splice(0);
        inFlight -= rest.length;
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

  async function claimAndDispatch(): Promise<number> {
    const room = MAX_IN_FLIGHT - inFlight;
    if (room < CLAIM_BATCH / 2) return 0;
    const now = clock();
    const leaseId = randomUUID();
    const leaseUntil = now.getTime() + leaseMs;
    const claimed = await claimDueDeliveries(db, {
      now: now.toISOString(),
      leaseId,
      leaseUntil: new Date(leaseUntil).toISOString(),
      limit: Math.min(room, CLAIM_BATCH),
    });
    for (const delivery of claimed) {
      inFlight++;
      let lane = lanes.get(delivery.webhook_id);
      if (!lane) lanes.set(delivery.webhook_id, (lane = new Lane(delivery.webhook_id)));
      lane.push({ delivery, leaseId, leaseUntil });
    }
    return claimed.length;
  }

  async function purgeIfDue() {
    const now = clock().getTime();
    if (now - lastPurge < PURGE_EVERY_MS) return;
    lastPurge = now;
    const cutoff = new Date(now - config.eventRetentionDays * 86_400_000).toISOString();
    const purged = await purgeEventsBefore(db, cutoff);
    if (purged > 0) log.debug({ purged, cutoff }, 'purged old events');
    const expired = await purgeExpired(db, new Date(now));
    if (Object.values(expired).some((n) => n > 0)) log.debug(expired, 'purged expired sessions, connect codes, idempotency keys and attempt counters');
  }

  async function loop() {
    while (running) {
      let busy = false;
      try {
        // A read-only probe first: an idle worker then writes nothing (no WAL churn, no dead rows).
        const numbered = (await hasUnsequencedEvents(db)) ? await sequenceEvents(db, clock) : 0;
        const claimed = await claimAndDispatch();
        await purgeIfDue();
        busy = numbered > 0 || claimed > 0;
      } catch (error) {
        if (!running) break;
        log.error({ err: error }, 'webhook worker pass failed; retrying');
        await idle(1000);
        continue;
      }
      if (!running) break;
      if (busy) await new Promise((resolve) => setTimeout(resolve, BUSY_PAUSE_MS));
      else await idle(pollMs);
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
