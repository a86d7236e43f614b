import { fork, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';

// Webhook receivers for bench/events.ts: plain node:http servers on 127.0.0.1 that answer 204
// at once and note, per (event, receiver), when it first arrived and how often. They run in a
// child process of their own (startReceivers forks this file), so parsing thousands of
// deliveries a second does not take CPU from the load generator's event loop; the parent asks
// over IPC for what it needs (how many expected deliveries are still missing, a phase's lags).
//
// A delivery is identified by its webhook-id header (the event id) and the receiver it reached;
// the sale it reports by `data.externalInvoiceId`, which the benchmark makes unique and tags
// with the phase. Lag = arrival (Date.now() when the body is complete) − Date.parse(timestamp).

/** Per sale (by externalInvoiceId): when its event was created, and per receiver the first arrival and the count. */
interface Sale {
  eventId: string;
  created: number;
  first: number[];
  count: number[];
}

export interface LagReport {
  /** Sales of the phase acknowledged by the API (expected × receivers deliveries). */
  acknowledged: number;
  expectedDeliveries: number;
  /** Distinct (event, receiver) pairs of acknowledged sales that arrived. */
  received: number;
  lost: number;
  /** Arrivals beyond the first of a pair (at-least-once delivery may repeat one). */
  duplicates: number;
  /** Sales of the phase delivered although their answer was never seen (in flight when the load stopped). */
  unacknowledged: number;
  /** Lag of each pair's first arrival, ms. */
  p50: number;
  p99: number;
  max: number;
  /** First arrivals of the phase's pairs between `from` and `to` (epoch ms). */
  arrivedInWindow: number;
  /** The last first arrival of the phase (epoch ms), 0 if none. */
  lastArrival: number;
}

export interface Totals {
  /** Pairs of every expected sale so far that have not arrived. */
  missing: number;
  expectedDeliveries: number;
  duplicates: number;
  /** Requests that were not a sale.created envelope. */
  unrecognised: number;
}

type Question = { op: 'expect'; invoices: string[] } | { op: 'totals' } | { op: 'report'; prefix: string; from: number; to: number };
type Request = Question & { id: number };

/** The parent's handle on the receivers' process. */
export interface Receivers {
  urls: string[];
  /** Sales whose 201 the load generator saw: each must reach every receiver. */
  expect(invoices: string[]): Promise<void>;
  totals(): Promise<Totals>;
  report(prefix: string, from: number, to: number): Promise<LagReport>;
  stop(): void;
}

/** Forks the receivers' process with `count` servers and waits until they listen. */
export async function startReceivers(count: number): Promise<Receivers> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), [String(count)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextId = 0;
  const urls = await new Promise<string[]>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`webhook receivers exited with code ${code} while starting`)));
    child.once('message', (message) => resolve((message as { urls: string[] }).urls));
  });
  child.removeAllListeners('exit');
  child.on('exit', (code, signal) => {
    for (const { reject } of pending.values()) reject(new Error(`webhook receivers exited (${code ?? signal})`));
    pending.clear();
  });
  child.on('message', (message) => {
    const { id, result } = message as { id: number; result: unknown };
    pending.get(id)?.resolve(result);
    pending.delete(id);
  });
  const ask = <T>(request: Question) =>
    new Promise<T>((resolve, reject) => {
      if (child.exitCode !== null || child.signalCode !== null) return reject(new Error('webhook receivers are not running'));
      const id = ++nextId;
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      child.send({ ...request, id });
    });
  return {
    urls,
    async expect(invoices) {
      // In slices: one IPC message stays small whatever the phase's length.
      for (let i = 0; i < invoices.length; i += 20_000) await ask({ op: 'expect', invoices: invoices.slice(i, i + 20_000) });
    },
    totals: () => ask<Totals>({ op: 'totals' }),
    report: (prefix, from, to) => ask<LagReport>({ op: 'report', prefix, from, to }),
    stop() {
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

// ---------------------------------------------------------------- the child

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function serve(count: number): Promise<void> {
  const sales = new Map<string, Sale>();
  const expected = new Set<string>();
  let duplicates = 0;
  let unrecognised = 0;

  const arrived = (receiver: number, eventId: string, body: string) => {
    const at = Date.now();
    let envelope: { type?: string; timestamp?: string; data?: { externalInvoiceId?: string } };
    try {
      envelope = JSON.parse(body) as typeof envelope;
    } catch {
      unrecognised++;
      return;
    }
    const invoice = envelope.data?.externalInvoiceId;
    if (envelope.type !== 'sale.created' || typeof invoice !== 'string' || !envelope.timestamp) {
      unrecognised++;
      return;
    }
    let sale = sales.get(invoice);
    if (!sale) {
      sale = { eventId, created: Date.parse(envelope.timestamp), first: new Array<number>(count).fill(0), count: new Array<number>(count).fill(0) };
      sales.set(invoice, sale);
    }
    if (sale.count[receiver]! > 0) duplicates++;
    else sale.first[receiver] = at;
    sale.count[receiver]!++;
  };

  const servers: Server[] = [];
  const urls: string[] = [];
  for (let receiver = 0; receiver < count; receiver++) {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        arrived(receiver, String(request.headers['webhook-id'] ?? ''), Buffer.concat(chunks).toString('utf8'));
        response.writeHead(204).end();
      });
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    urls.push(`http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hooks/${receiver + 1}`);
    servers.push(server);
  }

  const received = (sale: Sale | undefined) => (sale ? sale.count.filter((n) => n > 0).length : 0);

  process.on('message', (message: Request) => {
    const reply = (result: unknown) => process.send!({ id: message.id, result });
    if (message.op === 'expect') {
      for (const invoice of message.invoices) expected.add(invoice);
      return reply(null);
    }
    if (message.op === 'totals') {
      let missing = 0;
      for (const invoice of expected) missing += count - received(sales.get(invoice));
      return reply({ missing, expectedDeliveries: expected.size * count, duplicates, unrecognised } satisfies Totals);
    }
    // report: the sales of one phase, by the prefix of their invoice ids.
    let acknowledged = 0;
    let got = 0;
    let dups = 0;
    let unacknowledged = 0;
    let inWindow = 0;
    let lastArrival = 0;
    const lags: number[] = [];
    for (const invoice of expected) {
      if (!invoice.startsWith(message.prefix)) continue;
      acknowledged++;
      const sale = sales.get(invoice);
      if (!sale) continue;
      for (let r = 0; r < count; r++) {
        if (sale.count[r] === 0) continue;
        got++;
        dups += sale.count[r]! - 1;
        const at = sale.first[r]!;
        lags.push(at - sale.created);
        if (at >= message.from && at <= message.to) inWindow++;
        if (at > lastArrival) lastArrival = at;
      }
    }
    for (const invoice of sales.keys()) if (invoice.startsWith(message.prefix) && !expected.has(invoice)) unacknowledged++;
    const sorted = Float64Array.from(lags).sort();
    reply({
      acknowledged,
      expectedDeliveries: acknowledged * count,
      received: got,
      lost: acknowledged * count - got,
      duplicates: dups,
      unacknowledged,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      max: percentile(sorted, 100),
      arrivedInWindow: inWindow,
      lastArrival,
    } satisfies LagReport);
  });
  process.send!({ urls });
  // The parent going away takes the receivers with it.
  process.on('disconnect', () => process.exit(0));
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.send) await serve(Number(process.argv[2] ?? 3));
