import { AsyncLocalStorage } from 'node:async_hooks';

// One program's hot row must not take the pool from every other program (issue 29). On
// PostgreSQL a transaction holds a pooled connection while it waits for a row lock: 40 sales of
// one affiliate, all queued on its counter row, would hold every connection, and another
// program's requests would wait for one or get 503. So a program's transactions hold at most a
// share of the pool at once in a process (half of it, at least one); the others wait here, in
// the process, where waiting costs no connection. SQLite has one connection and one writer:
// no share there.

interface Scope {
  programId: string;
  /** True inside a transaction that holds its share already (a nested one does not take another). */
  holding: boolean;
}

const scopes = new AsyncLocalStorage<Scope>();

/** Runs `fn` (and everything it starts) on behalf of one program: its transactions count against that program's share. */
export function withProgramScope<T>(programId: string, fn: () => T): T {
  return scopes.run({ programId, holding: false }, fn);
}

/** A wait for a share of the pool that did not end in time: answered like a starved pool (503, Retry-After). */
export class ProgramShareTimeout extends Error {
  constructor() {
    super('timeout exceeded when trying to connect');
  }
}

interface Waiting {
  wake: () => void;
  timer: NodeJS.Timeout | undefined;
}

export class ProgramShare {
  readonly #running = new Map<string, number>();
  readonly #waiting = new Map<string, Waiting[]>();

  /**
   * @param limit transactions of one program holding a connection at once
   * @param waitMs how long a transaction may wait for its turn (the pool's own connection wait)
   */
  constructor(
    readonly limit: number,
    readonly waitMs: number,
  ) {}

  /** Waits for a turn of `programId`; resolves to the function that gives it back. */
  async acquire(programId: string): Promise<() => void> {
    const running = this.#running.get(programId) ?? 0;
    if (running < this.limit) {
      this.#running.set(programId, running + 1);
      return this.#releaser(programId);
    }
    await new Promise<void>((resolve, reject) => {
      const queue = this.#waiting.get(programId) ?? [];
      this.#waiting.set(programId, queue);
      const giveUp = () => {
        queue.splice(queue.indexOf(waiting), 1);
        if (queue.length === 0) this.#waiting.delete(programId);
        reject(new ProgramShareTimeout());
      };
      const waiting: Waiting = {
        wake: () => {
          if (waiting.timer !== undefined) clearTimeout(waiting.timer);
          resolve();
        },
        // 0: no bound, as for the pool's own wait.
        timer: this.waitMs > 0 ? setTimeout(giveUp, this.waitMs) : undefined,
      };
      queue.push(waiting);
    });
    // The turn was handed over by a releaser: the running count already includes it.
    return this.#releaser(programId);
  }

  /** How many of the program's transactions hold a turn now (for tests and diagnostics). */
  running(programId: string): number {
    return this.#running.get(programId) ?? 0;
  }

  #releaser(programId: string): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const queue = this.#waiting.get(programId);
      const next = queue?.shift();
      if (next) {
        if (queue!.length === 0) this.#waiting.delete(programId);
        next.wake(); // the turn passes straight on, first come first served
        return;
      }
      const running = this.#running.get(programId)! - 1;
      if (running === 0) this.#running.delete(programId);
      else this.#running.set(programId, running);
    };
  }
}

const shares = new WeakMap<object, ProgramShare>();

/** Bounds each program's transactions on `db` (database.ts, for a PostgreSQL pool of `poolSize`). */
export function shareProgramsOf(db: object, poolSize: number, waitMs: number): void {
  shares.set(db, new ProgramShare(Math.max(1, Math.floor(poolSize / 2)), waitMs));
}

/** The share `db`'s transactions are bounded by, if any. */
export function programShareOf(db: object): ProgramShare | undefined {
  return shares.get(db);
}

/**
 * Runs `work` within the current program's share of `db`'s pool: waits for a turn first when
 * the program has its share in use. Outside a program's scope (workers, accounts), on SQLite,
 * and inside a transaction that holds a turn already, runs it at once.
 */
export async function withinProgramShare<T>(db: object, work: () => Promise<T>): Promise<T> {
  const scope = scopes.getStore();
  const share = shares.get(db);
  if (scope === undefined || share === undefined || scope.holding) return work();
  const release = await share.acquire(scope.programId);
  try {
    return await scopes.run({ programId: scope.programId, holding: true }, work);
  } finally {
    release();
  }
}
