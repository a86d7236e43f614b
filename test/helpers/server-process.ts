import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { createProgram } from '../../src/modules/programs/program.service.ts';
import { issueToken } from '../../src/modules/tokens/token.service.ts';

// Real OS processes: `bin/tandem serve` children on ports picked here (the server does not
// report the port it got for PORT=0), for tests that must cross a process boundary —
// several stateless processes on one PostgreSQL database, or a SIGKILL in the middle of a load.

/** The checkout's `bin/tandem`. */
export const tandemBin = fileURLToPath(new URL('../../bin/tandem', import.meta.url));
const checkout = fileURLToPath(new URL('../..', import.meta.url));

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServerProcess {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  readonly child: ChildProcess;
  /** Settles when the process has exited (for whatever reason). */
  readonly exited: Promise<ProcessExit>;
  /** What the process wrote to stdout and stderr so far, for failure messages. */
  output(): string;
  /** SIGTERM (graceful: finishes in-flight requests), then SIGKILL if it hangs. */
  stop(timeoutMs?: number): Promise<ProcessExit>;
  /** SIGKILL: a crash, nothing is flushed or closed. */
  kill(): Promise<ProcessExit>;
}

export interface ServerProcessOptions {
  databaseUrl: string;
  /** Extra environment (LOG_LEVEL, DATABASE_POOL_SIZE, …). */
  env?: Record<string, string>;
  /** How long to wait for GET /healthz to answer 200. */
  startTimeoutMs?: number;
  /** The port to try first (tests of this helper); a free one otherwise. */
  port?: number;
}

/** A port that was free a moment ago: listen on port 0, read it, close. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('no port'))));
    });
  });
}

function childEnv(databaseUrl: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: databaseUrl,
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.LOG_LEVEL === undefined || process.env.LOG_LEVEL === 'silent' ? 'error' : process.env.LOG_LEVEL,
    RATE_LIMIT_PER_MINUTE: '0',
    SITE_URL: 'http://tandem.test',
    ...extra,
  };
}

/**
 * True when process `pid` holds the socket listening on 127.0.0.1:`port` (Linux: /proc/net/tcp
 * names the listening socket's inode, /proc/<pid>/fd the process's sockets). A /healthz answer
 * on the port alone could come from another test's server that took the port first, while our
 * child is still failing to bind it (issue 22's CI flake: a token "unknown or revoked").
 */
export function listensOn(pid: number, port: number): boolean {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is ADDR:PORT in hex; state 0A is LISTEN; field 9 is the inode.
      if (fields.length > 9 && fields[1]!.endsWith(`:${hexPort}`) && fields[3] === '0A') inodes.add(fields[9]!);
    }
  }
  if (inodes.size === 0) return false;
  let fds: string[] = [];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  return fds.some((fd) => {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      return target.startsWith('socket:[') && inodes.has(target.slice('socket:['.length, -1));
    } catch {
      return false;
    }
  });
}

async function healthy(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

async function startOnce(options: ServerProcessOptions, port: number): Promise<ServerProcess | 'port-taken'> {
  const child = spawn(process.execPath, [tandemBin, 'serve'], {
    cwd: checkout,
    env: childEnv(options.databaseUrl, { ...options.env, PORT: String(port) }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const append = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.length > 200_000) output = output.slice(-100_000);
  };
  child.stdout!.on('data', append);
  child.stderr!.on('data', append);
  let exit: ProcessExit | undefined;
  const exited = new Promise<ProcessExit>((resolve) => {
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      resolve(exit);
    });
  });
  const url = `http://127.0.0.1:${port}`;

  const signal = (name: NodeJS.Signals) => {
    if (exit === undefined) child.kill(name);
  };
  const server: ServerProcess = {
    url,
    port,
    pid: child.pid!,
    child,
    exited,
    output: () => output,
    async stop(timeoutMs = 10_000) {
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), timeoutMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
    async kill() {
      signal('SIGKILL');
      return exited;
    },
  };

  const deadline = Date.now() + (options.startTimeoutMs ?? 30_000);
  while (Date.now() < deadline) {
    if (exit !== undefined) {
      if (/EADDRINUSE|port already in use/.test(output)) return 'port-taken';
      throw new Error(`tandem serve exited (${exit.code ?? exit.signal}) before it was healthy:\n${output}`);
    }
    // Healthy, and the server that answered is our child (not another one on a port it took first).
    if ((await healthy(url)) && listensOn(child.pid!, port)) return server;
    await sleep(100);
  }
  await server.kill();
  throw new Error(`tandem serve did not answer GET /healthz within ${options.startTimeoutMs ?? 30_000} ms:\n${output}`);
}

/** Spawns `bin/tandem serve` on a free port and waits until GET /healthz is 200 from it. */
export async function startServerProcess(options: ServerProcessOptions): Promise<ServerProcess> {
  // The port is free when picked but another process may take it before the child binds it.
  for (let attempt = 0; attempt < 5; attempt++) {
    const started = await startOnce(options, attempt === 0 && options.port !== undefined ? options.port : await freePort());
    if (started !== 'port-taken') return started;
  }
  throw new Error('could not find a free port for tandem serve');
}

/** Starts several server processes on one database, in parallel. */
export function startServerProcesses(count: number, options: ServerProcessOptions): Promise<ServerProcess[]> {
  return Promise.all(Array.from({ length: count }, () => startServerProcess(options)));
}

export interface WorkerProcess {
  /** What the process wrote to stdout and stderr so far. */
  output(): string;
  /** SIGTERM; its exit code. */
  stop(): Promise<number | null>;
}

/** Spawns `bin/tandem worker` (webhook and mail workers, no HTTP) on a database. */
export function startWorkerProcess(options: { databaseUrl: string; env?: Record<string, string> }): WorkerProcess {
  const child = spawn(process.execPath, [tandemBin, 'worker'], { cwd: checkout, env: childEnv(options.databaseUrl, options.env), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    output: () => output,
    stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs one `bin/tandem` command to completion. */
export function runTandem(args: string[], options: { databaseUrl: string; env?: Record<string, string> }): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [tandemBin, ...args], {
      cwd: checkout,
      env: childEnv(options.databaseUrl, options.env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

export interface Tenant {
  token: string;
  programId: string;
}

let tenants = 0;

/**
 * Migrates the database and creates a user, a program and an API key through the services
 * (as the CLI does), from the test process.
 */
export async function seedTenant(databaseUrl: string, options: { currency?: string; commissionRate?: number } = {}): Promise<Tenant> {
  const database = openDatabase({ databaseUrl, databasePoolSize: 2 });
  try {
    await migrateToLatest(database.db as never);
    const n = ++tenants;
    const user = await createUser(database.db, { email: `owner${n}-${process.pid}-${Date.now()}@example.com`, password: 'a long password' });
    const program = await createProgram(database.db, {
      ownerUserId: user.id,
      name: `Multiprocess ${n}`,
      domain: `multiprocess${n}.example.com`,
      currency: options.currency ?? 'USD',
      commissionRate: options.commissionRate ?? 20,
    });
    const { token } = await issueToken(database.db, { programId: program.id, name: 'multiprocess test', kind: 'api_key' });
    return { token, programId: program.id };
  } finally {
    await database.close();
  }
}
