import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

// Turns the measured rows into the markdown table printed by `npm run bench` and kept in
// docs/performance.md. Only the block between the markers is replaced on a new run, so
// notes written around it in the document survive.

export interface Figures {
  rps: number;
  p50: number;
  p99: number;
}

export interface Row {
  measure: string;
  tandem?: Figures;
  baseline?: Figures;
  /** Free text for rows that are not a throughput run (peak RSS). */
  tandemText?: string;
  baselineText?: string;
  ratio: string;
  target: string;
  pass: boolean;
  /** Why the row failed beyond its target: non-2xx responses, transport errors. */
  failure?: string;
}

export interface RunInfo {
  machine: string;
  commit: string;
  date: string;
  command: string;
  settings: string;
}

export interface Markers {
  begin: string;
  end: string;
  /** The heading put above the block when the document does not have it yet. */
  heading: string;
}

const SQLITE_MARKERS: Markers = { begin: '<!-- bench:results:begin -->', end: '<!-- bench:results:end -->', heading: '## Results' };
export const POSTGRES_MARKERS: Markers = {
  begin: '<!-- bench:postgres:begin -->',
  end: '<!-- bench:postgres:end -->',
  heading: '## Results on PostgreSQL (`npm run bench -- --db postgres --processes N`)',
};

export const EVENTS_MARKERS: Markers = {
  begin: '<!-- bench:events:begin -->',
  end: '<!-- bench:events:end -->',
  heading: '## Events (`npm run bench -- --events`)',
};

export const int = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) => (n < 10 ? n.toFixed(1) : Math.round(n).toString());

export function renderTable(rows: Row[], info: RunInfo): string {
  const lines = [
    `Commit \`${info.commit}\` · ${info.date} · machine: ${info.machine}`,
    `Command: \`${info.command}\` · ${info.settings}`,
    '',
    '| Measure | Tandem req/s | p50 ms | p99 ms | Baseline req/s | p50 ms | p99 ms | Ratio (median of rounds) | Target | Result |',
    '|---|--:|--:|--:|--:|--:|--:|--:|---|---|',
  ];
  for (const row of rows) {
    const side = (figures?: Figures, text?: string) =>
      figures ? [int(figures.rps), ms(figures.p50), ms(figures.p99)] : [text ?? '—', '—', '—'];
    const result = row.failure ? `**FAIL**: ${row.failure}` : row.pass ? 'pass' : '**FAIL**';
    lines.push(`| ${[row.measure, ...side(row.tandem, row.tandemText), ...side(row.baseline, row.baselineText), row.ratio, row.target, result].join(' | ')} |`);
  }
  return lines.join('\n');
}

const INTRO = `# Performance

\`npm run bench\` starts the real server (\`node bin/tandem serve\`) on 127.0.0.1 over a fresh
SQLite file, loads a realistic data set, drives the API with autocannon at 32 connections and
prints the table below, which it also writes here (between the markers; text around them stays).

**What is measured.** One program with 10 000 affiliates (each with its primary link),
200 000 referrals, 500 000 sales and 1 000 promotional codes on 4 coupons; a second program with
5 000 sales. Counters on affiliates and links agree with the rows. Requests vary: sales name a
random existing referral, referrals carry a new e-mail each, lookups pick a random affiliate or
code. Five API calls are each measured beside a **baseline**: a bare Fastify server
(\`bench/baseline-server.ts\`, its own process, the same SQLite file opened by the same
\`openDatabase\`, so the same pragmas and driver) doing only the comparable database work — an
insert plus one counter update in one transaction for a write, one indexed select for a lookup,
one indexed select of 100 rows for a list — with no auth, validation or response schema. The
list of sales is also measured on the 5 000-sale program, to show that a page costs the same
whatever the table size. Peak RSS is the server's \`VmHWM\` at the end of the run.

**How to read it.** These machines are shared (2 cores, other work running beside the
benchmark, see the load average in the header) and the load generator runs beside the server,
so absolute numbers move a lot from run to run; ratios measured in the same run move less. Each
measure runs in alternating rounds (A B, B A, …; the three-way sales measure rotates), and the
ratio column is the median of the per-round ratios, each round's value in brackets:
*Tandem ÷ baseline throughput* (1.00 would mean no overhead at all; 0.50 means Tandem serves
half as many requests per second as the bare stack), and for the scaling row *the time of a
page on the 500 000-sale program ÷ on the 5 000-sale program*. req/s, p50 and p99 are medians
over the rounds. The p99 target is 20 ms where the baseline itself meets it in the same run,
otherwise p99 ≤ 1.5 × the baseline's p99 (../shared/BENCHMARKS.md). A run with any non-2xx
response or transport error fails its row and makes the command exit non-zero.

Run it with \`npm run bench\` (three to four minutes). \`-- --quick\` runs one short round for
development, \`-- --only=TEXT\` only the measures whose name contains TEXT, and \`-- --cpu-prof\`
keeps a V8 CPU profile of the server; none of these three touches this file.
`;

export function writeReport(file: string, table: string, markers: Markers = SQLITE_MARKERS): void {
  const { begin: BEGIN, end: END, heading } = markers;
  const block = `${BEGIN}\n${table}\n${END}`;
  let text: string;
  if (existsSync(file)) {
    const current = readFileSync(file, 'utf8');
    const start = current.indexOf(BEGIN);
    const end = current.indexOf(END);
    text = start >= 0 && end > start ? current.slice(0, start) + block + current.slice(end + END.length) : `${current.trimEnd()}\n\n${heading}\n\n${block}\n`;
  } else {
    text = `${INTRO}\n${heading}\n\n${block}\n`;
  }
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
}
