import { setImmediate } from 'node:timers/promises';

/** Rows deleted per statement by the purges: a backlog goes in short statements, never one long lock. */
export const PURGE_BATCH = 5000;

/**
 * Runs `deleteBatch` (a delete of at most `limit` rows) until one deletes fewer than that, or
 * until `deadline` (a `performance.now()` time) has passed; returns how many rows were deleted in all.
 * Between batches the event loop gets a real turn (a macrotask): on SQLite each statement runs
 * synchronously and its promise settles as a microtask, so without it a purge of millions of
 * rows left the server answering no request until it was over (issue 31: 249 s).
 */
export async function deleteInBatches(deleteBatch: (limit: number) => Promise<{ numDeletedRows: bigint }>, limit = PURGE_BATCH, deadline = Infinity): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = Number((await deleteBatch(limit)).numDeletedRows);
    total += deleted;
    if (deleted < limit || performance.now() >= deadline) return total;
    await setImmediate();
  }
}
