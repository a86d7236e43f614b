// Contract tests for POST /links and PUT /links (spec 2.2, 4.2; CONTRACT.md).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { rawDb, startTestServer, type ApiClient, type ApiResponse, type TestServer } from '../helpers/test-server.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { ISO_TIME, unique, uniqueEmail, UUID } from '../helpers/fixtures.ts';

const LINK = /^[A-Za-z0-9-]{1,64}$/;
const LINK_FIELDS = ['id', 'link', 'createdAt', 'updatedAt', 'affiliate', 'program', 'clicks', 'referrals', 'sales', 'totalRevenue', 'fullURLs'].sort();


interface Affiliate {
  id: string;
  firstName: string;
  lastName: string;
  email: string;
  link: string;
}

/** Every field of spec 2.2 is present, with the spec's type, and nothing else. */
function assertLinkShape(body: ApiResponse['body']): void {
  assert.deepEqual(Object.keys(body).sort(), LINK_FIELDS);
  assert.match(body.id, UUID);
  assert.match(body.link, LINK);
  assert.match(body.createdAt, ISO_TIME);
  assert.match(body.updatedAt, ISO_TIME);
  assert.deepEqual(Object.keys(body.affiliate).sort(), ['email', 'id', 'name']);
  assert.match(body.affiliate.id, UUID);
  assert.equal(typeof body.affiliate.name, 'string');
  assert.equal(typeof body.affiliate.email, 'string');
  assert.deepEqual(Object.keys(body.program).sort(), ['currency', 'id', 'name']);
  assert.match(body.program.id, UUID);
  assert.equal(typeof body.program.name, 'string');
  assert.equal(typeof body.program.currency, 'string');
  for (const counter of ['clicks', 'referrals', 'sales'] as const) assert.ok(Number.isInteger(body[counter]), counter);
  assert.equal(typeof body.totalRevenue, 'number');
  assert.ok(Array.isArray(body.fullURLs));
  for (const entry of body.fullURLs) {
    assert.deepEqual(Object.keys(entry).sort(), ['baseUrl', 'fullUrl']);
    assert.equal(typeof entry.baseUrl, 'string');
    assert.equal(typeof entry.fullUrl, 'string');
  }
}

describe('links', () => {
  let t: TestServer;
  let api: ApiClient;
  let program: { name: string; currency: string; base_urls: string; referral_param: string };

  before(async () => {
    t = await startTestServer();
    api = await t.createTenant({ name: 'Links Program', currency: 'EUR' });
    program = await rawDb(t).selectFrom('programs').select(['name', 'currency', 'base_urls', 'referral_param']).where('id', '=', api.programId).executeTakeFirstOrThrow();
  });
  after(() => t.close());

  async function createAffiliate(client = api, body: Record<string, unknown> = {}): Promise<Affiliate> {
    const res = await client.post('/affiliates', { firstName: 'Lina', lastName: 'Link', email: uniqueEmail(), ...body });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  }

  async function counts(programId = api.programId) {
    const n = async (table: 'affiliate_links' | 'events') =>
      Number((await rawDb(t).selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).where('program_id', '=', programId).executeTakeFirstOrThrow()).n);
    return { links: await n('affiliate_links'), events: await n('events') };
  }

  async function linkRow(id: string) {
    return rawDb(t).selectFrom('affiliate_links').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  }

  async function lastEvent(type: string) {
    const row = await rawDb(t).selectFrom('events').selectAll().where('program_id', '=', api.programId).where('type', '=', type).orderBy('created_at', 'desc').executeTakeFirst();
    return row ? JSON.parse(row.data) : undefined;
  }

  describe('POST /links', () => {
    it('creates a link by affiliateId with every spec field (201) and stores it', async () => {
      const aff = await createAffiliate();
      const before = await counts();
      const link = unique('Summer-Sale');
      const res = await api.post('/links', { link, affiliateId: aff.id });
      assert.equal(res.status, 201);
      assertLinkShape(res.body);
      const l = res.body;
      assert.equal(l.link, link);
      assert.equal(l.createdAt, l.updatedAt);
      assert.deepEqual(l.affiliate, { id: aff.id, name: 'Lina Link', email: aff.email });
      assert.deepEqual(l.program, { id: api.programId, name: 'Links Program', currency: 'EUR' });
      assert.equal(l.clicks, 0);
      assert.equal(l.referrals, 0);
      assert.equal(l.sales, 0);
      assert.equal(l.totalRevenue, 0);

      const row = await linkRow(l.id);
      assert.equal(row.program_id, api.programId);
      assert.equal(row.affiliate_id, aff.id);
      assert.equal(row.link, link);
      assert.equal(row.link_key, link.toLowerCase());
      assert.equal(Number(row.is_primary), 0, 'an extra link is not the primary one');
      assert.equal(row.created_at, l.createdAt);

      assert.deepEqual(await counts(), { links: before.links + 1, events: before.events + 1 });
      assert.deepEqual(await lastEvent('link.created'), l);
      const affiliate = await api.get(`/affiliates?id=${aff.id}`);
      assert.equal(affiliate.body.link, aff.link, "the affiliate's own link is unchanged");
    });

    it('creates a link by affiliateEmail, in any case and with spaces', async () => {
      const aff = await createAffiliate();
      const res = await api.post('/links', { link: unique('by-mail'), affiliateEmail: `  ${aff.email.toUpperCase()} ` });
      assert.equal(res.status, 201);
      assert.equal(res.body.affiliate.id, aff.id);
      assert.equal((await linkRow(res.body.id)).affiliate_id, aff.id);
    });

    it('accepts affiliateId and affiliateEmail together when they name the same affiliate, 404 otherwise', async () => {
      const a = await createAffiliate();
      const b = await createAffiliate();
      const ok = await api.post('/links', { link: unique('both'), affiliateId: a.id, affiliateEmail: a.email });
      assert.equal(ok.status, 201);
      const before = await counts();
      assertProblem(await api.post('/links', { link: unique('both'), affiliateId: a.id, affiliateEmail: b.email }), 404, 'not_found');
      assert.deepEqual(await counts(), before);
    });

    it('finds an affiliateId sent in upper case (UUIDs ignore case)', async () => {
      const aff = await createAffiliate();
      const res = await api.post('/links', { link: unique('upper'), affiliateId: aff.id.toUpperCase() });
      assert.equal(res.status, 201);
      assert.equal(res.body.affiliate.id, aff.id);
      const renamed = await api.put('/links', { id: res.body.id.toUpperCase(), newLink: unique('upper-renamed') });
      assert.equal(renamed.status, 200);
      assert.equal(renamed.body.id, res.body.id);
    });

    it('generates a link string when `link` is absent', async () => {
      const aff = await createAffiliate(api, { firstName: 'Óscar' });
      const first = await api.post('/links', { affiliateId: aff.id });
      const second = await api.post('/links', { affiliateId: aff.id });
      assert.equal(first.status, 201);
      assert.equal(second.status, 201);
      assertLinkShape(first.body);
      assert.match(first.body.link, LINK);
      assert.notEqual(first.body.link.toLowerCase(), second.body.link.toLowerCase());
      assert.notEqual(first.body.link.toLowerCase(), aff.link.toLowerCase());
      assert.equal((await linkRow(first.body.id)).link, first.body.link);
    });

    it('builds fullURLs from the program base URLs and referral parameter', async () => {
      const aff = await createAffiliate();
      const link = unique('url');
      const res = await api.post('/links', { link, affiliateId: aff.id });
      const baseUrls = JSON.parse(program.base_urls) as string[];
      assert.ok(baseUrls.length >= 1);
      assert.deepEqual(
        res.body.fullURLs,
        baseUrls.map((baseUrl) => {
          const url = new URL(baseUrl);
          url.searchParams.set(program.referral_param, link);
          return { baseUrl, fullUrl: url.toString() };
        }),
      );
      for (const { fullUrl } of res.body.fullURLs) assert.equal(new URL(fullUrl).searchParams.get(program.referral_param), link);
    });

    it('builds one fullURL per base URL, keeping paths and existing query parameters', async () => {
      const client = await t.createTenant();
      const baseUrls = ['https://shop.example.com', 'https://example.com/pricing?lang=en'];
      await rawDb(t).updateTable('programs').set({ base_urls: JSON.stringify(baseUrls), referral_param: 'ref' }).where('id', '=', client.programId).execute();
      const aff = await createAffiliate(client);
      const link = unique('multi');
      const res = await client.post('/links', { link, affiliateId: aff.id });
      assert.equal(res.status, 201);
      assert.deepEqual(res.body.fullURLs, [
        { baseUrl: 'https://shop.example.com', fullUrl: `https://shop.example.com/?ref=${link}` },
        { baseUrl: 'https://example.com/pricing?lang=en', fullUrl: `https://example.com/pricing?lang=en&ref=${link}` },
      ]);
    });

    it('rejects link strings with characters other than letters, digits and hyphens (422, nothing written)', async () => {
      const aff = await createAffiliate();
      const before = await counts();
      for (const link of ['has space', 'under_score', 'dot.ted', 'slash/ed', 'ümlaut', 'emoji-😀', '', 'x'.repeat(65), 'a?b=c']) {
        const res = await api.post('/links', { link, affiliateId: aff.id });
        assert.deepEqual(assertProblem(res, 422, 'validation_failed'), ['#/link'], JSON.stringify(link));
      }
      assert.deepEqual(assertProblem(await api.post('/links', { link: 42, affiliateId: aff.id }), 422, 'validation_failed'), ['#/link']);
      assert.deepEqual(await counts(), before);
    });

    it('accepts a 64-character link of letters, digits and hyphens', async () => {
      const aff = await createAffiliate();
      const link = `${unique('n')}-AbC-`.padEnd(64, '9');
      const res = await api.post('/links', { link, affiliateId: aff.id });
      assert.equal(res.status, 201);
      assert.equal(res.body.link, link);
    });

    it('needs affiliateId or affiliateEmail (422)', async () => {
      const before = await counts();
      const res = await api.post('/links', { link: unique('orphan') });
      assert.deepEqual(assertProblem(res, 422, 'validation_failed'), ['#/affiliateId']);
      assert.deepEqual(await counts(), before);
    });

    it('validates affiliateId as a uuid and affiliateEmail as an e-mail (422)', async () => {
      assert.deepEqual(assertProblem(await api.post('/links', { affiliateId: 'nope' }), 422, 'validation_failed'), ['#/affiliateId']);
      assert.deepEqual(assertProblem(await api.post('/links', { affiliateEmail: 'nope' }), 422, 'validation_failed'), ['#/affiliateEmail']);
    });

    it('returns 404 for an unknown affiliate, or one of another program (nothing written)', async () => {
      const other = await t.createTenant();
      const foreign = await createAffiliate(other);
      const before = await counts();
      assertProblem(await api.post('/links', { link: unique('u'), affiliateId: '00000000-0000-4000-8000-000000000000' }), 404, 'not_found');
      assertProblem(await api.post('/links', { link: unique('u'), affiliateEmail: uniqueEmail('nobody') }), 404, 'not_found');
      assertProblem(await api.post('/links', { link: unique('u'), affiliateId: foreign.id }), 404, 'not_found');
      assertProblem(await api.post('/links', { link: unique('u'), affiliateEmail: foreign.email }), 404, 'not_found');
      assert.deepEqual(await counts(), before);
      assert.deepEqual(await counts(other.programId), { links: 1, events: 1 });
    });

    it('rejects a link already used in the program, ignoring case (409, nothing written)', async () => {
      const a = await createAffiliate();
      const b = await createAffiliate();
      const link = unique('Taken');
      assert.equal((await api.post('/links', { link, affiliateId: a.id })).status, 201);
      const before = await counts();
      for (const variant of [link, link.toLowerCase(), link.toUpperCase()]) {
        const res = await api.post('/links', { link: variant, affiliateId: b.id });
        assertProblem(res, 409, 'conflict');
      }
      // An affiliate's own (primary) link is taken as well.
      assertProblem(await api.post('/links', { link: a.link.toUpperCase(), affiliateId: b.id }), 409, 'conflict');
      assert.deepEqual(await counts(), before);
    });

    it('allows the same link string in another program', async () => {
      const link = unique('shared');
      assert.equal((await api.post('/links', { link, affiliateId: (await createAffiliate()).id })).status, 201);
      const other = await t.createTenant();
      const res = await other.post('/links', { link, affiliateId: (await createAffiliate(other)).id });
      assert.equal(res.status, 201);
      assert.equal(res.body.program.id, other.programId);
    });
  });

  describe('PUT /links', () => {
    async function createLink(aff?: Affiliate) {
      const owner = aff ?? (await createAffiliate());
      const res = await api.post('/links', { link: unique('Old'), affiliateId: owner.id });
      assert.equal(res.status, 201);
      return res.body;
    }

    it('renames a link found by id (200) and stores it', async () => {
      const l = await createLink();
      await sleep(3);
      const newLink = unique('New-Name');
      const res = await api.put('/links', { id: l.id, newLink });
      assert.equal(res.status, 200);
      assertLinkShape(res.body);
      assert.equal(res.body.id, l.id);
      assert.equal(res.body.link, newLink);
      assert.equal(res.body.createdAt, l.createdAt);
      assert.ok(res.body.updatedAt > l.updatedAt, 'updatedAt moves');
      assert.deepEqual(res.body.affiliate, l.affiliate);
      assert.deepEqual(res.body.program, l.program);
      for (const entry of res.body.fullURLs) assert.equal(new URL(entry.fullUrl).searchParams.get(program.referral_param), newLink);

      const row = await linkRow(l.id);
      assert.equal(row.link, newLink);
      assert.equal(row.link_key, newLink.toLowerCase());
      assert.equal(row.updated_at, res.body.updatedAt);
      assert.deepEqual(await lastEvent('link.updated'), res.body);

      // The old string is free again, and no longer finds the link.
      assertProblem(await api.put('/links', { link: l.link, newLink: unique('x') }), 404, 'not_found');
      const reuse = await api.post('/links', { link: l.link, affiliateId: l.affiliate.id });
      assert.equal(reuse.status, 201);
    });

    it('renames a link found by its current string, in any case', async () => {
      const l = await createLink();
      const newLink = unique('by-string');
      const res = await api.put('/links', { link: l.link.toUpperCase(), newLink });
      assert.equal(res.status, 200);
      assert.equal(res.body.id, l.id);
      assert.equal(res.body.link, newLink);
      assert.equal((await linkRow(l.id)).link, newLink);
    });

    it('changes only the letter case of its own link', async () => {
      const l = await createLink();
      const res = await api.put('/links', { id: l.id, newLink: l.link.toUpperCase() });
      assert.equal(res.status, 200);
      assert.equal(res.body.link, l.link.toUpperCase());
    });

    it('keeps the counters when renaming', async () => {
      const l = await createLink();
      await rawDb(t).updateTable('affiliate_links').set({ clicks: 7, referrals: 3, sales: 2, total_revenue: 12345 }).where('id', '=', l.id).execute();
      const res = await api.put('/links', { id: l.id, newLink: unique('counted') });
      assert.equal(res.status, 200);
      assert.equal(res.body.clicks, 7);
      assert.equal(res.body.referrals, 3);
      assert.equal(res.body.sales, 2);
      assert.equal(res.body.totalRevenue, 123.45, 'EUR minor units shown in major units');
    });

    it('rejects a newLink that another link uses, ignoring case (409, old link unchanged)', async () => {
      const a = await createLink();
      const b = await createLink();
      const primaryOfA: string = (await api.get(`/affiliates?id=${a.affiliate.id}`)).body.link;
      const before = await counts();
      for (const newLink of [b.link, b.link.toLowerCase(), primaryOfA.toUpperCase()]) {
        const res = await api.put('/links', { id: a.id, newLink });
        assertProblem(res, 409, 'conflict');
      }
      const row = await linkRow(a.id);
      assert.equal(row.link, a.link);
      assert.equal(row.link_key, a.link.toLowerCase());
      assert.equal(row.updated_at, a.updatedAt);
      assert.deepEqual(await counts(), before, 'no link.updated event');
    });

    it('returns 404 for an unknown id or link, or a link of another program', async () => {
      const other = await t.createTenant();
      const foreignAff = await createAffiliate(other);
      const before = await counts();
      assertProblem(await api.put('/links', { id: '00000000-0000-4000-8000-000000000000', newLink: unique('n') }), 404, 'not_found');
      assertProblem(await api.put('/links', { link: unique('missing'), newLink: unique('n') }), 404, 'not_found');
      assertProblem(await api.put('/links', { link: foreignAff.link, newLink: unique('n') }), 404, 'not_found');
      const foreignLink = await rawDb(t).selectFrom('affiliate_links').select('id').where('affiliate_id', '=', foreignAff.id).executeTakeFirstOrThrow();
      assertProblem(await api.put('/links', { id: foreignLink.id, newLink: unique('n') }), 404, 'not_found');
      assert.equal((await linkRow(foreignLink.id)).link, foreignAff.link);
      assert.deepEqual(await counts(), before);
    });

    it('returns 404 when id and link name different links', async () => {
      const a = await createLink();
      const b = await createLink();
      assertProblem(await api.put('/links', { id: a.id, link: b.link, newLink: unique('n') }), 404, 'not_found');
      assert.equal((await linkRow(a.id)).link, a.link);
      assert.equal((await linkRow(b.id)).link, b.link);
      const ok = await api.put('/links', { id: a.id, link: a.link, newLink: unique('n') });
      assert.equal(ok.status, 200);
    });

    it('validates the body (422 with pointers)', async () => {
      const l = await createLink();
      assert.deepEqual(assertProblem(await api.put('/links', { id: l.id }), 422, 'validation_failed'), ['#/newLink']);
      assert.deepEqual(assertProblem(await api.put('/links', { id: l.id, newLink: 'bad link' }), 422, 'validation_failed'), ['#/newLink']);
      assert.deepEqual(assertProblem(await api.put('/links', { id: l.id, newLink: '' }), 422, 'validation_failed'), ['#/newLink']);
      assert.deepEqual(assertProblem(await api.put('/links', { newLink: unique('n') }), 422, 'validation_failed'), ['#/id']);
      assert.deepEqual(assertProblem(await api.put('/links', { id: 'x', newLink: unique('n') }), 422, 'validation_failed'), ['#/id']);
      assert.equal((await linkRow(l.id)).link, l.link);
    });

    it("renaming the affiliate's primary link changes the affiliate's `link`", async () => {
      const aff = await createAffiliate(api, { affiliateLink: unique('primary') });
      const extra = await createLink(aff);
      const newLink = unique('Primary-Renamed');
      const res = await api.put('/links', { link: aff.link, newLink });
      assert.equal(res.status, 200);
      assert.equal(res.body.affiliate.id, aff.id);
      const after = await api.get(`/affiliates?id=${aff.id}`);
      assert.equal(after.body.link, newLink);
      const primary = await rawDb(t).selectFrom('affiliate_links').selectAll().where('affiliate_id', '=', aff.id).where('is_primary', '=', 1).executeTakeFirstOrThrow();
      assert.equal(primary.link, newLink);
      // Renaming a non-primary link leaves the affiliate's link alone.
      assert.equal((await api.put('/links', { id: extra.id, newLink: unique('side') })).status, 200);
      assert.equal((await api.get(`/affiliates?id=${aff.id}`)).body.link, newLink);
    });
  });
});
