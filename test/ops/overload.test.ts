// An overloaded PostgreSQL pool is a 503 with Retry-After, not a 500: the request waited for a
// connection as long as DATABASE_STATEMENT_TIMEOUT_MS allows and none came free (seen in CI when
// a 500-sale storm met a busy machine). SQLite has no pool: there the question does not arise.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { testDialect } from '../helpers/test-database.ts';
import { assertProblem } from '../helpers/api-assertions.ts';

const postgresOnly = testDialect === 'postgres' ? false : 'PostgreSQL only: SQLite has no connection pool';

describe('an exhausted connection pool', { skip: postgresOnly }, () => {
  let t: TestServer;
  let api: ApiClient;
  before(async () => {
    t = await startTestServer({ databasePoolSize: 1, databaseStatementTimeoutMs: 1000 });
    api = await t.createTenant();
  });
  after(() => t?.close());

  it('answers 503 with Retry-After while every connection is busy, then serves again', async () => {
    // Hold the only pooled connection for 2.5 s, in statements shorter than the statement timeout.
    const holding = rawDb(t)
      .transaction()
      .execute(async (tx) => {
        for (let i = 0; i < 5; i++) await sql`select pg_sleep(0.5)`.execute(tx);
      });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const busy = await api.get('/affiliates');
    assertProblem(busy, 503, 'unavailable');
    assert.equal(busy.headers.get('retry-after'), '1');
    await holding;
    assert.equal((await api.get('/affiliates')).status, 200);
  });
});
