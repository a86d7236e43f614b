// Transactions and their guarantees (src/db/transaction.ts), with SQLite's group commit
// (src/db/group-commit.ts): transactions queued while one runs commit together, and still each
// one that fails leaves nothing, none is answered before its commit, after-commit callbacks see
// the committed data, and the caller's context (an Idempotency-Key's before-commit hook) goes
// with its own transaction only.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import SqliteDatabase from 'better-sqlite3';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { afterCommit, inTransaction, withBeforeCommit, type Tx } from '../../src/db/transaction.ts';
import { createTestDatabase, testDialect, type TestDatabase } from '../helpers/test-database.ts';

const userId = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

describe(`transactions (${testDialect})`, () => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  /** Another connection, as another process would read: sees only what has committed. */
  let other: DatabaseHandle;
  let serial = 0;

  before(async () => {
    database = await createTestDatabase();
    handle = openDatabase({ databaseUrl: database.url });
    await migrateToLatest(handle.db as never);
    other = openDatabase({ databaseUrl: database.url });
  });
  after(async () => {
    await other.close();
    await handle.close();
    await database.drop();
  });

  const insertUser = async (tx: Tx) => {
    const n = ++serial;
    const now = new Date().toISOString();
    await tx.insertInto('users').values({ id: userId(n), email: `u${n}@example.com`, email_key: `u${n}@example.com`, password_hash: 'x', created_at: now, updated_at: now }).execute();
    return userId(n);
  };
  const committedUser = async (id: string) => (await other.db.selectFrom('users').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;

  it('rolls back a failing transaction alone, among others running at the same time', async () => {
    let failedId = '';
    const outcomes = await Promise.allSettled([
      inTransaction(handle.db, insertUser),
      inTransaction(handle.db, async (tx) => {
        failedId = await insertUser(tx);
        throw new Error('this one fails');
      }),
      inTransaction(handle.db, insertUser),
    ]);
    assert.equal(outcomes[0].status, 'fulfilled');
    assert.equal(outcomes[1].status, 'rejected');
    assert.equal(outcomes[2].status, 'fulfilled');
    const [first, third] = [(outcomes[0] as PromiseFulfilledResult<string>).value, (outcomes[2] as PromiseFulfilledResult<string>).value];
    assert.ok(await committedUser(first));
    assert.ok(await committedUser(third));
    assert.equal(await committedUser(failedId), false, 'the failed transaction left nothing');
  });

  it('runs after-commit callbacks once the data is visible to other connections, and each before-commit hook in its own transaction only', async () => {
    const seenByCallbacks: boolean[] = [];
    const hooked: string[] = [];
    const withHook = withBeforeCommit(
      async (tx) => {
        hooked.push(await insertUser(tx));
      },
      () =>
        inTransaction(handle.db, async (tx) => {
          const id = await insertUser(tx);
          afterCommit(tx, () => void committedUser(id).then((seen) => seenByCallbacks.push(seen)));
          return id;
        }),
    );
    const plain = inTransaction(handle.db, insertUser);
    const [hookedId, plainId] = await Promise.all([withHook, plain]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(seenByCallbacks, [true]);
    assert.equal(hooked.length, 1, 'the hook ran once, for the transaction started in its context');
    assert.ok(await committedUser(hooked[0]!), 'what the hook wrote committed with it');
    assert.ok(await committedUser(hookedId));
    assert.ok(await committedUser(plainId));
  });

  it(
    testDialect === 'sqlite'
      ? 'commits transactions queued behind a running one together, none answered before the commit'
      : 'commits each transaction on its own (PostgreSQL has a pool: nothing is grouped)',
    async () => {
      let releaseFirst!: () => void;
      const firstMayFinish = new Promise<void>((resolve) => (releaseFirst = resolve));
      let firstId = '';
      const first = inTransaction(handle.db, async (tx) => {
        firstId = await insertUser(tx);
        await firstMayFinish;
        return firstId;
      });
      let visibleWhileSecondRan: boolean | undefined;
      const second = inTransaction(handle.db, async (tx) => {
        // On SQLite this runs after the first in the same database transaction, uncommitted yet.
        visibleWhileSecondRan = testDialect === 'sqlite' ? await readCommitted(database.url, firstId) : undefined;
        return insertUser(tx);
      });
      // Both are queued by now (inTransaction queues synchronously); a group takes more for 10 ms.
      await new Promise((resolve) => setImmediate(resolve));
      releaseFirst();
      const [firstDone, secondId] = await Promise.all([first, second]);
      if (testDialect === 'sqlite') assert.equal(visibleWhileSecondRan, false, 'the first was not committed while the second ran: one group');
      assert.ok(await committedUser(firstDone));
      assert.ok(await committedUser(secondId));
    },
  );
});

/** Whether another SQLite connection sees the user now (read synchronously from the file). */
async function readCommitted(url: string, id: string): Promise<boolean> {
  const connection = new SqliteDatabase(url.slice('sqlite:'.length), { readonly: true });
  try {
    return connection.prepare('select 1 from users where id = ?').get(id) !== undefined;
  } finally {
    connection.close();
  }
}
