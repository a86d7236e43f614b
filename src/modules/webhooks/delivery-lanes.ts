import type { Config } from '../../config.ts';
import type { Clock } from '../../domain/clock.ts';
import { inTransaction, type Db } from '../../db/transaction.ts';
import { envelopeJson } from '../events/outbox.ts';
import { signatureHeader } from './signature.ts';
import { endpointRetryAt, retryOutcome } from './retry-policy.ts';
import type { SendResult, WebhookSender } from './webhook-sender.ts';
import { recordOutcomes, releaseLeases, type ClaimedDelivery, type DeliveryOutcome } from './webhook.repository.ts';

// Steps 4 and 5 of the delivery worker (delivery-worker.ts leases, this sends and records).
//
// Per endpoint, deliveries go through one lane that starts them in sequence order, up to 16 at a
// time (one at a time while the endpoint is failing); a failure postpones the endpoint's other
// deliveries to the failed one's retry time (jittered), so a down endpoint is probed once per
// retry wave and does not burn the attempts of every queued event.
// Outcomes of all lanes are written together, one transaction per flush, not one per delivery:
// on SQLite every commit is a sync, and the worker must not take the write lock from requests
// more often than it has to. Should that transaction fail, each program's outcomes are written
// in a transaction of their own, so one program's trouble never undoes another's record.

export interface LanesLogger {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** A delivery this worker has leased, until `leaseUntil` (ms). */
export interface Leased {
  delivery: ClaimedDelivery;
  leaseId: string;
  leaseUntil: number;
}

export interface DeliveryLanesOptions {
  db: Db;
  config: Pick<Config, 'webhookTimeoutMs' | 'webhookRetrySchedule' | 'webhookDisableAfterMs'>;
  clock: Clock;
  log: LanesLogger;
  sender: WebhookSender;
  /** False once the worker stops: a lane then gives what it still queues back unsent. */
  running(): boolean;
  /** A send finished: the worker may lease more now. */
  onSent(): void;
}

export interface DeliveryLanes {
  /** Queues a leased delivery on its endpoint's lane; it counts as in flight until sent or given back. */
  dispatch(item: Leased): void;
  /** Deliveries leased and not yet finished. */
  inFlight(): number;
  /** Of them, program `programId`'s. */
  inFlightOf(programId: string): number;
  /** Programs with deliveries in flight. */
  programsInFlight(): Iterable<string>;
  /** No lane holds a delivery and every outcome is written (what a stop waits for). */
  idle(): boolean;
}

const USER_AGENT = 'Tandem-Webhooks/1';
/** Deliveries one endpoint has in flight at once (started in sequence order); one while it is failing. */
const PER_ENDPOINT_CONCURRENCY = 16;
/** Outcomes written per transaction at most. */
const FLUSH_BATCH = 500;

export function createDeliveryLanes(options: DeliveryLanesOptions): DeliveryLanes {
  const { db, config, clock, log, sender, running, onSent } = options;
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

  async function sendOne(delivery: ClaimedDelivery): Promise<SendResult> {
    const body = envelopeJson({ ...delivery, id: delivery.event_id }, delivery.live_program_id === null);
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
        if (!running() || item.leaseUntil - clock().getTime() < config.webhookTimeoutMs + 5_000) {
          settle(item.delivery.program_id);
          void release([item], null);
          continue;
        }
        this.active++;
        void this.send(item).finally(() => {
          this.active--;
          settle(item.delivery.program_id);
          this.pump();
          onSent();
        });
      }
      // Drained (sent, or given back unsent): the lane goes, so stop() and the map see no idle lanes.
      if (this.active === 0 && this.queue.length === 0 && lanes.get(this.webhookId) === this) lanes.delete(this.webhookId);
    }

    async send({ delivery, leaseId }: Leased) {
      const sent = await sendOne(delivery);
      const done = clock();
      const schedule = config.webhookRetrySchedule;
      const result = retryOutcome({ statusCode: sent.statusCode, attempt: delivery.attempts + 1, schedule, jitter: Math.random(), now: done });
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
        await release(rest, endpointRetryAt(result, done, schedule));
      }
    }
  }

  /** Gives leased deliveries back unsent: due at `retryAt`, or when they were due (null). */
  async function release(items: { delivery: ClaimedDelivery; leaseId: string }[], retryAt: string | null) {
    try {
      for (const leaseId of new Set(items.map((i) => i.leaseId))) {
        await releaseLeases(
          db,
          leaseId,
          items.filter((i) => i.leaseId === leaseId).map((i) => i.delivery.id),
          retryAt,
        );
      }
    } catch (error) {
      log.error({ err: error }, 'could not release webhook deliveries (their lease will expire)');
    }
  }

  return {
    dispatch(item) {
      const { delivery } = item;
      inFlight++;
      inFlightByProgram.set(delivery.program_id, (inFlightByProgram.get(delivery.program_id) ?? 0) + 1);
      let lane = lanes.get(delivery.webhook_id);
      if (!lane) lanes.set(delivery.webhook_id, (lane = new Lane(delivery.webhook_id)));
      if (delivery.failing_since !== null && lane.active === 0) lane.failing = true;
      lane.push(item);
    },
    inFlight: () => inFlight,
    inFlightOf: (programId) => inFlightByProgram.get(programId) ?? 0,
    programsInFlight: () => inFlightByProgram.keys(),
    idle: () => lanes.size === 0 && flushing === null,
  };
}
