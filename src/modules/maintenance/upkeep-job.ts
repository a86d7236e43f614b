import { reclaimFreePages, refreshPlannerStatistics } from '../../db/upkeep.ts';
import { deleteEmptyUnpaidDays } from '../ledger/ledger.repository.ts';
import type { PeriodicJob } from './periodic-worker.ts';

/** How long one pass hands free pages back at most; a large backlog goes on in the passes that follow. */
export const RECLAIM_PASS_MS = 5_000;

/**
 * The database's upkeep, every 10 minutes (db/upkeep.ts): the planner's statistics refreshed where the
 * data has changed enough to need it (SQLite), and the space purges freed handed back to the
 * file system a few hundred pages at a time (SQLite files with incremental auto-vacuum).
 * PostgreSQL's autovacuum does both there. On both, the kept unpaid sums that came to 0 go.
 */
export const upkeepJob: PeriodicJob = {
  name: 'upkeep',
  everyMs: 10 * 60_000,
  async run({ db, log }) {
    await deleteEmptyUnpaidDays(db);
    await refreshPlannerStatistics(db);
    const started = performance.now();
    const freed = await reclaimFreePages(db, RECLAIM_PASS_MS);
    if (freed > 0) log.debug({ freed }, 'handed free database pages back to the file system');
    return { more: freed > 0 && performance.now() - started >= RECLAIM_PASS_MS };
  },
};
