// Bounded event work (issue 17 items 4 and 9): a page of GET /events stops at a byte budget and
// links to the next; its Link is built on SITE_URL whatever the request line says; a webhook's
// signing secret is not kept in an Idempotency-Key record; the event purge costs the same few
// statements however many programs there are.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { KyselyPlugin } from 'kysely';
import { rawDb, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { created, newAffiliate, newCoupon } from '../helpers/fixtures.ts';
import { EVENTS_PAGE_BYTES } from '../../src/modules/events/event.routes.ts';
import { listEventsAfter, purgeEventsBefore, sequenceEvents } from '../../src/modules/events/outbox.ts';

interface Envelope {
  id: string;
  type: string;
  sequence: number;
}

function nextLink(headers: Headers): URL {
  const match = /<([^>]+)>;\s*rel="next"/.exec(headers.get('link') ?? '');
  assert.ok(match, `a Link rel="next" header, got "${headers.get('link')}"`);
  return new URL(match[1]!);
}

/** One raw HTTP/1.1 exchange, so the request line can be in absolute form. */
function rawRequest(serverUrl: string, requestText: string): Promise<string> {
  const { hostname, port } = new URL(serverUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(requestText));
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

describe('event bounds', () => {
  let t: TestServer;

  before(async () => {
    t = await startTestServer({ worker: false });
  });
  after(async () => {
    await t.close();
  });

  it('a page of GET /events stops at its byte budget, links to the next, and the pages join without a gap', async () => {
    const api = await t.createTenant();
    const coupon = await newCoupon(api);
    await created(api.post('/promotional-codes/bulk', { couponId: coupon.id, count: 1000 }));
    const first = await api.request('GET', '/events?limit=1000');
    assert.equal(first.status, 200);
    const bytes = Buffer.byteLength(JSON.stringify(first.body));
    const page1 = first.body as Envelope[];
    // ~1.1 KB a code event: 1,001 events do not fit in the budget.
    assert.ok(bytes <= EVENTS_PAGE_BYTES, `page of ${bytes} bytes is within ${EVENTS_PAGE_BYTES}`);
    assert.ok(page1.length > 800 && page1.length < 1001, `${page1.length} events on the first page`);
    const next = nextLink(first.headers);
    assert.equal(next.origin, 'http://tandem.test');
    assert.equal(next.searchParams.get('after'), String(page1.at(-1)!.sequence));
    const second = await api.request('GET', `/events?limit=1000&after=${next.searchParams.get('after')}`);
    const page2 = second.body as Envelope[];
    const all = [...page1, ...page2];
    assert.equal(all.length, 1001, 'the coupon and its 1,000 codes');
    assert.equal(new Set(all.map((e) => e.id)).size, 1001);
    for (let i = 1; i < all.length; i++) assert.ok(all[i]!.sequence > all[i - 1]!.sequence, 'oldest first, no repeat');
  });

  it('always returns the first event of a page, however far it is past the budget, so a poller moves on', async () => {
    const api = await t.createTenant();
    await newAffiliate(api, { firstName: 'x'.repeat(200), lastName: 'y'.repeat(200) });
    await newAffiliate(api);
    const db = rawDb(t);
    await sequenceEvents(db);
    // A budget smaller than any envelope: the first still comes, and only the first.
    const tight = await listEventsAfter(db, api.programId, { after: 0, limit: 10, maxBytes: 10, livemode: true });
    assert.equal(tight.envelopes.length, 1);
    assert.equal(tight.lastSequence, (JSON.parse(tight.envelopes[0]!) as Envelope).sequence);
    // A budget of exactly the first two (brackets and comma included) holds both.
    const both = await listEventsAfter(db, api.programId, { after: 0, limit: 10, maxBytes: 1_000_000, livemode: true });
    const exact = Buffer.byteLength(`[${both.envelopes.slice(0, 2).join(',')}]`);
    assert.equal((await listEventsAfter(db, api.programId, { after: 0, limit: 10, maxBytes: exact, livemode: true })).envelopes.length, 2);
    assert.equal((await listEventsAfter(db, api.programId, { after: 0, limit: 10, maxBytes: exact - 1, livemode: true })).envelopes.length, 1);
  });

  it("builds GET /events' Link on SITE_URL, not on an absolute-form request line", async () => {
    const api = await t.createTenant();
    await newAffiliate(api);
    const answer = await rawRequest(
      t.url,
      `GET http://evil.example/api/v1/events?after=0 HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer ${api.token}\r\nConnection: close\r\n\r\n`,
    );
    assert.match(answer, /^HTTP\/1\.1 200/);
    const link = /^link: <([^>]+)>/im.exec(answer)?.[1];
    assert.ok(link, answer.slice(0, 500));
    assert.equal(new URL(link).origin, 'http://tandem.test');
    assert.equal(new URL(link).pathname, '/api/v1/events');
  });

  it('a webhook secret is shown once: the Idempotency-Key record keeps the answer without it', async () => {
    const strict = await startTestServer({ webhookAllowPrivateUrls: true });
    try {
      const api = await strict.createTenant();
      const headers = { 'idempotency-key': 'subscribe-once' };
      const body = { url: 'http://127.0.0.1:9/hook', events: ['*'] };
      const first = await api.request('POST', '/webhooks', body, headers);
      assert.equal(first.status, 201);
      assert.match(first.body.secret, /^whsec_/);
      const stored = await rawDb(strict).selectFrom('idempotency_keys').select('response_body').where('program_id', '=', api.programId).executeTakeFirstOrThrow();
      assert.ok(!stored.response_body!.includes(first.body.secret), 'the stored answer does not hold the secret');
      const replay = await api.request('POST', '/webhooks', body, headers);
      assert.equal(replay.status, 201);
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(replay.body, { ...first.body, secret: null });
      const rows = await rawDb(strict).selectFrom('webhooks').select('id').where('program_id', '=', api.programId).execute();
      assert.equal(rows.length, 1, 'the replay made nothing');
    } finally {
      await strict.close();
    }
  });

  it('the event purge runs the same few statements for 1 program or 150, and deletes only old events', async () => {
    const db = rawDb(t);
    const tenants = [];
    for (let i = 0; i < 150; i++) tenants.push(await t.createTenant());
    for (const api of tenants) await newAffiliate(api);
    await sequenceEvents(db);
    const cutoff = new Date(Date.now() - 86_400_000).toISOString();
    // Everything up to the 75th program's event was made long ago (numbers follow commit order,
    // so the old events are the lowest sequences), the rest is young.
    const old = tenants.slice(0, 75).map((api) => api.programId);
    const boundary = await db.selectFrom('events').select((eb) => eb.fn.max('sequence').as('s')).where('program_id', 'in', old).executeTakeFirstOrThrow();
    await db.updateTable('events').set({ created_at: new Date(Date.now() - 40 * 86_400_000).toISOString() }).where('sequence', '<=', Number(boundary.s)).execute();
    const aged = (await db.selectFrom('events').select('id').where('sequence', '<=', Number(boundary.s)).execute()).length;
    const before = await db.selectFrom('events').select('id').execute();
    let statements = 0;
    const counting: KyselyPlugin = {
      transformQuery: (args) => {
        statements++;
        return args.node;
      },
      transformResult: (args) => Promise.resolve(args.result),
    };
    const purged = await purgeEventsBefore(db.withPlugin(counting), cutoff);
    assert.ok(aged >= 75);
    assert.equal(purged, aged);
    // A batch is a read and a delete; the walk stops at the first young event.
    assert.ok(statements <= 2 * Math.ceil(aged / 500) + 2, `${statements} statements for ${aged} events of 150 programs`);
    const left = await db.selectFrom('events').select('program_id').execute();
    assert.equal(left.length, before.length - aged);
    assert.ok(!left.some((row) => old.includes(row.program_id)));
  });
});
