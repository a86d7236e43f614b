#!/usr/bin/env node
// Runs every test file under test/ with node:test through tsx. Arguments narrow the run:
// `npm test -- test/api/affiliates.test.ts` or `npm test -- affiliates`.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

function findTests(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return findTests(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
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
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...files],
  { stdio: 'inherit', env: { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' } },
);
process.exit(result.status ?? 1);
