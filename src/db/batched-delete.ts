/** Rows deleted per statement by the purges: a backlog goes in short statements, never one long lock. */
export const PURGE_BATCH = 5000;

/**
 * Runs `deleteBatch` (a delete of at most `limit` rows) until one deletes fewer than that;
 * returns how many rows were deleted in all.
 */
export async function deleteInBatches(deleteBatch: (limit: number) => Promise<{ numDeletedRows: bigint }>, limit = PURGE_BATCH): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = Number((await deleteBatch(limit)).numDeletedRows);
    total += deleted;
    if (deleted < limit) return total;
  }
}
