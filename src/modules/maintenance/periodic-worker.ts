import type { Config } from '../../config.ts';
import type { Clock } from '../../domain/clock.ts';
import type { Db } from '../../db/transaction.ts';
import { wakeablePause, waitAtMost } from '../../domain/pauses.ts';

// The shape of a periodic job (purge-job.ts is one) and the worker that runs it: at start, then
// each time `everyMs` has passed on the app's clock (so a test that moves the clock moves the
// job too). A new job is one file exporting a PeriodicJob plus one line in src/workers.ts.
// Each job runs in its own worker, so a long run of one never delays another or a delivery.

export interface JobLogger {
  debug(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface JobContext {
  db: Db;
  config: Config;
  clock: Clock;
  log: JobLogger;
}

export interface PeriodicJob {
  /** Named in the log when a run fails. */
  readonly name: string;
  /** From one run's start to the next's, by the app's clock. */
  readonly everyMs: number;
  /**
   * One run; `now` is when it started. A failure is logged and the job runs again at its next
   * time. A run that stopped at its time budget with work left answers `{ more: true }`: the
   * next run follows after a short rest instead of `everyMs`.
   */
  run(context: JobContext, now: Date): Promise<void | { more: boolean }>;
}

export interface PeriodicWorker {
  start(): void;
  /** Stops; a run in progress is waited for, within a bound. */
  stop(): Promise<void>;
}

/** How often the worker looks at the clock: a test's moved clock is seen within this. */
const CHECK_EVERY_MS = 1000;
/** The rest between runs of a job that has work left (a backlog): other work gets the database meanwhile. */
const REST_MS = 1000;
/** A run still going at stop is waited for this long at most: a database that stopped answering must not hang a shutdown. */
const STOP_WAIT_MS = 15_000;

export function createPeriodicWorker(job: PeriodicJob, context: JobContext): PeriodicWorker {
  const { clock, log } = context;
  let running = false;
  let loopDone: Promise<void> = Promise.resolve();
  let lastRun: number | null = null;
  let moreAfter: number | null = null;
  const { pause: idle, wake } = wakeablePause();

  async function loop() {
    while (running) {
      const now = clock();
      const due = lastRun === null || now.getTime() - lastRun >= job.everyMs || (moreAfter !== null && performance.now() >= moreAfter);
      if (due) {
        // Taken before the run: a failing run waits for its next time instead of retrying at once.
        lastRun = now.getTime();
        moreAfter = null;
        try {
          const result = await job.run(context, now);
          if (result?.more) moreAfter = performance.now() + REST_MS;
        } catch (error) {
          if (running) log.error({ err: error, job: job.name }, `${job.name} failed; retrying at its next run`);
        }
      }
      if (!running) break;
      const wait = Math.min(CHECK_EVERY_MS, lastRun! + job.everyMs - clock().getTime(), moreAfter === null ? Infinity : moreAfter - performance.now());
      await idle(Math.max(0, wait));
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
      await waitAtMost(loopDone, STOP_WAIT_MS);
    },
  };
}
