import type { Config } from './config.ts';
import type { Clock } from './domain/clock.ts';
import type { Db } from './db/transaction.ts';
import { createDeliveryWorker } from './modules/webhooks/delivery-worker.ts';
import { createMailTransport } from './modules/mail/mail-transport.ts';
import { createMailWorker } from './modules/mail/mail-worker.ts';
import { createPeriodicWorker, type PeriodicJob } from './modules/maintenance/periodic-worker.ts';
import { purgeJob } from './modules/maintenance/purge-job.ts';
import { upkeepJob } from './modules/maintenance/upkeep-job.ts';

// The background work of a Tandem process, as one list: `tandem serve` starts it (unless
// WORKER=off) and `tandem worker` runs it alone. Every worker keeps its queue in the database,
// so any number of processes may run the list side by side.

export interface WorkerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface WorkerContext {
  db: Db;
  config: Config;
  clock: Clock;
  log: WorkerLogger;
}

interface Worker {
  start(): void;
  /** Graceful: finishes what is in hand (each worker bounds its own wait). */
  stop(): Promise<void>;
  /** Look for work now: a write has committed. */
  wake?(): void;
}

type WorkerStarter = (context: WorkerContext) => Worker | Promise<Worker>;

const periodic =
  (job: PeriodicJob): WorkerStarter =>
  (context) =>
    createPeriodicWorker(job, context);

const WORKERS: readonly WorkerStarter[] = [
  (context) => createDeliveryWorker(context),
  async (context) => {
    // The mail outbox goes out over SMTP_URL, or to the log; the transport closes after its worker.
    const transport = await createMailTransport(context.config, context.log);
    const mail = createMailWorker({ ...context, transport });
    return {
      start: () => mail.start(),
      stop: async () => {
        await mail.stop();
        transport.close();
      },
    };
  },
  periodic(purgeJob),
  periodic(upkeepJob),
];

export interface RunningWorkers {
  /** Wakes the workers that wait for writes (the webhook delivery worker). */
  wake(): void;
  /** Stops every worker; resolves once all have stopped. */
  stop(): Promise<void>;
}

/** Creates and starts every worker of the list, in order. */
export async function startWorkers(context: WorkerContext): Promise<RunningWorkers> {
  const started: Worker[] = [];
  try {
    for (const startWorker of WORKERS) {
      const worker = await startWorker(context);
      worker.start();
      started.push(worker);
    }
  } catch (error) {
    // One could not be made: none stays running, or the process would not exit.
    await stopAll(started);
    throw error;
  }
  return {
    wake: () => {
      for (const worker of started) worker.wake?.();
    },
    stop: () => stopAll(started),
  };
}

/** Stops them together (each waits for its own work only); every one is stopped even when one fails. */
async function stopAll(workers: Worker[]): Promise<void> {
  const results = await Promise.allSettled(workers.map((worker) => worker.stop()));
  const failure = results.find((result) => result.status === 'rejected');
  if (failure) throw failure.reason;
}
