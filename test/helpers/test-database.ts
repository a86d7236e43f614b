import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

// The dialect matrix: the runner (scripts/run-tests.mjs) runs the whole suite once per
// dialect and says which through TEST_DIALECT. Each test file creates its own database.

export type TestDialect = 'sqlite' | 'postgres';

export const testDialect: TestDialect = process.env.TEST_DIALECT === 'postgres' ? 'postgres' : 'sqlite';

/**
 * Appended to the title of a test that fires parallel requests at one server: only PostgreSQL
 * (a pool of connections) can race them; SQLite's one connection runs them one at a time, so
 * there the test checks the outcome of a burst, not the race. Races between processes (two
 * servers on one SQLite file) are real on both dialects and are not marked.
 */
export const raceNote = testDialect === 'postgres' ? ' (a real race on PostgreSQL)' : ' (SQLite: serialised, so the outcome of a burst, not a race)';

/** The server to create test databases on (trust auth on the CI machine). */
export const postgresAdminUrl = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  url: string;
  /** A directory for other files of the test (always a fresh temp dir). */
  dir: string;
  drop(): Promise<void>;
}

function withDatabase(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function createTestDatabase(dialect: TestDialect = testDialect): Promise<TestDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-test-'));
  if (dialect === 'sqlite') {
    return { url: `sqlite:${join(dir, 'tandem.db')}`, dir, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `tandem_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresAdminUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  return {
    url: withDatabase(postgresAdminUrl, name),
    dir,
    async drop() {
      const client = new pg.Client({ connectionString: postgresAdminUrl });
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
