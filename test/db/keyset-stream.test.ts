// A keyset list streamed as text (src/db/keyset-stream.ts, the CSV downloads): batches of
// STREAM_BATCH_ROWS read after the previous batch's last row, up to the row cap, a turn of the
// event loop between two reads; a failed first read fails the call (the route answers it as
// before), a failed later read destroys the stream — and through Fastify on a real port, the
// response is cut short (the client sees it fail, not a shorter file) and the error is logged.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Readable } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import type { PageRequest } from '../../src/db/keyset.ts';
import { STREAM_BATCH_ROWS, streamKeysetList } from '../../src/db/keyset-stream.ts';

interface Row {
  id: number;
  created_at: string;
  amount: number;
}

/** `count` rows, newest first (by created_at, then id): ten share each millisecond. */
function rowsOf(count: number): Row[] {
  const rows = Array.from({ length: count }, (_, i) => ({ id: i + 1, created_at: new Date(Date.UTC(2026, 0, 1) + Math.floor(i / 10)).toISOString(), amount: (i * 37) % 90 }));
  return rows.sort((a, b) => (a.created_at === b.created_at ? b.id - a.id : a.created_at < b.created_at ? 1 : -1));
}

/** A list function over `rows` (newest first), as a repository's: the rows after `page.after`, `page.limit + 1` of them. Notes each request. */
function listOf(rows: Row[], requests: PageRequest[] = []) {
  return async (page: PageRequest): Promise<Row[]> => {
    requests.push(page);
    const after = page.after;
    const start = after === undefined ? 0 : rows.findIndex((r) => r.created_at < after.createdAt || (r.created_at === after.createdAt && r.id < Number(after.id)));
    return start === -1 ? [] : rows.slice(start, start + page.limit + 1);
  };
}

const lineOf = (row: Row) => `${row.id},${row.created_at}\r\n`;
const textOf = (rows: Row[]) => rows.map(lineOf).join('');
const HEAD = 'id,created_at\r\n';

async function textOfStream(stream: Readable): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text;
}

describe('streamKeysetList', () => {
  it('reads batches after the last row of the one before, and writes the head and every row once, in order', async () => {
    const rows = rowsOf(3 * STREAM_BATCH_ROWS + 34);
    const requests: PageRequest[] = [];
    const text = await textOfStream(await streamKeysetList({ head: HEAD, maxRows: 10_000, readPage: listOf(rows, requests), textOf }));
    assert.equal(text, HEAD + textOf(rows));
    assert.deepEqual(
      requests.map((r) => r.limit),
      [STREAM_BATCH_ROWS, STREAM_BATCH_ROWS, STREAM_BATCH_ROWS, STREAM_BATCH_ROWS],
    );
    assert.equal(requests[0]!.after, undefined);
    for (let b = 1; b < requests.length; b++) {
      const last = rows[b * STREAM_BATCH_ROWS - 1]!;
      assert.deepEqual(requests[b]!.after, { createdAt: last.created_at, id: last.id });
    }
  });

  it('stops at the row cap, the last read asking only for what is left', async () => {
    const rows = rowsOf(2 * STREAM_BATCH_ROWS + 300);
    const requests: PageRequest[] = [];
    const maxRows = 2 * STREAM_BATCH_ROWS + 100;
    const text = await textOfStream(await streamKeysetList({ head: HEAD, maxRows, readPage: listOf(rows, requests), textOf }));
    assert.equal(text, HEAD + textOf(rows.slice(0, maxRows)));
    assert.deepEqual(
      requests.map((r) => r.limit),
      [STREAM_BATCH_ROWS, STREAM_BATCH_ROWS, 100],
    );
  });

  it('passes the order, and the value of its column in the cursor', async () => {
    const order = { column: 'total_earned', direction: 'asc' } as const;
    const rows = rowsOf(STREAM_BATCH_ROWS + 1).map((r) => ({ ...r, total_earned: r.amount }));
    const requests: PageRequest[] = [];
    const readPage = async (page: PageRequest) => (await listOf(rows, requests)(page)).map((r) => ({ ...r, total_earned: r.amount }));
    await textOfStream(await streamKeysetList({ head: HEAD, order, maxRows: 10_000, readPage, textOf }));
    assert.deepEqual(requests[0], { limit: STREAM_BATCH_ROWS, order });
    const last = rows[STREAM_BATCH_ROWS - 1]!;
    assert.deepEqual(requests[1], { limit: STREAM_BATCH_ROWS, order, after: { createdAt: last.created_at, id: last.id, value: last.amount } });
  });

  it('an empty list is the head alone, from one read', async () => {
    const requests: PageRequest[] = [];
    assert.equal(await textOfStream(await streamKeysetList({ head: HEAD, maxRows: 10_000, readPage: listOf([], requests), textOf })), HEAD);
    assert.equal(requests.length, 1);
  });

  it('gives the event loop a turn (a macrotask, not only microtasks) between two reads', async () => {
    const rows = rowsOf(3 * STREAM_BATCH_ROWS);
    const read = listOf(rows);
    const turned: boolean[] = [];
    let turn = false;
    const readPage = async (page: PageRequest) => {
      turned.push(turn);
      turn = false;
      setImmediate(() => (turn = true));
      return read(page);
    };
    await textOfStream(await streamKeysetList({ head: HEAD, maxRows: 10_000, readPage, textOf }));
    assert.deepEqual(turned, [false, true, true]);
  });

  it('a failed first read fails the call: nothing is streamed, the caller answers the error', async () => {
    await assert.rejects(
      streamKeysetList({ head: HEAD, maxRows: 10_000, readPage: () => Promise.reject(new Error('no database')), textOf }),
      /no database/,
    );
  });

  it('a failed later read destroys the stream with its error, after the rows read before it', async () => {
    const read = listOf(rowsOf(3 * STREAM_BATCH_ROWS));
    let reads = 0;
    const readPage = (page: PageRequest) => (++reads === 2 ? Promise.reject(new Error('the database went away')) : read(page));
    const stream = await streamKeysetList({ head: HEAD, maxRows: 10_000, readPage, textOf });
    let text = '';
    await assert.rejects(async () => {
      for await (const chunk of stream) text += String(chunk);
    }, /the database went away/);
    assert.ok(stream.destroyed);
    assert.equal(text.split('\r\n').length - 2, STREAM_BATCH_ROWS);
  });
});

describe('a streamed list sent by Fastify on a real port', () => {
  let app: FastifyInstance;
  const logged: { level: number; msg: string; err?: { message: string } }[] = [];
  after(() => app?.close());

  it('headers first, chunked; a failed first read answers 500; a failed later read cuts the response short and is logged', async () => {
    app = Fastify({ logger: { level: 'info', stream: { write: (line: string) => void logged.push(JSON.parse(line)) } } });
    const rows = rowsOf(3 * STREAM_BATCH_ROWS);
    app.get('/whole.csv', async (_request, reply) => reply.type('text/csv; charset=utf-8').send(await streamKeysetList({ head: HEAD, maxRows: 10_000, readPage: listOf(rows), textOf })));
    app.get('/first-fails.csv', async (_request, reply) =>
      reply.type('text/csv; charset=utf-8').send(await streamKeysetList({ head: HEAD, maxRows: 10_000, readPage: () => Promise.reject(new Error('no database')), textOf })),
    );
    app.get('/later-fails.csv', async (_request, reply) => {
      const read = listOf(rows);
      let reads = 0;
      const readPage = (page: PageRequest) => (++reads === 2 ? Promise.reject(new Error('the database went away')) : read(page));
      return reply.type('text/csv; charset=utf-8').send(await streamKeysetList({ head: HEAD, maxRows: 10_000, readPage, textOf }));
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });

    const whole = await fetch(`${url}/whole.csv`);
    assert.equal(whole.status, 200);
    assert.equal(whole.headers.get('content-type'), 'text/csv; charset=utf-8');
    assert.equal(whole.headers.get('transfer-encoding'), 'chunked');
    assert.equal(whole.headers.get('content-length'), null);
    assert.equal(await whole.text(), HEAD + textOf(rows));

    assert.equal((await fetch(`${url}/first-fails.csv`)).status, 500);

    const cut = await fetch(`${url}/later-fails.csv`);
    assert.equal(cut.status, 200);
    await assert.rejects(cut.text(), 'the client sees the response fail, not a shorter file');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const line = logged.find((l) => l.err?.message === 'the database went away');
    assert.ok(line, `logged: ${JSON.stringify(logged)}`);
    assert.ok(line.level >= 40, 'at warn level or above');
  });
});
