import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout } from 'node:timers/promises';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from './schema.ts';
import { isUniqueViolation, isUniqueViolationOn } from './errors.ts';
import { dialectOf } from './dialect.ts';
import { GroupCommit } from './group-commit.ts';
import { withinProgramShare } from './program-share.ts';

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

/**
 * Runs `fn` with no before-commit hook: for one step of work that commits in several
 * transactions (a payout run's batches), whose answer is stored once it is over.
 */
export function withoutBeforeCommit<T>(fn: () => T): T {
  return beforeCommitHooks.exit(fn);
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

/** PostgreSQL gave up on the transaction to break a lock cycle (or a serialization conflict); trying again is safe. */
function isRetryableConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001';
}

const CONFLICT_ATTEMPTS = 4;

/**
 * The one way to run several statements atomically: commits on return, rolls back on throw.
 * Two transactions that lock the same rows in different orders (deleting an affiliate while a
 * referral of theirs is deleted, say) can deadlock on PostgreSQL; the database aborts one, and
 * it is run again from the start, so a client sees the outcome rather than an error.
 * Given a transaction, `work` runs inside it, in a savepoint (inSavepoint).
 */
export function inTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  if (db.isTransaction) return inSavepoint(db as Tx, work);
  // PostgreSQL: within the program's share of the pool, for every attempt (program-share.ts).
  return withinProgramShare(db, () => attemptTransaction(db, work));
}

async function attemptTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  const beforeCommit = beforeCommitHooks.getStore();
  for (let attempt = 1; ; attempt++) {
    const committed: (() => void)[] = [];
    const body = async (tx: Tx) => {
      afterCommitCallbacks.set(tx, committed);
      const value = await work(tx);
      if (beforeCommit) await beforeCommit(tx, value);
      return value;
    };
    let result: T;
    try {
      // SQLite: committed with the transactions queued beside it (group-commit.ts).
      result = dialectOf(db) === 'sqlite' ? await groupCommitOf(db).run(body) : await db.transaction().execute(body);
    } catch (error) {
      if (attempt < CONFLICT_ATTEMPTS && isRetryableConflict(error)) {
        await setTimeout(Math.random() * 20 * attempt);
        continue;
      }
      throw error;
    }
    for (const callback of committed) callback();
    return result;
  }
}

const groupCommits = new WeakMap<Db, GroupCommit>();

function groupCommitOf(db: Db): GroupCommit {
  let group = groupCommits.get(db);
  if (group === undefined) groupCommits.set(db, (group = new GroupCommit(db)));
  return group;
}

const SAVEPOINT = sql`savepoint tandem_nested`;
const RELEASE = sql`release savepoint tandem_nested`;
const ROLLBACK_TO = sql`rollback to savepoint tandem_nested`;

/**
 * A service's transaction opened inside another's (a billing event's work runs in the
 * transaction that claims the event's id, so a redelivery finds either all of it or none): a
 * savepoint of the outer one. Its failure undoes its own writes only, and leaves the outer
 * transaction usable (on PostgreSQL too, where a failed statement otherwise aborts it), so a
 * caller may catch it — a duplicate's 409, say — and go on. It commits with the outer one; the
 * outer one's before-commit hook and retries apply, and its after-commit callbacks wait for the
 * outer commit. Savepoints of one name nest: each RELEASE or ROLLBACK TO takes the latest.
 */
async function inSavepoint<T>(tx: Tx, work: (tx: Tx) => Promise<T>): Promise<T> {
  await SAVEPOINT.execute(tx);
  let value: T;
  try {
    value = await work(tx);
  } catch (error) {
    await ROLLBACK_TO.execute(tx);
    await RELEASE.execute(tx);
    throw error;
  }
  await RELEASE.execute(tx);
  return value;
}

/** A row that must be recorded once: where its unique key is, and how to answer a second one. */
export interface RecordedOnce<Id> {
  /** The column of the unique index, as isUniqueViolationOn matches it. */
  column: string;
  /** The id of the row already holding the key, if any. */
  findExisting: (db: Db | Tx) => Promise<Id | undefined>;
  /** The error a second record gets (a 409 naming the first). */
  duplicateOf: (existingId: Id) => Error;
}

/**
 * `inTransaction` for work that records a row whose key the program may hold once. A retry is
 * answered by the check inside the transaction; a concurrent request that stored the key first
 * makes our insert violate the unique index (on PostgreSQL this transaction is aborted by then),
 * so after the rollback the winner is read and named. The twin may be met on another unique index
 * of the row first (a referral's e-mail): a unique violation the work turned into its own 409,
 * keeping it as the cause, is read the same way — named as the duplicate when the key is now
 * held, else the work's 409 as it was.
 */
export async function inTransactionOnce<T, Id>(db: Db, once: RecordedOnce<Id>, work: (tx: Tx) => Promise<T>): Promise<T> {
  try {
    return await inTransaction(db, async (tx) => {
      const existing = await once.findExisting(tx);
      if (existing !== undefined) throw once.duplicateOf(existing);
      return work(tx);
    });
  } catch (error) {
    if (!isUniqueViolationOn(error, once.column) && !isUniqueViolation((error as { cause?: unknown } | null)?.cause)) throw error;
    const existing = await once.findExisting(db);
    if (existing === undefined) throw error;
    throw once.duplicateOf(existing);
  }
}
