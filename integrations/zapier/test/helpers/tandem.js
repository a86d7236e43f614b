'use strict';
/* global require, module, __dirname, AbortSignal, setTimeout, clearTimeout */
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS, the module format Zapier runs */
/* eslint-disable no-restricted-properties -- the tests configure the server they start through its environment */

// A real Tandem server for the app's tests: `bin/tandem serve` of this checkout on 127.0.0.1,
// a fresh SQLite file, and the operator command line (`bin/tandem … --json`) to set up users,
// programs, keys and integrations the way an operator would.

// zapier-platform-core raises its output checks (a trigger without ids, a search that is not a
// list) as errors only under test; set before anything loads it.
process.env.NODE_ENV = process.env.NODE_ENV || 'test';

const { spawn, execFile } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const { createServer } = require('node:net');
const { tmpdir } = require('node:os');
const path = require('node:path');
const { setTimeout: sleep } = require('node:timers/promises');
const { promisify } = require('node:util');

/** fetch as Node ships it: zapier-platform-core wraps the global one with its logger when it runs. */
const realFetch = globalThis.fetch;

const checkout = path.resolve(__dirname, '../../../..');
const tandemBin = path.join(checkout, 'bin/tandem');

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

async function healthy(url) {
  try {
    const response = await realFetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

/**
 * Starts `tandem serve`; resolves once GET /healthz answers 200. The returned object runs
 * CLI commands against the same database and stops the server (and removes its files).
 */
async function startTandem() {
  const dir = mkdtempSync(path.join(tmpdir(), 'tandem-zapier-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = {
    ...process.env,
    DATABASE_URL: `sqlite:${path.join(dir, 't.db')}`,
    PORT: String(port),
    HOST: '127.0.0.1',
    SITE_URL: url,
    WEBHOOK_ALLOW_PRIVATE_URLS: '1',
    LOG_LEVEL: 'error',
    RATE_LIMIT_PER_MINUTE: '0',
  };
  delete env.NODE_ENV; // the tests' "test" is for zapier-platform-core, not for the server
  const child = spawn(process.execPath, [tandemBin, 'serve'], { cwd: checkout, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  let exit;
  exited.then((value) => (exit = value));

  const deadline = Date.now() + 60_000;
  while (!(await healthy(url))) {
    if (exit !== undefined || Date.now() > deadline) {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`tandem serve did not become healthy (${exit ? `exited ${JSON.stringify(exit)}` : 'timed out'}):\n${output}`);
    }
    await sleep(100);
  }

  /** `tandem <args> --json`: the JSON object on the last line of stdout. */
  async function cli(...args) {
    try {
      const { stdout } = await promisify(execFile)(process.execPath, [tandemBin, ...args, '--json'], { cwd: checkout, env });
      const lines = stdout.trim().split('\n');
      return JSON.parse(lines[lines.length - 1]);
    } catch (error) {
      throw new Error(`tandem ${args.join(' ')} failed: ${error.stderr || error.message}`);
    }
  }

  async function stop() {
    if (exit === undefined) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  }

  return { url, cli, stop, output: () => output };
}

/** An operator account, a program of it and an API key for the program, made with the CLI. */
async function createProgramWithKey(tandem, { email = 'operator@example.com', password = 'a long passphrase', name = 'Acme Partners', domain = 'acme.example.com' } = {}) {
  const user = await tandem.cli('user', 'create', '--email', email, '--password', password);
  const program = await tandem.cli('program', 'create', '--owner', email, '--name', name, '--domain', domain, '--currency', 'USD', '--commission-rate', '20');
  // No hold, so a sale can be paid out at once (the payout trigger's test).
  await tandem.cli('program', 'update', '--program', program.id, '--hold-days', '0');
  const key = await tandem.cli('key', 'create', '--program', program.id, '--name', 'zapier tests');
  return { user, email, password, program, key, token: key.token };
}

/** A plain API client (not the app under test), for setting up data and checking results. */
function apiClient(baseUrl, token) {
  async function call(method, pathAndQuery, body) {
    const response = await realFetch(`${baseUrl}/api/v1${pathAndQuery}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
  }
  /** The body of a call that must succeed. */
  async function ok(method, pathAndQuery, body) {
    const response = await call(method, pathAndQuery, body);
    if (response.status >= 300) throw new Error(`${method} ${pathAndQuery} → ${response.status} ${JSON.stringify(response.body)}`);
    return response.body;
  }
  return {
    call,
    get: (p) => ok('GET', p),
    post: (p, body) => ok('POST', p, body),
    put: (p, body) => ok('PUT', p, body),
  };
}

/** The message of a z.errors.Error (which carries {message, code, status} as JSON). */
function appErrorOf(error) {
  try {
    return JSON.parse(error.message);
  } catch {
    return { message: error.message };
  }
}

module.exports = { realFetch, startTandem, createProgramWithKey, apiClient, appErrorOf, sleep };
