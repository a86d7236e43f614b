import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, preflight, type LoadOptions, type Measurement, type Target } from './load.ts';
import {
  createScratchDatabase,
  gitCommit,
  killService,
  loadAverage,
  machineLine,
  median,
  option,
  reportDate,
  root,
  startService,
  stopService,
  type ScratchDatabase,
  type Service,
} from './processes.ts';
import { createProgramsWithKeys } from './seed.ts';
import { EVENTS_MARKERS, int, writeReport } from './table.ts';
import { startReceivers, type LagReport, type Receivers, type Totals } from './webhook-receivers.ts';

// `npm run bench -- --events`: what event delivery costs and how fast it is. On SQLite (one
// `tandem serve` with its in-process worker) and then on PostgreSQL (a fresh database with a
// random name on BENCH_DATABASE_URL's server, dropped at the end; two `tandem serve` processes,
// each with its worker): one program with an API key, an affiliate and a referred customer;
// three webhook receivers (bench/webhook-receivers.ts, in a child process of their own), each
// subscribed to sale.created through POST /api/v1/webhooks. Then
//   1. POST /api/v1/sales at full speed with the worker running ÷ the same servers restarted
//      with WORKER=off, in alternating rounds (on off, off on, …); before each worker-on phase
//      the worker first delivers what earlier phases left, so it starts level;
//   2. 500 sales/s offered (autocannon overallRate, split over the processes) for 30 s with
//      the workers on, then a bounded wait until every acknowledged sale has reached all three
//      receivers: delivery lag (arrival − the event's timestamp) p50 / p99 / max, deliveries per
//      second during the load, lost (201 answers × 3 − distinct (event, receiver) pairs) and
//      duplicates.
// Prints a markdown table and writes it into docs/performance.md (section "Events") unless
// --quick (every phase 3 s) or --db limits it to one database. Exits non-zero when a request
// failed (non-2xx or transport error) or a delivery was lost; a missed speed target is reported.
// --cpu-prof: every server process writes a V8 CPU profile (into a temp dir it prints).

const args = new Set(process.argv.slice(2));
const quick = args.has('--quick');
const onlyDb = option('--db');
const cpuProfile = args.has('--cpu-prof');

const RECEIVERS = 3;
const ROUNDS = quick ? 2 : 4;
const SECONDS = quick ? 3 : 10;
const WARMUP_SECONDS = quick ? 1 : 2;
const LAG_RATE = 500;
const LAG_SECONDS = quick ? 3 : 30;
/**
 * Connections of the steady-rate run. autocannon splits the rate over them and a connection
 * that cannot send its share within the second loses the rest, so there are enough of them
 * for each to need only a few requests a second.
 */
const LAG_CONNECTIONS = 128;
/** The longest wait for outstanding deliveries (before a worker-on phase, after the lag run). */
const WAIT_MS = 60_000;
const RATIO_TARGET = 0.8;
const LAG_P99_TARGET_MS = 1000;
const CUSTOMER = 'customer@events.example.net';
/** Invoice ids of the lag run start with this (the receivers report a phase by prefix). */
const LAG_TAG = 'lag';

interface Setup {
  kind: 'sqlite' | 'postgres';
  label: string;
  processes: number;
  connections: number;
}

const SETUPS: Setup[] = [
  { kind: 'sqlite', label: 'SQLite, 1 process', processes: 1, connections: 32 },
  { kind: 'postgres', label: 'PostgreSQL, 2 processes', processes: 2, connections: 64 },
];

interface LagRun extends LagReport {
  /** Length of the load, from the first request to autocannon's end, ms. */
  loadMs: number;
  /** The last first arrival after the load ended, ms (0 if all arrived during it). */
  tailMs: number;
  /** Pairs of any phase still missing when the wait ended. */
  totals: Totals;
}

interface Result {
  setup: Setup;
  rounds: { on: Measurement; off: Measurement }[];
  lag?: LagRun;
  /** Non-2xx answers, transport errors, lost deliveries, a database that did not run. */
  failures: string[];
}

const log = (text: string) => console.error(text);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

// Whatever is running when the user interrupts: killed, and the scratch database dropped.
const cleanups = new Set<() => unknown>();
process.once('SIGINT', () => {
  void Promise.allSettled([...cleanups].map((c) => c())).finally(() => process.exit(130));
});

async function benchDatabase(setup: Setup): Promise<Result> {
  const result: Result = { setup, rounds: [], failures: [] };
  let dir: string | undefined;
  let scratch: ScratchDatabase | undefined;
  let receivers: Receivers | undefined;
  let tandem: Service | undefined;
  const cleanup = async () => {
    if (tandem) killService(tandem);
    receivers?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    await scratch?.drop();
  };
  cleanups.add(cleanup);
  try {
    let databaseUrl: string;
    if (setup.kind === 'postgres') {
      scratch = await createScratchDatabase();
      databaseUrl = scratch.url;
    } else {
      dir = mkdtempSync(join(tmpdir(), 'tandem-bench-events-'));
      databaseUrl = `sqlite:${join(dir, 'tandem.db')}`;
    }
    log(`\n== ${setup.label}: ${scratch ? `database ${scratch.name}` : databaseUrl}`);
    const profileDir = join(tmpdir(), `tandem-bench-events-profile-${setup.kind}-${Date.now()}`);
    if (cpuProfile) log(`  CPU profiles of the servers: ${profileDir}`);
    const [program] = await createProgramsWithKeys(databaseUrl, [['Events program', 'events.example.com']]);
    receivers = await startReceivers(RECEIVERS);
    const start = (worker: boolean) =>
      startService(
        worker ? 'tandem' : 'tandem (WORKER=off)',
        [...(cpuProfile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), 'bin/tandem', 'serve'],
        {
          HOST: '127.0.0.1',
          DATABASE_URL: databaseUrl,
          LOG_LEVEL: 'warn',
          RATE_LIMIT_PER_MINUTE: '1000000000',
          WEBHOOK_ALLOW_PRIVATE_URLS: '1',
          WORKER: worker ? 'on' : 'off',
        },
        setup.processes,
      );
    let workerOn = true;
    tandem = await start(true);

    // The program's affiliate, its referred customer, and the three subscriptions, through the API.
    const headers = { authorization: `Bearer ${program!.token}`, 'content-type': 'application/json' };
    const post = async (path: string, body: unknown) => {
      const response = await fetch(tandem!.origins[0] + path, { method: 'POST', headers, body: JSON.stringify(body) });
      const text = await response.text();
      if (!response.ok) throw new Error(`POST ${path} answered ${response.status} ${text.slice(0, 300)}`);
      return JSON.parse(text) as { id: string };
    };
    const affiliate = await post('/api/v1/affiliates', { firstName: 'Event', lastName: 'Bench', email: 'partner@events.example.com' });
    await post('/api/v1/referrals', { name: 'Bench Customer', email: CUSTOMER, referredUserExternalId: 'cus_events_1', affiliateId: affiliate.id });
    for (const url of receivers.urls) await post('/api/v1/webhooks', { url, events: ['sale.created'] });

    // A sale for the existing customer, its invoice id unique and tagged with the phase; the
    // invoice ids of the 201 answers are what the receivers must all get.
    let serial = 0;
    let acknowledged: string[] = [];
    let firstRequestAt = 0;
    let lastAnswerAt = 0;
    const sales = (tag: string): Target => ({
      label: tag,
      service: tandem!,
      method: 'POST',
      headers,
      next: () => {
        firstRequestAt ||= Date.now();
        const n = ++serial;
        return { path: '/api/v1/sales', body: JSON.stringify({ email: CUSTOMER, totalEarned: (1_000 + (n % 19_000)) / 100, externalInvoiceId: `${tag}_${n}` }) };
      },
      onSuccess: (body) => {
        lastAnswerAt = Date.now();
        const match = /"externalInvoiceId":"([^"]+)"/.exec(body);
        if (match) acknowledged.push(match[1]!);
      },
    });
    const phase = async (tag: string, length: number, options: LoadOptions): Promise<Measurement> => {
      acknowledged = [];
      firstRequestAt = 0;
      lastAnswerAt = 0;
      const measured = await load(sales(tag), length, options);
      await receivers!.expect(acknowledged);
      if (measured.failures > 0) {
        const message = `${tag}: ${measured.failures} non-2xx/errors, first: ${measured.firstFailure ?? '?'}`;
        log(`!!! ${message}`);
        result.failures.push(message);
      }
      return measured;
    };
    /** Waits (bounded) until every acknowledged sale so far has reached every receiver. */
    const waitForDeliveries = async (why: string): Promise<Totals> => {
      const started = Date.now();
      let totals = await receivers!.totals();
      while (totals.missing > 0 && Date.now() - started < WAIT_MS) {
        await new Promise((r) => setTimeout(r, 100));
        totals = await receivers!.totals();
      }
      log(`  ${why}: ${totals.missing === 0 ? 'all' : `${int(totals.missing)} missing of`} ${int(totals.expectedDeliveries)} deliveries in after ${seconds(Date.now() - started)}`);
      return totals;
    };
    const switchWorker = async (on: boolean) => {
      if (workerOn === on) return;
      await stopService(tandem!);
      tandem = await start(on);
      workerOn = on;
    };

    // One sale through fetch first: a broken setup fails fast and says why.
    acknowledged = [];
    await preflight(sales('preflight'));
    await receivers.expect(acknowledged);

    // 1. Full speed, worker on ÷ worker off, alternating.
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [true, false] : [false, true];
      const measured: Partial<Record<'on' | 'off', Measurement>> = {};
      for (const on of order) {
        await switchWorker(on);
        if (on) await waitForDeliveries('before the worker-on phase');
        const side = on ? 'on' : 'off';
        await phase(`warm${side}${round + 1}`, WARMUP_SECONDS, { connections: setup.connections });
        measured[side] = await phase(`${side}${round + 1}`, SECONDS, { connections: setup.connections });
      }
      const { on, off } = measured as { on: Measurement; off: Measurement };
      result.rounds.push({ on, off });
      log(
        `  round ${round + 1}/${ROUNDS}: worker on ${Math.round(on.rps)} req/s p99 ${on.p99} ms · off ${Math.round(off.rps)} req/s p99 ${off.p99} ms · ratio ${(on.rps / off.rps).toFixed(2)}`,
      );
    }

    // 2. A steady rate with the workers on, then every delivery.
    await switchWorker(true);
    await waitForDeliveries('before the lag run');
    const measured = await phase(LAG_TAG, LAG_SECONDS, { connections: LAG_CONNECTIONS, rate: LAG_RATE });
    // The load's window: from its first request to its last answer.
    const loadStart = firstRequestAt;
    const loadEnd = lastAnswerAt || Date.now();
    log(`  lag run: ${int(measured.ok)} sales acknowledged in ${seconds(loadEnd - loadStart)} (p50 ${measured.p50} ms, p99 ${measured.p99} ms)`);
    const totals = await waitForDeliveries('after the lag run');
    const report = await receivers.report(`${LAG_TAG}_`, loadStart, loadEnd);
    result.lag = { ...report, loadMs: loadEnd - loadStart, tailMs: Math.max(0, report.lastArrival - loadEnd), totals };
    log(`  lag p50 ${report.p50} ms, p99 ${report.p99} ms, max ${report.max} ms; lost ${report.lost}, duplicates ${report.duplicates}, unacknowledged ${report.unacknowledged}`);
    if (report.lost > 0) result.failures.push(`${int(report.lost)} of ${int(report.expectedDeliveries)} deliveries of the lag run lost`);
    const earlier = totals.missing - report.lost;
    if (earlier > 0) result.failures.push(`${int(earlier)} deliveries of the full-speed phases never arrived`);
    if (totals.unrecognised > 0) result.failures.push(`${int(totals.unrecognised)} requests to the receivers were not sale.created envelopes`);
    await stopService(tandem);
  } catch (error) {
    const message = (error as Error).message;
    log(`!!! ${setup.label}: ${message}`);
    result.failures.push(`did not finish: ${message}`);
  } finally {
    await cleanup();
    cleanups.delete(cleanup);
  }
  return result;
}

// ---------------------------------------------------------------- the table

const pass = (ok: boolean) => (ok ? 'pass' : '**FAIL**');

function cells(result: Result): string[] {
  const { rounds, lag } = result;
  let throughput = '—';
  if (rounds.length > 0) {
    const ratios = rounds.map((r) => r.on.rps / r.off.rps);
    const ratio = median(ratios);
    const side = (m: Measurement[]) => `${int(median(m.map((x) => x.rps)))} req/s, p99 ${Math.round(median(m.map((x) => x.p99)))} ms`;
    throughput =
      `**${ratio.toFixed(2)}×** ${pass(ratio >= RATIO_TARGET)} (rounds: ${ratios.map((x) => x.toFixed(2)).join(', ')}) · ` +
      `on ${side(rounds.map((r) => r.on))} · off ${side(rounds.map((r) => r.off))}`;
  }
  const latency = lag ? `${Math.round(lag.p50)} / **${Math.round(lag.p99)}** / ${Math.round(lag.max)} ms ${pass(lag.p99 < LAG_P99_TARGET_MS)}` : '—';
  const rates = lag
    ? `${int(lag.acknowledged / (lag.loadMs / 1000))} sales/s acknowledged · ${int(lag.arrivedInWindow / (lag.loadMs / 1000))} deliveries/s · last one ${seconds(lag.tailMs)} after the load`
    : '—';
  const losses = lag
    ? `**${int(lag.lost)}** of ${int(lag.expectedDeliveries)} ${pass(lag.lost === 0)} · duplicates ${int(lag.duplicates)}` +
      ` · whole run: ${int(lag.totals.missing)} missing of ${int(lag.totals.expectedDeliveries)}, ${int(lag.totals.duplicates)} duplicates`
    : '—';
  const failures = result.failures.length ? `**FAIL**: ${result.failures.join('; ')}` : 'none';
  return [throughput, latency, rates, losses, failures];
}

function renderEventsTable(results: Result[], info: { machine: string; commit: string; date: string; command: string; settings: string }): string {
  const measures = [
    ['POST /api/v1/sales at full speed: req/s with the worker ÷ without (median of rounds)', `≥ ${RATIO_TARGET}×`],
    [`Delivery lag p50 / p99 / max, ${LAG_RATE} sales/s offered for ${LAG_SECONDS} s`, `p99 < ${LAG_P99_TARGET_MS / 1000} s`],
    ['During that load: sales/s answered 201, deliveries/s arrived; last delivery after the load', '—'],
    [`Lost deliveries (201 answers × ${RECEIVERS} − distinct (event, receiver) pairs received) · duplicates`, 'lost = 0'],
    ['Failed requests (non-2xx, transport errors) and other failures', 'none'],
  ];
  const columns = results.map(cells);
  const lines = [
    `Commit \`${info.commit}\` · ${info.date} · machine: ${info.machine}`,
    `Command: \`${info.command}\` · ${info.settings}`,
    '',
    `| Measure | Target | ${results.map((r) => r.setup.label).join(' | ')} |`,
    `|---|---|${results.map(() => '---').join('|')}|`,
    ...measures.map(([measure, target], i) => `| ${measure} | ${target} | ${columns.map((c) => c[i]).join(' | ')} |`),
  ];
  return lines.join('\n');
}

// ---------------------------------------------------------------- the run

export async function runEventsBench(): Promise<number> {
  const startedAt = Date.now();
  const loadAtStart = loadAverage();
  if (onlyDb !== undefined && !SETUPS.some((s) => s.kind === onlyDb)) throw new Error(`--db must be sqlite or postgres, not ${onlyDb}`);
  const setups = SETUPS.filter((s) => onlyDb === undefined || s.kind === onlyDb);
  const results: Result[] = [];
  for (const setup of setups) results.push(await benchDatabase(setup));

  const command = `npm run bench -- --events${onlyDb ? ` --db ${onlyDb}` : ''}${quick ? ' --quick' : ''}`;
  const table = renderEventsTable(results, {
    machine: machineLine(loadAtStart),
    commit: gitCommit(),
    date: reportDate(),
    command,
    settings:
      `${quick ? '**quick run** (short phases; not a full measurement) · ' : ''}${RECEIVERS} receivers subscribed to sale.created; ` +
      `full speed: ${ROUNDS} rounds of ${SECONDS} s per side after a ${WARMUP_SECONDS} s warm-up, ${setups.map((s) => `${s.connections} connections on ${s.kind === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`).join(', ')}; ` +
      `lag: ${LAG_RATE} sales/s offered for ${LAG_SECONDS} s over ${LAG_CONNECTIONS} connections; total ${Math.round((Date.now() - startedAt) / 1000)} s`,
  });
  console.log(`\n${table}\n`);
  if (!quick && onlyDb === undefined) {
    writeReport(join(root, 'docs/performance.md'), table, EVENTS_MARKERS);
    log('Wrote docs/performance.md');
  }
  const failed = results.filter((r) => r.failures.length > 0);
  if (failed.length) log(`Failed: ${failed.map((r) => `${r.setup.label}: ${r.failures.join('; ')}`).join(' | ')}`);
  return failed.length > 0 ? 1 : 0;
}
