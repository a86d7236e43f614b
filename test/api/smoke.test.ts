import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';

describe('smoke', () => {
  let t: TestServer;
  let api: ApiClient;
  before(async () => {
    t = await startTestServer();
    api = await t.createTenant();
  });
  after(() => t.close());

  it('creates an affiliate', async () => {
    const res = await api.post('/affiliates', { firstName: 'A', lastName: 'B', email: 'a@b.co' });
    assert.equal(res.status, 201);
    assert.equal(res.body.email, 'a@b.co');
  });
});
