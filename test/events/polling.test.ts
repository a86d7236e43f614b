// Polling (CONTRACT.md "Events"): GET /api/v1/events?type=&after=&limit=, oldest first, with a
// resume cursor that never skips an event, even one that committed after a later one.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { testDialect } from '../helpers/test-database.ts';
import { recordEvent } from '../../src/modules/events/outbox.ts';
import { inTransaction } from '../../src/db/transaction.ts';

let n = 0;
const affiliateBody = () => ({ firstName: 'Poll', lastName: 'Ing', email: `poll-${++n}-${process.pid}@example.com` });

interface Envelope {
  id: string;
  type: string;
  sequence: number;
  programId: string;
  timestamp: string;
  data: any;
}

/** The `after` of the Link rel="next" header. */
function nextAfter(headers: Headers): number {
  const link = headers.get('link') ?? '';
  const match = /<([^>]+)>;\s*rel="next"/.exec(link);
  assert.ok(match, `a Link rel="next" header, got "${link}"`);
  return Number(new URL(match[1]!).searchParams.get('after'));
}

/** Polls until a call returns nothing new; returns every event seen, in order. */
async function drain(api: ApiClient, from: number, query = ''): Promise<{ events: Envelope[]; cursor: number }> {
  const events: Envelope[] = [];
  let cursor = from;
  for (;;) {
    const res = await api.get(`/events?after=${cursor}&limit=7${query}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    events.push(...res.body);
    const next = nextAfter(res.headers);
    if (res.body.length === 0) {
      assert.equal(next, cursor, 'with nothing new, the cursor stays');
      return { events, cursor };
    }
    assert.equal(next, res.body[res.body.length - 1].sequence);
    cursor = next;
  }
}

describe('GET /events', () => {
  let t: TestServer;
  let api: ApiClient;
  let other: ApiClient;

  before(async () => {
    // No worker: polling numbers events itself, so it works with WORKER=off.
    t = await startTestServer({ worker: false });
    api = await t.createTenant();
    other = await t.createTenant();
  });
  after(() => t.close());

  it('returns events oldest first with the resource as data, and resumes after a sequence', async () => {
    const created = [];
    for (let i = 0; i < 3; i++) created.push((await api.post('/affiliates', affiliateBody())).body);
    const first = await api.get('/events');
    assert.equal(first.status, 200);
    assert.match(first.headers.get('content-type') ?? '', /^application\/json/);
    const mine = first.body as Envelope[];
    assert.deepEqual(mine.map((e) => e.data), created, 'data is each affiliate exactly as POST returned it');
    assert.ok(mine.every((e) => e.type === 'affiliate.created' && e.programId === api.programId && /^evt_/.test(e.id)));
    for (let i = 1; i < mine.length; i++) assert.ok(mine[i]!.sequence > mine[i - 1]!.sequence, 'oldest first');
    const rest = await api.get(`/events?after=${mine[0]!.sequence}`);
    assert.deepEqual(rest.body.map((e: Envelope) => e.id), mine.slice(1).map((e) => e.id));
    assert.equal(nextAfter(rest.headers), mine[2]!.sequence);
    const limited = await api.get(`/events?limit=1`);
    assert.equal(limited.body.length, 1);
    assert.equal(nextAfter(limited.headers), mine[0]!.sequence);
  });

  it('filters by type (one or several, comma-separated) and refuses unknown types and bad cursors with 422', async () => {
    const aff = (await api.post('/affiliates', affiliateBody())).body;
    assert.equal((await api.post('/links', { affiliateId: aff.id, link: `poll-${n}` })).status, 201);
    const links = (await api.get('/events?type=link.created')).body as Envelope[];
    assert.ok(links.length >= 1 && links.every((e) => e.type === 'link.created'));
    const both = (await api.get('/events?type=link.created,affiliate.created')).body as Envelope[];
    assert.ok(both.some((e) => e.type === 'link.created') && both.some((e) => e.type === 'affiliate.created'));
    assertProblem(await api.get('/events?type=sale.exploded'), 422, 'validation_failed', '#/type');
    assertProblem(await api.get('/events?after=-1'), 422, 'validation_failed', '#/after');
    assertProblem(await api.get('/events?after=abc'), 422, 'validation_failed', '#/after');
    assertProblem(await api.get('/events?limit=0'), 422, 'validation_failed', '#/limit');
    assertProblem(await api.get('/events?limit=1001'), 422, 'validation_failed', '#/limit');
  });

  it("never returns another program's events", async () => {
    await other.post('/affiliates', affiliateBody());
    const theirs = (await other.get('/events')).body as Envelope[];
    const mine = (await api.get('/events')).body as Envelope[];
    assert.ok(theirs.length >= 1 && theirs.every((e) => e.programId === other.programId));
    assert.ok(mine.every((e) => e.programId === api.programId));
    assert.equal(mine.filter((e) => theirs.some((x) => x.id === e.id)).length, 0);
  });

  it('a cursor never skips an event under concurrent writers', async () => {
    const start = (await drain(api, 0)).cursor;
    const seen: Envelope[] = [];
    let cursor = start;
    let writing = true;
    const poller = (async () => {
      while (writing) {
        const res = await api.get(`/events?after=${cursor}&limit=5`);
        seen.push(...res.body);
        cursor = nextAfter(res.headers);
      }
    })();
    // 8 writers in parallel, 15 affiliates each.
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let i = 0; i < 15; i++) assert.equal((await api.post('/affiliates', affiliateBody())).status, 201);
      }),
    );
    writing = false;
    await poller;
    seen.push(...(await drain(api, cursor)).events);
    const stored = await rawDb(t).selectFrom('events').select('id').where('program_id', '=', api.programId).where('sequence', '>', start).execute();
    assert.equal(stored.length, 120);
    assert.deepEqual(seen.map((e) => e.id).sort(), stored.map((e) => e.id).sort(), 'every event seen exactly once');
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i]!.sequence > seen[i - 1]!.sequence);
  });

  it('on SQLite an event is numbered as it is written: gapless in commit order, and a rolled-back write takes its number back', { skip: testDialect !== 'sqlite' && 'PostgreSQL numbers committed events (sequenceEvents)' }, async () => {
    const db = rawDb(t);
    const last = async () => Number((await db.selectFrom('outbox_state').select('last_sequence').where('id', '=', 1).executeTakeFirstOrThrow()).last_sequence);
    const before = await last();
    // Concurrent writes (committed in groups, group-commit.ts) and one that fails after writing its event.
    const writes = Array.from({ length: 10 }, () => api.post('/affiliates', affiliateBody()));
    const failing = assert.rejects(
      inTransaction(db as never, async (tx) => {
        await recordEvent(tx, api.programId, 'webhook.test', { which: 'rolled back' }, new Date().toISOString());
        throw new Error('roll back');
      }),
      /roll back/,
    );
    for (const res of await Promise.all(writes)) assert.equal(res.status, 201);
    await failing;
    // No poll and no worker ran: the numbers were given with the writes.
    const rows = await db.selectFrom('events').select(['id', 'sequence', 'data']).where('sequence', '>', before).orderBy('sequence').execute();
    assert.deepEqual(rows.map((r) => Number(r.sequence)), Array.from({ length: 10 }, (_, i) => before + 1 + i), 'ten numbers, no gap');
    assert.equal(await last(), before + 10, 'the rolled-back event took its number back');
    assert.equal((await db.selectFrom('events').select('id').where('sequence', 'is', null).execute()).length, 0, 'no event waits for a number');
    assert.ok(rows.every((r) => !String(r.data).includes('rolled back')));
  });

  // Only PostgreSQL can commit two writers out of order (SQLite has one writer at a time), so
  // only there can an event commit after a later-drawn one; the cursor must still see it.
  it('an event that commits after a later one is still seen after the cursor (PostgreSQL)', { skip: testDialect !== 'postgres' && 'SQLite has one writer at a time' }, async () => {
    const db = rawDb(t);
    const { cursor } = await drain(api, 0);
    let releaseSlow!: () => void;
    const slowMayCommit = new Promise<void>((resolve) => (releaseSlow = resolve));
    let slowInserted!: () => void;
    const slowHasInserted = new Promise<void>((resolve) => (slowInserted = resolve));
    // The slow transaction writes its event first and commits last.
    const slow = db.transaction().execute(async (tx) => {
      await recordEvent(tx, api.programId, 'webhook.test', { which: 'slow' }, new Date().toISOString());
      slowInserted();
      await slowMayCommit;
    });
    await slowHasInserted;
    await db.transaction().execute((tx) => recordEvent(tx, api.programId, 'webhook.test', { which: 'fast' }, new Date().toISOString()));
    const during = await api.get(`/events?after=${cursor}`);
    assert.deepEqual(during.body.map((e: Envelope) => e.data.which), ['fast']);
    const resumeAt = nextAfter(during.headers);
    releaseSlow();
    await slow;
    const later = await api.get(`/events?after=${resumeAt}`);
    assert.deepEqual(later.body.map((e: Envelope) => e.data.which), ['slow'], 'the late commit comes after the cursor');
  });
});
