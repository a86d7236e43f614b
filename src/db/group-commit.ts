import { AsyncResource } from 'node:async_hooks';
import { sql, type ControlledTransaction, type Kysely } from 'kysely';
import type { Database } from './schema.ts';
import { compiledQuery } from './compiled-query.ts';

// Group commit for SQLite. A commit is most of what a write costs there: it appends every page
// the transaction changed to the WAL (a sale changes ~24 pages, each a 4 KB frame; measured
// 300 of 440 µs per sale in COMMIT). Transactions that arrive while one is running are queued
// and run one after another inside one database transaction, each in a savepoint of its own,
// and committed together: pages they share (an index's last leaf, the affiliate's row) are
// written once per group. Raw better-sqlite3 with a sale's writes: 442 µs per sale alone,
// 236 µs four to a commit, 203 µs sixteen.
//
// What each transaction sees and guarantees is unchanged: they run one at a time (SQLite has
// one writer anyway), each sees the ones before it, one that fails is rolled back to its
// savepoint alone, and none is answered before the group's COMMIT — if that fails, every one of
// the group fails and none of them happened. A lone transaction commits at once, so a quiet
// server adds no delay. A group is bounded in size and time, so reads (which wait for the
// connection while a group holds it) get their turn between groups.

/** Transactions in one group at most, and how long a group may keep taking more. */
const MAX_GROUP = 32;
const MAX_GROUP_MS = 10;

const SAVEPOINT = compiledQuery<object, never>(() => sql`savepoint tandem_job`);
const RELEASE = compiledQuery<object, never>(() => sql`release tandem_job`);
const ROLLBACK_TO = compiledQuery<object, never>(() => sql`rollback to tandem_job`);

type Work = (tx: ControlledTransaction<Database>) => Promise<unknown>;

interface Job {
  work: Work;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

export class GroupCommit {
  private readonly queue: Job[] = [];
  private draining = false;

  constructor(private readonly db: Kysely<Database>) {}

  /** Runs `work` in a transaction of the next group; settles once that group has committed (or failed). */
  run<T>(work: (tx: ControlledTransaction<Database>) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // The work runs from the queue's loop: bound to the caller's async context, so what the
      // caller set there (AsyncLocalStorage) is what the work sees.
      this.queue.push({ work: AsyncResource.bind(work) as Work, resolve: resolve as (value: unknown) => void, reject });
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      // better-sqlite3 answers at once, so a group would otherwise run to its commit before the
      // event loop reads any other request: waiting one turn lets the requests already arrived
      // queue their transactions into this group.
      await new Promise((resolve) => setImmediate(resolve));
      while (this.queue.length > 0) await this.runGroup();
    } finally {
      this.draining = false;
    }
  }

  private async runGroup(): Promise<void> {
    let tx: ControlledTransaction<Database>;
    try {
      tx = await this.db.startTransaction().execute();
    } catch (error) {
      // Could not even begin (the file locked past busy_timeout, say): the first waiting transaction fails.
      this.queue.shift()!.reject(error);
      return;
    }
    const done: { job: Job; value: unknown }[] = [];
    const startedAt = performance.now();
    let broken: unknown = null;
    while (this.queue.length > 0 && done.length < MAX_GROUP && performance.now() - startedAt < MAX_GROUP_MS) {
      const job = this.queue.shift()!;
      try {
        await SAVEPOINT.run(tx, {});
      } catch (error) {
        job.reject(error);
        broken = error;
        break;
      }
      try {
        const value = await job.work(tx);
        await RELEASE.run(tx, {});
        done.push({ job, value });
      } catch (error) {
        job.reject(error);
        try {
          await ROLLBACK_TO.run(tx, {});
          await RELEASE.run(tx, {});
        } catch (rollbackError) {
          // SQLite rolled the whole transaction back itself (a full disk, say): the group is lost.
          broken = rollbackError;
          break;
        }
      }
    }
    if (broken === null) {
      try {
        await tx.commit().execute();
        for (const { job, value } of done) job.resolve(value);
        return;
      } catch (error) {
        broken = error;
      }
    }
    await tx.rollback().execute().catch(() => {});
    for (const { job } of done) job.reject(broken);
  }
}
