// Contract tests for POST /referrals and GET /referrals (spec 2.3, 4.2; CONTRACT.md).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { rawDb, startTestServer, type ApiClient, type ApiResponse, type TestServer } from '../helpers/test-server.ts';
import { assertProblem, nextPath } from '../helpers/api-assertions.ts';
import { unique, uniqueEmail, UUID } from '../helpers/fixtures.ts';

const REFERRAL_FIELDS = ['id', 'affiliateId', 'name', 'email', 'referredUserExternalId', 'plan', 'status'].sort();


interface Affiliate {
  id: string;
  email: string;
  link: string;
}

/** Every field of spec 2.3 is present, with the spec's type, and nothing else. */
function assertReferralShape(body: Record<string, unknown>): void {
  assert.deepEqual(Object.keys(body).sort(), REFERRAL_FIELDS);
  assert.match(body.id as string, UUID);
  assert.match(body.affiliateId as string, UUID);
  assert.equal(typeof body.name, 'string');
  assert.equal(typeof body.email, 'string');
  assert.equal(typeof body.referredUserExternalId, 'string');
  assert.equal(typeof body.plan, 'string');
  assert.ok(body.status === 'active' || body.status === 'inactive');
}

describe('referrals', () => {
  let t: TestServer;
  let api: ApiClient;

  before(async () => {
    t = await startTestServer();
    api = await t.createTenant();
  });
  after(() => t.close());

  async function createAffiliate(client = api, body: Record<string, unknown> = {}): Promise<Affiliate> {
    const res = await client.post('/affiliates', { firstName: 'Rita', lastName: 'Ref', email: uniqueEmail('aff'), ...body });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  }

  async function createLink(affiliateId: string, client = api): Promise<{ id: string; link: string }> {
    const res = await client.post('/links', { link: unique('Side'), affiliateId });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  }

  async function createCode(affiliateId: string | null, extra: Record<string, unknown> = {}): Promise<{ id: string; code: string }> {
    const coupon = await api.post('/coupons', { name: unique('Coupon'), couponType: 'PERCENTAGE', percentOff: 10 });
    assert.equal(coupon.status, 201, JSON.stringify(coupon.body));
    const code = await api.post('/promotional-codes', {
      couponId: coupon.body.id,
      code: unique('CODE').toUpperCase(),
      ...(affiliateId === null ? {} : { affiliateId }),
      ...extra,
    });
    assert.equal(code.status, 201, JSON.stringify(code.body));
    return code.body;
  }

  async function timesRedeemed(codeId: string): Promise<number> {
    const res = await api.get(`/promotional-codes?id=${codeId}`);
    assert.equal(res.status, 200);
    return res.body.timesRedeemed;
  }

  async function affiliateCounter(id: string): Promise<number> {
    const res = await api.get(`/affiliates?id=${id}`);
    assert.equal(res.status, 200);
    return res.body.numberOfReferredUsers;
  }

  async function linkReferrals(linkId: string): Promise<number> {
    const row = await rawDb(t).selectFrom('affiliate_links').select('referrals').where('id', '=', linkId).executeTakeFirstOrThrow();
    return Number(row.referrals);
  }

  async function primaryLinkId(affiliateId: string): Promise<string> {
    const row = await rawDb(t).selectFrom('affiliate_links').select('id').where('affiliate_id', '=', affiliateId).where('is_primary', '=', 1).executeTakeFirstOrThrow();
    return row.id;
  }

  async function counts(programId = api.programId) {
    const n = async (table: 'referrals' | 'events') =>
      Number((await rawDb(t).selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).where('program_id', '=', programId).executeTakeFirstOrThrow()).n);
    const events = await rawDb(t)
      .selectFrom('events')
      .select('type')
      .where('program_id', '=', programId)
      .where('type', 'in', ['referral.created', 'promotional_code.redeemed'])
      .execute();
    return { referrals: await n('referrals'), events: await n('events'), referralEvents: events.filter((e) => e.type === 'referral.created').length };
  }

  function body(extra: Record<string, unknown>) {
    return { name: 'Ursula User', email: uniqueEmail(), referredUserExternalId: unique('cus'), ...extra };
  }

  describe('POST /referrals', () => {
    it('credits an affiliate by id (201), stores the referral and counts it', async () => {
      const aff = await createAffiliate();
      const primary = await primaryLinkId(aff.id);
      const before = await counts();
      const sent = body({ affiliateId: aff.id });
      const res = await api.post('/referrals', sent);
      assert.equal(res.status, 201);
      assertReferralShape(res.body);
      assert.deepEqual(
        { ...res.body, id: 'x' },
        { id: 'x', affiliateId: aff.id, name: 'Ursula User', email: sent.email, referredUserExternalId: sent.referredUserExternalId, plan: '', status: 'active' },
      );

      const row = await rawDb(t).selectFrom('referrals').selectAll().where('id', '=', res.body.id).executeTakeFirstOrThrow();
      assert.equal(row.program_id, api.programId);
      assert.equal(row.affiliate_id, aff.id);
      assert.equal(row.link_id, primary, 'credited through the affiliate link');
      assert.equal(row.promotional_code_id, null);
      assert.equal(row.email, sent.email);
      assert.equal(row.email_key, sent.email.toLowerCase());
      assert.equal(row.referred_user_external_id, sent.referredUserExternalId);

      assert.equal(await affiliateCounter(aff.id), 1);
      assert.equal(await linkReferrals(primary), 1);
      const after = await counts();
      assert.deepEqual(after, { referrals: before.referrals + 1, events: before.events + 1, referralEvents: before.referralEvents + 1 });
      const event = await rawDb(t).selectFrom('events').selectAll().where('program_id', '=', api.programId).where('type', '=', 'referral.created').orderBy('created_at', 'desc').executeTakeFirstOrThrow();
      assert.deepEqual(JSON.parse(event.data), res.body, 'the event carries the referral exactly as returned');
    });

    it('accepts plan and status (any case, returned lowercase), trims name and e-mail', async () => {
      const aff = await createAffiliate();
      const mail = uniqueEmail('Trim');
      const res = await api.post('/referrals', body({ affiliateId: aff.id, name: '  Pat  ', email: ` ${mail} `, plan: 'pro-yearly', status: 'INACTIVE' }));
      assert.equal(res.status, 201);
      assert.equal(res.body.name, 'Pat');
      assert.equal(res.body.email, mail);
      assert.equal(res.body.plan, 'pro-yearly');
      assert.equal(res.body.status, 'inactive');
      const row = await rawDb(t).selectFrom('referrals').select(['status', 'plan']).where('id', '=', res.body.id).executeTakeFirstOrThrow();
      assert.deepEqual(row, { status: 'inactive', plan: 'pro-yearly' });
      const active = await api.post('/referrals', body({ affiliateId: aff.id, status: 'Active' }));
      assert.equal(active.body.status, 'active');
    });

    it('credits the link named by affiliateId when it is a link string (its referrals counter increments)', async () => {
      const aff = await createAffiliate();
      const side = await createLink(aff.id);
      const primary = await primaryLinkId(aff.id);
      const res = await api.post('/referrals', body({ affiliateId: side.link.toLowerCase() }));
      assert.equal(res.status, 201);
      assert.equal(res.body.affiliateId, aff.id);
      const row = await rawDb(t).selectFrom('referrals').select('link_id').where('id', '=', res.body.id).executeTakeFirstOrThrow();
      assert.equal(row.link_id, side.id);
      assert.equal(await linkReferrals(side.id), 1);
      assert.equal(await linkReferrals(primary), 0, 'the primary link is not credited');
      assert.equal(await affiliateCounter(aff.id), 1);

      const viaPrimary = await api.post('/referrals', body({ affiliateId: aff.link }));
      assert.equal(viaPrimary.status, 201);
      assert.equal(await linkReferrals(primary), 1);
      assert.equal(await affiliateCounter(aff.id), 2);
    });

    it('credits an affiliate id sent in upper case', async () => {
      const aff = await createAffiliate();
      const res = await api.post('/referrals', body({ affiliateId: aff.id.toUpperCase() }));
      assert.equal(res.status, 201);
      assert.equal(res.body.affiliateId, aff.id);
    });

    it('credits the affiliate named by affiliateEmail, in any case', async () => {
      const aff = await createAffiliate();
      const res = await api.post('/referrals', body({ affiliateEmail: ` ${aff.email.toUpperCase()} ` }));
      assert.equal(res.status, 201);
      assert.equal(res.body.affiliateId, aff.id);
      assert.equal(await affiliateCounter(aff.id), 1);
      assert.equal(await linkReferrals(await primaryLinkId(aff.id)), 1);
    });

    it('credits the affiliate of a promoCode and increments timesRedeemed', async () => {
      const aff = await createAffiliate();
      const code = await createCode(aff.id);
      assert.equal(await timesRedeemed(code.id), 0);
      const before = await counts();
      const res = await api.post('/referrals', body({ promoCode: code.code.toLowerCase() }));
      assert.equal(res.status, 201);
      assertReferralShape(res.body);
      assert.equal(res.body.affiliateId, aff.id);
      assert.equal(await timesRedeemed(code.id), 1);
      const row = await rawDb(t).selectFrom('referrals').select(['promotional_code_id', 'link_id']).where('id', '=', res.body.id).executeTakeFirstOrThrow();
      assert.equal(row.promotional_code_id, code.id);
      assert.equal(row.link_id, await primaryLinkId(aff.id));
      assert.equal(await affiliateCounter(aff.id), 1);
      const after = await counts();
      assert.equal(after.referrals, before.referrals + 1);
      assert.equal(after.events, before.events + 2, 'referral.created and promotional_code.redeemed');

      const second = await api.post('/referrals', body({ promoCode: code.code }));
      assert.equal(second.status, 201);
      assert.equal(await timesRedeemed(code.id), 2);
    });

    it('rolls back the referral, its counters and its event when the promoCode cannot be redeemed', async () => {
      const aff = await createAffiliate();
      const code = await createCode(aff.id, { maxRedemptions: 1 });
      assert.equal((await api.post('/referrals', body({ promoCode: code.code }))).status, 201);
      const inactive = await createCode(aff.id, { active: false });
      const unassigned = await createCode(null);
      const before = await counts();
      const referred = await affiliateCounter(aff.id);
      const linkCount = await linkReferrals(await primaryLinkId(aff.id));

      assertProblem(await api.post('/referrals', body({ promoCode: code.code })), 422, 'promo_code_exhausted');
      // Here the referral row is inserted before the code check fails: it must roll back.
      assertProblem(await api.post('/referrals', body({ affiliateId: aff.id, promoCode: inactive.code })), 422, 'promo_code_inactive');
      assertProblem(await api.post('/referrals', body({ promoCode: unassigned.code })), 422, 'promo_code_not_assigned');
      assertProblem(await api.post('/referrals', body({ promoCode: unique('NOPE') })), 404, 'not_found');

      assert.deepEqual(await counts(), before);
      assert.equal(await affiliateCounter(aff.id), referred);
      assert.equal(await linkReferrals(await primaryLinkId(aff.id)), linkCount);
      assert.equal(await timesRedeemed(code.id), 1);
      assert.equal(await timesRedeemed(inactive.id), 0);
    });

    it('requires name, email and referredUserExternalId (422 with pointers, nothing written)', async () => {
      const aff = await createAffiliate();
      const before = await counts();
      const missing = await api.post('/referrals', { affiliateId: aff.id });
      assert.deepEqual(assertProblem(missing, 422, 'validation_failed'), ['#/email', '#/name', '#/referredUserExternalId']);
      const cases: [Record<string, unknown>, string[]][] = [
        [body({ affiliateId: aff.id, name: '' }), ['#/name']],
        [body({ affiliateId: aff.id, name: '  ' }), ['#/name']],
        [body({ affiliateId: aff.id, email: 'not-an-email' }), ['#/email']],
        [body({ affiliateId: aff.id, referredUserExternalId: '' }), ['#/referredUserExternalId']],
        [body({ affiliateId: aff.id, referredUserExternalId: 42 }), ['#/referredUserExternalId']],
        [body({ affiliateId: aff.id, status: 'gone' }), ['#/status']],
        [body({ affiliateId: aff.id, plan: 5 }), ['#/plan']],
        [body({ affiliateEmail: 'nope' }), ['#/affiliateEmail']],
        [body({ affiliateId: '' }), ['#/affiliateId']],
        [body({ promoCode: '' }), ['#/promoCode']],
      ];
      for (const [sent, pointers] of cases) {
        assert.deepEqual(assertProblem(await api.post('/referrals', sent), 422, 'validation_failed'), pointers, JSON.stringify(sent));
      }
      assert.deepEqual(await counts(), before);
      assert.equal(await affiliateCounter(aff.id), 0);
    });

    it('needs one of affiliateId, affiliateEmail or promoCode (422)', async () => {
      const before = await counts();
      const res = await api.post('/referrals', body({}));
      assert.deepEqual(assertProblem(res, 422, 'validation_failed'), ['#/affiliateId']);
      assert.deepEqual(await counts(), before);
    });

    it('returns 404 for an unknown affiliate id, link, e-mail, or one of another program (nothing written)', async () => {
      const other = await t.createTenant();
      const foreign = await createAffiliate(other);
      const before = await counts();
      for (const sent of [
        { affiliateId: '00000000-0000-4000-8000-000000000000' },
        { affiliateId: unique('no-such-link') },
        { affiliateEmail: uniqueEmail('nobody') },
        { affiliateId: foreign.id },
        { affiliateId: foreign.link },
        { affiliateEmail: foreign.email },
      ]) {
        assertProblem(await api.post('/referrals', body(sent)), 404, 'not_found');
      }
      assert.deepEqual(await counts(), before);
      assert.equal((await other.get(`/affiliates?id=${foreign.id}`)).body.numberOfReferredUsers, 0);
    });

    it('rejects a second referral with the same e-mail in any case (409, counters and events unchanged)', async () => {
      const aff = await createAffiliate();
      const code = await createCode(aff.id);
      const mail = uniqueEmail('Dup');
      assert.equal((await api.post('/referrals', body({ affiliateId: aff.id, email: mail }))).status, 201);
      const before = await counts();
      const linkCount = await linkReferrals(await primaryLinkId(aff.id));
      for (const sent of [
        { affiliateId: aff.id, email: mail },
        { affiliateEmail: aff.email, email: ` ${mail.toUpperCase()} ` },
        { promoCode: code.code, email: mail.toLowerCase() },
      ]) {
        assertProblem(await api.post('/referrals', body(sent)), 409, 'conflict');
      }
      assert.deepEqual(await counts(), before);
      assert.equal(await affiliateCounter(aff.id), 1);
      assert.equal(await linkReferrals(await primaryLinkId(aff.id)), linkCount);
      assert.equal(await timesRedeemed(code.id), 0, 'a failed request redeems nothing');
    });

    it('allows the same referral e-mail in another program', async () => {
      const mail = uniqueEmail('both');
      assert.equal((await api.post('/referrals', body({ affiliateId: (await createAffiliate()).id, email: mail }))).status, 201);
      const other = await t.createTenant();
      const aff = await createAffiliate(other);
      const res = await other.post('/referrals', body({ affiliateId: aff.id, email: mail }));
      assert.equal(res.status, 201);
    });
  });

  describe('GET /referrals', () => {
    it('returns one referral by id, equal to what POST returned; 404 when unknown or foreign', async () => {
      const aff = await createAffiliate();
      const created = (await api.post('/referrals', body({ affiliateId: aff.id, plan: 'basic' }))).body;
      const res = await api.get(`/referrals?id=${created.id}`);
      assert.equal(res.status, 200);
      assert.ok(!Array.isArray(res.body));
      assertReferralShape(res.body);
      assert.deepEqual(res.body, created);
      assert.deepEqual((await api.get(`/referrals?id=${created.id.toUpperCase()}`)).body, created, 'UUIDs ignore case');
      assert.deepEqual((await api.get(`/referrals?affiliateId=${aff.id.toUpperCase()}`)).body, [created]);
      assertProblem(await api.get('/referrals?id=00000000-0000-4000-8000-000000000000'), 404, 'not_found');
      assert.deepEqual(assertProblem(await api.get('/referrals?id=nope'), 422, 'validation_failed'), ['#/id']);
      const other = await t.createTenant();
      assertProblem(await other.get(`/referrals?id=${created.id}`), 404, 'not_found');
    });

    it('applies id and affiliateId together (404 when they disagree)', async () => {
      const a = await createAffiliate();
      const b = await createAffiliate();
      const created = (await api.post('/referrals', body({ affiliateId: a.id }))).body;
      assert.equal((await api.get(`/referrals?id=${created.id}&affiliateId=${a.id}`)).status, 200);
      assertProblem(await api.get(`/referrals?id=${created.id}&affiliateId=${b.id}`), 404, 'not_found');
    });

    it('lists referrals newest first as a bare array, filtered by affiliateId, paged by cursor', async () => {
      const client = await t.createTenant();
      const a = await createAffiliate(client);
      const b = await createAffiliate(client);
      const made: { id: string; affiliateId: string }[] = [];
      for (let i = 0; i < 7; i++) {
        const res = await client.post('/referrals', body({ affiliateId: i % 2 === 0 ? a.id : b.id }));
        assert.equal(res.status, 201);
        made.push(res.body);
        await sleep(2);
      }
      const all = await client.get('/referrals');
      assert.equal(all.status, 200);
      assert.ok(Array.isArray(all.body));
      assert.equal(all.headers.get('link'), null);
      assert.deepEqual(all.body, [...made].reverse());
      for (const r of all.body) assertReferralShape(r);

      const ofA = await client.get(`/referrals?affiliateId=${a.id}`);
      assert.deepEqual(ofA.body.map((r: { id: string }) => r.id), made.filter((r) => r.affiliateId === a.id).map((r) => r.id).reverse());

      const seen: string[] = [];
      let path: string | null = '/referrals?limit=3';
      let pages = 0;
      while (path !== null) {
        const res: ApiResponse = await client.get(path);
        assert.equal(res.status, 200);
        assert.ok(res.body.length <= 3);
        seen.push(...res.body.map((r: { id: string }) => r.id));
        path = nextPath(res);
        pages++;
      }
      assert.equal(pages, 3);
      assert.deepEqual(seen, made.map((r) => r.id).reverse());

      const pagedA: string[] = [];
      path = `/referrals?limit=1&affiliateId=${a.id}`;
      while (path !== null) {
        const res: ApiResponse = await client.get(path);
        pagedA.push(...res.body.map((r: { id: string }) => r.id));
        path = nextPath(res);
      }
      assert.deepEqual(pagedA, ofA.body.map((r: { id: string }) => r.id), 'the next link keeps the filter');
    });

    it('filters by createdAfter and validates list parameters', async () => {
      const client = await t.createTenant();
      const aff = await createAffiliate(client);
      const first = await client.post('/referrals', body({ affiliateId: aff.id }));
      await sleep(5);
      const second = await client.post('/referrals', body({ affiliateId: aff.id }));
      const createdAt = (await rawDb(t).selectFrom('referrals').select('created_at').where('id', '=', first.body.id).executeTakeFirstOrThrow()).created_at as string;
      const res = await client.get(`/referrals?createdAfter=${encodeURIComponent(createdAt)}`);
      assert.deepEqual(res.body.map((r: { id: string }) => r.id), [second.body.id]);
      assert.deepEqual((await client.get('/referrals?createdAfter=2999-01-01T00:00:00.000Z')).body, []);
      assert.deepEqual(assertProblem(await client.get('/referrals?limit=0'), 422, 'validation_failed'), ['#/limit']);
      assert.deepEqual(assertProblem(await client.get('/referrals?limit=1001'), 422, 'validation_failed'), ['#/limit']);
      assertProblem(await client.get('/referrals?cursor=zzz'), 400, 'invalid_cursor');
    });
  });
});
