import autocannon from 'autocannon';
import { cpuMicros, type Service } from './processes.ts';
import type { Figures } from './table.ts';

// Load with autocannon, shared by bench/run.ts and bench/events.ts: one autocannon instance
// per process of a service, all at once, the connections (and a request rate, if any) split
// between them.

/** One side of a comparison: where to send requests and how to vary them. */
export interface Target {
  label: string;
  service: Service;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  next(): { path: string; body?: string };
  /** Called with the body of every 2xx answer. */
  onSuccess?(body: string): void;
}

export interface Measurement extends Figures {
  /** 2xx answers. */
  ok: number;
  /** CPU time the service's processes used per answer, µs (user and system; the database server's not counted). */
  cpuPerRequest: number;
  failures: number;
  firstFailure?: string;
}

export interface LoadOptions {
  connections: number;
  /** Requests per second over all processes (autocannon's overallRate); full speed when absent. */
  rate?: number;
}

/** Splits `total` into `parts` whole numbers that differ by at most one. */
const share = (total: number, parts: number, i: number) => Math.floor(total / parts) + (i < total % parts ? 1 : 0);

/**
 * Drives every origin of the target's service at once: req/s and counts are sums; p50 and p99
 * are the worst instance's (conservative: a merged histogram could only be lower).
 */
export async function load(target: Target, seconds: number, options: LoadOptions): Promise<Measurement> {
  // A short pause first, so the previous run's in-flight requests have drained on both sides.
  await new Promise((r) => setTimeout(r, 250));
  const origins = target.service.origins;
  const cpu = () => target.service.children.reduce((sum, child) => sum + cpuMicros(child.pid!), 0);
  const cpuBefore = cpu();
  const parts = await Promise.all(
    origins.map((origin, i) =>
      loadOne(target, origin, seconds, share(options.connections, origins.length, i), options.rate === undefined ? undefined : share(options.rate, origins.length, i)),
    ),
  );
  const cpuUsed = cpu() - cpuBefore;
  const answered = parts.reduce((sum, m) => sum + m.ok + m.failures, 0);
  return {
    cpuPerRequest: answered > 0 ? cpuUsed / answered : 0,
    rps: parts.reduce((sum, m) => sum + m.rps, 0),
    p50: Math.max(...parts.map((m) => m.p50)),
    p99: Math.max(...parts.map((m) => m.p99)),
    ok: parts.reduce((sum, m) => sum + m.ok, 0),
    failures: parts.reduce((sum, m) => sum + m.failures, 0),
    firstFailure: parts.find((m) => m.firstFailure !== undefined)?.firstFailure,
  };
}

function loadOne(target: Target, origin: string, seconds: number, connections: number, rate: number | undefined): Promise<Measurement> {
  let firstFailure: string | undefined;
  return new Promise((resolveRun, reject) => {
    autocannon(
      {
        url: origin,
        connections,
        duration: seconds,
        timeout: 10,
        headers: target.headers,
        ...(rate === undefined ? {} : { overallRate: rate }),
        requests: [
          {
            method: target.method,
            setupRequest: (request) => ({ ...request, ...target.next() }),
            onResponse: (status, body) => {
              if (status >= 200 && status <= 299) target.onSuccess?.(body);
              else if (firstFailure === undefined) firstFailure = `${status} ${body.slice(0, 300)}`;
            },
          },
        ],
      },
      (error, result) => {
        if (error) return reject(error);
        const ok = result['2xx'];
        resolveRun({
          cpuPerRequest: 0,
          rps: ok / result.duration,
          p50: result.latency.p50,
          p99: result.latency.p99,
          ok,
          failures: result.non2xx + result.errors,
          firstFailure: firstFailure ?? (result.errors ? `${result.errors} transport errors (${result.timeouts} timeouts)` : undefined),
        });
      },
    );
  });
}

/** One request through fetch first: a broken target fails fast and says why. */
export async function preflight(target: Target, expectItems?: number): Promise<void> {
  const { path, body } = target.next();
  const response = await fetch(target.service.origins[0] + path, { method: target.method, headers: target.headers, body });
  const text = await response.text();
  if (!response.ok) throw new Error(`${target.label}: ${target.method} ${path} answered ${response.status} ${text.slice(0, 300)}`);
  target.onSuccess?.(text);
  if (expectItems !== undefined) {
    const items = JSON.parse(text) as unknown;
    if (!Array.isArray(items) || items.length !== expectItems) throw new Error(`${target.label}: expected ${expectItems} items from ${path}`);
  }
}
