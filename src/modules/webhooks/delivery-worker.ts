import { randomUUID } from 'node:crypto';
import { wakeablePause, waitAtMost } from '../../domain/pauses.ts';
import type { Config } from '../../config.ts';
import type { Clock } from '../../domain/clock.ts';
import type { Db } from '../../db/transaction.ts';
import { hasUnsequencedEvents, sequenceEvents } from '../events/outbox.ts';
import { createDeliveryLanes } from './delivery-lanes.ts';
import { fanOutPass } from './fan-out.ts';
import { nextRound } from './round-robin.ts';
import { createWebhookSender, type WebhookSender } from './webhook-sender.ts';
import { webhookDnsFor } from './webhook-dns.ts';
import { claimDueDeliveries, assignDeliveryPrograms, programsWithDueDeliveries, readClaimedDeliveries } from './webhook.repository.ts';

// The delivery worker: runs inside `tandem serve` (unless WORKER=off) and as `tandem worker`
// (src/workers.ts starts it with the others; the purge is the maintenance worker's).
// Everything it knows is in the database, so any number of them may run, on any process, and
// a killed one loses nothing: it numbers committed events (sequenceEvents), makes their
// deliveries program by program within each program's bound (fan-out.ts), leases due
// deliveries, and hands them to their endpoints' lanes, which send them and store each attempt
// and its consequence (delivery-lanes.ts: delivered, retry at, failed, endpoint gone or
// disabled, by retry-policy.ts).
//
// Fair shares: each pass visits the programs with pending deliveries in turn (round-robin,
// continuing where the last pass stopped) and leases at most PER_PROGRAM_IN_FLIGHT of a
// program's deliveries at once, so a program whose endpoints hang holds only its own share of
// the worker and every other program's deliveries still leave at the next pass.

export interface Logger {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
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

export function createDeliveryWorker(options: WorkerOptions): DeliveryWorker {
  const { db, config, clock, log } = options;
  const pollMs = options.pollMs ?? 200;
  // How long a claimed delivery stays this worker's; past it another worker may send it again
  // (so a worker killed mid-send delays its deliveries by this much, and loses none). Longer
  // than a few attempts' time limit, so a live worker never loses a lease it is still using.
  const leaseMs = 3 * config.webhookTimeoutMs + 5_000;
  const sender: WebhookSender = createWebhookSender({ timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivateUrls, dns: webhookDnsFor(config) });
  /** Where the next pass starts its round of programs (claims, fan-out). */
  let claimAfter: string | null = null;
  let fanOutAfter: string | null = null;
  let running = false;
  let loopDone: Promise<void> = Promise.resolve();
  const { pause: idle, wake } = wakeablePause();

  // A finished send wakes the loop: the program may lease again.
  const lanes = createDeliveryLanes({ db, config, clock, log, sender, running: () => running, onSent: wake });

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
    const busyPrograms = new Set([...lanes.programsInFlight(), ...programs]).size;
    const fairShare = Math.max(1, Math.min(PER_PROGRAM_IN_FLIGHT, Math.floor(MAX_IN_FLIGHT / busyPrograms)));
    let leased = lanes.inFlight();
    let visited: string | null = null;
    const ids: (number | string)[] = [];
    for (const programId of programs) {
      if (leased >= HARD_MAX_IN_FLIGHT) break;
      visited = programId;
      const held = lanes.inFlightOf(programId);
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
    for (const delivery of await readClaimedDeliveries(db, ids)) lanes.dispatch({ delivery, leaseId, leaseUntil });
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
        while (!lanes.idle()) await new Promise((r) => setTimeout(r, 20));
      })();
      await waitAtMost(finished, config.webhookTimeoutMs + 5_000);
      sender.close();
    },
    wake,
  };
}
