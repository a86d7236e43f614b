import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';

describe('content type of API responses', () => {
  let t: TestServer;
  let api: ApiClient;
  before(async () => {
    t = await startTestServer();
    api = await t.createTenant();
  });
  after(() => t.close());

  it('is application/json for one object and for lists', async () => {
    const created = await api.post('/affiliates', { firstName: 'C', lastName: 'T', email: 'ct@example.com' });
    assert.equal(created.status, 201);
    assert.equal(created.headers.get('content-type'), 'application/json; charset=utf-8');
    for (const path of [`/affiliates?id=${created.body.id}`, '/affiliates', '/sales', '/referrals', '/coupons', '/promotional-codes', '/me']) {
      const res = await api.get(path);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8', path);
    }
  });
});
