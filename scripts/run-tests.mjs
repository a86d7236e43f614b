#!/usr/bin/env node
// Runs every test file under test/ with node:test through tsx, once per database dialect
// (a dialect matrix): SQLite always; PostgreSQL when a server is reachable at
// TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres).
// REQUIRE_POSTGRES=1 (set by .ci/run) makes an unreachable PostgreSQL a failure.
// Arguments narrow the run: `npm test -- sales` runs files whose path contains "sales".
// TEST_DIALECT=sqlite|postgres runs one leg only.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import pg from 'pg';

function findTests(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return findTests(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

async function postgresReachable(url) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch (error) {
    console.error(`PostgreSQL at ${url.replace(/\/\/[^@]*@/, '//***@')} is not reachable: ${error.message}`);
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

function runLeg(dialect, files) {
  console.log(`\n=== tests on ${dialect} (${files.length} files) ===\n`);
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...files],
    { stdio: 'inherit', env: { ...process.env, TEST_DIALECT: dialect, LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' } },
  );
  return result.status ?? 1;
}

const filters = process.argv.slice(2);
const files = findTests('test')
  .map((f) => relative('.', f))
  .filter((f) => filters.length === 0 || filters.some((pattern) => f.includes(pattern)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}

const only = process.env.TEST_DIALECT;
const results = {};
if (!only || only === 'sqlite') results.sqlite = runLeg('sqlite', files);
if (!only || only === 'postgres') {
  const url = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
  if (await postgresReachable(url)) {
    results.postgres = runLeg('postgres', files);
  } else {
    console.error('\n!!! ============================================================ !!!');
    console.error('!!!  The PostgreSQL leg of the test suite was SKIPPED.              !!!');
    console.error('!!!  Start PostgreSQL or set TEST_DATABASE_URL to run it.           !!!');
    console.error('!!! ============================================================ !!!\n');
    results.postgres = process.env.REQUIRE_POSTGRES === '1' ? 1 : 'skipped';
  }
}
console.log(`\n=== summary: ${Object.entries(results).map(([d, r]) => `${d} ${r === 0 ? 'passed' : r === 'skipped' ? 'SKIPPED' : 'FAILED'}`).join(', ')} ===`);
process.exit(Object.values(results).some((r) => r !== 0 && r !== 'skipped') ? 1 : 0);
