import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { refusedAddressMessage, refusedAddressRange, urlHost } from './url-guard.ts';
import type { WebhookDns } from './webhook-dns.ts';

// One HTTP POST of a signed event: a total time limit, no redirects followed (Node's client
// never follows them), host names resolved through webhook-dns.ts (the program's own bounded
// share of c-ares, never the shared getaddrinfo threads), the SSRF guard applied to the
// address actually dialled, and at most the first KB of the answer kept for the dashboard.

export interface SendResult {
  /** The HTTP status, or null when none came back. */
  statusCode: number | null;
  durationMs: number;
  /** The first KB of the response body (text), when there was one. */
  excerpt: string | null;
  /** Why there is no status: timeout, refused address, connection error. */
  error: string | null;
}

export interface SendOptions {
  /** Whose delivery this is: the host's DNS lookup counts against this program's bound. */
  programId?: string;
}

export interface WebhookSender {
  send(url: string, headers: Record<string, string>, body: string, options?: SendOptions): Promise<SendResult>;
  close(): void;
}

const EXCERPT_BYTES = 1024;
/** Past this much of a response body the connection is dropped rather than drained. */
const DRAIN_LIMIT = 64 * 1024;

/** PostgreSQL text cannot hold NUL; the excerpt is for people, so drop control bytes. */
function printable(buffer: Buffer): string {
  // eslint-disable-next-line no-control-regex -- removing control characters is the point
  return buffer.toString('utf8').replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '');
}

/**
 * `dns`: the process's webhook resolver (webhookDnsFor(config)), shared with the subscribe
 * check; without it, one with WEBHOOK_DNS_*'s defaults.
 */
export function createWebhookSender(options: { timeoutMs: number; allowPrivate: boolean; dns: WebhookDns }): WebhookSender {
  const { dns } = options;
  // Up to a lane's concurrency per endpoint (see delivery-worker.ts), connections kept warm.
  const agentOptions = { keepAlive: true, maxSockets: 16, maxFreeSockets: 16 };
  const agents = { 'http:': new http.Agent(agentOptions), 'https:': new https.Agent(agentOptions) };

  function send(target: string, headers: Record<string, string>, body: string, sendOptions: SendOptions = {}): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const url = new URL(target);
    const host = urlHost(url);
    // An address literal is never looked up, so the guard checks it here.
    const range = !options.allowPrivate && isIP(host) ? refusedAddressRange(host) : null;
    if (range !== null) {
      return Promise.resolve({ statusCode: null, durationMs: 0, excerpt: null, error: `refused: ${refusedAddressMessage(host, host, range)}` });
    }
    const client = url.protocol === 'https:' ? https : http;
    // Abandons the lookup too when the attempt ends first (its slot in the program's queue).
    const abandon = new AbortController();
    return new Promise((resolve) => {
      let settled = false;
      const finish = (result: Omit<SendResult, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        abandon.abort();
        resolve({ ...result, durationMs: elapsed() });
      };
      const request = client.request(url, {
        method: 'POST',
        agent: agents[url.protocol as 'http:' | 'https:'],
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: dns.lookupFor({ programId: sendOptions.programId, allowPrivate: options.allowPrivate, signal: abandon.signal }) as never,
      });
      const timer = setTimeout(() => {
        request.destroy();
        finish({ statusCode: null, excerpt: null, error: `timed out after ${options.timeoutMs} ms` });
      }, options.timeoutMs);
      request.on('error', (error: NodeJS.ErrnoException) => {
        finish({ statusCode: null, excerpt: null, error: error.code === 'EPRIVATE' ? `refused: ${error.message}` : `${error.code ?? 'error'}: ${error.message}`.slice(0, 300) });
      });
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        let seen = 0;
        const done = () => {
          const excerpt = kept > 0 ? printable(Buffer.concat(chunks).subarray(0, EXCERPT_BYTES)) : null;
          finish({ statusCode: response.statusCode ?? null, excerpt, error: null });
        };
        response.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (kept < EXCERPT_BYTES) {
            chunks.push(chunk);
            kept += chunk.length;
          }
          if (seen > DRAIN_LIMIT) {
            response.destroy();
            done();
          }
        });
        response.on('end', done);
        response.on('error', done);
      });
      request.end(body);
    });
  }

  return {
    send,
    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}
