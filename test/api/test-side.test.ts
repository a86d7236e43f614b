// Test mode, first step (issue 33): a program's test side is a program of its own, linked to the
// live one. A test key (tdm_test_…) answers GET /me with the test side's id and livemode false;
// the same e-mail and link string live on both sides; and every GET route of the API — read
// from the OpenAPI document, so a route added later is checked too — shows one side nothing of
// the other's data, both ways.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { apiClient, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { listUserPrograms, openTestSide } from '../../src/modules/programs/program.service.ts';
import { runTandem } from '../helpers/cli.ts';
import { seedProgram, useMigratedDatabase } from '../helpers/migrated-database.ts';
import * as testSides from '../../src/db/migrations/2026-12-07T0600-test-sides.ts';
import { sql, type Kysely } from 'kysely';

let t: TestServer;
let live: ApiClient;
let test: ApiClient;

before(async () => {
  t = await startTestServer();
  live = await t.createTenant({ name: 'Acme' });
  const side = await openTestSide(rawDb(t), live.programId);
  const { token } = await issueToken(rawDb(t), { programId: side.id, name: 'test key', kind: 'api_key' });
  test = apiClient(t.url, token, side.id);
});
after(() => t.close());

/** One of each resource on a side, every text carrying `marker` (so a leak shows in any body). */
async function populate(api: ApiClient, marker: string): Promise<void> {
  const created = (response: { status: number; body: any }, what: string) => {
    assert.ok(response.status === 201 || response.status === 200, `${what}: ${response.status} ${JSON.stringify(response.body)}`);
    return response.body;
  };
  const affiliate = created(await api.post('/affiliates', { firstName: marker, lastName: 'Side', email: 'jane@same.example' }), 'affiliate');
  created(await api.post('/links', { affiliateId: affiliate.id, token: 'same-link' }), 'link');
  const referral = created(await api.post('/referrals', { name: marker, email: 'buyer@same.example', referredUserExternalId: `cus_${marker}`, affiliateId: affiliate.id }), 'referral');
  created(await api.post('/sales', { referralId: referral.id, totalEarned: 100, externalInvoiceId: `in_${marker}` }), 'sale');
  const coupon = created(await api.post('/coupons', { name: `${marker} coupon`, couponType: 'PERCENTAGE', percentOff: 10, duration: 'once' }), 'coupon');
  created(await api.post('/promotional-codes', { couponId: coupon.id, code: `${marker}CODE`, affiliateId: affiliate.id }), 'promotional code');
}

describe('the test side', () => {
  it("a test key is tdm_test_…, and GET /me answers the test side: its own id, livemode false", async () => {
    assert.match(test.token, /^tdm_test_[A-Za-z0-9_-]{40,}$/);
    assert.match(live.token, /^tdm_(?!test_)/);
    const [liveMe, testMe] = [(await live.get('/me')).body, (await test.get('/me')).body];
    assert.deepEqual([liveMe.id, liveMe.livemode], [live.programId, true]);
    assert.deepEqual([testMe.id, testMe.livemode], [test.programId, false]);
    assert.notEqual(testMe.id, liveMe.id);
    assert.equal(testMe.name, liveMe.name);
    assert.notEqual(testMe.portalUrl, liveMe.portalUrl, 'its own portal');
  });

  it('is made once, also when asked for at once; it is no program of its own in lists; a test side has none', async () => {
    const sides = await Promise.all(Array.from({ length: 5 }, () => openTestSide(rawDb(t), live.programId)));
    assert.deepEqual([...new Set(sides.map((s) => s.id))], [test.programId]);
    const owner = await rawDb(t).selectFrom('programs').select('owner_user_id').where('id', '=', live.programId).executeTakeFirstOrThrow();
    assert.deepEqual((await listUserPrograms(rawDb(t), owner.owner_user_id)).map((p) => p.id), [live.programId]);
    await assert.rejects(openTestSide(rawDb(t), test.programId), (error: any) => /test side already/.test(error.errors?.[0]?.detail));
  });

  it('every GET route shows one side nothing of the other, both ways; the same e-mail and link string live on both', async () => {
    await populate(live, 'LIVEMARK');
    await populate(test, 'TESTMARK');
    const spec = (await (await fetch(`${t.url}/api/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const routes = Object.keys(spec.paths).filter((path) => path.startsWith('/api/v1/') && 'get' in spec.paths[path]! && !path.includes('{'));
    assert.ok(routes.length >= 10, `the API's GET routes: ${routes.join(' ')}`);
    for (const [api, own, other] of [[live, 'LIVEMARK', 'TESTMARK'], [test, 'TESTMARK', 'LIVEMARK']] as const) {
      let sawOwn = 0;
      for (const route of routes) {
        const response = await fetch(`${t.url}${route}`, { headers: { authorization: `Bearer ${api.token}` } });
        const text = await response.text();
        assert.ok(response.status < 500, `${route}: ${response.status}`);
        assert.ok(!text.includes(other), `${route} with a ${own === 'LIVEMARK' ? 'live' : 'test'} key shows the other side's data`);
        if (text.includes(own)) sawOwn++;
      }
      assert.ok(sawOwn >= 4, `the check can fail: ${own}'s own data shows on ${sawOwn} routes`);
    }
  });

  it("every event says its side: livemode false in the test side's envelopes, true in the live side's", async () => {
    await test.post('/affiliates', { firstName: 'Evented', lastName: 'Test', email: 'evented@same.example' });
    await live.post('/affiliates', { firstName: 'Evented', lastName: 'Live', email: 'evented@same.example' });
    const [testEvents, liveEvents] = [(await test.get('/events?limit=100')).body as any[], (await live.get('/events?limit=100')).body as any[]];
    assert.ok(testEvents.length > 0 && liveEvents.length > 0);
    assert.deepEqual([...new Set(testEvents.map((e) => [e.livemode, e.programId].join()))], [`false,${test.programId}`]);
    assert.deepEqual([...new Set(liveEvents.map((e) => [e.livemode, e.programId].join()))], [`true,${live.programId}`]);
  });

  it('`tandem key create --test` makes the test key of the same test side', async () => {
    const env = { DATABASE_URL: t.config.databaseUrl, SITE_URL: 'http://tandem.test' };
    const made = await runTandem(['key', 'create', '--program', live.programId, '--test', '--json'], env);
    assert.equal(made.code, 0, made.stderr);
    assert.equal(made.json.programId, test.programId);
    assert.equal(made.json.livemode, false);
    assert.match(made.json.token, /^tdm_test_/);
    const me = (await apiClient(t.url, made.json.token, test.programId).get('/me')).body;
    assert.deepEqual([me.id, me.livemode], [test.programId, false]);
  });
});

describe('the test-sides migration', () => {
  const migrated = useMigratedDatabase();

  it('links a test side to its live program (one each); down removes the test sides and the link', async () => {
    const db = migrated();
    const program = await seedProgram(db);
    const side = await openTestSide(db, program.id);
    const raw = db as unknown as Kysely<any>;
    await assert.rejects(raw.insertInto('programs').values({ ...side, id: crypto.randomUUID(), portal_slug: `${side.portal_slug}-2` }).execute(), 'one test side per live program');
    await testSides.down(raw);
    const rows = (await sql<Record<string, unknown>>`select * from programs`.execute(raw)).rows;
    assert.deepEqual(rows.map((r) => r.id), [program.id], 'the test side is gone with its link');
    assert.ok(!('live_program_id' in rows[0]!));
    await testSides.up(raw);
    assert.equal((await openTestSide(db, program.id)).live_program_id, program.id);
  });
});
