import { sql } from 'kysely';
import type { Db } from '../../db/transaction.ts';
import { timestampValue } from '../../db/dialect.ts';
import { toIso } from '../../domain/clock.ts';

// Fixed-window counters kept in the database, so a limit holds across every process that
// shares it. One statement per count (an upsert), so concurrent attempts cannot both slip
// under the limit.

export interface AttemptLimit {
  readonly max: number;
  readonly windowMs: number;
}

/** No limit's window is longer; a counter older than this is dead and the worker deletes it. */
export const LONGEST_ATTEMPT_WINDOW_MS = 60 * 60_000;

/** Seconds until the key's window ends, given when it started. */
function secondsLeft(windowStartedAt: string | Date, limit: AttemptLimit, now: Date): number {
  return Math.max(1, Math.ceil((Date.parse(toIso(windowStartedAt)) + limit.windowMs - now.getTime()) / 1000));
}

/**
 * Counts one attempt for `key`. Returns the seconds to wait when this attempt is over the
 * limit (the attempt must then be refused), or null when it may go ahead.
 */
export async function countAttempt(db: Db, key: string, limit: AttemptLimit, now: Date): Promise<number | null> {
  const nowValue = timestampValue(db, now.toISOString());
  const expired = sql<boolean>`attempt_counters.window_started_at <= ${timestampValue(db, new Date(now.getTime() - limit.windowMs).toISOString())}`;
  const row = await db
    .insertInto('attempt_counters')
    .values({ key, window_started_at: now.toISOString(), count: 1 })
    .onConflict((conflict) =>
      conflict.column('key').doUpdateSet({
        count: sql`case when ${expired} then 1 else attempt_counters.count + 1 end`,
        window_started_at: sql`case when ${expired} then ${nowValue} else attempt_counters.window_started_at end`,
      }),
    )
    .returning(['count', 'window_started_at'])
    .executeTakeFirstOrThrow();
  return row.count > limit.max ? secondsLeft(row.window_started_at, limit, now) : null;
}

/** Takes one attempt back (one that turned out to be legitimate). */
export async function uncountAttempt(db: Db, key: string): Promise<void> {
  await db.updateTable('attempt_counters').set({ count: sql`count - 1` }).where('key', '=', key).where('count', '>', 0).execute();
}
