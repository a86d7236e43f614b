import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { median, root } from './processes.ts';
import { Browser, describeFailure, nextLinkPath, ok, timedFetch, type Timed } from './scale-http.ts';
import { openReader, type ScaleProgram } from './scale-seed.ts';

// What the scale bench (bench/scale.ts) times against a running `tandem serve`, on the SMALL and
// the BIG program side by side: the pages, lists and exports (sequential requests, one warm-up
// then the median of k), the month end (`tandem payout run` while sales keep coming in) and the
// first purge of old events (while a ping checks that the server still answers).

/** The longest a timed page, list or export may take before it counts as failed. */
const REQUEST_TIMEOUT_MS = 180_000;

export interface Side {
  ms: number;
  bytes: number;
  /** The rows of a CSV download (its lines but the header). */
  rows?: number;
}

export interface MeasuredRow {
  group: 'Dashboard' | 'Portal' | 'API';
  what: string;
  /** Whether the answer's size is part of the row (exports, unbounded lists). */
  showBytes: boolean;
  /**
   * A CSV download, compared per row: the file holds the list up to its cap (1,000 rows against
   * 10,000), so the ratio of whole downloads is of their sizes; per row it is of the work.
   */
  perRow: boolean;
  small: Side;
  big: Side;
  failure?: string;
}

export interface Context {
  origin: string;
  big: ScaleProgram;
  small: ScaleProgram;
  /** The merchant's browser, logged in to the dashboard. */
  dashboard: Browser;
  /** Per program, the heavy affiliate's browser, signed in to the portal, and the portal's slug. */
  portal: Map<string, { browser: Browser; slug: string }>;
  repetitions: number;
  log: (line: string) => void;
}

const api = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

// ---------------------------------------------------------------- pages, lists, exports

interface Measure {
  group: MeasuredRow['group'];
  what: string;
  showBytes?: boolean;
  perRow?: boolean;
  request: (program: ScaleProgram) => Promise<Timed>;
}

/** Every measure of the table, in its order: dashboard, portal, API. */
export function measuresOf(context: Context, deepSalesPage: Map<string, string>): Measure[] {
  const { dashboard, origin } = context;
  const page = (what: string, path: (p: ScaleProgram) => string, showBytes = false): Measure => ({
    group: 'Dashboard',
    what,
    showBytes,
    request: (p) => dashboard.get(`/dashboard/programs/${p.id}${path(p)}`),
  });
  const csv = (what: string, path: string): Measure => ({
    group: 'Dashboard',
    what,
    showBytes: true,
    perRow: true,
    request: (p) => dashboard.get(`/dashboard/programs/${p.id}${path}`, true),
  });
  const portal = (what: string, path: string): Measure => ({
    group: 'Portal',
    what,
    request: (p) => {
      const { browser, slug } = context.portal.get(p.id)!;
      return browser.get(`/portal/${slug}${path}`);
    },
  });
  const apiGet = (what: string, path: (p: ScaleProgram) => string, showBytes = false): Measure => ({
    group: 'API',
    what,
    showBytes,
    request: (p) => timedFetch(origin + path(p), { headers: api(p.token), timeoutMs: REQUEST_TIMEOUT_MS }),
  });
  return [
    page('overview', () => ''),
    page('payouts page', () => '/payouts'),
    page('sales list', () => '/sales'),
    page('sales list, search `q=customer777.` (one customer)', () => '/sales?q=customer777.'),
    page('sales list sorted by amount', () => '/sales?sort=amount-desc'),
    page('sales list sorted by commission', () => '/sales?sort=commission-desc'),
    page('sales list filtered by the heavy affiliate', (p) => `/sales?affiliate=${p.heavyAffiliateId}`),
    page("the heavy affiliate's page", (p) => `/affiliates/${p.heavyAffiliateId}`),
    page("a sale's page (one of the heavy affiliate's, old: events, entries)", (p) => `/sales/${p.heavySaleId}`),
    csv('sales CSV (full download; ratio per row)', '/sales.csv'),
    csv('affiliates CSV (full download; ratio per row)', '/affiliates.csv'),
    page('affiliates list', () => '/affiliates'),
    page('referrals list', () => '/referrals'),
    page('coupons page', () => '/coupons'),
    portal("home page (the heavy affiliate's)", '/home'),
    portal('`me.json`', '/me.json'),
    apiGet('`GET /api/v1/coupons` (default page)', () => '/api/v1/coupons', true),
    // limit=100 on both sides: the default page (1,000) holds every entry of the small program's
    // heavy affiliate (~100) but 1,000 of the big one's, ten times the rows.
    apiGet('`GET /api/v1/commissions?affiliateId=&limit=100` (the heavy affiliate)', (p) => `/api/v1/commissions?affiliateId=${p.heavyAffiliateId}&limit=100`, true),
    apiGet('`GET /api/v1/sales?limit=100` (first page)', () => '/api/v1/sales?limit=100'),
    apiGet('`GET /api/v1/sales?limit=100`, page 10 (the `Link` cursor)', (p) => deepSalesPage.get(p.id)!),
    apiGet('`GET /api/v1/events?after=0` (the oldest cursor)', () => '/api/v1/events?after=0', true),
    apiGet('`GET /api/v1/sales?id=` (lookup)', (p) => `/api/v1/sales?id=${p.middleSaleId}`),
    apiGet('`GET /api/v1/affiliates?id=` (lookup)', (p) => `/api/v1/affiliates?id=${p.heavyAffiliateId}`),
  ];
}

/** The path of the 10th page of GET /api/v1/sales?limit=100 (the 9th `next` link), or the last page there is. */
export async function deepSalesPagePath(origin: string, program: ScaleProgram): Promise<string> {
  let path = '/api/v1/sales?limit=100';
  for (let page = 1; page < 10; page++) {
    const answer = await timedFetch(origin + path, { headers: api(program.token), timeoutMs: REQUEST_TIMEOUT_MS });
    if (!ok(answer)) throw new Error(`GET ${path} answered ${describeFailure(answer)}`);
    const next = nextLinkPath(answer.headers);
    if (!next) break;
    path = next;
  }
  return path;
}

/** Big ÷ small: of the times, or of the times per row for a download compared per row. */
export function ratioOf(row: MeasuredRow): number {
  if (!row.perRow) return row.big.ms / row.small.ms;
  return row.big.ms / Math.max(1, row.big.rows ?? 1) / (row.small.ms / Math.max(1, row.small.rows ?? 1));
}

/** One measure: a warm-up on each side, then `repetitions` rounds alternating which side goes first. */
export async function runMeasure(context: Context, measure: Measure): Promise<MeasuredRow> {
  const { small, big, repetitions, log } = context;
  const failures: string[] = [];
  const times = { small: [] as number[], big: [] as number[] };
  const bytes = { small: 0, big: 0 };
  const rows = { small: 0, big: 0 };
  const once = async (side: 'small' | 'big', timed: boolean) => {
    const answer = await measure.request(side === 'small' ? small : big);
    if (!ok(answer)) failures.push(`${side}: ${describeFailure(answer)}`);
    if (timed) times[side].push(answer.ms);
    bytes[side] = answer.bytes;
    if (measure.perRow) rows[side] = (answer.text ?? '').split('\n').filter((line) => line !== '').length - 1;
  };
  await once('small', false);
  await once('big', false);
  for (let round = 0; round < repetitions; round++) {
    const order: ('small' | 'big')[] = round % 2 === 0 ? ['small', 'big'] : ['big', 'small'];
    for (const side of order) await once(side, true);
  }
  const row: MeasuredRow = {
    group: measure.group,
    what: measure.what,
    showBytes: measure.showBytes ?? false,
    perRow: measure.perRow ?? false,
    small: { ms: median(times.small), bytes: bytes.small, ...(measure.perRow ? { rows: rows.small } : {}) },
    big: { ms: median(times.big), bytes: bytes.big, ...(measure.perRow ? { rows: rows.big } : {}) },
    failure: failures.length ? `${failures.length} non-2xx/errors, first: ${failures[0]}` : undefined,
  };
  log(
    `  ${measure.group}: ${measure.what}: small ${row.small.ms.toFixed(1)} ms, big ${row.big.ms.toFixed(1)} ms (×${ratioOf(row).toFixed(1)})` +
      `${row.showBytes ? `, ${row.small.bytes} / ${row.big.bytes} bytes` : ''}${row.perRow ? `, ${row.small.rows} / ${row.big.rows} rows` : ''}${row.failure ? ` !!! ${row.failure}` : ''}`,
  );
  return row;
}

// ---------------------------------------------------------------- memory

/** A field of /proc/PID/status in MB (VmRSS: now; VmHWM: the peak since start or the last reset). */
export function statusMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no ${field} for process ${pid}`);
  return Number(match[1]) / 1024;
}

/** Resets the process's peak RSS (VmHWM) to its current RSS (Linux: clear_refs 5); false when not allowed. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------- load beside a long job

export interface LoadStats {
  sent: number;
  ok: number;
  failed: number;
  timeouts: number;
  p50: number;
  p99: number;
  max: number;
  /** When the slowest request was sent, in seconds from the load's start. */
  maxSentAt: number;
  firstFailure?: string;
}

/** `latencies`: each answered request's time and when it was sent (seconds from the load's start). */
function statsOf(latencies: { ms: number; sentAt: number }[], sent: number, failed: number, timeouts: number, firstFailure?: string): LoadStats {
  const sorted = [...latencies].sort((a, b) => a.ms - b.ms);
  const at = (q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!.ms : 0);
  const slowest = sorted[sorted.length - 1];
  return { sent, ok: sent - failed, failed, timeouts, p50: at(0.5), p99: at(0.99), max: slowest?.ms ?? 0, maxSentAt: slowest?.sentAt ?? 0, firstFailure };
}

/**
 * POST /api/v1/sales to `program` at `perSecond` (each for an existing customer, a new charge)
 * until stop() — at most `maxMs` and `maxInFlight` outstanding — then waits for the answers.
 */
export function startSalesLoad(origin: string, program: ScaleProgram, perSecond: number, maxMs: number, maxInFlight = 200) {
  const latencies: { ms: number; sentAt: number }[] = [];
  let sent = 0;
  let failed = 0;
  let timeouts = 0;
  let skipped = 0;
  let firstFailure: string | undefined;
  let inFlight = 0;
  const pending = new Set<Promise<void>>();
  const started = Date.now();
  const tag = `${Date.now().toString(36)}`;
  const send = () => {
    if (inFlight >= maxInFlight) {
      skipped++;
      return;
    }
    const n = ++sent;
    const body = JSON.stringify({ referralId: program.referralId((n * 7_919) % program.sales), totalEarned: 10 + (n % 190), externalId: `ch_monthend_${tag}_${n}` });
    inFlight++;
    const sentAt = (Date.now() - started) / 1000;
    const request = timedFetch(`${origin}/api/v1/sales`, { method: 'POST', headers: api(program.token), body, timeoutMs: 30_000 }).then((answer) => {
      inFlight--;
      latencies.push({ ms: answer.ms, sentAt });
      if (!ok(answer)) {
        failed++;
        if (answer.error?.startsWith('timed out')) timeouts++;
        firstFailure ??= describeFailure(answer);
      }
    });
    pending.add(request);
    void request.finally(() => pending.delete(request));
  };
  const timer = setInterval(() => {
    if (Date.now() - started > maxMs) clearInterval(timer);
    else send();
  }, 1000 / perSecond);
  return {
    async stop(): Promise<LoadStats & { skipped: number }> {
      clearInterval(timer);
      await Promise.all([...pending]);
      return { ...statsOf(latencies, sent, failed, timeouts, firstFailure), skipped };
    },
  };
}

// ---------------------------------------------------------------- the month end

export interface MonthEnd {
  seconds: number;
  payouts: number | null;
  exitCode: number | null;
  output: string;
  sales: LoadStats & { skipped: number };
}

/** The longest a payout run may take before it is stopped (and reported as failed). */
const MONTH_END_LIMIT_MS = 45 * 60_000;
/** Sales per second posted to the program while its payout run goes on. */
export const MONTH_END_SALES_PER_SECOND = 20;

/** `tandem payout run --program ID` (the real command line, its own process) while sales keep coming in to the program. */
export async function runMonthEnd(origin: string, databaseUrl: string, program: ScaleProgram, log: (line: string) => void): Promise<MonthEnd> {
  const load = startSalesLoad(origin, program, MONTH_END_SALES_PER_SECOND, MONTH_END_LIMIT_MS);
  const started = performance.now();
  const child = spawn(process.execPath, ['bin/tandem', 'payout', 'run', '--program', program.id], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let head = '';
  let tail = '';
  const keep = (chunk: Buffer) => {
    if (head.length < 2_000) head += chunk.toString('utf8');
    tail = (tail + chunk.toString('utf8')).slice(-2_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const limit = setTimeout(() => child.kill('SIGKILL'), MONTH_END_LIMIT_MS);
  const exitCode = await new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  clearTimeout(limit);
  const seconds = (performance.now() - started) / 1000;
  const sales = await load.stop();
  const made = /made (\d+) payouts?/.exec(head);
  const payouts = made ? Number(made[1]) : /nothing to pay/.test(head) ? 0 : null;
  log(
    `  month end of ${program.name}: ${seconds.toFixed(1)} s, ${payouts ?? '?'} payouts, exit ${exitCode}; sales during it: ${sales.sent} sent, ` +
      `p50 ${sales.p50.toFixed(0)} ms, p99 ${sales.p99.toFixed(0)} ms, max ${sales.max.toFixed(0)} ms (sent at +${sales.maxSentAt.toFixed(1)} s), ${sales.failed} failed (${sales.timeouts} timeouts)` +
      `${sales.firstFailure ? `, first: ${sales.firstFailure}` : ''}`,
  );
  return { seconds, payouts, exitCode, output: exitCode === 0 ? '' : `${head.slice(0, 500)} … ${tail.slice(-500)}`, sales };
}

// ---------------------------------------------------------------- the purge

export interface StorageFacts {
  /** SQLite: the file's size (with its WAL), pages and free pages; PostgreSQL: the database's size and the events' dead tuples. */
  text: string;
  freePages?: number;
  bytes?: number;
}

export interface Purge {
  /** Old events and billing events (older than the retention) before the purge. */
  oldEvents: number;
  oldBillingEvents: number;
  /** From the server's spawn to its first answer, and from then until no old row was left. */
  startSeconds: number;
  seconds: number | null;
  pings: LoadStats;
  /** Pings that took longer than a second. */
  slowPings: number;
  before: StorageFacts;
  after: StorageFacts;
  /** The first request of each program's sale page after the purge (ms). */
  salePageAfter: { small: Timed; big: Timed };
}

/** The longest the bench waits for the first purge to finish. */
const PURGE_LIMIT_MS = 30 * 60_000;
/** Pings go on this long after the purge (the worker may hand freed pages back then). */
export const PINGS_AFTER_PURGE_MS = 10_000;

export async function storageFacts(databaseUrl: string): Promise<StorageFacts> {
  const query = await openReader(databaseUrl);
  try {
    if (query.dialect === 'sqlite') {
      const file = databaseUrl.slice('sqlite:'.length);
      const size = (path: string) => {
        try {
          return statSync(path).size;
        } catch {
          return 0;
        }
      };
      const bytes = size(file) + size(`${file}-wal`);
      const [pageSize, pages, free] = await Promise.all(['page_size', 'page_count', 'freelist_count'].map(async (p) => Number(Object.values((await query(`pragma ${p}`))[0]!)[0])));
      return {
        text: `${(bytes / 1e9).toFixed(2)} GB (file + WAL), ${pages!.toLocaleString('en-US')} pages of ${pageSize} B, ${free!.toLocaleString('en-US')} free (${((free! * pageSize!) / 1e9).toFixed(2)} GB)`,
        freePages: free,
        bytes,
      };
    }
    const [size] = await query('select pg_database_size(current_database()) as bytes');
    const [events] = await query("select n_live_tup as live, n_dead_tup as dead from pg_stat_user_tables where relname = 'events'");
    const bytes = Number(size!.bytes);
    return { text: `${(bytes / 1e9).toFixed(2)} GB database, events: ${Number(events?.live ?? 0).toLocaleString('en-US')} live / ${Number(events?.dead ?? 0).toLocaleString('en-US')} dead tuples (pg_stat)`, bytes };
  } finally {
    await query.close();
  }
}

/** Whether any event or billing event older than `cutoff` is left, per program (over the (program_id, created_at) indexes). */
async function oldRowsLeft(query: Awaited<ReturnType<typeof openReader>>, programIds: string[], cutoff: string): Promise<boolean> {
  for (const table of ['events', 'billing_events']) {
    for (const id of programIds) {
      if ((await query(`select 1 as found from ${table} where program_id = ? and created_at < ? limit 1`, [id, cutoff])).length > 0) return true;
    }
  }
  return false;
}

/** Events and billing events older than `cutoff`, counted per program over the (program_id, created_at) indexes (not the rows). */
export async function countOld(databaseUrl: string, programIds: string[], cutoff: string): Promise<{ events: number; billing: number }> {
  const query = await openReader(databaseUrl);
  try {
    const count = async (table: string) => {
      let n = 0;
      for (const id of programIds) n += Number((await query(`select count(*) as n from ${table} where program_id = ? and created_at < ?`, [id, cutoff]))[0]!.n);
      return n;
    };
    return { events: await count('events'), billing: await count('billing_events') };
  } finally {
    await query.close();
  }
}

/** `tandem serve` as the purge phase starts it: its own spawn, since the server may not answer for minutes. */
export function spawnTandem(env: Record<string, string>, port: number): ChildProcess {
  return spawn(process.execPath, ['bin/tandem', 'serve'], { cwd: root, env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', 2, 2] });
}

/**
 * The first purge as a deployment meets it: `tandem serve` starts (its maintenance worker purges
 * at start) over a database full of events older than the retention. From the spawn, GET
 * /api/v1/me once every 50 ms, one at a time (the longest wait is the server's longest
 * silence); the database is read every 500 ms (another connection) until no old event or billing
 * event is left, and the pings go on PINGS_AFTER_PURGE_MS more. Returns the child still running.
 */
export async function watchFirstPurge(
  child: ChildProcess,
  origin: string,
  databaseUrl: string,
  programs: ScaleProgram[],
  cutoff: string,
  log: (line: string) => void,
): Promise<{ startSeconds: number; seconds: number | null; pings: LoadStats; slowPings: number }> {
  const spawnedAt = performance.now();
  let firstAnswerAt: number | null = null;
  let doneAt: number | null = null;
  let stopping = false;
  const latencies: { ms: number; sentAt: number }[] = [];
  let failed = 0;
  let timeouts = 0;
  let firstFailure: string | undefined;
  let longest = 0;
  const pinging = (async () => {
    while (!stopping && performance.now() - spawnedAt < PURGE_LIMIT_MS) {
      if (child.exitCode !== null) throw new Error(`tandem serve exited with code ${child.exitCode} during the purge`);
      const answer = await timedFetch(`${origin}/api/v1/me`, { headers: api(programs[0]!.token), timeoutMs: 300_000 });
      if (firstAnswerAt === null) {
        if (answer.status === 0 && !answer.error?.startsWith('timed out')) {
          await new Promise((r) => setTimeout(r, 50)); // not listening yet
          continue;
        }
        firstAnswerAt = performance.now() - answer.ms;
      }
      if (doneAt === null || performance.now() - answer.ms <= doneAt + PINGS_AFTER_PURGE_MS) {
        latencies.push({ ms: answer.ms, sentAt: (performance.now() - answer.ms - spawnedAt) / 1000 });
        if (answer.ms > longest + 1000) log(`  … a ping took ${(answer.ms / 1000).toFixed(1)} s`);
        longest = Math.max(longest, answer.ms);
        if (!ok(answer)) {
          failed++;
          if (answer.error?.startsWith('timed out')) timeouts++;
          firstFailure ??= describeFailure(answer);
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const query = await openReader(databaseUrl);
  try {
    let lastLog = performance.now();
    while (performance.now() - spawnedAt < PURGE_LIMIT_MS) {
      await new Promise((r) => setTimeout(r, 500));
      if (firstAnswerAt === null) continue;
      if (!(await oldRowsLeft(query, programs.map((p) => p.id), cutoff))) {
        doneAt = performance.now();
        await new Promise((r) => setTimeout(r, PINGS_AFTER_PURGE_MS));
        break;
      }
      if (performance.now() - lastLog > 15_000) {
        lastLog = performance.now();
        log(`  … purging for ${((performance.now() - firstAnswerAt) / 1000).toFixed(0)} s, longest ping so far ${longest.toFixed(0)} ms`);
      }
    }
  } finally {
    await query.close();
    stopping = true;
    await pinging;
  }
  const pings = statsOf(latencies, latencies.length, failed, timeouts, firstFailure);
  return {
    startSeconds: ((firstAnswerAt ?? performance.now()) - spawnedAt) / 1000,
    seconds: doneAt === null || firstAnswerAt === null ? null : (doneAt - firstAnswerAt) / 1000,
    pings,
    slowPings: latencies.filter(({ ms }) => ms > 1000).length,
  };
}
