// Logs are JSON lines with the request id on every request line, and never contain a token.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database.ts';
import { apiClient } from '../helpers/test-server.ts';
import { seedTenant, startServerProcess, type ServerProcess, type Tenant } from '../helpers/server-process.ts';

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
    await new Promise((resolve) => setTimeout(resolve, 200)); // let the log lines flush
    const lines = server
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const requestLines = lines.filter((l) => l.req !== undefined || l.res !== undefined);
    assert.ok(requestLines.length >= 4, 'incoming and completed lines for both requests');
    for (const line of requestLines) assert.equal(typeof line.reqId, 'string', JSON.stringify(line));
    const ids = new Set(requestLines.map((l) => l.reqId));
    assert.ok(ids.has(ok.headers.get('x-request-id')) && ids.has(failed.headers.get('x-request-id')), 'log ids match the x-request-id headers');
    // Request lines carry the headers, with the token replaced (so this fails if the redaction goes).
    const incoming = requestLines.filter((l) => (l.req as { url?: string } | undefined)?.url?.startsWith('/api/v1/'));
    assert.ok(incoming.length >= 2, 'incoming API request lines');
    for (const line of incoming) assert.equal((line.req as { headers: Record<string, string> }).headers.authorization, '[redacted]');
    assert.ok(!server.output().includes(tenant.token), 'the token is not in the log');
    assert.ok(!server.output().includes(tenant.token.slice(4)), 'nor its secret part');
  });
});
