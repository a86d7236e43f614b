import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { idempotencyRequestHash } from '../../src/http/idempotency.ts';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { raceNote } from '../helpers/test-database.ts';

describe('Idempotency-Key', () => {
  let t: TestServer;
  let api: ApiClient;
  let other: ApiClient;
  let referralId: string;

  const countSales = async (programId: string) =>
    Number((await rawDb(t).selectFrom('sales').select((eb) => eb.fn.countAll().as('n')).where('program_id', '=', programId).executeTakeFirstOrThrow()).n);
  const postSale = (client: ApiClient, key: string, body: unknown) => client.request('POST', '/sales', body, { 'idempotency-key': key });

  before(async () => {
    t = await startTestServer();
    api = await t.createTenant();
    other = await t.createTenant();
    await api.post('/affiliates', { firstName: 'Ida', lastName: 'Em', email: 'ida@example.com', affiliateLink: 'ida' });
    referralId = (await api.post('/referrals', { name: 'C', email: 'c@example.com', referredUserExternalId: 'c1', affiliateId: 'ida' })).body.id;
  });
  after(() => t.close());

  it('replays the stored response for a retry with the same key and body, writing once', async () => {
    const body = { referralId, totalEarned: 10 };
    const first = await postSale(api, 'key-1', body);
    assert.equal(first.status, 201);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const before = await countSales(api.programId);
    const retry = await postSale(api, 'key-1', body);
    assert.equal(retry.status, 201);
    assert.deepEqual(retry.body, first.body);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.equal(await countSales(api.programId), before);
    const affiliate = (await api.get('/affiliates?email=ida@example.com')).body;
    assert.equal(affiliate.totalCommissionEarned, 2); // one sale of 10 at 20 %
  });

  it('refuses the same key with a different body (422) and writes nothing', async () => {
    await postSale(api, 'key-2', { referralId, totalEarned: 5 });
    const before = await countSales(api.programId);
    const res = await postSale(api, 'key-2', { referralId, totalEarned: 6 });
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'idempotency_key_reused');
    assert.equal(await countSales(api.programId), before);
  });

  it('answers 409 while a request with the key is still running' + raceNote, async () => {
    // A claimed key whose request has not finished, as another process leaves it mid-flight.
    const body = { referralId, totalEarned: 7 };
    await rawDb(t)
      .insertInto('idempotency_keys')
      .values({
        program_id: api.programId,
        key: 'key-running',
        request_hash: idempotencyRequestHash('POST', '/api/v1/sales', body),
        state: 'running',
        response_status: null,
        response_type: null,
        response_body: null,
        created_at: new Date().toISOString(),
      })
      .execute();
    const before = await countSales(api.programId);
    const running = await postSale(api, 'key-running', body);
    assert.equal(running.status, 409);
    assert.equal(running.body.code, 'idempotency_conflict');
    assert.equal(await countSales(api.programId), before);
    assert.equal((await postSale(api, 'key-running', { ...body, totalEarned: 8 })).status, 422);
    const parallel = await Promise.all(Array.from({ length: 20 }, () => postSale(api, 'key-parallel', body)));
    const statuses = parallel.map((r) => r.status).sort();
    assert.ok(statuses.every((s) => s === 201 || s === 409), `unexpected statuses ${statuses}`);
    const created = parallel.filter((r) => r.status === 201);
    assert.ok(created.length >= 1);
    assert.ok(created.every((r) => r.body.id === created[0]!.body.id), 'every 201 is the same sale');
    for (const conflict of parallel.filter((r) => r.status === 409)) assert.equal(conflict.body.code, 'idempotency_conflict');
    const rows = await rawDb(t).selectFrom('sales').select('id').where('program_id', '=', api.programId).where('total_earned', '=', 700).execute();
    assert.equal(rows.length, 1, 'twenty parallel requests with one key write one sale');
  });

  it('takes over a key left running past the lease (its request died before committing) and does the work once' + raceNote, async () => {
    const body = { referralId, totalEarned: 9 };
    const stale = new Date(Date.now() - 31_000).toISOString();
    for (const [key, lockedAt] of [['key-dead', stale], ['key-dead-legacy', null]] as const) {
      await rawDb(t)
        .insertInto('idempotency_keys')
        .values({
          program_id: api.programId,
          key,
          request_hash: idempotencyRequestHash('POST', '/api/v1/sales', body),
          state: 'running',
          response_status: null,
          response_type: null,
          response_body: null,
          created_at: stale,
          locked_at: lockedAt,
        })
        .execute();
    }
    const before = await countSales(api.programId);
    const parallel = await Promise.all(Array.from({ length: 10 }, () => postSale(api, 'key-dead', body)));
    const created = parallel.filter((r) => r.status === 201);
    assert.ok(created.length >= 1, `statuses ${parallel.map((r) => r.status)}`);
    assert.ok(parallel.every((r) => r.status === 201 || (r.status === 409 && r.body.code === 'idempotency_conflict')));
    assert.ok(created.every((r) => r.body.id === created[0]!.body.id), 'one sale, however many retries raced for the key');
    assert.equal(await countSales(api.programId), before + 1);
    const replay = await postSale(api, 'key-dead', body);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replay.body, created[0]!.body);
    // A key claimed before the lease column existed counts from its creation.
    assert.equal((await postSale(api, 'key-dead-legacy', body)).status, 201);
    assert.equal(await countSales(api.programId), before + 2);
  });

  it('stores the response in the transaction of the work: committed means replayable', async () => {
    const body = { referralId, totalEarned: 11 };
    const res = await postSale(api, 'key-in-tx', body);
    assert.equal(res.status, 201);
    const row = await rawDb(t).selectFrom('idempotency_keys').selectAll().where('key', '=', 'key-in-tx').executeTakeFirstOrThrow();
    assert.equal(row.state, 'done');
    assert.equal(row.response_status, 201);
    assert.deepEqual(JSON.parse(row.response_body!), res.body);
  });

  it('stores and replays client errors too', async () => {
    const body = { referralId: 'no-such-link', totalEarned: 1 };
    const first = await postSale(api, 'key-404', body);
    assert.equal(first.status, 404);
    const retry = await postSale(api, 'key-404', body);
    assert.equal(retry.status, 404);
    assert.equal(retry.headers.get('content-type'), 'application/problem+json; charset=utf-8');
    assert.deepEqual(retry.body, first.body);
  });

  it('scopes keys to the program of the token', async () => {
    await other.post('/affiliates', { firstName: 'O', lastName: 'P', email: 'o@example.com', affiliateLink: 'o' });
    const res = await other.request('POST', '/affiliates', { firstName: 'Q', lastName: 'R', email: 'q@example.com' }, { 'idempotency-key': 'key-1' });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('idempotent-replayed'), null);
  });

  it('works on PUT', async () => {
    const body = { link: 'ida', newLink: 'ida-2' };
    const first = await api.request('PUT', '/links', body, { 'idempotency-key': 'put-1' });
    assert.equal(first.status, 200);
    const retry = await api.request('PUT', '/links', body, { 'idempotency-key': 'put-1' });
    assert.equal(retry.status, 200);
    assert.deepEqual(retry.body, first.body);
  });

  it('forgets keys after 24 hours', async () => {
    const body = { referralId, totalEarned: 3 };
    assert.equal((await postSale(api, 'key-old', body)).status, 201);
    const dayAgo = new Date(Date.now() - 24 * 3600 * 1000 - 1000).toISOString();
    await rawDb(t).updateTable('idempotency_keys').set({ created_at: dayAgo }).where('key', '=', 'key-old').execute();
    const before = await countSales(api.programId);
    const again = await postSale(api, 'key-old', body);
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotent-replayed'), null);
    assert.equal(await countSales(api.programId), before + 1);
  });

  it('rejects a key longer than 255 characters', async () => {
    const res = await postSale(api, 'k'.repeat(256), { referralId, totalEarned: 1 });
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'validation_failed');
    assert.equal((await postSale(api, 'k'.repeat(255), { referralId, totalEarned: 1 })).status, 201);
  });
});
