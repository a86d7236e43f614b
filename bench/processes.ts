import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, loadavg } from 'node:os';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

// What the benchmarks (bench/run.ts, bench/events.ts) share around the load itself: the
// command line, server processes on free ports of 127.0.0.1, a scratch PostgreSQL database,
// and the facts a report is stamped with (commit, machine, load average).

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The value of `--name value` or `--name=value` on the command line. */
export function option(name: string): string | undefined {
  const argv = process.argv.slice(2);
  const index = argv.indexOf(name);
  if (index >= 0) return argv[index + 1];
  return argv.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);
}

export const postgresAdminUrl = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

// ---------------------------------------------------------------- processes

/** One or more processes of the same server; load is split evenly over their origins. */
export interface Service {
  name: string;
  origins: string[];
  children: ChildProcess[];
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolveFree) => {
    const server = createServer();
    server.once('error', () => resolveFree(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolveFree(true)));
  });
}

/** Starts `count` processes on consecutive ports (a free block above a free port). */
export async function startService(name: string, nodeArgs: string[], env: Record<string, string>, count = 1): Promise<Service> {
  let first = await freePort();
  for (let attempt = 0; attempt < 20; attempt++) {
    const ports = await Promise.all(Array.from({ length: count - 1 }, (_, i) => portIsFree(first + i + 1)));
    if (ports.every(Boolean)) break;
    first = await freePort();
  }
  const started: Service = { name, origins: [], children: [] };
  try {
    for (let i = 0; i < count; i++) {
      const one = await startProcess(count > 1 ? `${name} ${i + 1}` : name, nodeArgs, env, first + i);
      started.origins.push(one.origin);
      started.children.push(one.child);
    }
  } catch (error) {
    for (const child of started.children) child.kill('SIGKILL');
    throw error;
  }
  return started;
}

async function startProcess(name: string, nodeArgs: string[], env: Record<string, string>, port: number): Promise<{ origin: string; child: ChildProcess }> {
  const child = spawn(process.execPath, nodeArgs, {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port) },
    // The server's output (its log) goes to stderr: stdout is the report's.
    stdio: ['ignore', 2, 2],
  });
  const origin = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode} while starting`);
    try {
      if ((await fetch(`${origin}/healthz`)).ok) return { origin, child };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`${name} did not answer ${origin}/healthz within 60 s`);
}

/** SIGTERM to every process (a graceful shutdown), SIGKILL to any still running 10 s later. */
export async function stopService(service: Service): Promise<void> {
  await Promise.all(
    service.children.map(async (child) => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }),
  );
}

/** SIGKILL to every process still running (cleanup after a failure). */
export function killService(service: Service): void {
  for (const child of service.children) if (child.exitCode === null) child.kill('SIGKILL');
}

/** Peak resident set size of a process, in MB (Linux: VmHWM in /proc/<pid>/status). */
export function peakRssMb(pid: number): number {
  const match = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmHWM for process ${pid}`);
  return Number(match[1]) / 1024;
}

/** CPU time (user and system) the process has used so far, in µs (/proc/PID/stat, clock ticks of 10 ms). */
export function cpuMicros(pid: number): number {
  // Fields after the command (which may hold spaces) are space-separated; utime and stime are the 14th and 15th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

// ---------------------------------------------------------------- PostgreSQL

export interface ScratchDatabase {
  name: string;
  /** The database's URL on the admin URL's server. */
  url: string;
  /** Drops the database (once; later calls do nothing). */
  drop(): Promise<void>;
}

/** A fresh database with a random name on the admin URL's server, for one run. */
export async function createScratchDatabase(adminUrl = postgresAdminUrl): Promise<ScratchDatabase> {
  const name = `tandem_bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    name,
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
        console.error(`Dropped database ${name}`);
      } finally {
        await client.end();
      }
    },
  };
}

// ---------------------------------------------------------------- the report's stamp

export function gitCommit(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root, encoding: 'utf8' }).trim() !== '';
    return dirty ? `${commit} + uncommitted changes` : commit;
  } catch {
    return 'unknown';
  }
}

/** The 1-minute load average: how busy the shared machine was (other work skews absolute numbers). */
export const loadAverage = () => loadavg()[0]!.toFixed(1);

/** The machine line of a report: cores, Node, and the load average at the start and at the end. */
export const machineLine = (loadAtStart: string) =>
  `nproc ${availableParallelism()}, Node ${process.version}, ${process.platform}/${process.arch}; load average ${loadAtStart} at the start, ${loadAverage()} at the end`;

/** The run's date as the reports write it: `2026-11-22 04:44 UTC`. */
export const reportDate = () => new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC';

export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
