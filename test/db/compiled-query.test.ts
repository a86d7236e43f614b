// Compiled queries (src/db/compiled-query.ts): built once per shape, each call's values bound,
// and on PostgreSQL run as named prepared statements unless DATABASE_PREPARED_STATEMENTS=off.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { compiledInsert, compiledQuery } from '../../src/db/compiled-query.ts';
import { createTestDatabase, testDialect, type TestDatabase } from '../helpers/test-database.ts';

const id = (key: string) => `00000000-0000-4000-8000-${String(['alpha', 'beta', 'gamma', 'delta'].indexOf(key) + 1).padStart(12, '0')}`;

describe(`compiled queries (${testDialect})`, () => {
  let database: TestDatabase;
  let handle: DatabaseHandle;

  before(async () => {
    database = await createTestDatabase();
    // One connection on PostgreSQL: the prepared statements checked below are that connection's.
    handle = openDatabase({ databaseUrl: database.url, databasePoolSize: 1 });
    await migrateToLatest(handle.db as never);
    const now = new Date().toISOString();
    for (const key of ['alpha', 'beta', 'gamma']) {
      await handle.db
        .insertInto('users')
        .values({ id: id(key), email: `${key}@example.com`, email_key: `${key}@example.com`, password_hash: 'x', created_at: now, updated_at: now })
        .execute();
    }
  });
  after(async () => {
    await handle.close();
    await database.drop();
  });

  it('builds once per shape and binds each call its own values', async () => {
    let builds = 0;
    const byEmail = compiledQuery<{ email: string }, { id: string }, 'one' | 'not'>((db, param, shape) => {
      builds++;
      return db.selectFrom('users').select('id').where('email_key', shape === 'not' ? '!=' : '=', param('email')).orderBy('id');
    });
    assert.deepEqual(await byEmail.rows(handle.db, { email: 'alpha@example.com' }, 'one'), [{ id: id('alpha') }]);
    assert.deepEqual(await byEmail.first(handle.db, { email: 'beta@example.com' }, 'one'), { id: id('beta') });
    assert.equal(await byEmail.first(handle.db, { email: 'nobody@example.com' }, 'one'), undefined);
    assert.equal(builds, 1, 'three calls of one shape, one build');
    assert.deepEqual(await byEmail.rows(handle.db, { email: 'alpha@example.com' }, 'not'), [{ id: id('beta') }, { id: id('gamma') }]);
    assert.equal(builds, 2, 'a second shape, a second build');
  });

  it('runs inside a transaction, and refuses a call without a value rather than binding undefined', async () => {
    const insert = compiledInsert('users');
    const count = compiledQuery<{ email: string }, { n: number | string }>((db, param) =>
      db.selectFrom('users').select((eb) => eb.fn.countAll().as('n')).where('email_key', '=', param('email')),
    );
    await assert.rejects(
      handle.db.transaction().execute(async (tx) => {
        await insert.run(tx, { id: id('delta'), email: 'delta@example.com', email_key: 'delta@example.com', password_hash: 'x', created_at: new Date().toISOString(), updated_at: new Date().toISOString() });
        assert.equal(Number((await count.first(tx, { email: 'delta@example.com' }))!.n), 1, 'seen inside the transaction');
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.equal(Number((await count.first(handle.db, { email: 'delta@example.com' }))!.n), 0, 'rolled back with the transaction');
    await assert.rejects(count.first(handle.db, {} as { email: string }), /no value for parameter "email"/);
  });

  it('a query outside a transaction never sees what an open transaction wrote (SQLite runs compiled queries at once only when that is safe)', async () => {
    const insert = compiledInsert('users');
    const emails = compiledQuery<{ email: string }, { email: string }>((db, param) => db.selectFrom('users').select('email').where('email_key', '=', param('email')));
    const email = 'epsilon@example.com';
    let wrote!: () => void;
    const written = new Promise<void>((resolve) => (wrote = resolve));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const transaction = handle.db.transaction().execute(async (tx) => {
      await insert.run(tx, { id: '00000000-0000-4000-8000-000000000005', email, email_key: email, password_hash: 'x', created_at: new Date().toISOString(), updated_at: new Date().toISOString() });
      assert.equal((await emails.rows(tx, { email })).length, 1, 'the transaction sees its own row');
      wrote();
      await held;
      throw new Error('roll back');
    });
    await written;
    // Asked while the transaction is open with its row written: it must not answer from inside it.
    const outside = emails.rows(handle.db, { email });
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    await assert.rejects(transaction, /roll back/);
    assert.deepEqual(await outside, [], 'the rolled-back row was never seen outside its transaction');
  });

  it(testDialect === 'postgres' ? 'runs as a named prepared statement, or unnamed with DATABASE_PREPARED_STATEMENTS=off' : 'reuses the SQL text (SQLite caches the prepared statement by it)', async () => {
    const byId = compiledQuery<{ id: string }, { email: string }>((db, param) => db.selectFrom('users').select('email').where('id', '=', param('id')));
    assert.equal((await byId.first(handle.db, { id: id('gamma') }))!.email, 'gamma@example.com');
    if (testDialect !== 'postgres') return;
    const prepared = async (db: DatabaseHandle) =>
      (await sql<{ statement: string }>`select statement from pg_prepared_statements where name like 'tandem_%'`.execute(db.db)).rows.map((r) => r.statement);
    assert.ok((await prepared(handle)).some((text) => /from "users" where "id" = \$1/.test(text)), 'the query is a named statement of the connection');

    const unnamed = openDatabase({ databaseUrl: database.url, databasePoolSize: 1, databasePreparedStatements: false });
    try {
      assert.equal((await byId.first(unnamed.db, { id: id('alpha') }))!.email, 'alpha@example.com');
      assert.deepEqual(await prepared(unnamed), [], 'no named statement on a connection with prepared statements off');
    } finally {
      await unnamed.close();
    }
  });
});
