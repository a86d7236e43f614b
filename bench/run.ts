import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { load, preflight, type Measurement, type Target } from './load.ts';
import {
  createScratchDatabase,
  gitCommit,
  killService,
  loadAverage,
  machineLine,
  median,
  option,
  peakRssMb,
  reportDate,
  root,
  startService,
  stopService,
  type ScratchDatabase,
  type Service,
} from './processes.ts';
import { BIG, SMALL, seedDatabase, type SeededProgram } from './seed.ts';
import { POSTGRES_MARKERS, renderTable, writeReport, type Figures, type Row } from './table.ts';

// The log level the server runs at: info, what `npm start` runs, so the cost of request logging
// is measured (its lines go to the bench's stderr: send it to a file, as to a log collector).
// BENCH_LOG_LEVEL overrides.
const BENCH_LOG_LEVEL = process.env.BENCH_LOG_LEVEL || 'info';

// `npm run bench`: seeds a fresh SQLite file, starts Tandem and the bare baseline as child
// processes on 127.0.0.1, measures each endpoint beside its baseline in alternating rounds,
// prints one markdown table and writes it into docs/performance.md. How speed is judged:
// ../shared/BENCHMARKS.md. Exits non-zero when any request got a non-2xx answer or a transport
// error (a missed speed target is reported, not fatal: these machines are shared and noisy).
//   --quick        one short round per measure, for development (docs/performance.md untouched)
//   --only=TEXT    only the measures whose name contains TEXT (docs/performance.md untouched)
//   --cpu-prof     the Tandem server writes a V8 CPU profile; the temp dir is kept
//   --db postgres  the same table on PostgreSQL: a fresh database with a random name on
//                  BENCH_DATABASE_URL's server (default postgres://postgres@127.0.0.1:5432/postgres),
//                  dropped at the end; 64 connections; its own block in
//                  docs/performance.md (a --quick run writes it too, marked quick)
//   --processes N  N Tandem server processes and N baseline processes (consecutive ports), the
//                  load split over them; with N ≥ 2 also POST /sales on 1 process vs N
//   --events       instead, event delivery on SQLite and PostgreSQL: POST /sales with the
//                  webhook worker vs without, delivery lag, lost deliveries (bench/events.ts);
//                  its own section of docs/performance.md (not with --quick or --db)
//   --scale        instead, a program with a million sales beside one with a thousand: pages,
//                  exports, month end and purge, big ÷ small (bench/scale.ts; --rows N, --db, --quick)

const args = new Set(process.argv.slice(2));
const quick = args.has('--quick');
const cpuProfile = args.has('--cpu-prof');
const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
const dbKind = option('--db') ?? 'sqlite';
if (dbKind !== 'sqlite' && dbKind !== 'postgres') throw new Error(`--db must be sqlite or postgres, not ${dbKind}`);
const postgres = dbKind === 'postgres';
const PROCESSES = Number(option('--processes') ?? 1);
if (!Number.isInteger(PROCESSES) || PROCESSES < 1) throw new Error('--processes must be a positive integer');

const CONNECTIONS = postgres ? 64 : 32;
const ROUNDS = quick ? 1 : 5;
const SECONDS = 2;
const WARMUP_SECONDS = 1;
/** Tandem's p99 may be at most this multiple of the baseline's (issue 22). */
const P99_FACTOR = 1.5;
/** Tandem's throughput must be at least this share of the baseline's (issue 22; the aim is 0.8). */
const RATIO_TARGET = 0.6;
const SCALING_TARGET = 1.5;
/** N processes on POST /sales must reach this multiple of one process's req/s. */
const PROCESS_SCALING_TARGET = 1.5;
/** Tandem's peak RSS may be at most this multiple of the baseline's in the same run (issue 22). */
const RSS_FACTOR = 1.3;

// ---------------------------------------------------------------- rounds

interface Compared {
  /** Per round, the measurement of each target (in the targets' order, whatever the run order). */
  rounds: Measurement[][];
  /** Per target, the median over rounds of req/s, p50 and p99. */
  figures: Figures[];
  failure?: string;
}

/** Measures the targets in rotating order (A B, B A, … or A B C, B C A, …), round after round. */
async function compare(name: string, targets: Target[], expectItems?: number): Promise<Compared> {
  try {
    for (const target of targets) await preflight(target, expectItems);
  } catch (error) {
    console.error(`\n!!! ${name}: ${(error as Error).message}`);
    return { rounds: [], figures: [], failure: (error as Error).message };
  }
  const failures: string[] = [];
  const note = (target: Target, m: Measurement) => {
    if (m.failures === 0) return;
    const message = `${target.label}: ${m.failures} non-2xx/errors, first: ${m.firstFailure ?? '?'}`;
    console.error(`\n!!! ${name}: ${message}`);
    failures.push(message);
  };
  for (const target of targets) note(target, await load(target, WARMUP_SECONDS, { connections: CONNECTIONS }));
  const rounds: Measurement[][] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const results: Measurement[] = [];
    for (let k = 0; k < targets.length; k++) {
      const index = (k + round) % targets.length;
      results[index] = await load(targets[index]!, SECONDS, { connections: CONNECTIONS });
      note(targets[index]!, results[index]);
    }
    rounds.push(results);
    const summary = targets.map((t, i) => `${t.label} ${Math.round(results[i]!.rps)} req/s p50 ${results[i]!.p50} p99 ${results[i]!.p99} ms, ${Math.round(results[i]!.cpuPerRequest)} µs CPU/req`);
    console.error(`  ${name} round ${round + 1}/${ROUNDS}: ${summary.join(' · ')}`);
  }
  const figures = targets.map((_, i) => ({
    rps: median(rounds.map((r) => r[i]!.rps)),
    p50: median(rounds.map((r) => r[i]!.p50)),
    p99: median(rounds.map((r) => r[i]!.p99)),
  }));
  return { rounds, figures, failure: failures.length ? failures.join('; ') : undefined };
}

/** Per round, the throughput of one target over another's; the median and every round's value. */
function roundRatios(result: Compared, numerator: number, denominator: number, what = ''): { median: number; text: string } {
  const ratios = result.rounds.map((r) => r[numerator]!.rps / r[denominator]!.rps);
  const rounds = ratios.length > 1 ? ` (rounds: ${ratios.map((x) => x.toFixed(2)).join(', ')})` : '';
  return { median: median(ratios), text: `**${median(ratios).toFixed(2)}×**${what}${rounds}` };
}

/** A measure that could not run: its target could not even be reached. */
const failedRow = (measure: string, failure = 'did not run'): Row => ({ measure, ratio: '—', target: '—', pass: false, failure });

/**
 * p99 within 1.5 × the baseline's in the same run (issue 22). autocannon measures latency in
 * whole milliseconds, so a baseline p99 of 1 ms means anything under 2 ms: the limit is never
 * below the baseline's plus that one millisecond of resolution.
 */
function p99Target(tandem: Figures, baseline: Figures): { target: string; pass: boolean } {
  const limit = Math.max(P99_FACTOR * baseline.p99, baseline.p99 + 1);
  return { target: `p99 ≤ ${P99_FACTOR} × baseline (≥ +1 ms) = ${limit.toFixed(1)} ms`, pass: tandem.p99 <= limit };
}

/** Every endpoint must reach RATIO_TARGET of its baseline's req/s (median of rounds), on both dialects (issue 22). */
function withRatioTarget(result: Compared, numerator: number, denominator: number, p99: { target: string; pass: boolean }) {
  const ratio = roundRatios(result, numerator, denominator).median;
  return { target: `≥ ${RATIO_TARGET}× baseline; ${p99.target}`, pass: p99.pass && ratio >= RATIO_TARGET };
}

// ---------------------------------------------------------------- the run

/** BENCH_TANDEM_ENV="WORKER=off LOG_LEVEL=warn": more settings for the Tandem server, to measure what one costs. */
function extraTandemEnv(): Record<string, string> {
  const text = process.env.BENCH_TANDEM_ENV?.trim();
  if (!text) return {};
  return Object.fromEntries(
    text.split(/\s+/).map((pair) => {
      const at = pair.indexOf('=');
      if (at < 1) throw new Error(`BENCH_TANDEM_ENV: "${pair}" is not NAME=value`);
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
  );
}

async function main(): Promise<number> {
  const startedAt = Date.now();
  const loadAtStart = loadAverage();
  const dir = mkdtempSync(join(tmpdir(), 'tandem-bench-'));
  const file = join(dir, 'tandem.db');
  const services: Service[] = [];
  // PostgreSQL: a fresh database with a random name, dropped at the end whatever happens.
  let scratch: ScratchDatabase | undefined;
  const dropPostgres = async () => scratch?.drop();
  const cleanup = () => {
    for (const s of services) killService(s);
    if (!cpuProfile) rmSync(dir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => {
    cleanup();
    void dropPostgres().finally(() => process.exit(130));
  });
  try {
    let databaseUrl: string;
    if (postgres) {
      scratch = await createScratchDatabase();
      databaseUrl = scratch.url;
    } else {
      databaseUrl = `sqlite:${file}`;
    }
    console.error(`Seeding ${scratch ? `PostgreSQL database ${scratch.name}` : file} …`);
    const seeded = await seedDatabase(postgres ? databaseUrl : file);
    console.error(`  seeded in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);

    const tandem = await startService(
      'tandem',
      [...(cpuProfile ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : []), 'bin/tandem', 'serve'],
      { HOST: '127.0.0.1', DATABASE_URL: databaseUrl, LOG_LEVEL: BENCH_LOG_LEVEL, RATE_LIMIT_PER_MINUTE: '1000000000', ...extraTandemEnv() },
      PROCESSES,
    );
    services.push(tandem);
    // Compiled by `npm run bench` (tsconfig.bench.json), like the server: plain JavaScript on both sides.
    const baseline = await startService('baseline', ['dist/bench-baseline/bench/baseline-server.js'], { DATABASE_URL: databaseUrl }, PROCESSES);
    services.push(baseline);

    const rows = await measureAll(tandem, baseline, seeded.big, seeded.small);
    const rss = Math.max(...tandem.children.map((c) => peakRssMb(c.pid!)));
    const baselineRss = Math.max(...baseline.children.map((c) => peakRssMb(c.pid!)));
    rows.push({
      measure: PROCESSES > 1 ? 'Peak RSS of the largest server process (VmHWM)' : 'Peak RSS of the server (VmHWM)',
      tandemText: `${Math.round(rss)} MB`,
      baselineText: `${Math.round(baselineRss)} MB`,
      ratio: '—',
      target: `≤ ${RSS_FACTOR} × baseline = ${Math.round(RSS_FACTOR * baselineRss)} MB`,
      pass: rss <= RSS_FACTOR * baselineRss,
    });

    for (const service of services) await stopService(service);
    const seconds = Math.round((Date.now() - startedAt) / 1000);
    const table = renderTable(rows, {
      machine: machineLine(loadAtStart),
      commit: gitCommit(),
      date: reportDate(),
      command: commandLine(),
      settings: `${quick ? '**quick run** (one short round; not a full measurement) · ' : ''}${postgres ? `PostgreSQL, ${PROCESSES} Tandem process(es) and ${PROCESSES} baseline process(es), ` : ''}${CONNECTIONS} connections, ${ROUNDS} round(s) of ${SECONDS} s per side after a ${WARMUP_SECONDS} s warm-up, total ${seconds} s`,
    });
    console.log(`\n${table}\n`);
    if (postgres ? !only : !quick && !only) {
      writeReport(join(root, 'docs/performance.md'), table, postgres ? POSTGRES_MARKERS : undefined);
      console.error('Wrote docs/performance.md');
    }
    if (cpuProfile) console.error(`CPU profile of the server: ${dir}/*.cpuprofile`);
    const failed = rows.filter((r) => r.failure || !r.pass);
    if (failed.length) console.error(`${failed.length} row(s) missed their target or failed: ${failed.map((r) => r.measure).join('; ')}`);
    return rows.some((r) => r.failure) ? 1 : 0;
  } finally {
    cleanup();
    await dropPostgres();
  }
}

function commandLine(): string {
  const parts = ['npm run bench'];
  const extra = [...(postgres ? ['--db postgres'] : []), ...(PROCESSES > 1 ? [`--processes ${PROCESSES}`] : []), ...(quick ? ['--quick'] : [])];
  if (only) extra.push(`--only=${only}`);
  return extra.length ? `${parts[0]} -- ${extra.join(' ')}` : parts[0]!;
}

async function measureAll(tandem: Service, baseline: Service, big: SeededProgram, small: SeededProgram): Promise<Row[]> {
  const api = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });
  const pick = <T>(list: ArrayLike<T>) => list[Math.floor(Math.random() * list.length)]!;
  const pickIndex = (length: number) => Math.floor(Math.random() * length);
  let serial = 0; // makes every created e-mail and external id unique across sides and rounds
  const amount = () => (1_000 + (serial % 19_000)) / 100;
  // The baseline has no tokens: it is told the program in the query string.
  const withProgramId = (path: string, programId: string) => `${path}${path.includes('?') ? '&' : '?'}programId=${programId}`;

  // Each endpoint: the Tandem target and its baseline, built from the same generator.
  const pair = (method: 'GET' | 'POST', next: (side: 'tandem' | 'baseline') => { path: string; body?: string }) => [
    { label: 'Tandem', service: tandem, method, headers: api(big.token), next: () => next('tandem') },
    {
      label: 'baseline',
      service: baseline,
      method,
      headers: api(big.token),
      next: () => {
        const request = next('baseline');
        return { ...request, path: withProgramId(request.path, big.id) };
      },
    },
  ] satisfies Target[];

  const endpoints: { measure: string; targets: Target[]; expectItems?: number }[] = [
    {
      measure: 'POST /api/v1/sales (by referralId)',
      targets: pair('POST', (side) => {
        const r = pickIndex(big.referralIds.length);
        const body: Record<string, unknown> = { referralId: big.referralIds[r], totalEarned: amount(), externalId: `ch_bench_${++serial}` };
        if (side === 'baseline') body.affiliateId = big.affiliateIds[big.referralAffiliate[r]!];
        return { path: '/api/v1/sales', body: JSON.stringify(body) };
      }),
    },
    {
      measure: 'POST /api/v1/referrals (by affiliateId)',
      targets: pair('POST', () => {
        const n = ++serial;
        const body = { name: `Bench Customer ${n}`, email: `bench.${n}@customers.example.org`, referredUserExternalId: `cus_bench_${n}`, affiliateId: pick(big.affiliateIds) };
        return { path: '/api/v1/referrals', body: JSON.stringify(body) };
      }),
    },
    { measure: 'GET /api/v1/affiliates?id=…', targets: pair('GET', () => ({ path: `/api/v1/affiliates?id=${pick(big.affiliateIds)}` })) },
    {
      measure: 'GET /api/v1/promotional-codes?code=…',
      targets: pair('GET', () => ({ path: `/api/v1/promotional-codes?code=${encodeURIComponent(pick(big.codes))}` })),
    },
    { measure: 'GET /api/v1/affiliates?limit=100', targets: pair('GET', () => ({ path: '/api/v1/affiliates?limit=100' })), expectItems: 100 },
  ];

  const rows: Row[] = [];
  for (const endpoint of endpoints) {
    if (only && !endpoint.measure.includes(only)) continue;
    const result = await compare(endpoint.measure, endpoint.targets, endpoint.expectItems);
    if (result.rounds.length === 0) {
      rows.push(failedRow(endpoint.measure, result.failure));
      continue;
    }
    const [t, b] = result.figures as [Figures, Figures];
    const ratio = roundRatios(result, 0, 1).text;
    rows.push({ measure: endpoint.measure, tandem: t, baseline: b, ratio, ...withRatioTarget(result, 0, 1, p99Target(t, b)), failure: result.failure });
  }

  // N processes against one on POST /sales: the same generator, once over every Tandem process
  // and once over the first only, alternated in the same rounds.
  if (PROCESSES > 1 && (!only || 'POST /api/v1/sales'.includes(only))) {
    const sale = () => {
      const r = pickIndex(big.referralIds.length);
      return { path: '/api/v1/sales', body: JSON.stringify({ referralId: big.referralIds[r], totalEarned: amount(), externalId: `ch_bench_${++serial}` }) };
    };
    const one: Service = { name: 'tandem 1', origins: [tandem.origins[0]!], children: [tandem.children[0]!] };
    const targets: Target[] = [
      { label: `Tandem ${PROCESSES} processes`, service: tandem, method: 'POST', headers: api(big.token), next: sale },
      { label: 'Tandem 1 process', service: one, method: 'POST', headers: api(big.token), next: sale },
    ];
    const measure = `POST /api/v1/sales: ${PROCESSES} processes ÷ 1 process`;
    const result = await compare(measure, targets);
    if (result.rounds.length === 0) rows.push(failedRow(measure, result.failure));
    else {
      const [n, o] = result.figures as [Figures, Figures];
      const scaling = roundRatios(result, 0, 1, ` req/s of ${PROCESSES} ÷ 1`);
      rows.push({
        measure: `${measure} (baseline column: Tandem on 1 process)`,
        tandem: n,
        baseline: o,
        ratio: scaling.text,
        target: `≥ ${PROCESS_SCALING_TARGET}×`,
        pass: scaling.median >= PROCESS_SCALING_TARGET,
        failure: result.failure,
      });
    }
  }

  // The list of sales: on the 500 000-sale program, on the 5 000-sale program, and bare.
  if (!only || 'GET /api/v1/sales'.includes(only)) {
    const salesPage = '/api/v1/sales?limit=100';
    const targets: Target[] = [
      { label: `Tandem ${BIG.sales} sales`, service: tandem, method: 'GET', headers: api(big.token), next: () => ({ path: salesPage }) },
      { label: `Tandem ${SMALL.sales} sales`, service: tandem, method: 'GET', headers: api(small.token), next: () => ({ path: salesPage }) },
      { label: 'baseline', service: baseline, method: 'GET', headers: api(big.token), next: () => ({ path: withProgramId(salesPage, big.id) }) },
    ];
    const result = await compare('GET /api/v1/sales?limit=100', targets, 100);
    const measure = `GET /api/v1/sales?limit=100 (${BIG.sales.toLocaleString('en-US')}-sale program)`;
    if (result.rounds.length === 0) return [...rows, failedRow(measure, result.failure)];
    const [t, s, b] = result.figures as [Figures, Figures, Figures];
    rows.push({
      measure,
      tandem: t,
      baseline: b,
      ratio: roundRatios(result, 0, 2).text,
      ...withRatioTarget(result, 0, 2, p99Target(t, b)),
      failure: result.failure,
    });
    // How much longer a page takes on the big program: the small one's throughput over the big one's.
    const slowdown = roundRatios(result, 1, 0, ' time on 500k ÷ 5k');
    rows.push({
      measure: `… same page on the ${SMALL.sales.toLocaleString('en-US')}-sale program (scaling)`,
      tandem: s,
      ratio: slowdown.text,
      target: `≤ ${SCALING_TARGET}×`,
      pass: slowdown.median <= SCALING_TARGET,
      failure: result.failure,
    });
  }
  return rows;
}

// --events hands over to the event-delivery benchmark (bench/events.ts), --scale to the scale one (bench/scale.ts).
process.exitCode = args.has('--events')
  ? await (await import('./events.ts')).runEventsBench()
  : args.has('--scale')
    ? await (await import('./scale.ts')).runScaleBench()
    : await main();
