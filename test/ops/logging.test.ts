// Logs are JSON lines with the request id on every request line, and never contain a token —
// unless a person reads them (a terminal, or LOG_FORMAT=pretty): then one short line per request.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { loggerOptions } from '../../src/logging.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database.ts';
import { apiClient } from '../helpers/test-server.ts';
import { spawn } from 'node:child_process';
import { freePort, runTandem, seedTenant, startServerProcess, startWorkerProcess, tandemBin, type ServerProcess, type Tenant } from '../helpers/server-process.ts';
import { isExecutableFile } from '../helpers/executables.ts';
import { formatLogLine, redactUrl } from '../../src/logging.ts';
import { randomUUID } from 'node:crypto';
import { openDatabase } from '../../src/db/database.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { createPasswordResetLink } from '../../src/modules/users/password-reset.service.ts';
import { systemClock } from '../../src/domain/clock.ts';

describe('structured logs', () => {
  let database: TestDatabase;
  let server: ServerProcess;
  let tenant: Tenant;

  before(async () => {
    database = await createTestDatabase();
    tenant = await seedTenant(database.url);
    server = await startServerProcess({ databaseUrl: database.url, env: { LOG_LEVEL: 'info' } });
  });
  after(async () => {
    await server?.stop();
    await database?.drop();
  });

  it('puts the request id on every request line and never logs the bearer token', async () => {
    const api = apiClient(server.url, tenant.token, tenant.programId);
    const ok = await api.get('/me');
    assert.equal(ok.status, 200);
    const failed = await api.post('/affiliates', { firstName: 1 });
    assert.equal(failed.status, 422);
    // JSON lines leave in blocks, at most LOG_FLUSH_MS later (src/logging.ts).
    await untilOutput(server, (text) => text.includes(String(failed.headers.get('x-request-id'))));
    const lines = server
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    // One line per request, when it is answered: what an operator needs, never the headers.
    const requestLines = lines.filter((l) => l.msg === 'request');
    const api_lines = requestLines.filter((l) => String(l.url).startsWith('/api/v1/'));
    assert.equal(api_lines.length, 2, `one line per request:\n${server.output()}`);
    assert.ok(!lines.some((l) => l.msg === 'incoming request' || l.msg === 'request completed'), "no Fastify lines");
    for (const line of requestLines) assert.equal(typeof line.reqId, 'string', JSON.stringify(line));
    const ids = new Set(requestLines.map((l) => l.reqId));
    assert.ok(ids.has(ok.headers.get('x-request-id')) && ids.has(failed.headers.get('x-request-id')), 'log ids match the x-request-id headers');
    const me = api_lines.find((l) => l.url === '/api/v1/me')!;
    assert.deepEqual({ ...me, ms: typeof me.ms, time: typeof me.time, pid: typeof me.pid, hostname: typeof me.hostname, reqId: typeof me.reqId }, {
      level: 30, time: 'number', pid: 'number', hostname: 'string', reqId: 'string', msg: 'request',
      method: 'GET', route: '/api/v1/me', url: '/api/v1/me', status: 200, ms: 'number', program: tenant.programId,
    });
    const refused = api_lines.find((l) => l.url === '/api/v1/affiliates')!;
    assert.equal(refused.status, 422);
    assert.ok(!server.output().includes('authorization'), 'no header in the log');
    assert.ok(!server.output().includes(tenant.token), 'the token is not in the log');
    assert.ok(!server.output().includes(tenant.token.slice(4)), 'nor its secret part');
  });
});

describe('one-time secrets in URLs (issue 29 item 13)', () => {
  let database: TestDatabase;
  let tenant: Tenant;
  let resetTokens: string[];

  before(async () => {
    database = await createTestDatabase();
    tenant = await seedTenant(database.url);
    const opened = openDatabase({ databaseUrl: database.url, databasePoolSize: 2 });
    try {
      const user = await createUser(opened.db, { email: `reset-${process.pid}-${Date.now()}@example.com`, password: 'a long password' });
      resetTokens = [];
      for (let i = 0; i < 2; i++) resetTokens.push(new URL((await createPasswordResetLink(opened.db, systemClock, user.email, 'http://tandem.test')).url).pathname.split('/').pop()!);
    } finally {
      await opened.close();
    }
  });
  after(async () => {
    await database?.drop();
  });

  /** Sends every kind of URL that carries a one-time secret; the secrets, and the paths whose log lines must show [redacted]. */
  async function sendSecrets(server: ServerProcess): Promise<{ secrets: string[]; expected: string[] }> {
    const api = apiClient(server.url, tenant.token, tenant.programId);
    const affiliate = (await api.post('/affiliates', { firstName: 'Jane', lastName: 'Cooper', email: `jane-${process.pid}-${Date.now()}@example.com` })).body;
    const link = await api.post('/affiliates/portal-link', { affiliateId: affiliate.id });
    assert.equal(link.status, 201, JSON.stringify(link.body));
    const portalPath = new URL(link.body.url).pathname;
    const loginToken = portalPath.split('/').pop()!;
    const slug = portalPath.split('/')[2]!;
    const [reset, resetEscaped] = resetTokens as [string, string];
    const state = `state-${randomUUID()}`;
    const nextState = `next-state-${randomUUID()}`;
    const code = `code-${randomUUID()}`;
    const connect = `/connect/zapier/choose-affiliate-program?redirect_uri=${encodeURIComponent('https://zapier.com/x')}&state=${nextState}`;
    const requests: [string, string][] = [
      ['GET', portalPath],
      ['POST', portalPath],
      ['GET', `/reset-password/${reset}`],
      ['GET', `/reset-p%61ssword/${resetEscaped}?x=1`],
      ['GET', `/connect/zapier/choose-affiliate-program?state=${state}&redirect_uri=${encodeURIComponent('https://zapier.com/x')}`],
      ['GET', `/login?next=${encodeURIComponent(connect)}`],
      ['POST', `/api/zapier/token?code=${code}`],
    ];
    for (const [method, path] of requests) {
      const response = await fetch(`${server.url}${path}`, { method, redirect: 'manual', ...(method === 'POST' ? { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1' } : {}) });
      await response.arrayBuffer();
    }
    assert.equal((await fetch(`${server.url}${portalPath}`)).status, 200, 'the link was only opened, and still works: the secret was real');
    return {
      secrets: [loginToken, reset, resetEscaped, state, nextState, code],
      expected: [`/portal/${slug}/login/[redacted]`, '/reset-password/[redacted]', '/reset-password/[redacted]?x=1', 'state=[redacted]', 'code=[redacted]', encodeURIComponent('state=[redacted]')],
    };
  }

  it('never writes them to the JSON request log (request and arrival lines), and says where they were', async () => {
    const server = await startServerProcess({ databaseUrl: database.url, env: { LOG_LEVEL: 'debug', LOG_FORMAT: 'json' } });
    try {
      const { secrets, expected } = await sendSecrets(server);
      // The last request sent is the third to the portal link: wait for its answer's line, not
      // an earlier request's (under load the line of the last answer came after the check).
      await untilOutput(server, (text) => text.includes('/api/zapier/token?code=[redacted]') && text.split('"route":"/portal/:slug/login/:token"').length > 3);
      const output = server.output();
      for (const secret of secrets) assert.ok(!output.includes(secret), `${secret} is in the log:\n${output}`);
      for (const shown of expected) assert.ok(output.includes(shown), `the log shows ${shown}:\n${output}`);
      const lines = output.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
      const portal = lines.filter((l) => l.route === '/portal/:slug/login/:token');
      assert.equal(portal.length, 3, output);
      assert.ok(portal.every((l) => String(l.url).endsWith('/login/[redacted]')), output);
      assert.ok(lines.some((l) => l.msg === 'incoming request' && String(l.url).startsWith('/reset-password/[redacted]')), 'arrival lines (debug) too');
    } finally {
      await server.stop();
    }
  });

  it('never writes them to the terminal log either', async () => {
    const server = await startServerProcess({ databaseUrl: database.url, env: { LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' } });
    try {
      const { secrets, expected } = await sendSecrets(server);
      await untilOutput(server, (text) => text.includes('/api/zapier/token?code=[redacted]'));
      const output = server.output();
      for (const secret of secrets) assert.ok(!output.includes(secret), `${secret} is in the log:\n${output}`);
      for (const shown of expected) assert.ok(output.includes(shown), `the log shows ${shown}:\n${output}`);
    } finally {
      await server.stop();
    }
  });

  it('redacts the URL of an error line (the req serializer) and keeps every other URL as it is', () => {
    const { serializers } = loggerOptions({ logLevel: 'info', logFormat: 'json' }, new Writable({ write(_chunk, _encoding, done) { done(); } }));
    assert.deepEqual(serializers.req({ method: 'POST', url: '/portal/acme/login/abc123?x=1', ip: '127.0.0.1' } as never), { method: 'POST', url: '/portal/acme/login/[redacted]?x=1', remoteAddress: '127.0.0.1' });
    assert.equal(redactUrl('/api/v1/affiliates?email=a%40b.example&limit=5'), '/api/v1/affiliates?email=a%40b.example&limit=5');
    assert.equal(redactUrl('/portal/acme/login'), '/portal/acme/login');
    assert.equal(redactUrl('//reset-password//abc'), '//reset-password//[redacted]');
    assert.equal(redactUrl('/portal/acme/login%2Fabc'), '/portal/acme/login/[redacted]');
    assert.equal(redactUrl('/x?Code=1&ACCESS_TOKEN=2&token[]=3&a=4'), '/x?Code=[redacted]&ACCESS_TOKEN=[redacted]&token[]=[redacted]&a=4');
  });
});

/** Waits (up to 5 s) until the server's output satisfies `done`: log lines leave in blocks. */
async function untilOutput(server: { output(): string }, done: (text: string) => boolean): Promise<void> {
  for (let i = 0; i < 100 && !done(server.output()); i++) await new Promise((resolve) => setTimeout(resolve, 50));
}

/** What a terminal shows, without colours and carriage returns. */
const ESC = String.fromCharCode(27);
const plain = (text: string) => text.replaceAll(new RegExp(`${ESC}\\[[0-9;]*m`, 'g'), '').replace(/\r/g, '');

describe('the logger\'s redaction', () => {
  it('never writes a token or cookie logged as req.headers (the serializer drops headers; redaction is the second guard)', () => {
    const written: string[] = [];
    const out = Object.assign(new Writable({ write(chunk, _encoding, done) { written.push(String(chunk)); done(); } }), { isTTY: false });
    const options = loggerOptions({ logLevel: 'info', logFormat: 'json' }, out);
    const log = pino(options, out);
    log.info({ req: { headers: { authorization: 'Bearer tdm_secret', cookie: 'tandem_session=abc', accept: 'text/html' } } }, 'headers');
    assert.equal(written.length, 1);
    assert.ok(!written[0]!.includes('tdm_secret') && !written[0]!.includes('tandem_session=abc'), written[0]);
    // Without the serializer, redaction still replaces them.
    const bare: string[] = [];
    const sink = new Writable({ write(chunk, _encoding, done) { bare.push(String(chunk)); done(); } });
    pino({ ...options, serializers: {} }, sink).info({ req: { headers: { authorization: 'Bearer tdm_secret', cookie: 'tandem_session=abc' } } }, 'headers');
    assert.deepEqual((JSON.parse(bare.join('')) as { req: { headers: Record<string, string> } }).req.headers, { authorization: '[redacted]', cookie: '[redacted]' });
  });
});

describe('human-readable logs (LOG_FORMAT=pretty, the default on a terminal)', () => {
  let database: TestDatabase;
  let tenant: Tenant;

  before(async () => {
    database = await createTestDatabase();
    tenant = await seedTenant(database.url);
  });
  after(async () => {
    await database?.drop();
  });

  it('writes one short line per request (method, URL, status, time), never a token, and the start lines', async () => {
    const server = await startServerProcess({ databaseUrl: database.url, env: { LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' } });
    try {
      const api = apiClient(server.url, tenant.token, tenant.programId);
      assert.equal((await api.get('/me')).status, 200);
      assert.equal((await api.post('/affiliates', { firstName: 1 })).status, 422);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const output = server.output();
      const lines = output.split('\n').filter(Boolean);
      assert.ok(!lines.some((line) => line.startsWith('{')), `no JSON lines:\n${output}`);
      assert.ok(!output.includes('\u001b['), 'no colours when stdout is not a terminal');
      const requests = lines.filter((line) => / \/api\/v1\//.test(line));
      assert.deepEqual(
        requests.map((line) => line.replace(/ [\d.]+ ms$/, ' N ms')),
        [/^\d{2}:\d{2}:\d{2} /.exec(requests[0]!)![0] + 'GET /api/v1/me 200 N ms', /^\d{2}:\d{2}:\d{2} /.exec(requests[1]!)![0] + 'POST /api/v1/affiliates 422 N ms'],
        output,
      );
      assert.ok(lines.some((line) => /^\d{2}:\d{2}:\d{2} Tandem is serving on http:\/\/127\.0\.0\.1:\d+ \(site URL http:\/\/tandem\.test\); dashboard at http:\/\/tandem\.test\/dashboard, API docs at http:\/\/tandem\.test\/docs$/.test(line)), output);
      assert.ok(lines.some((line) => /^\d{2}:\d{2}:\d{2} Next: log in at http:\/\/tandem\.test\/login$/.test(line)), `an account exists: the next step is to log in\n${output}`);
      assert.ok(!output.includes(tenant.token.slice(4)), 'the token is not in the log');
    } finally {
      await server.stop();
    }
  });

  it('tandem worker writes the same human lines, not JSON', async () => {
    const worker = startWorkerProcess({ databaseUrl: database.url, env: { LOG_LEVEL: 'info', LOG_FORMAT: 'pretty' } });
    let code: number | null;
    try {
      for (let i = 0; i < 300 && !worker.output().includes('worker started'); i++) await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      code = await worker.stop();
    }
    const output = worker.output();
    assert.equal(code, 0, output);
    const lines = output.split('\n').filter(Boolean);
    assert.ok(lines.some((line) => /^\d{2}:\d{2}:\d{2} Tandem webhook worker started$/.test(line)), output);
    assert.ok(lines.some((line) => /^\d{2}:\d{2}:\d{2} worker stopping: finishing in-flight deliveries signal=SIGTERM$/.test(line)), output);
    assert.ok(!lines.some((line) => line.startsWith('{')), `no JSON lines:\n${output}`);
  });

  it('says to sign up first on a fresh instance', async () => {
    const fresh = await createTestDatabase();
    const server = await startServerProcess({ databaseUrl: fresh.url, env: { LOG_LEVEL: 'info', LOG_FORMAT: 'json' } });
    try {
      await untilOutput(server, (text) => text.includes('"Next: '));
      const lines = server
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { msg?: string });
      assert.ok(lines.some((l) => l.msg?.startsWith('Tandem is serving on ')), server.output());
      assert.ok(lines.some((l) => l.msg === "Next: open http://tandem.test/signup to create the first account (it becomes this Tandem's operator), or run: tandem user create --email you@example.com --password '…'"), server.output());
    } finally {
      await server.stop();
      await fresh.drop();
    }
  });

  it('refuses an unknown LOG_FORMAT with a one-line reason', async () => {
    const result = await runTandem(['migrate'], { databaseUrl: database.url, env: { LOG_FORMAT: 'fancy' } });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^tandem: LOG_FORMAT must be pretty or json, got "fancy"$/m);
  });

  const hasScript = isExecutableFile('/usr/bin/script');
  it('is the default on a terminal, in colour; LOG_FORMAT=json keeps JSON there', { skip: !hasScript && '/usr/bin/script (util-linux) is not installed: no terminal to run in' }, async () => {
    for (const format of ['', 'json']) {
      const port = await freePort();
      // script(1) runs the server on a pseudo-terminal, as a person starting it would.
      const child = spawn('/usr/bin/script', ['-qfec', `${JSON.stringify(process.execPath)} ${JSON.stringify(tandemBin)} serve`, '/dev/null'], {
        env: { ...process.env, DATABASE_URL: database.url, HOST: '127.0.0.1', PORT: String(port), SITE_URL: 'http://tandem.test', LOG_LEVEL: 'info', LOG_FORMAT: format },
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      const exited = new Promise((resolve) => child.on('exit', resolve));
      try {
        for (let i = 0; i < 300 && !/Tandem is serving/.test(output); i++) await new Promise((resolve) => setTimeout(resolve, 100));
        assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
        for (let i = 0; i < 50 && !/healthz/.test(output); i++) await new Promise((resolve) => setTimeout(resolve, 100));
        if (format === 'json') {
          assert.ok(plain(output).split('\n').some((line) => line.startsWith('{') && (JSON.parse(line) as { msg?: string }).msg?.startsWith('Tandem is serving')), output);
        } else {
          assert.ok(output.includes(`${ESC}[32m200${ESC}[0m`), 'the status in colour');
          assert.match(plain(output), /^\d{2}:\d{2}:\d{2} GET \/healthz 200 [\d.]+ ms$/m, output);
          assert.ok(!plain(output).split('\n').some((line) => line.startsWith('{')), output);
        }
      } finally {
        process.kill(-child.pid!, 'SIGTERM');
        await exited;
      }
    }
  });
});

describe('formatLogLine', () => {
  it("shows an error's stack and an e-mail written to the log, indented under their line", () => {
    const error = formatLogLine(JSON.stringify({ level: 50, time: Date.UTC(2026, 0, 2, 3, 4, 5), msg: 'request failed', reqId: 'r1', err: { message: 'boom', stack: 'Error: boom\n    at here' } }));
    assert.equal(error, '03:04:05 ERROR request failed\n  Error: boom\n      at here');
    const mail = formatLogLine(JSON.stringify({ level: 30, time: Date.UTC(2026, 0, 2, 3, 4, 5), msg: 'e-mail written to the log (SMTP_URL is not set)', mail: { to: 'a@example.com', from: 'T <t@example.com>', subject: 'Sign in', text: 'Open this link:\nhttps://x/login/abc' } }));
    assert.equal(mail, '03:04:05 e-mail written to the log (SMTP_URL is not set)\n  To: a@example.com\n  From: T <t@example.com>\n  Subject: Sign in\n\n  Open this link:\n  https://x/login/abc');
    assert.equal(formatLogLine(JSON.stringify({ level: 40, time: 0, msg: 'e-mail not sent', attempts: 2 })), '00:00:00 WARN e-mail not sent attempts=2');
    assert.equal(formatLogLine('not json'), 'not json');
  });
});
