import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';

// Request, header and keep-alive timeouts: a client trickling its request a byte at a time is
// answered 408 and cut off within the timeout, while the server keeps answering everyone else.

const REQUEST_TIMEOUT_MS = 2000;
const HEADERS_TIMEOUT_MS = 800;
const KEEP_ALIVE_TIMEOUT_MS = 1000;
/** Node checks for late requests every tenth of the timeout; this is a generous ceiling. */
const CUT_OFF_WITHIN_MS = 4500;

interface RawExchange {
  /** Everything the server sent. */
  received: string;
  /** ms from connecting until the server closed the connection. */
  closedAfterMs: number;
}

/** A raw TCP client: connects, lets `drive` write to the socket, and waits for the server to close it. */
async function rawExchange(url: string, drive: (socket: Socket) => void, giveUpAfterMs = 10_000): Promise<RawExchange> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await once(socket, 'connect');
  const started = Date.now();
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (received += chunk));
  socket.on('error', () => {}); // a reset also counts as closed
  const giveUp = setTimeout(() => socket.destroy(new Error('the server never closed the connection')), giveUpAfterMs);
  drive(socket);
  await once(socket, 'close');
  clearTimeout(giveUp);
  return { received, closedAfterMs: Date.now() - started };
}

/** Writes `chunk` every `everyMs` until the socket closes. */
function trickle(socket: Socket, chunk: string, everyMs: number): void {
  const timer = setInterval(() => {
    if (!socket.destroyed) socket.write(chunk);
  }, everyMs);
  socket.once('close', () => clearInterval(timer));
}

/** Asks /healthz every 200 ms while `during` runs; returns the slowest answer's time. */
async function healthWhile<T>(url: string, during: Promise<T>): Promise<{ result: T; slowestMs: number; answers: number }> {
  let done = false;
  let slowestMs = 0;
  let answers = 0;
  const poll = (async () => {
    while (!done) {
      const started = Date.now();
      const response = await fetch(`${url}/healthz`);
      assert.equal(response.status, 200);
      await response.arrayBuffer();
      slowestMs = Math.max(slowestMs, Date.now() - started);
      answers++;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  try {
    return { result: await during, slowestMs, answers };
  } finally {
    done = true;
    await poll;
  }
}

function statusLine(received: string): string {
  return received.split('\r\n')[0] ?? '';
}

function problemBody(received: string): any {
  return JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4));
}

describe('request, header and keep-alive timeouts', () => {
  let t: TestServer;
  let api: ApiClient;

  before(async () => {
    t = await startTestServer({ requestTimeoutMs: REQUEST_TIMEOUT_MS, headersTimeoutMs: HEADERS_TIMEOUT_MS, keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS });
    api = await t.createTenant();
  });
  after(() => t.close());

  it('a slow-body client is cut off and the server keeps answering /healthz', async () => {
    const { result, slowestMs, answers } = await healthWhile(
      t.url,
      rawExchange(t.url, (socket) => {
        socket.write(
          'POST /api/v1/affiliates HTTP/1.1\r\nHost: tandem.test\r\n' +
            `Authorization: Bearer ${api.token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
        );
        trickle(socket, ' ', 300); // 100 bytes would take 30 s
      }),
    );
    assert.equal(statusLine(result.received), 'HTTP/1.1 408 Request Timeout');
    assert.match(result.received, /\r\ncontent-type: application\/problem\+json\r\n/i);
    assert.match(result.received, /\r\nconnection: close\r\n/i);
    const body = problemBody(result.received);
    assert.equal(body.status, 408);
    assert.equal(body.code, 'request_timeout');
    assert.match(result.received, new RegExp(`\\r\\nx-request-id: ${body.requestId}\\r\\n`, 'i'));
    assert.ok(result.closedAfterMs >= REQUEST_TIMEOUT_MS - 100, `cut off after ${result.closedAfterMs} ms, before the timeout`);
    assert.ok(result.closedAfterMs < CUT_OFF_WITHIN_MS, `cut off after ${result.closedAfterMs} ms`);
    assert.ok(answers >= 3, `/healthz answered ${answers} times`);
    assert.ok(slowestMs < 1000, `/healthz took up to ${slowestMs} ms`);
    // Nothing was created from the half-sent body.
    assert.equal((await api.get('/affiliates')).body.length, 0);
  });

  it('a client sending its headers a line at a time is cut off after the headers timeout', async () => {
    const { result, answers } = await healthWhile(
      t.url,
      rawExchange(t.url, (socket) => {
        socket.write('GET /healthz HTTP/1.1\r\nHost: tandem.test\r\n');
        trickle(socket, 'X-Slow: y\r\n', 300);
      }),
    );
    assert.equal(statusLine(result.received), 'HTTP/1.1 408 Request Timeout');
    assert.equal(problemBody(result.received).code, 'request_timeout');
    assert.ok(result.closedAfterMs >= HEADERS_TIMEOUT_MS - 100, `cut off after ${result.closedAfterMs} ms, before the timeout`);
    // The headers timeout, not the (longer) request timeout, cut it off.
    assert.ok(result.closedAfterMs < REQUEST_TIMEOUT_MS, `cut off after ${result.closedAfterMs} ms`);
    assert.ok(answers >= 2, `/healthz answered ${answers} times`);
  });

  it('a connection that never sends a byte is closed after the headers timeout', async () => {
    const result = await rawExchange(t.url, () => {});
    assert.equal(statusLine(result.received), 'HTTP/1.1 408 Request Timeout');
    assert.ok(result.closedAfterMs >= HEADERS_TIMEOUT_MS - 100, `closed after ${result.closedAfterMs} ms, before the timeout`);
    assert.ok(result.closedAfterMs < REQUEST_TIMEOUT_MS, `closed after ${result.closedAfterMs} ms`);
  });

  it('a normal request still works, also when its body arrives in pieces within the timeout', async () => {
    const created = await api.post('/affiliates', { firstName: 'Jane', lastName: 'Doe', email: 'jane-timeouts@example.com' });
    assert.equal(created.status, 201);
    // Sent in pieces but within the timeout: answered normally.
    const body = JSON.stringify({ firstName: 'Sam', lastName: 'Lee', email: 'sam-timeouts@example.com' });
    const result = await rawExchange(t.url, (socket) => {
      socket.write(
        'POST /api/v1/affiliates HTTP/1.1\r\nHost: tandem.test\r\nConnection: close\r\n' +
          `Authorization: Bearer ${api.token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
      );
      setTimeout(() => socket.write(body.slice(0, 10)), 300);
      setTimeout(() => socket.write(body.slice(10)), 600);
    });
    assert.equal(statusLine(result.received), 'HTTP/1.1 201 Created');
  });

  it('an idle keep-alive connection is closed after the keep-alive timeout', async () => {
    let answeredAfterMs = 0;
    const result = await rawExchange(t.url, (socket) => {
      const started = Date.now();
      socket.once('data', () => (answeredAfterMs = Date.now() - started));
      socket.write('GET /healthz HTTP/1.1\r\nHost: tandem.test\r\n\r\n');
    });
    assert.equal(statusLine(result.received), 'HTTP/1.1 200 OK');
    assert.match(result.received, /\r\nkeep-alive: timeout=1\r\n/i);
    // Node closes an idle connection a second after the advertised timeout, so a client
    // reusing it at the last moment does not race the close.
    const idleMs = result.closedAfterMs - answeredAfterMs;
    assert.ok(idleMs >= KEEP_ALIVE_TIMEOUT_MS - 100, `closed after ${idleMs} ms idle`);
    assert.ok(idleMs < KEEP_ALIVE_TIMEOUT_MS + 2000, `closed after ${idleMs} ms idle`);
  });
});

describe('timeout settings', () => {
  it('default to 30 s for a request, 10 s for its headers and 5 s for an idle connection', () => {
    const config = loadConfig({}, {});
    assert.equal(config.requestTimeoutMs, 30_000);
    assert.equal(config.headersTimeoutMs, 10_000);
    assert.equal(config.keepAliveTimeoutMs, 5000);
  });

  it('are read from the environment', () => {
    const config = loadConfig({ REQUEST_TIMEOUT_MS: '60000', HEADERS_TIMEOUT_MS: '20000', KEEP_ALIVE_TIMEOUT_MS: '65000' }, {});
    assert.equal(config.requestTimeoutMs, 60_000);
    assert.equal(config.headersTimeoutMs, 20_000);
    assert.equal(config.keepAliveTimeoutMs, 65_000);
    // A request timeout below the headers default lowers the headers timeout with it.
    assert.equal(loadConfig({ REQUEST_TIMEOUT_MS: '5000' }, {}).headersTimeoutMs, 5000);
  });

  it('refuse invalid values with a message naming the setting', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ REQUEST_TIMEOUT_MS: '30s' }, /REQUEST_TIMEOUT_MS must be a whole number, got "30s"/],
      [{ REQUEST_TIMEOUT_MS: '0' }, /REQUEST_TIMEOUT_MS must be between 1000 and 3600000, got 0/],
      [{ HEADERS_TIMEOUT_MS: '-1' }, /HEADERS_TIMEOUT_MS must be a whole number/],
      [{ HEADERS_TIMEOUT_MS: '40000' }, /HEADERS_TIMEOUT_MS \(40000\) must not be above REQUEST_TIMEOUT_MS \(30000\)/],
      [{ KEEP_ALIVE_TIMEOUT_MS: '5 s' }, /KEEP_ALIVE_TIMEOUT_MS must be a whole number/],
      [{ KEEP_ALIVE_TIMEOUT_MS: '999' }, /KEEP_ALIVE_TIMEOUT_MS must be between 1000 and 3600000, got 999/],
    ];
    for (const [env, message] of cases) {
      assert.throws(() => loadConfig(env, {}), (error: unknown) => error instanceof ConfigError && message.test(error.message), JSON.stringify(env));
    }
  });
});
