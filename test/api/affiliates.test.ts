// Contract tests for POST /affiliates and GET /affiliates (spec 2.1, 4.2; CONTRACT.md).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { rawDb, setProgramCommissionRate, startTestServer, type ApiClient, type ApiResponse, type TestServer } from '../helpers/test-server.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { ISO_TIME, unique, uniqueEmail, UUID } from '../helpers/fixtures.ts';

const LINK = /^[A-Za-z0-9-]{1,64}$/;

const AFFILIATE_FIELDS = [
  'id', 'firstName', 'lastName', 'name', 'email', 'password', 'emailVerified', 'image', 'detailsComplete', 'programId',
  'payoutEmail', 'paymentMethod', 'commissionRate', 'link', 'status', 'createdAt', 'updatedAt', 'numberOfReferredUsers',
  'numberOfClicks', 'totalCommissionEarned', 'approval',
].sort();


/** Every field of spec 2.1 is present, with the spec's type, and nothing else (but CONTRACT's `approval`). */
function assertAffiliateShape(body: Record<string, unknown>): void {
  assert.deepEqual(Object.keys(body).sort(), AFFILIATE_FIELDS);
  assert.match(body.id as string, UUID);
  assert.equal(typeof body.firstName, 'string');
  assert.equal(typeof body.lastName, 'string');
  assert.ok(body.name === null || typeof body.name === 'string');
  assert.equal(typeof body.email, 'string');
  assert.equal(body.password, null, 'password is always null');
  assert.ok(body.emailVerified === null || typeof body.emailVerified === 'boolean');
  assert.ok(body.image === null || typeof body.image === 'string');
  assert.equal(typeof body.detailsComplete, 'boolean');
  assert.match(body.programId as string, UUID);
  assert.equal(typeof body.payoutEmail, 'string');
  assert.equal(typeof body.paymentMethod, 'string');
  assert.equal(typeof body.commissionRate, 'number');
  assert.ok((body.commissionRate as number) >= 0 && (body.commissionRate as number) <= 100);
  assert.match(body.link as string, LINK);
  assert.ok(body.status === 'active' || body.status === 'inactive');
  assert.match(body.createdAt as string, ISO_TIME);
  assert.match(body.updatedAt as string, ISO_TIME);
  assert.ok(Number.isInteger(body.numberOfReferredUsers));
  assert.ok(Number.isInteger(body.numberOfClicks));
  assert.equal(typeof body.totalCommissionEarned, 'number');
}

/** The path and query of a Link rel="next" header, relative to /api/v1. */
function nextPath(res: ApiResponse): string | null {
  const header = res.headers.get('link');
  if (header === null) return null;
  const match = /^<([^>]+)>;\s*rel="next"$/.exec(header);
  assert.ok(match, `Link header has the form <url>; rel="next": ${header}`);
  const url = new URL(match[1]!);
  assert.ok(url.pathname.startsWith('/api/v1/'), url.pathname);
  assert.ok(url.searchParams.get('cursor'), 'the next link carries a cursor');
  return url.pathname.slice('/api/v1'.length) + url.search;
}

describe('affiliates', () => {
  let t: TestServer;
  let api: ApiClient;

  before(async () => {
    t = await startTestServer();
    api = await t.createTenant({ commissionRate: 25 });
  });
  after(() => t.close());

  async function count(table: 'affiliates' | 'affiliate_links' | 'events', programId = api.programId): Promise<number> {
    const row = await rawDb(t)
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('program_id', '=', programId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async function counts(programId = api.programId) {
    return { affiliates: await count('affiliates', programId), links: await count('affiliate_links', programId), events: await count('events', programId) };
  }

  async function create(client: ApiClient, body: Record<string, unknown> = {}) {
    const res = await client.post('/affiliates', { firstName: 'Jane', lastName: 'Doe', email: uniqueEmail(), ...body });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  }

  describe('POST /affiliates', () => {
    it('creates an affiliate with every spec field, 201, and stores it', async () => {
      const before = await counts();
      const mail = uniqueEmail('jane');
      const res = await api.post('/affiliates', { firstName: 'Jane', lastName: 'Doe', email: mail });
      assert.equal(res.status, 201);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assertAffiliateShape(res.body);
      const a = res.body;
      assert.equal(a.firstName, 'Jane');
      assert.equal(a.lastName, 'Doe');
      assert.equal(a.name, 'Jane Doe');
      assert.equal(a.email, mail);
      assert.equal(a.password, null);
      assert.equal(a.emailVerified, false);
      assert.equal(a.image, null);
      assert.equal(a.programId, api.programId);
      assert.equal(a.payoutEmail, mail);
      assert.equal(a.status, 'active');
      assert.equal(a.numberOfReferredUsers, 0);
      assert.equal(a.numberOfClicks, 0);
      assert.equal(a.totalCommissionEarned, 0);
      assert.equal(a.createdAt, a.updatedAt);
      assert.ok(Math.abs(Date.parse(a.createdAt) - Date.now()) < 60_000);

      const row = await rawDb(t).selectFrom('affiliates').selectAll().where('id', '=', a.id).executeTakeFirstOrThrow();
      assert.equal(row.program_id, api.programId);
      assert.equal(row.first_name, 'Jane');
      assert.equal(row.last_name, 'Doe');
      assert.equal(row.email, mail);
      assert.equal(row.email_key, mail.toLowerCase());
      assert.equal(row.commission_rate, null, 'no explicit rate: the program default applies later');
      assert.equal(row.status, 'active');
      assert.equal(Number(row.number_of_referred_users), 0);
      assert.equal(Number(row.total_commission_earned), 0);
      assert.equal(row.created_at, a.createdAt);

      const links = await rawDb(t).selectFrom('affiliate_links').selectAll().where('affiliate_id', '=', a.id).execute();
      assert.equal(links.length, 1, 'the affiliate gets its own link');
      assert.equal(links[0]!.link, a.link);
      assert.equal(links[0]!.link_key, a.link.toLowerCase());
      assert.equal(Number(links[0]!.is_primary), 1);

      assert.deepEqual(await counts(), { affiliates: before.affiliates + 1, links: before.links + 1, events: before.events + 1 });
      const event = await rawDb(t).selectFrom('events').selectAll().where('program_id', '=', api.programId).where('type', '=', 'affiliate.created').orderBy('created_at', 'desc').executeTakeFirstOrThrow();
      assert.match(event.id, /^evt_/);
      assert.deepEqual(JSON.parse(event.data), a, 'the event carries the resource exactly as the API returned it');
    });

    it('returns password null even when a password is sent', async () => {
      const a = await create(api, { password: 'secret-password-123' });
      assert.equal(a.password, null);
      const got = await api.get(`/affiliates?id=${a.id}`);
      assert.equal(got.body.password, null);
    });

    it('defaults commissionRate to the program default', async () => {
      const a = await create(api);
      assert.equal(a.commissionRate, 25);
      const other = await t.createTenant({ commissionRate: 12.5 });
      const b = await create(other);
      assert.equal(b.commissionRate, 12.5);
      const defaultTenant = await t.createTenant();
      assert.equal((await create(defaultTenant)).commissionRate, 20, 'a program without a rate defaults to 20 %');
    });

    it('tracks the program default when the affiliate has no rate of its own', async () => {
      const client = await t.createTenant({ commissionRate: 10 });
      const a = await create(client);
      await setProgramCommissionRate(t, client.programId, 15);
      const got = await client.get(`/affiliates?id=${a.id}`);
      assert.equal(got.body.commissionRate, 15);
    });

    it('stores an explicit commissionRate (0, decimals, 100)', async () => {
      for (const rate of [0, 33.3333, 7.5, 100]) {
        const a = await create(api, { commissionRate: rate });
        assert.equal(a.commissionRate, rate);
        const row = await rawDb(t).selectFrom('affiliates').select('commission_rate').where('id', '=', a.id).executeTakeFirstOrThrow();
        assert.equal(Number(row.commission_rate), Math.round(rate * 10_000), 'stored in millionths');
        const got = await api.get(`/affiliates?id=${a.id}`);
        assert.equal(got.body.commissionRate, rate);
      }
    });

    it('rejects commissionRate above 100, below 0 or with more than 4 decimals (422, nothing written)', async () => {
      const before = await counts();
      for (const rate of [100.0001, 101, -0.5, -1, 12.34567, 0.00001]) {
        const res = await api.post('/affiliates', { firstName: 'R', lastName: 'S', email: uniqueEmail(), commissionRate: rate });
        assert.deepEqual(assertProblem(res, 422, 'validation_failed'), ['#/commissionRate'], `rate ${rate}`);
      }
      const wrongType = await api.post('/affiliates', { firstName: 'R', lastName: 'S', email: uniqueEmail(), commissionRate: '20' });
      assert.deepEqual(assertProblem(wrongType, 422, 'validation_failed'), ['#/commissionRate']);
      assert.deepEqual(await counts(), before);
    });

    it('uses a custom affiliateLink as the affiliate link', async () => {
      const link = unique('Jane-Custom-');
      const a = await create(api, { affiliateLink: link });
      assert.equal(a.link, link, 'the link keeps its letter case');
      const row = await rawDb(t).selectFrom('affiliate_links').selectAll().where('affiliate_id', '=', a.id).executeTakeFirstOrThrow();
      assert.equal(row.link, link);
      assert.equal(row.link_key, link.toLowerCase());
      assert.equal(Number(row.is_primary), 1);
    });

    it('generates a link when affiliateLink is absent, different for each affiliate', async () => {
      const a = await create(api, { firstName: 'Zoë Ann' });
      const b = await create(api, { firstName: 'Zoë Ann' });
      assert.match(a.link, LINK);
      assert.match(b.link, LINK);
      assert.notEqual(a.link.toLowerCase(), b.link.toLowerCase());
      assert.match(a.link, /^zoe-ann-[a-z0-9]{8}$/, 'the first name, accents folded, plus 8 random characters');
      const c = await create(api, { firstName: '!!!' });
      assert.match(c.link, LINK, 'a name without link characters still gets a valid link');
    });

    it('trims the e-mail and keeps its letter case', async () => {
      const mail = uniqueEmail('Trim.Me');
      const a = await create(api, { email: `  ${mail}  ` });
      assert.equal(a.email, mail);
      assert.equal(a.payoutEmail, mail);
      const row = await rawDb(t).selectFrom('affiliates').select(['email', 'email_key']).where('id', '=', a.id).executeTakeFirstOrThrow();
      assert.deepEqual(row, { email: mail, email_key: mail.toLowerCase() });
    });

    it('rejects a second affiliate with the same e-mail in any case (409, nothing written)', async () => {
      const mail = uniqueEmail('dup');
      await create(api, { email: mail });
      const before = await counts();
      for (const variant of [mail, mail.toUpperCase(), ` ${mail.replace('dup', 'DuP')} `]) {
        const res = await api.post('/affiliates', { firstName: 'X', lastName: 'Y', email: variant, affiliateLink: unique('fresh-') });
        assertProblem(res, 409, 'conflict');
        assert.equal(res.body.errors, undefined);
      }
      assert.deepEqual(await counts(), before);
    });

    it('allows the same e-mail in another program', async () => {
      const mail = uniqueEmail('shared');
      await create(api, { email: mail });
      const other = await t.createTenant();
      const b = await create(other, { email: mail });
      assert.equal(b.programId, other.programId);
    });

    it('rejects a duplicate affiliateLink, ignoring case (409, nothing written)', async () => {
      const link = unique('taken-link-');
      await create(api, { affiliateLink: link });
      const before = await counts();
      for (const variant of [link, link.toUpperCase()]) {
        const mail = uniqueEmail('linkdup');
        const res = await api.post('/affiliates', { firstName: 'X', lastName: 'Y', email: mail, affiliateLink: variant });
        assertProblem(res, 409, 'conflict');
        const row = await rawDb(t).selectFrom('affiliates').select('id').where('email_key', '=', mail).executeTakeFirst();
        assert.equal(row, undefined, 'the affiliate row rolled back with its link');
      }
      assert.deepEqual(await counts(), before);
    });

    it('names every missing required field with a JSON pointer (422)', async () => {
      const before = await counts();
      const res = await api.post('/affiliates', {});
      const pointers = assertProblem(res, 422, 'validation_failed');
      assert.deepEqual(pointers.sort(), ['#/email', '#/firstName', '#/lastName']);
      for (const e of res.body.errors) assert.equal(e.detail, 'is required');
      assert.deepEqual(await counts(), before);
    });

    it('names each invalid field with a JSON pointer (422, nothing written)', async () => {
      const before = await counts();
      const cases: [Record<string, unknown>, string[]][] = [
        [{ firstName: '', lastName: 'Doe', email: uniqueEmail() }, ['#/firstName']],
        [{ firstName: 'Jane', lastName: 42, email: uniqueEmail() }, ['#/lastName']],
        [{ firstName: 'Jane', lastName: 'Doe', email: 'not-an-email' }, ['#/email']],
        [{ firstName: 'Jane', lastName: 'Doe', email: 'a b@example.com' }, ['#/email']],
        [{ firstName: 'Jane', lastName: 'Doe', email: null }, ['#/email']],
        [{ firstName: 'Jane', lastName: 'Doe', email: uniqueEmail(), affiliateLink: 'has space' }, ['#/affiliateLink']],
        [{ firstName: 'Jane', lastName: 'Doe', email: uniqueEmail(), affiliateLink: 'under_score' }, ['#/affiliateLink']],
        [{ firstName: 'Jane', lastName: 'Doe', email: uniqueEmail(), affiliateLink: '' }, ['#/affiliateLink']],
        [{ firstName: 'Jane', lastName: 'Doe', email: uniqueEmail(), affiliateLink: 'a'.repeat(65) }, ['#/affiliateLink']],
        [{ firstName: 'Jane', lastName: 'Doe', email: uniqueEmail(), status: 'paused' }, ['#/status']],
        [{ firstName: 'x'.repeat(201), lastName: 'Doe', email: uniqueEmail() }, ['#/firstName']],
        [{ firstName: '   ', lastName: 'Doe', email: uniqueEmail() }, ['#/firstName']],
        [{ firstName: 'Jane', lastName: '\t', email: uniqueEmail() }, ['#/lastName']],
        [{ firstName: 1, lastName: 2, email: 3, commissionRate: 'x', affiliateLink: '!' }, ['#/affiliateLink', '#/commissionRate', '#/email', '#/firstName', '#/lastName']],
      ];
      for (const [body, expected] of cases) {
        const res = await api.post('/affiliates', body);
        const pointers = assertProblem(res, 422, 'validation_failed');
        assert.deepEqual([...new Set(pointers)].sort(), expected, JSON.stringify(body));
      }
      assert.deepEqual(await counts(), before);
    });

    it('accepts a link of exactly 64 characters', async () => {
      const link = unique('L').padEnd(64, 'x');
      const a = await create(api, { affiliateLink: link });
      assert.equal(a.link, link);
    });

    it('rejects malformed JSON with 400', async () => {
      const res = await api.request('POST', '/affiliates', '{"firstName":', { 'content-type': 'application/json' });
      assertProblem(res, 400, 'bad_request');
    });

    it('accepts status in any letter case and returns it lowercase', async () => {
      for (const [sent, stored] of [['ACTIVE', 'active'], ['Inactive', 'inactive'], ['inactive', 'inactive']] as const) {
        const a = await create(api, { status: sent });
        assert.equal(a.status, stored);
        const row = await rawDb(t).selectFrom('affiliates').select('status').where('id', '=', a.id).executeTakeFirstOrThrow();
        assert.equal(row.status, stored);
      }
    });

    it('ignores unknown body fields', async () => {
      const a = await create(api, { nickname: 'JD', id: '00000000-0000-4000-8000-000000000000' });
      assert.notEqual(a.id, '00000000-0000-4000-8000-000000000000');
      assert.equal('nickname' in a, false);
    });

    it('needs a bearer token (401)', async () => {
      const res = await fetch(`${t.url}/api/v1/affiliates`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ firstName: 'A', lastName: 'B', email: uniqueEmail() }),
      });
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer');
    });
  });

  describe('GET /affiliates one object', () => {
    it('returns the affiliate by id, equal to what POST returned', async () => {
      const a = await create(api, { commissionRate: 12 });
      const res = await api.get(`/affiliates?id=${a.id}`);
      assert.equal(res.status, 200);
      assert.ok(!Array.isArray(res.body));
      assertAffiliateShape(res.body);
      assert.deepEqual(res.body, a);
    });

    it('returns the affiliate by e-mail in any letter case', async () => {
      const mail = uniqueEmail('Case.Look');
      const a = await create(api, { email: mail });
      for (const variant of [mail, mail.toLowerCase(), mail.toUpperCase()]) {
        const res = await api.get(`/affiliates?email=${encodeURIComponent(variant)}`);
        assert.equal(res.status, 200, variant);
        assert.deepEqual(res.body, a);
      }
    });

    it('applies id and email together (AND): 200 when they agree, 404 when they disagree', async () => {
      const a = await create(api);
      const b = await create(api);
      const agree = await api.get(`/affiliates?id=${a.id}&email=${encodeURIComponent(a.email.toUpperCase())}`);
      assert.equal(agree.status, 200);
      assert.equal(agree.body.id, a.id);
      const disagree = await api.get(`/affiliates?id=${a.id}&email=${encodeURIComponent(b.email)}`);
      assertProblem(disagree, 404, 'not_found');
    });

    it('returns 404 for an unknown id or e-mail', async () => {
      assertProblem(await api.get('/affiliates?id=00000000-0000-4000-8000-000000000000'), 404, 'not_found');
      assertProblem(await api.get(`/affiliates?email=${encodeURIComponent(uniqueEmail('nobody'))}`), 404, 'not_found');
    });

    it('returns 404 for an affiliate of another program', async () => {
      const other = await t.createTenant();
      const foreign = await create(other);
      assertProblem(await api.get(`/affiliates?id=${foreign.id}`), 404, 'not_found');
      assertProblem(await api.get(`/affiliates?email=${encodeURIComponent(foreign.email)}`), 404, 'not_found');
    });

    it('finds an id sent in upper case (UUIDs ignore case)', async () => {
      const a = await create(api);
      const res = await api.get(`/affiliates?id=${a.id.toUpperCase()}`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, a);
    });

    it('rejects a malformed id or e-mail query (422)', async () => {
      assert.deepEqual(assertProblem(await api.get('/affiliates?id=not-a-uuid'), 422, 'validation_failed'), ['#/id']);
      const a = await create(api);
      assert.deepEqual(assertProblem(await api.get(`/affiliates?id=urn:uuid:${a.id}`), 422, 'validation_failed'), ['#/id']);
      assert.deepEqual(assertProblem(await api.get('/affiliates?email=nope'), 422, 'validation_failed'), ['#/email']);
    });
  });

  describe('GET /affiliates list', () => {
    it('returns a bare array, newest first, of the token program only', async () => {
      const client = await t.createTenant();
      const other = await t.createTenant();
      await create(other);
      const made = [];
      for (let i = 0; i < 4; i++) {
        made.push(await create(client, { firstName: `N${i}` }));
        await sleep(3);
      }
      const res = await client.get('/affiliates');
      assert.equal(res.status, 200);
      assert.ok(Array.isArray(res.body));
      assert.equal(res.headers.get('link'), null, 'no next page');
      assert.deepEqual(res.body.map((a: { id: string }) => a.id), made.map((a) => a.id).reverse());
      for (const a of res.body) assertAffiliateShape(a);
      assert.deepEqual(res.body[0], made[3]);
    });

    it('returns an empty array for a program without affiliates', async () => {
      const client = await t.createTenant();
      const res = await client.get('/affiliates');
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, []);
    });

    it('pages with limit and the Link rel="next" cursor, without duplicates or gaps', async () => {
      const client = await t.createTenant();
      const ids: string[] = [];
      for (let i = 0; i < 11; i++) ids.push((await create(client, { firstName: `P${i}` })).id);
      // Four rows share one timestamp, so the order must break ties by id across page edges.
      const tied = ids.slice(3, 7);
      await rawDb(t).updateTable('affiliates').set({ created_at: '2030-01-01T00:00:00.000Z' }).where('id', 'in', tied).execute();

      const all = await client.get('/affiliates');
      assert.equal(all.body.length, 11);
      const expected: string[] = all.body.map((a: { id: string }) => a.id);
      const positions = all.body.map((a: { createdAt: string; id: string }) => [a.createdAt, a.id].join(' '));
      assert.deepEqual(positions, [...positions].sort().reverse(), 'ordered by createdAt desc, then id desc');
      assert.deepEqual(new Set(expected.slice(0, 4)), new Set(tied), 'the tied (newest) rows come first');

      const seen: string[] = [];
      let path: string | null = '/affiliates?limit=3';
      let pages = 0;
      while (path !== null) {
        const res: ApiResponse = await client.get(path);
        assert.equal(res.status, 200);
        assert.ok(Array.isArray(res.body));
        assert.ok(res.body.length <= 3);
        seen.push(...res.body.map((a: { id: string }) => a.id));
        path = nextPath(res);
        if (path !== null) assert.match(path, /[?&]limit=3(&|$)/, 'the next link keeps the limit');
        pages++;
        assert.ok(pages <= 10, 'paging ends');
      }
      assert.equal(pages, 4);
      assert.deepEqual(seen, expected);
      assert.equal(new Set(seen).size, 11);
    });

    it('omits the Link header when the page holds the last row exactly', async () => {
      const client = await t.createTenant();
      for (let i = 0; i < 4; i++) await create(client);
      const first = await client.get('/affiliates?limit=2');
      assert.equal(first.body.length, 2);
      const path = nextPath(first);
      assert.ok(path);
      const second = await client.get(path);
      assert.equal(second.body.length, 2);
      assert.equal(second.headers.get('link'), null);
      const exact = await client.get('/affiliates?limit=4');
      assert.equal(exact.body.length, 4);
      assert.equal(exact.headers.get('link'), null);
    });

    it('filters by createdAfter (strictly after)', async () => {
      const client = await t.createTenant();
      const a = await create(client);
      await sleep(5);
      const b = await create(client);
      await sleep(5);
      const c = await create(client);
      const res = await client.get(`/affiliates?createdAfter=${encodeURIComponent(b.createdAt)}`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.map((x: { id: string }) => x.id), [c.id]);
      const early = await client.get(`/affiliates?createdAfter=${encodeURIComponent(new Date(Date.parse(a.createdAt) - 1).toISOString())}`);
      assert.deepEqual(early.body.map((x: { id: string }) => x.id), [c.id, b.id, a.id]);
      const offset = new Date(Date.parse(a.createdAt) + 2 * 3600_000).toISOString().replace('Z', '+02:00');
      const withOffset = await client.get(`/affiliates?createdAfter=${encodeURIComponent(offset)}`);
      assert.deepEqual(withOffset.body.map((x: { id: string }) => x.id), [c.id, b.id], 'an offset date-time means the same instant');
      const future = await client.get('/affiliates?createdAfter=2999-01-01T00:00:00Z');
      assert.deepEqual(future.body, []);
    });

    it('combines createdAfter with paging', async () => {
      const client = await t.createTenant();
      const first = await create(client);
      await sleep(5);
      const later = [];
      for (let i = 0; i < 5; i++) later.push((await create(client)).id);
      const seen: string[] = [];
      let path: string | null = `/affiliates?limit=2&createdAfter=${encodeURIComponent(first.createdAt)}`;
      while (path !== null) {
        const res: ApiResponse = await client.get(path);
        seen.push(...res.body.map((a: { id: string }) => a.id));
        path = nextPath(res);
      }
      assert.deepEqual(new Set(seen), new Set(later));
      assert.equal(seen.length, 5);
    });

    it('rejects a bad cursor (400 invalid_cursor)', async () => {
      for (const cursor of ['garbage!', 'bm90LWpzb24', Buffer.from(JSON.stringify(['yesterday', 'x'])).toString('base64url'), Buffer.from('[1,2]').toString('base64url')]) {
        const res = await api.get(`/affiliates?cursor=${encodeURIComponent(cursor)}`);
        assertProblem(res, 400, 'invalid_cursor');
      }
    });

    it('rejects limit 0, 1001 and non-numbers, and a bad createdAfter (422)', async () => {
      for (const q of ['limit=0', 'limit=1001', 'limit=-1', 'limit=abc', 'limit=2.5']) {
        assert.deepEqual(assertProblem(await api.get(`/affiliates?${q}`), 422, 'validation_failed'), ['#/limit'], q);
      }
      assert.deepEqual(assertProblem(await api.get('/affiliates?createdAfter=yesterday'), 422, 'validation_failed'), ['#/createdAfter']);
      const edge = await api.get('/affiliates?limit=1000');
      assert.equal(edge.status, 200);
      const one = await api.get('/affiliates?limit=1');
      assert.equal(one.status, 200);
      assert.equal(one.body.length, 1);
      assert.ok(nextPath(one));
    });
  });
});
