import { AsyncLocalStorage } from 'node:async_hooks';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.ts';

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;

/** Work to do inside every transaction of the current request, just before it commits. */
export type BeforeCommit = (tx: Tx, result: unknown) => Promise<void>;

const beforeCommitHooks = new AsyncLocalStorage<BeforeCommit>();

/**
 * Runs `fn` (and everything it starts) with `hook` called at the end of each transaction it
 * opens, in that transaction: what the hook writes commits with the work or not at all (an
 * Idempotency-Key's stored response, for one).
 */
export function withBeforeCommit<T>(hook: BeforeCommit, fn: () => T): T {
  return beforeCommitHooks.run(hook, fn);
}

/** The one way to run several statements atomically: commits on return, rolls back on throw. */
export function inTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  const beforeCommit = beforeCommitHooks.getStore();
  return db.transaction().execute(async (tx) => {
    const result = await work(tx);
    if (beforeCommit) await beforeCommit(tx, result);
    return result;
  });
}
