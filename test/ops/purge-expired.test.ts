// The worker deletes what has expired, so the tables the open internet can grow (sessions,
// connect codes, idempotency records, attempt counters) stay bounded; fresh rows are kept.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rawDb, startTestServer } from '../helpers/test-server.ts';

describe('purging expired rows', () => {
  it('the worker deletes expired sessions, connect codes and day-old idempotency keys and ended attempt counters, and keeps the rest', async () => {
    const t = await startTestServer({ worker: false });
    try {
      const api = await t.createTenant();
      const db = rawDb(t);
      const { owner_user_id: userId } = await db.selectFrom('programs').select('owner_user_id').where('id', '=', api.programId).executeTakeFirstOrThrow();
      const hour = 3_600_000;
      const at = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();
      await db
        .insertInto('sessions')
        .values([
          { id_hash: 'expired-session', user_id: null, csrf_secret: 's', created_at: at(-2 * hour), expires_at: at(-hour) },
          { id_hash: 'live-session', user_id: userId, csrf_secret: 's', created_at: at(-2 * hour), expires_at: at(hour) },
        ])
        .execute();
      const code = (code_hash: string, expiresIn: number, used: boolean) => ({
        code_hash,
        integration: 'zapier',
        redirect_uri: 'https://zapier.example/cb',
        user_id: userId,
        program_id: api.programId,
        code_challenge: null,
        expires_at: at(expiresIn),
        used_at: used ? at(-hour) : null,
        token_id: null,
        created_at: at(-2 * hour),
      });
      await db.insertInto('authorization_codes').values([code('expired-used', -hour, true), code('expired-unused', -hour, false), code('live-used', hour, true)]).execute();
      const key = (k: string, createdAgo: number) => ({
        program_id: api.programId,
        key: k,
        request_hash: 'h',
        state: 'done' as const,
        response_status: 201,
        response_type: 'application/json',
        response_body: '{}',
        created_at: at(-createdAgo),
        locked_at: null,
      });
      await db.insertInto('idempotency_keys').values([key('day-old', 25 * hour), key('fresh', hour)]).execute();
      await db
        .insertInto('attempt_counters')
        .values([
          { key: 'login:address:192.0.2.1', window_started_at: at(-2 * hour), count: 3 },
          { key: 'login:address:192.0.2.2', window_started_at: at(-60_000), count: 3 },
        ])
        .execute();

      const { createPeriodicWorker } = await import('../../src/modules/maintenance/periodic-worker.ts');
      const { purgeJob } = await import('../../src/modules/maintenance/purge-job.ts');
      const worker = createPeriodicWorker(purgeJob, { db, config: t.config, clock: () => new Date(), log: { error: () => {}, warn: () => {}, debug: () => {} } });
      worker.start();
      for (let i = 0; i < 100; i++) {
        if ((await db.selectFrom('idempotency_keys').select('key').where('key', '=', 'day-old').executeTakeFirst()) === undefined) break;
        await new Promise((r) => setTimeout(r, 30));
      }
      await worker.stop();

      const sessions = (await db.selectFrom('sessions').select('id_hash').where('id_hash', 'in', ['expired-session', 'live-session']).execute()).map((r) => r.id_hash);
      assert.deepEqual(sessions, ['live-session']);
      const codes = (await db.selectFrom('authorization_codes').select('code_hash').orderBy('code_hash').execute()).map((r) => r.code_hash);
      assert.deepEqual(codes, ['live-used']);
      const keys = (await db.selectFrom('idempotency_keys').select('key').where('program_id', '=', api.programId).execute()).map((r) => r.key);
      assert.deepEqual(keys, ['fresh']);
      const counters = (await db.selectFrom('attempt_counters').select('key').execute()).map((r) => r.key);
      assert.deepEqual(counters, ['login:address:192.0.2.2']);
    } finally {
      await t.close();
    }
  });
});
