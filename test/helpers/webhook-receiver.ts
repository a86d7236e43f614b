import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

// A real HTTP endpoint on 127.0.0.1 that receives webhook deliveries: it records every
// request (headers and the exact body bytes) and answers with whatever the test sets.

export interface ReceivedDelivery {
  /** The request path (one receiver serves several subscriptions on different paths). */
  path: string;
  headers: Record<string, string>;
  /** The raw body, as signed. */
  body: string;
  json: any;
  receivedAt: number;
}

export interface WebhookReceiver {
  url: string;
  received: ReceivedDelivery[];
  /** The status to answer (default 200); a function decides per request. */
  respondWith(status: number | ((delivery: ReceivedDelivery) => number), body?: string): void;
  /** Answers each request only after this many ms (a slow endpoint). */
  delay(ms: number): void;
  /** Stops answering: connections are refused until `resume()` listens again on the same port. */
  pause(): Promise<void>;
  resume(): Promise<void>;
  /** Waits until `predicate` holds for the received list, or fails after `timeoutMs`. */
  waitFor(predicate: (received: ReceivedDelivery[]) => boolean, timeoutMs?: number, what?: string): Promise<void>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(path = '/hooks'): Promise<WebhookReceiver> {
  const received: ReceivedDelivery[] = [];
  let status: number | ((delivery: ReceivedDelivery) => number) = 200;
  let answer = 'ok';
  let delayMs = 0;
  const handler = (request: import('node:http').IncomingMessage, response: import('node:http').ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const delivery: ReceivedDelivery = { path: request.url ?? '', headers: request.headers as Record<string, string>, body, json, receivedAt: Date.now() };
      received.push(delivery);
      const respond = () => {
        response.writeHead(typeof status === 'function' ? status(delivery) : status, { 'content-type': 'text/plain' });
        response.end(answer);
      };
      if (delayMs > 0) setTimeout(respond, delayMs);
      else respond();
    });
  };
  let server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const closeServer = (s: Server) =>
    new Promise<void>((resolve) => {
      s.close(() => resolve());
      s.closeAllConnections();
    });
  return {
    url: `http://127.0.0.1:${port}${path}`,
    received,
    respondWith(next, body = 'ok') {
      status = next;
      answer = body;
    },
    delay(ms) {
      delayMs = ms;
    },
    pause: () => closeServer(server),
    async resume() {
      server = createServer(handler);
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    },
    async waitFor(predicate, timeoutMs = 5000, what = 'the expected deliveries') {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(received)) {
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; received ${received.length}: ${received.map((r) => r.json?.type).join(', ')}`);
        await sleep(20);
      }
    },
    close: () => closeServer(server),
  };
}
