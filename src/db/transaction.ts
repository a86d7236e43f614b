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

const afterCommitCallbacks = new WeakMap<Tx, (() => void)[]>();

/**
 * Runs `callback` once `tx` has committed (never if it rolls back): for what must not see the
 * change before other connections can, such as dropping a cache entry the change makes stale.
 */
export function afterCommit(tx: Tx, callback: () => void): void {
  const callbacks = afterCommitCallbacks.get(tx);
  if (callbacks) callbacks.push(callback);
  else callback(); // not opened by inTransaction: the caller commits; run now rather than never
}

/** The one way to run several statements atomically: commits on return, rolls back on throw. */
export async function inTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  const beforeCommit = beforeCommitHooks.getStore();
  const committed: (() => void)[] = [];
  const result = await db.transaction().execute(async (tx) => {
    afterCommitCallbacks.set(tx, committed);
    const value = await work(tx);
    if (beforeCommit) await beforeCommit(tx, value);
    return value;
  });
  for (const callback of committed) callback();
  return result;
}
