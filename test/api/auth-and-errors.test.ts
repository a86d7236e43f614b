import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { sql } from 'kysely';
import { apiClient, rawDb, startTestServer, type ApiClient, type ApiResponse, type TestServer } from '../helpers/test-server.ts';
import { issueToken, revokeToken } from '../../src/modules/tokens/token.service.ts';

// Authentication and the error contract (CONTRACT.md "Status codes", "Error body", "Tokens"):
// every failure is an RFC 9457 problem body whose requestId is the x-request-id header.

const PROBLEM_KEYS = ['code', 'detail', 'requestId', 'status', 'title', 'type'];

/** The API routes of the spec, plus the ones beyond it that the service documents. */
const API_ROUTES: [method: string, path: string][] = [
  ['GET', '/me'],
  ['POST', '/affiliates'],
  ['GET', '/affiliates'],
  ['POST', '/links'],
  ['PUT', '/links'],
  ['POST', '/referrals'],
  ['GET', '/referrals'],
  ['POST', '/sales'],
  ['GET', '/sales'],
  ['POST', '/coupons'],
  ['GET', '/coupons'],
  ['POST', '/promotional-codes'],
  ['GET', '/promotional-codes'],
  ['PUT', '/promotional-codes'],
];

async function call(url: string, init: RequestInit = {}): Promise<ApiResponse> {
  const response = await fetch(url, init);
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // keep the text
  }
  return { status: response.status, headers: response.headers, body };
}

/** Asserts the contract's problem body and returns it. */
function assertProblem(res: ApiResponse, status: number, code: string, extraKeys: string[] = []): Record<string, unknown> {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  const body = res.body as Record<string, unknown>;
  assert.equal(typeof body, 'object');
  assert.deepEqual(Object.keys(body).sort(), [...PROBLEM_KEYS, ...extraKeys].sort());
  assert.equal(body.type, 'about:blank');
  assert.equal(body.status, status);
  assert.equal(body.code, code);
  assert.equal(typeof body.title, 'string');
  assert.ok((body.title as string).length > 0);
  assert.equal(typeof body.detail, 'string');
  assert.ok((body.detail as string).length > 0);
  assert.equal(typeof body.requestId, 'string');
  assert.equal(body.requestId, res.headers.get('x-request-id'), 'requestId equals the x-request-id header');
  return body;
}

function assertUnauthorized(res: ApiResponse): Record<string, unknown> {
  const body = assertProblem(res, 401, 'unauthorized');
  assert.equal(res.headers.get('www-authenticate'), 'Bearer');
  assert.equal(body.title, 'Unauthorized');
  return body;
}

/** Everything but the per-request id, to compare two problem bodies. */
function withoutRequestId(body: unknown): unknown {
  const { requestId: _requestId, ...rest } = body as Record<string, unknown>;
  return rest;
}

async function countRows(t: TestServer, table: string, programId: string): Promise<number> {
  const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)} where program_id = ${programId}`.execute(rawDb(t));
  return Number(rows[0]!.n);
}

/** What a failed write must leave alone. */
async function writeState(t: TestServer, programId: string) {
  return {
    affiliates: await countRows(t, 'affiliates', programId),
    links: await countRows(t, 'affiliate_links', programId),
    events: await countRows(t, 'events', programId),
  };
}

/** A raw HTTP/1.1 request that streams its body in chunks (no Content-Length). */
function chunkedRequest(url: string, headers: Record<string, string>, chunk: Buffer, times: number): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { ...headers, 'transfer-encoding': 'chunked' } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') responseHeaders.set(name, value);
        resolve({ status: res.statusCode ?? 0, headers: responseHeaders, body: text ? JSON.parse(text) : undefined });
      });
    });
    // The server may answer and close before the whole body is sent; that is the point.
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error);
    });
    let sent = 0;
    const writeMore = () => {
      while (sent < times) {
        sent++;
        if (!req.write(chunk)) return void req.once('drain', writeMore);
      }
      req.end();
    };
    writeMore();
  });
}

describe('authentication', () => {
  let t: TestServer;
  let api: ApiClient;
  let base: string;

  before(async () => {
    t = await startTestServer();
    api = await t.createTenant();
    base = `${t.url}/api/v1`;
  });
  after(() => t.close());

  it('a valid token is accepted, in any letter case of the scheme', async () => {
    assert.equal((await api.get('/me')).status, 200);
    assert.equal((await call(`${base}/me`, { headers: { authorization: `bearer ${api.token}` } })).status, 200);
    assert.equal((await call(`${base}/me`, { headers: { authorization: `BEARER ${api.token}` } })).status, 200);
  });

  it('no Authorization header is 401 with WWW-Authenticate: Bearer and a problem body', async () => {
    assertUnauthorized(await call(`${base}/me`));
  });

  it('a scheme other than Bearer is 401', async () => {
    for (const authorization of [
      `Basic ${Buffer.from(`user:${api.token}`).toString('base64')}`,
      `Token ${api.token}`,
      api.token,
      `Bearer`,
      `Bearer `,
      `Bearer ${api.token} extra`,
      `Bearer${api.token}`,
    ]) {
      assertUnauthorized(await call(`${base}/me`, { headers: { authorization } }));
    }
  });

  it('an unknown token is 401, with or without the tdm_ prefix', async () => {
    for (const token of [`tdm_${randomBytes(32).toString('base64url')}`, randomBytes(32).toString('base64url'), 'tdm_', `${api.token}x`, api.token.slice(0, -1), `tdm_${'a'.repeat(5000)}`]) {
      assertUnauthorized(await apiClient(t.url, token, api.programId).get('/me'));
    }
  });

  it('every API route demands the token, before validation, lookup or body parsing', async () => {
    for (const [method, path] of API_ROUTES) {
      const res = await call(`${base}${path}`, { method });
      assertUnauthorized(res);
    }
    // No token and an invalid body: the token is checked first.
    assertUnauthorized(await call(`${base}/affiliates`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"firstName":' }));
    assertUnauthorized(await call(`${base}/affiliates`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"email":"not-an-email"}' }));
    assertUnauthorized(await call(`${base}/affiliates?id=not-a-uuid`));
    assertUnauthorized(await call(`${base}/affiliates?id=${crypto.randomUUID()}`));
  });

  it('every route the OpenAPI document lists under /api/v1 demands the token', async () => {
    const doc = (await call(`${base}/openapi.json`)).body as { paths: Record<string, Record<string, unknown>> };
    let checked = 0;
    for (const [path, operations] of Object.entries(doc.paths)) {
      if (!path.startsWith('/api/v1/')) continue;
      for (const method of Object.keys(operations)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
        assertUnauthorized(await call(`${t.url}${path}`, { method: method.toUpperCase() }));
        checked++;
      }
    }
    assert.ok(checked >= API_ROUTES.length, `checked ${checked} operations`);
  });

  it('a revoked token is refused on the very next request, like an unknown one; other tokens keep working', async () => {
    const db = rawDb(t);
    const key = await issueToken(db, { programId: api.programId, name: 'to revoke', kind: 'api_key' });
    const other = await issueToken(db, { programId: api.programId, name: 'stays', kind: 'api_key' });
    const client = apiClient(t.url, key.token, api.programId);
    assert.equal((await client.get('/me')).status, 200);
    assert.equal((await client.get('/me')).status, 200, 'a second, cached-path request still succeeds');

    await revokeToken(db, key.id);
    const revoked = assertUnauthorized(await client.get('/me'));
    const unknown = assertUnauthorized(await apiClient(t.url, `tdm_${randomBytes(32).toString('base64url')}`, api.programId).get('/me'));
    assert.deepEqual(withoutRequestId(revoked), withoutRequestId(unknown), 'a revoked token is indistinguishable from an unknown one');
    const before = await writeState(t, api.programId);
    assertUnauthorized(await client.post('/affiliates', { firstName: 'A', lastName: 'B', email: 'after-revoke@example.com' }));
    assert.deepEqual(await writeState(t, api.programId), before);

    assert.equal((await apiClient(t.url, other.token, api.programId).get('/me')).status, 200);
    assert.equal((await api.get('/me')).status, 200);
    // Revoking twice is refused (the token is no longer active).
    await assert.rejects(revokeToken(db, key.id));
  });

  it('a token revoked by another process (straight in the database) is refused once TOKEN_CACHE_MS has passed', async () => {
    const cached = await startTestServer({ tokenCacheMs: 400 });
    try {
      const tenant = await cached.createTenant();
      assert.equal((await tenant.get('/me')).status, 200);
      // What another process's revocation looks like from here: the row changes, this cache is not dropped.
      await rawDb(cached).updateTable('api_tokens').set({ revoked_at: new Date().toISOString() }).where('program_id', '=', tenant.programId).execute();
      assert.equal((await tenant.get('/me')).status, 200, 'answered from the cache within its lifetime');
      await new Promise((r) => setTimeout(r, 450));
      assertUnauthorized(await tenant.get('/me'));
    } finally {
      await cached.close();
    }
  });

  it('a 401 writes nothing', async () => {
    const before = await writeState(t, api.programId);
    const stranger = apiClient(t.url, `tdm_${randomBytes(32).toString('base64url')}`, api.programId);
    assertUnauthorized(await stranger.post('/affiliates', { firstName: 'A', lastName: 'B', email: 'stranger@example.com' }));
    assert.deepEqual(await writeState(t, api.programId), before);
  });

  it('tokens are stored only as a SHA-256 hash: tdm_ prefix, at least 256 random bits, no plaintext anywhere', async () => {
    const db = rawDb(t);
    const issued = await Promise.all([1, 2, 3].map((i) => issueToken(db, { programId: api.programId, name: `hash check ${i}`, kind: 'api_key' })));
    assert.equal(new Set(issued.map((k) => k.token)).size, issued.length, 'tokens are unique');
    for (const key of issued) {
      assert.match(key.token, /^tdm_[A-Za-z0-9_-]+$/);
      const secret = key.token.slice('tdm_'.length);
      assert.ok(Buffer.from(secret, 'base64url').length >= 32, 'at least 256 bits of randomness');
      const { rows } = await sql<Record<string, unknown>>`select * from api_tokens where id = ${key.id}`.execute(db);
      assert.equal(rows.length, 1);
      const row = rows[0]!;
      assert.equal(row.token_hash, createHash('sha256').update(key.token).digest('hex'));
      for (const [column, value] of Object.entries(row)) {
        assert.ok(!String(value).includes(secret), `column ${column} must not hold the token`);
      }
      assert.ok(String(row.prefix).startsWith('tdm_'));
      assert.ok(String(row.prefix).length <= 12, 'only a short, harmless prefix is kept for display');
    }
    // No table holds the plaintext: search every token-looking text in the whole database.
    const { rows: all } = await sql<{ token_hash: string }>`select token_hash from api_tokens`.execute(db);
    assert.ok(all.every((r) => /^[0-9a-f]{64}$/.test(r.token_hash)));
    if (t.database.url.startsWith('sqlite:')) {
      const file = t.database.url.slice('sqlite:'.length);
      const bytes = Buffer.concat([file, `${file}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f)));
      for (const key of [...issued, { token: api.token }]) {
        assert.equal(bytes.indexOf(key.token.slice('tdm_'.length)), -1, 'the token never reaches the database file');
      }
    }
  });
});

describe('request errors', () => {
  let t: TestServer;
  let api: ApiClient;
  let base: string;
  let auth: Record<string, string>;

  before(async () => {
    t = await startTestServer();
    api = await t.createTenant();
    base = `${t.url}/api/v1`;
    auth = { authorization: `Bearer ${api.token}` };
  });
  after(() => t.close());

  it('malformed JSON is 400 bad_request and writes nothing', async () => {
    const before = await writeState(t, api.programId);
    for (const body of ['{"firstName":', '{firstName: "A"}', "{'a': 1}", '{"a":1}}', 'nul', '\u0000']) {
      const res = await call(`${base}/affiliates`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body });
      const problem = assertProblem(res, 400, 'bad_request');
      assert.equal(problem.title, 'Bad Request');
      assert.ok(!String(problem.detail).includes('at '), 'no parser internals');
    }
    for (const path of ['/links', '/promotional-codes']) {
      assertProblem(await call(`${base}${path}`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/json' }, body: '[' }), 400, 'bad_request');
    }
    assert.deepEqual(await writeState(t, api.programId), before);
  });

  it('an empty JSON body is 400', async () => {
    assertProblem(await call(`${base}/affiliates`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '' }), 400, 'bad_request');
  });

  it('a body that is not sent as application/json is 400 and writes nothing', async () => {
    const before = await writeState(t, api.programId);
    const json = JSON.stringify({ firstName: 'A', lastName: 'B', email: 'typed@example.com' });
    for (const contentType of ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/octet-stream']) {
      const res = await call(`${base}/affiliates`, { method: 'POST', headers: { ...auth, 'content-type': contentType }, body: json });
      assertProblem(res, 400, 'bad_request');
    }
    // fetch's default for a string body is text/plain: also refused.
    assertProblem(await call(`${base}/affiliates`, { method: 'POST', headers: auth, body: json }), 400, 'bad_request');
    assert.deepEqual(await writeState(t, api.programId), before);
    // The same body as JSON, with a charset parameter, is accepted.
    const ok = await call(`${base}/affiliates`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json; charset=utf-8' }, body: json });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
  });

  it('a body over 1 MiB is 413 payload_too_large and writes nothing', async () => {
    const before = await writeState(t, api.programId);
    const oversized = JSON.stringify({ firstName: 'A', lastName: 'B', email: 'huge@example.com', padding: 'x'.repeat(1024 * 1024) });
    const res = await api.post('/affiliates', oversized);
    const problem = assertProblem(res, 413, 'payload_too_large');
    assert.equal(problem.title, 'Content Too Large');
    // Streamed without a Content-Length, the limit holds as well.
    const chunk = Buffer.from(`{"firstName":"A","lastName":"B","email":"chunked@example.com","padding":"${'y'.repeat(64 * 1024)}`);
    const chunked = await chunkedRequest(`${base}/affiliates`, { ...auth, 'content-type': 'application/json' }, chunk, 20);
    assertProblem(chunked, 413, 'payload_too_large');
    assert.deepEqual(await writeState(t, api.programId), before);
    assert.equal((await api.get('/affiliates?email=huge@example.com')).status, 404);
  });

  it('a body just under 1 MiB is accepted (unknown fields are ignored)', async () => {
    const body = JSON.stringify({ firstName: 'A', lastName: 'B', email: 'almost-huge@example.com', padding: '' });
    const padded = body.replace('"padding":""', `"padding":"${'z'.repeat(1024 * 1024 - body.length - 16)}"`);
    assert.ok(Buffer.byteLength(padded) < 1024 * 1024);
    const res = await api.post('/affiliates', padded);
    assert.equal(res.status, 201, JSON.stringify(res.body).slice(0, 300));
  });

  it('a body that fails validation is 422 with errors[].pointer for every problem', async () => {
    const before = await writeState(t, api.programId);
    const res = await api.post('/affiliates', { lastName: 42, email: 'not-an-email', commissionRate: '20' });
    const problem = assertProblem(res, 422, 'validation_failed', ['errors']);
    assert.equal(problem.title, 'Unprocessable Content');
    const errors = problem.errors as { pointer: string; detail: string }[];
    assert.ok(Array.isArray(errors) && errors.length >= 4, JSON.stringify(errors));
    for (const error of errors) {
      assert.deepEqual(Object.keys(error).sort(), ['detail', 'pointer']);
      assert.match(error.pointer, /^#\//);
      assert.equal(typeof error.detail, 'string');
      assert.ok(error.detail.length > 0);
    }
    const pointers = errors.map((e) => e.pointer);
    for (const pointer of ['#/firstName', '#/lastName', '#/email', '#/commissionRate']) assert.ok(pointers.includes(pointer), `${pointer} in ${pointers}`);
    assert.deepEqual(await writeState(t, api.programId), before);
  });

  it('a JSON body that is not an object is 422', async () => {
    for (const body of ['[]', '"text"', '42', 'null']) {
      const problem = assertProblem(await api.post('/affiliates', body), 422, 'validation_failed', ['errors']);
      // The pointer to the whole body is the empty JSON Pointer, as a URI fragment.
      assert.deepEqual(problem.errors, [{ pointer: '#', detail: 'must be object' }]);
    }
  });

  it('a query that fails validation is 422 with a pointer to the parameter', async () => {
    const res = await api.get('/affiliates?id=not-a-uuid');
    const problem = assertProblem(res, 422, 'validation_failed', ['errors']);
    assert.deepEqual(
      (problem.errors as { pointer: string }[]).map((e) => e.pointer),
      ['#/id'],
    );
    assertProblem(await api.get('/sales?id=abc'), 422, 'validation_failed', ['errors']);
    assertProblem(await api.get('/affiliates?limit=0'), 422, 'validation_failed', ['errors']);
  });

  it('an unknown route or method is a 404 problem, with or without a token', async () => {
    for (const res of [
      await call(`${base}/nothing-here`),
      await call(`${base}/nothing-here`, { headers: auth }),
      await call(`${base}/affiliates`, { method: 'PATCH', headers: auth }),
      await call(`${base}/affiliates/123`, { headers: auth }),
      await call(`${t.url}/api/v2/affiliates`, { headers: auth }),
    ]) {
      const problem = assertProblem(res, 404, 'not_found');
      assert.equal(problem.title, 'Not Found');
    }
  });

  it('an unknown id is a 404 problem', async () => {
    const problem = assertProblem(await api.get(`/affiliates?id=${crypto.randomUUID()}`), 404, 'not_found');
    assert.equal(problem.title, 'Not Found');
  });

  it('each response gets its own request id; a client-sent X-Request-Id is not echoed', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const res = await call(`${base}/me`, { headers: { 'x-request-id': 'client-chosen' } });
      const body = assertUnauthorized(res);
      assert.notEqual(body.requestId, 'client-chosen');
      ids.add(String(body.requestId));
    }
    assert.equal(ids.size, 5);
    const ok = await api.get('/me');
    assert.ok(ok.headers.get('x-request-id'), 'successful responses carry x-request-id too');
  });

  it('a 409 conflict is a problem body too', async () => {
    const body = { firstName: 'Dup', lastName: 'Licate', email: 'dup@example.com' };
    assert.equal((await api.post('/affiliates', body)).status, 201);
    assertProblem(await api.post('/affiliates', body), 409, 'conflict');
  });
});

describe('unexpected errors', () => {
  let t: TestServer;
  let api: ApiClient;

  before(async () => {
    t = await startTestServer();
    api = await t.createTenant();
    // The database goes away under the running server: every API call now fails inside.
    await t.server.database.close();
  });
  after(() => t.close());

  it('a 500 is a problem body with a request id and no stack trace or internals', async () => {
    for (const res of [
      await api.get('/me'),
      await api.post('/affiliates', { firstName: 'A', lastName: 'B', email: 'crash@example.com' }),
      await api.get('/affiliates'),
    ]) {
      const problem = assertProblem(res, 500, 'internal');
      assert.equal(problem.title, 'Internal Server Error');
      const text = JSON.stringify(res.body);
      for (const leak of ['stack', '    at ', '.ts:', 'node_modules', 'Error:', 'sqlite', 'SQLITE', 'pool', 'connection', 'select ']) {
        assert.ok(!text.includes(leak), `the 500 body must not contain "${leak}": ${text}`);
      }
    }
  });
});

describe('rate limit', () => {
  let t: TestServer;
  let api: ApiClient;

  before(async () => {
    t = await startTestServer({ rateLimitPerMinute: 5 });
    api = await t.createTenant();
  });
  after(() => t.close());

  it('the 6th request of a program within a minute is 429 rate_limited with Retry-After and RateLimit headers', async () => {
    for (let i = 1; i <= 5; i++) {
      const res = await api.get('/me');
      assert.equal(res.status, 200, `request ${i}`);
      assert.equal(res.headers.get('ratelimit-limit'), '5');
      assert.equal(res.headers.get('ratelimit-remaining'), String(5 - i));
    }
    const limited = await api.get('/me');
    const problem = assertProblem(limited, 429, 'rate_limited');
    assert.equal(problem.title, 'Too Many Requests');
    const retryAfter = Number(limited.headers.get('retry-after'));
    assert.ok(Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 60, `Retry-After ${limited.headers.get('retry-after')}`);
    assert.equal(limited.headers.get('ratelimit-limit'), '5');
    assert.equal(limited.headers.get('ratelimit-remaining'), '0');
  });

  it('a rate-limited write writes nothing', async () => {
    const before = await writeState(t, api.programId);
    assertProblem(await api.post('/affiliates', { firstName: 'A', lastName: 'B', email: 'limited@example.com' }), 429, 'rate_limited');
    assert.deepEqual(await writeState(t, api.programId), before);
  });

  it('the limit is per program: a new key of the same program is limited too, another program is not', async () => {
    // Minting keys (or connecting apps) does not multiply the limit.
    const first = await t.createTenant();
    for (let i = 0; i < 5; i++) assert.equal((await first.get('/me')).status, 200);
    const second = await issueToken(rawDb(t), { programId: first.programId, name: 'second', kind: 'api_key' });
    const sameProgram = apiClient(t.url, second.token, first.programId);
    assertProblem(await sameProgram.get('/me'), 429, 'rate_limited');
    const otherProgram = await t.createTenant();
    const res = await otherProgram.get('/me');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('ratelimit-remaining'), '4');
  });

  it('invalid requests count too, and requests without a valid token neither count nor get limited', async () => {
    const client = await t.createTenant();
    for (let i = 0; i < 5; i++) assert.equal((await client.post('/affiliates', { firstName: 1 })).status, 422);
    assertProblem(await client.get('/me'), 429, 'rate_limited');
    // Unauthenticated calls are refused as 401, never 429.
    for (let i = 0; i < 7; i++) assertUnauthorized(await call(`${t.url}/api/v1/me`));
  });

  it('health checks and docs are not rate limited', async () => {
    for (let i = 0; i < 7; i++) assert.equal((await call(`${t.url}/healthz`)).status, 200);
    assert.equal((await call(`${t.url}/api/v1/openapi.json`)).status, 200);
  });
});
