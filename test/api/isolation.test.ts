import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { rawDb, startTestServer, type ApiClient, type ApiResponse, type TestServer } from '../helpers/test-server.ts';

// Tenant isolation: a token of program A can never read, find, change or even detect the data
// of program B. Every probe with one of B's identifiers must answer exactly as a probe with an
// identifier that exists nowhere (same status, same problem body apart from requestId), and must
// leave every stored row of both programs as it was.

/** Every table with a program_id column, read from the migrated schema so a new table cannot be forgotten. */
async function programTables(t: TestServer): Promise<string[]> {
  const tables = await rawDb(t).introspection.getTables();
  const names = tables.filter((table) => table.columns.some((c) => c.name === 'program_id')).map((table) => table.name).sort();
  for (const core of ['affiliates', 'affiliate_links', 'referrals', 'sales', 'coupons', 'promotional_codes', 'events', 'webhooks']) {
    assert.ok(names.includes(core), `${core} has a program_id column`);
  }
  return names;
}
/**
 * Columns that change without any request of the program touching the row: an event's
 * `sequence` is numbered by the worker after commit; a token's `last_used_at` moves when its
 * own program calls.
 */
const BACKGROUND_COLUMNS: Record<string, string[]> = { events: ['sequence'], api_tokens: ['last_used_at'] };

type Snapshot = Record<string, unknown[]>;

async function snapshot(t: TestServer, programId: string): Promise<Snapshot> {
  const db = rawDb(t);
  const out: Snapshot = {};
  for (const table of await programTables(t)) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)} where program_id = ${programId}`.execute(db);
    for (const row of rows) for (const column of BACKGROUND_COLUMNS[table] ?? []) delete row[column];
    // Not every table has an `id`: compare rows in a stable order of their own.
    out[table] = rows.map((row) => JSON.stringify(row)).sort();
  }
  const { rows: programs } = await sql<Record<string, unknown>>`select * from programs where id = ${programId}`.execute(db);
  out.programs = programs;
  return out;
}

/** The problem body without its per-request id, with `from` replaced by `to` in the detail. */
function comparable(res: ApiResponse, from?: string, to?: string): unknown {
  if (typeof res.body !== 'object' || res.body === null || Array.isArray(res.body)) return res.body;
  const { requestId, ...rest } = res.body as Record<string, unknown>;
  assert.equal(typeof requestId, 'string', 'a problem body carries a requestId');
  if (from !== undefined && to !== undefined && typeof rest.detail === 'string') rest.detail = rest.detail.split(from).join(to);
  return rest;
}

/**
 * Asserts that the probe with B's value answered 404 exactly like the probe with a value that
 * exists in no program.
 */
function assertIndistinguishable404(withB: ApiResponse, withMissing: ApiResponse, bValue?: string, missingValue?: string): void {
  assert.equal(withMissing.status, 404, `a truly unknown value gives 404: ${JSON.stringify(withMissing.body)}`);
  assert.equal(withB.status, 404, `another program's value gives 404: ${JSON.stringify(withB.body)}`);
  assert.equal(withB.body.code, 'not_found');
  assert.match(withB.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(withB.headers.get('content-type'), withMissing.headers.get('content-type'));
  assert.deepEqual(comparable(withB, bValue, missingValue), comparable(withMissing));
}

function assertEmptyList(withB: ApiResponse, withMissing: ApiResponse): void {
  assert.equal(withMissing.status, 200);
  assert.equal(withB.status, 200, JSON.stringify(withB.body));
  assert.deepEqual(withB.body, []);
  assert.deepEqual(withMissing.body, []);
  assert.equal(withB.headers.get('link'), null, 'no next page hints at hidden rows');
}

interface ProgramData {
  affiliate: { id: string; email: string; link: string };
  extraLink: { id: string; link: string };
  coupon: { id: string; externalId: string; name: string };
  code: { id: string; code: string; externalId: string };
  referral: { id: string; email: string };
  sale: { id: number };
}

let unique = 0;

/** One program's worth of every resource, made through the API with that program's token. */
async function seedProgram(api: ApiClient, tag: string, emails?: { affiliate: string; customer: string }): Promise<ProgramData> {
  const n = ++unique;
  const affiliate = await api.post('/affiliates', {
    firstName: `${tag}First`,
    lastName: `${tag}Last`,
    email: emails?.affiliate ?? `${tag}-affiliate-${n}@example.com`,
    affiliateLink: `${tag}-main-${n}`,
  });
  assert.equal(affiliate.status, 201, JSON.stringify(affiliate.body));
  const extraLink = await api.post('/links', { affiliateId: affiliate.body.id, link: `${tag}-extra-${n}` });
  assert.equal(extraLink.status, 201, JSON.stringify(extraLink.body));
  const coupon = await api.post('/coupons', { name: `${tag} coupon ${n}`, externalId: `${tag}-coupon-ext-${n}`, couponType: 'PERCENTAGE', percentOff: 10 });
  assert.equal(coupon.status, 201, JSON.stringify(coupon.body));
  const code = await api.post('/promotional-codes', {
    couponId: coupon.body.id,
    code: `${tag.toUpperCase()}CODE${n}`,
    externalId: `${tag}-code-ext-${n}`,
    affiliateId: affiliate.body.id,
  });
  assert.equal(code.status, 201, JSON.stringify(code.body));
  const referral = await api.post('/referrals', {
    name: `${tag} Customer`,
    email: emails?.customer ?? `${tag}-customer-${n}@example.com`,
    referredUserExternalId: `cus_${tag}_${n}`,
    affiliateId: affiliate.body.id,
  });
  assert.equal(referral.status, 201, JSON.stringify(referral.body));
  const sale = await api.post('/sales', { referralId: referral.body.id, totalEarned: 100 });
  assert.equal(sale.status, 201, JSON.stringify(sale.body));
  return {
    affiliate: { id: affiliate.body.id, email: affiliate.body.email, link: affiliate.body.link },
    extraLink: { id: extraLink.body.id, link: extraLink.body.link },
    coupon: { id: coupon.body.id, externalId: coupon.body.externalId, name: coupon.body.name },
    code: { id: code.body.id, code: code.body.code, externalId: code.body.externalId },
    referral: { id: referral.body.id, email: referral.body.email },
    sale: { id: sale.body.id },
  };
}

const q = (params: Record<string, string | number>) => `?${new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)]))}`;

describe('tenant isolation: program A cannot reach program B', () => {
  let t: TestServer;
  let a: ApiClient;
  let b: ApiClient;
  let A: ProgramData;
  let B: ProgramData;
  let baselineA: Snapshot;
  let baselineB: Snapshot;

  before(async () => {
    t = await startTestServer();
    a = await t.createTenant({ name: 'Program A' });
    b = await t.createTenant({ name: 'Program B' });
    A = await seedProgram(a, 'ay');
    B = await seedProgram(b, 'bee');
    baselineA = await snapshot(t, a.programId);
    baselineB = await snapshot(t, b.programId);
    assert.equal(baselineB.sales!.length, 1);
    assert.ok(baselineB.events!.length > 0);
  });
  after(() => t.close());

  /** Neither program's stored state moved: B untouched, and A wrote nothing on a failed call. */
  async function assertNothingChanged(): Promise<void> {
    assert.deepEqual(await snapshot(t, b.programId), baselineB, "program B's rows are unchanged");
    assert.deepEqual(await snapshot(t, a.programId), baselineA, "program A's rows are unchanged");
  }

  const missingUuid = () => randomUUID();

  describe('GET /affiliates', () => {
    it('?id= of B is 404, exactly as an unknown id', async () => {
      const missing = missingUuid();
      assertIndistinguishable404(await a.get(`/affiliates${q({ id: B.affiliate.id })}`), await a.get(`/affiliates${q({ id: missing })}`), B.affiliate.id, missing);
      await assertNothingChanged();
    });

    it('?email= of B is 404 in any letter case, exactly as an unknown e-mail', async () => {
      const missing = 'nobody-here@example.com';
      for (const email of [B.affiliate.email, B.affiliate.email.toUpperCase(), ` ${B.affiliate.email} `]) {
        assertIndistinguishable404(await a.get(`/affiliates${q({ email })}`), await a.get(`/affiliates${q({ email: missing })}`), email.trim(), missing);
      }
      await assertNothingChanged();
    });

    it('?id= of B combined with an e-mail of A is 404', async () => {
      const res = await a.get(`/affiliates${q({ id: B.affiliate.id, email: A.affiliate.email })}`);
      assertIndistinguishable404(res, await a.get(`/affiliates${q({ id: missingUuid(), email: A.affiliate.email })}`));
    });

    it('the list holds only A\'s affiliates', async () => {
      const res = await a.get('/affiliates');
      assert.equal(res.status, 200);
      assert.deepEqual(
        res.body.map((x: { id: string }) => x.id),
        [A.affiliate.id],
      );
      assert.ok(res.body.every((x: { programId: string }) => x.programId === a.programId));
      assert.ok(!JSON.stringify(res.body).includes(B.affiliate.id));
    });

    it('a cursor taken from B\'s list is refused in A\'s (400 invalid_cursor: cursors are bound to their program)', async () => {
      // Give B a second affiliate so that its list has a next page.
      const extra = await b.post('/affiliates', { firstName: 'Bee', lastName: 'Two', email: `bee-two-${randomUUID()}@example.com` });
      assert.equal(extra.status, 201);
      const pageOfB = await b.get('/affiliates?limit=1');
      assert.equal(pageOfB.status, 200);
      const next = pageOfB.headers.get('link');
      assert.ok(next, 'B has a next page');
      const cursor = new URL(/<([^>]+)>/.exec(next)![1]!).searchParams.get('cursor')!;
      const res = await a.get(`/affiliates${q({ cursor })}`);
      assert.equal(res.status, 400);
      assert.equal(res.body.code, 'invalid_cursor');
      assert.ok(!JSON.stringify(res.body).includes(b.programId));
      baselineB = await snapshot(t, b.programId);
    });
  });

  describe('POST /links', () => {
    it('with B\'s affiliateId is 404, exactly as an unknown id, and creates nothing', async () => {
      const missing = missingUuid();
      assertIndistinguishable404(
        await a.post('/links', { affiliateId: B.affiliate.id, link: 'stolen-link-1' }),
        await a.post('/links', { affiliateId: missing, link: 'stolen-link-1' }),
      );
      await assertNothingChanged();
    });

    it('with B\'s affiliateEmail is 404, exactly as an unknown e-mail, and creates nothing', async () => {
      assertIndistinguishable404(
        await a.post('/links', { affiliateEmail: B.affiliate.email, link: 'stolen-link-2' }),
        await a.post('/links', { affiliateEmail: 'nobody-here@example.com', link: 'stolen-link-2' }),
      );
      assertIndistinguishable404(
        await a.post('/links', { affiliateEmail: B.affiliate.email }),
        await a.post('/links', { affiliateEmail: 'nobody-here@example.com' }),
      );
      await assertNothingChanged();
    });

    it('with both of B\'s affiliateId and affiliateEmail is 404', async () => {
      assertIndistinguishable404(
        await a.post('/links', { affiliateId: B.affiliate.id, affiliateEmail: B.affiliate.email }),
        await a.post('/links', { affiliateId: missingUuid(), affiliateEmail: 'nobody-here@example.com' }),
      );
      await assertNothingChanged();
    });
  });

  describe('PUT /links', () => {
    it('with B\'s link id is 404 and renames nothing', async () => {
      for (const id of [B.extraLink.id, B.extraLink.id.toUpperCase()]) {
        assertIndistinguishable404(await a.put('/links', { id, newLink: 'hijacked-1' }), await a.put('/links', { id: missingUuid(), newLink: 'hijacked-1' }));
      }
      await assertNothingChanged();
    });

    it('with B\'s link string (any case) is 404 and renames nothing', async () => {
      for (const link of [B.extraLink.link, B.extraLink.link.toUpperCase(), B.affiliate.link]) {
        assertIndistinguishable404(await a.put('/links', { link, newLink: 'hijacked-2' }), await a.put('/links', { link: 'no-such-link-x', newLink: 'hijacked-2' }));
      }
      await assertNothingChanged();
    });

    it('with B\'s link id plus A\'s link string is 404 (both must match in A)', async () => {
      assertIndistinguishable404(
        await a.put('/links', { id: B.extraLink.id, link: A.extraLink.link, newLink: 'hijacked-3' }),
        await a.put('/links', { id: missingUuid(), link: A.extraLink.link, newLink: 'hijacked-3' }),
      );
      await assertNothingChanged();
    });
  });

  describe('POST /referrals', () => {
    const body = (extra: Record<string, unknown>) => ({ name: 'Probe', email: 'probe-referral@example.com', referredUserExternalId: 'cus_probe', ...extra });

    it('credited to B\'s affiliate id is 404', async () => {
      assertIndistinguishable404(await a.post('/referrals', body({ affiliateId: B.affiliate.id })), await a.post('/referrals', body({ affiliateId: missingUuid() })));
      await assertNothingChanged();
    });

    it('credited to B\'s link string (as affiliateId) is 404', async () => {
      for (const link of [B.affiliate.link, B.extraLink.link, B.extraLink.link.toUpperCase()]) {
        assertIndistinguishable404(await a.post('/referrals', body({ affiliateId: link })), await a.post('/referrals', body({ affiliateId: 'no-such-link-x' })));
      }
      await assertNothingChanged();
    });

    it('credited to B\'s affiliate e-mail is 404', async () => {
      assertIndistinguishable404(
        await a.post('/referrals', body({ affiliateEmail: B.affiliate.email })),
        await a.post('/referrals', body({ affiliateEmail: 'nobody-here@example.com' })),
      );
      await assertNothingChanged();
    });

    it('with B\'s promotional code is 404 and redeems nothing', async () => {
      for (const code of [B.code.code, B.code.code.toLowerCase()]) {
        assertIndistinguishable404(await a.post('/referrals', body({ promoCode: code })), await a.post('/referrals', body({ promoCode: 'NOSUCHCODE' })), code, 'NOSUCHCODE');
      }
      await assertNothingChanged();
    });

    it('with B\'s promotional code next to A\'s own affiliate is still 404', async () => {
      assertIndistinguishable404(
        await a.post('/referrals', body({ affiliateId: A.affiliate.id, promoCode: B.code.code })),
        await a.post('/referrals', body({ affiliateId: A.affiliate.id, promoCode: 'NOSUCHCODE' })),
        B.code.code,
        'NOSUCHCODE',
      );
      await assertNothingChanged();
    });
  });

  describe('POST /sales', () => {
    it('with B\'s referral id is 404', async () => {
      assertIndistinguishable404(
        await a.post('/sales', { referralId: B.referral.id, totalEarned: 50 }),
        await a.post('/sales', { referralId: missingUuid(), totalEarned: 50 }),
      );
      await assertNothingChanged();
    });

    it('with B\'s affiliate id (as referralId) is 404, even with a name and e-mail for a new customer', async () => {
      assertIndistinguishable404(
        await a.post('/sales', { referralId: B.affiliate.id, totalEarned: 50 }),
        await a.post('/sales', { referralId: missingUuid(), totalEarned: 50 }),
      );
      assertIndistinguishable404(
        await a.post('/sales', { referralId: B.affiliate.id, totalEarned: 50, name: 'New', email: 'new-customer@example.com' }),
        await a.post('/sales', { referralId: missingUuid(), totalEarned: 50, name: 'New', email: 'new-customer@example.com' }),
      );
      await assertNothingChanged();
    });

    it('with B\'s link string (as referralId) is 404', async () => {
      for (const link of [B.affiliate.link, B.extraLink.link]) {
        assertIndistinguishable404(
          await a.post('/sales', { referralId: link, totalEarned: 50, name: 'New', email: 'new-customer@example.com' }),
          await a.post('/sales', { referralId: 'no-such-link-x', totalEarned: 50, name: 'New', email: 'new-customer@example.com' }),
        );
      }
      await assertNothingChanged();
    });

    it('with B\'s customer e-mail is 404', async () => {
      const missing = 'nobody-here@example.com';
      for (const email of [B.referral.email, B.referral.email.toUpperCase()]) {
        assertIndistinguishable404(await a.post('/sales', { email, totalEarned: 50 }), await a.post('/sales', { email: missing, totalEarned: 50 }), email, missing);
        assertIndistinguishable404(
          await a.post('/sales', { email, name: 'Someone', totalEarned: 50 }),
          await a.post('/sales', { email: missing, name: 'Someone', totalEarned: 50 }),
          email,
          missing,
        );
      }
      await assertNothingChanged();
    });

    it('with B\'s promotional code is 404 and redeems nothing', async () => {
      assertIndistinguishable404(
        await a.post('/sales', { promoCode: B.code.code, email: 'fresh@example.com', name: 'Fresh', totalEarned: 50 }),
        await a.post('/sales', { promoCode: 'NOSUCHCODE', email: 'fresh@example.com', name: 'Fresh', totalEarned: 50 }),
        B.code.code,
        'NOSUCHCODE',
      );
      // Also next to A's own customer: the code lookup must not fall through to B.
      assertIndistinguishable404(
        await a.post('/sales', { referralId: A.referral.id, promoCode: B.code.code, totalEarned: 50 }),
        await a.post('/sales', { referralId: A.referral.id, promoCode: 'NOSUCHCODE', totalEarned: 50 }),
        B.code.code,
        'NOSUCHCODE',
      );
      await assertNothingChanged();
    });
  });

  describe('GET /coupons', () => {
    it('?id= and ?externalId= of B are 404, exactly as unknown ones', async () => {
      assertIndistinguishable404(await a.get(`/coupons${q({ id: B.coupon.id })}`), await a.get(`/coupons${q({ id: missingUuid() })}`));
      assertIndistinguishable404(await a.get(`/coupons${q({ externalId: B.coupon.externalId })}`), await a.get(`/coupons${q({ externalId: 'no-such-ext' })}`));
    });

    it('?name= of B is an empty list', async () => {
      assertEmptyList(await a.get(`/coupons${q({ name: B.coupon.name })}`), await a.get(`/coupons${q({ name: 'No such coupon' })}`));
    });

    it('the list holds only A\'s coupons, each with only A\'s codes', async () => {
      const res = await a.get('/coupons');
      assert.equal(res.status, 200);
      assert.deepEqual(
        res.body.map((c: { id: string }) => c.id),
        [A.coupon.id],
      );
      assert.deepEqual(
        res.body[0].promotionalCodes.map((c: { id: string }) => c.id),
        [A.code.id],
      );
      assert.ok(res.body.every((c: { affiliateProgramId: string }) => c.affiliateProgramId === a.programId));
      for (const secret of [B.coupon.id, B.code.id, B.affiliate.id, b.programId]) assert.ok(!JSON.stringify(res.body).includes(secret));
    });
  });

  describe('GET /promotional-codes', () => {
    it('?id=, ?code= and ?externalId= of B are 404, exactly as unknown ones', async () => {
      assertIndistinguishable404(await a.get(`/promotional-codes${q({ id: B.code.id })}`), await a.get(`/promotional-codes${q({ id: missingUuid() })}`));
      for (const code of [B.code.code, B.code.code.toLowerCase()]) {
        assertIndistinguishable404(await a.get(`/promotional-codes${q({ code })}`), await a.get(`/promotional-codes${q({ code: 'NOSUCHCODE' })}`));
      }
      assertIndistinguishable404(
        await a.get(`/promotional-codes${q({ externalId: B.code.externalId })}`),
        await a.get(`/promotional-codes${q({ externalId: 'no-such-ext' })}`),
      );
    });

    it('?couponId=, ?affiliateId= and ?affiliateEmail= of B are empty lists', async () => {
      assertEmptyList(await a.get(`/promotional-codes${q({ couponId: B.coupon.id })}`), await a.get(`/promotional-codes${q({ couponId: missingUuid() })}`));
      assertEmptyList(
        await a.get(`/promotional-codes${q({ affiliateId: B.affiliate.id })}`),
        await a.get(`/promotional-codes${q({ affiliateId: missingUuid() })}`),
      );
      assertEmptyList(
        await a.get(`/promotional-codes${q({ affiliateEmail: B.affiliate.email })}`),
        await a.get(`/promotional-codes${q({ affiliateEmail: 'nobody-here@example.com' })}`),
      );
    });

    it('A\'s own code combined with B\'s coupon or affiliate matches nothing', async () => {
      assertIndistinguishable404(
        await a.get(`/promotional-codes${q({ code: A.code.code, couponId: B.coupon.id })}`),
        await a.get(`/promotional-codes${q({ code: A.code.code, couponId: missingUuid() })}`),
      );
      assertIndistinguishable404(
        await a.get(`/promotional-codes${q({ id: A.code.id, affiliateEmail: B.affiliate.email })}`),
        await a.get(`/promotional-codes${q({ id: A.code.id, affiliateEmail: 'nobody-here@example.com' })}`),
      );
      assertEmptyList(
        await a.get(`/promotional-codes${q({ couponId: A.coupon.id, affiliateId: B.affiliate.id })}`),
        await a.get(`/promotional-codes${q({ couponId: A.coupon.id, affiliateId: missingUuid() })}`),
      );
    });

    it('the list holds only A\'s codes', async () => {
      const res = await a.get('/promotional-codes');
      assert.equal(res.status, 200);
      assert.deepEqual(
        res.body.map((c: { id: string }) => c.id),
        [A.code.id],
      );
      assert.equal(res.body[0].coupon.affiliateProgramId, a.programId);
      for (const secret of [B.coupon.id, B.code.id, B.affiliate.id, b.programId]) assert.ok(!JSON.stringify(res.body).includes(secret));
    });
  });

  describe('PUT /promotional-codes', () => {
    it('with B\'s code id is 404 and changes nothing', async () => {
      const change = { active: false, code: 'HIJACKED', maxRedemptions: 1, limitToAffiliate: false };
      assertIndistinguishable404(
        await a.put('/promotional-codes', { promotionalCodeId: B.code.id, ...change }),
        await a.put('/promotional-codes', { promotionalCodeId: missingUuid(), ...change }),
      );
      await assertNothingChanged();
    });

    it('assigning A\'s code to B\'s affiliate is 404 and changes nothing', async () => {
      assertIndistinguishable404(
        await a.put('/promotional-codes', { promotionalCodeId: A.code.id, affiliateId: B.affiliate.id, active: false }),
        await a.put('/promotional-codes', { promotionalCodeId: A.code.id, affiliateId: missingUuid(), active: false }),
      );
      await assertNothingChanged();
    });
  });

  describe('POST /promotional-codes', () => {
    it('on B\'s coupon is 404 and creates nothing', async () => {
      assertIndistinguishable404(
        await a.post('/promotional-codes', { couponId: B.coupon.id, code: 'SNEAKY1' }),
        await a.post('/promotional-codes', { couponId: missingUuid(), code: 'SNEAKY1' }),
      );
      assertIndistinguishable404(
        await a.post('/promotional-codes', { couponId: B.coupon.id, affiliateId: A.affiliate.id }),
        await a.post('/promotional-codes', { couponId: missingUuid(), affiliateId: A.affiliate.id }),
      );
      await assertNothingChanged();
    });

    it('assigned to B\'s affiliate (by id or e-mail) is 404 and creates nothing', async () => {
      assertIndistinguishable404(
        await a.post('/promotional-codes', { couponId: A.coupon.id, code: 'SNEAKY2', affiliateId: B.affiliate.id }),
        await a.post('/promotional-codes', { couponId: A.coupon.id, code: 'SNEAKY2', affiliateId: missingUuid() }),
      );
      assertIndistinguishable404(
        await a.post('/promotional-codes', { couponId: A.coupon.id, code: 'SNEAKY3', affiliateEmail: B.affiliate.email }),
        await a.post('/promotional-codes', { couponId: A.coupon.id, code: 'SNEAKY3', affiliateEmail: 'nobody-here@example.com' }),
      );
      await assertNothingChanged();
    });
  });

  describe('GET /referrals and GET /sales', () => {
    it('GET /referrals?id= of B is 404; ?affiliateId= of B is empty; the list holds only A\'s', async () => {
      assertIndistinguishable404(await a.get(`/referrals${q({ id: B.referral.id })}`), await a.get(`/referrals${q({ id: missingUuid() })}`));
      assertEmptyList(await a.get(`/referrals${q({ affiliateId: B.affiliate.id })}`), await a.get(`/referrals${q({ affiliateId: missingUuid() })}`));
      const list = await a.get('/referrals');
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.map((r: { id: string }) => r.id),
        [A.referral.id],
      );
    });

    it('GET /sales?id= of B (a guessable integer) is 404; other filters of B are empty; the list holds only A\'s', async () => {
      assert.notEqual(B.sale.id, A.sale.id);
      assertIndistinguishable404(await a.get(`/sales${q({ id: B.sale.id })}`), await a.get(`/sales${q({ id: 987654321 })}`));
      assertEmptyList(await a.get(`/sales${q({ affiliateId: B.affiliate.id })}`), await a.get(`/sales${q({ affiliateId: missingUuid() })}`));
      assertEmptyList(await a.get(`/sales${q({ referralId: B.referral.id })}`), await a.get(`/sales${q({ referralId: missingUuid() })}`));
      assertIndistinguishable404(
        await a.get(`/sales${q({ id: A.sale.id, referralId: B.referral.id })}`),
        await a.get(`/sales${q({ id: A.sale.id, referralId: missingUuid() })}`),
      );
      const list = await a.get('/sales');
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.map((s: { id: number }) => s.id),
        [A.sale.id],
      );
    });
  });

  describe('GET /me', () => {
    it('returns the token\'s own program and nothing of the other', async () => {
      const meA = await a.get('/me');
      assert.equal(meA.status, 200);
      assert.equal(meA.body.id, a.programId);
      assert.equal(meA.body.name, 'Program A');
      assert.ok(!JSON.stringify(meA.body).includes(b.programId));
      const meB = await b.get('/me');
      assert.equal(meB.status, 200);
      assert.equal(meB.body.id, b.programId);
      assert.equal(meB.body.name, 'Program B');
    });

    it('ignores any attempt to name another program in the query', async () => {
      const res = await a.get(`/me${q({ id: b.programId, programId: b.programId })}`);
      assert.equal(res.status, 200);
      assert.equal(res.body.id, a.programId);
    });
  });

  describe('the reverse direction', () => {
    it('B cannot reach A\'s data either', async () => {
      assertIndistinguishable404(await b.get(`/affiliates${q({ id: A.affiliate.id })}`), await b.get(`/affiliates${q({ id: missingUuid() })}`));
      assertIndistinguishable404(await b.get(`/promotional-codes${q({ code: A.code.code })}`), await b.get(`/promotional-codes${q({ code: 'NOSUCHCODE' })}`));
      assertIndistinguishable404(await b.get(`/sales${q({ id: A.sale.id })}`), await b.get(`/sales${q({ id: 987654321 })}`));
      assertIndistinguishable404(
        await b.put('/links', { id: A.extraLink.id, newLink: 'reverse-hijack' }),
        await b.put('/links', { id: missingUuid(), newLink: 'reverse-hijack' }),
      );
      await assertNothingChanged();
    });
  });
});

describe('tenant isolation: the same values live independently in two programs', () => {
  let t: TestServer;
  let a: ApiClient;
  let b: ApiClient;
  let B: ProgramData;
  const sharedAffiliateEmail = 'shared.affiliate@example.com';
  const sharedCustomerEmail = 'shared.customer@example.com';

  before(async () => {
    t = await startTestServer();
    a = await t.createTenant({ name: 'Program A' });
    b = await t.createTenant({ name: 'Program B' });
    B = await seedProgram(b, 'bee', { affiliate: sharedAffiliateEmail, customer: sharedCustomerEmail });
  });
  after(() => t.close());

  it('an affiliate e-mail and link used in B can be used in A (201, not 409), and each program sees its own', async () => {
    const before = await snapshot(t, b.programId);
    const res = await a.post('/affiliates', {
      firstName: 'Ay',
      lastName: 'Same',
      email: sharedAffiliateEmail.toUpperCase(),
      affiliateLink: B.affiliate.link.toUpperCase(),
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.notEqual(res.body.id, B.affiliate.id);
    assert.equal(res.body.programId, a.programId);

    const mineA = await a.get(`/affiliates${q({ email: sharedAffiliateEmail })}`);
    assert.equal(mineA.status, 200);
    assert.equal(mineA.body.id, res.body.id);
    const mineB = await b.get(`/affiliates${q({ email: sharedAffiliateEmail })}`);
    assert.equal(mineB.status, 200);
    assert.equal(mineB.body.id, B.affiliate.id);
    assert.deepEqual(await snapshot(t, b.programId), before);

    // A second affiliate with the same e-mail inside A is still a conflict.
    const dup = await a.post('/affiliates', { firstName: 'Ay', lastName: 'Dup', email: sharedAffiliateEmail });
    assert.equal(dup.status, 409);
  });

  it('link strings of B can be created and renamed to in A', async () => {
    const mine = await a.get(`/affiliates${q({ email: sharedAffiliateEmail })}`);
    const created = await a.post('/links', { affiliateId: mine.body.id, link: B.extraLink.link });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.program.id, a.programId);
    const other = await a.post('/links', { affiliateId: mine.body.id, link: 'ay-temporary' });
    assert.equal(other.status, 201);
    const renamed = await a.put('/links', { id: other.body.id, newLink: 'bee-only-later' });
    assert.equal(renamed.status, 200);
    const bLater = await b.post('/links', { affiliateId: B.affiliate.id, link: 'BEE-ONLY-LATER' });
    assert.equal(bLater.status, 201, 'B may take a string A uses');

    // Renaming by link string finds A's own link, not B's identically named one.
    const byString = await a.put('/links', { link: B.extraLink.link, newLink: 'ay-renamed' });
    assert.equal(byString.status, 200);
    assert.equal(byString.body.id, created.body.id);
    const bLink = await sql<{ link: string }>`select link from affiliate_links where id = ${B.extraLink.id}`.execute(rawDb(t));
    assert.equal(bLink.rows[0]!.link, B.extraLink.link);
  });

  it('coupon externalId, code string and code externalId of B can be reused in A; redemptions stay apart', async () => {
    const coupon = await a.post('/coupons', { name: B.coupon.name, externalId: B.coupon.externalId, couponType: 'FLAT', amountOff: 5 });
    assert.equal(coupon.status, 201, JSON.stringify(coupon.body));
    const mine = await a.get(`/affiliates${q({ email: sharedAffiliateEmail })}`);
    const code = await a.post('/promotional-codes', {
      couponId: coupon.body.id,
      code: B.code.code.toLowerCase(),
      externalId: B.code.externalId,
      affiliateId: mine.body.id,
    });
    assert.equal(code.status, 201, JSON.stringify(code.body));

    // Lookups by the shared values find each program's own row.
    assert.equal((await a.get(`/coupons${q({ externalId: B.coupon.externalId })}`)).body.id, coupon.body.id);
    assert.equal((await b.get(`/coupons${q({ externalId: B.coupon.externalId })}`)).body.id, B.coupon.id);
    assert.deepEqual(
      (await a.get(`/coupons${q({ name: B.coupon.name })}`)).body.map((c: { id: string }) => c.id),
      [coupon.body.id],
    );
    assert.equal((await a.get(`/promotional-codes${q({ code: B.code.code })}`)).body.id, code.body.id);
    assert.equal((await b.get(`/promotional-codes${q({ code: B.code.code })}`)).body.id, B.code.id);
    assert.equal((await a.get(`/promotional-codes${q({ externalId: B.code.externalId })}`)).body.id, code.body.id);
    assert.equal((await b.get(`/promotional-codes${q({ externalId: B.code.externalId })}`)).body.id, B.code.id);

    // Redeeming the shared string in A counts on A's code only.
    const referral = await a.post('/referrals', { name: 'Code User', email: 'code.user@example.com', referredUserExternalId: 'cus_code', promoCode: B.code.code });
    assert.equal(referral.status, 201, JSON.stringify(referral.body));
    assert.equal(referral.body.affiliateId, mine.body.id);
    assert.equal((await a.get(`/promotional-codes${q({ id: code.body.id })}`)).body.timesRedeemed, 1);
    assert.equal((await b.get(`/promotional-codes${q({ id: B.code.id })}`)).body.timesRedeemed, 0);
    const rows = await sql<{ times_redeemed: number }>`select times_redeemed from coupons where id = ${B.coupon.id}`.execute(rawDb(t));
    assert.equal(Number(rows.rows[0]!.times_redeemed), 0);

    // Renaming A's code onto a string only B uses is allowed as well.
    const bOnly = await b.post('/promotional-codes', { couponId: B.coupon.id, code: 'BEEONLY' });
    assert.equal(bOnly.status, 201);
    const renamed = await a.put('/promotional-codes', { promotionalCodeId: code.body.id, code: 'beeonly' });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    assert.equal((await b.get(`/promotional-codes${q({ code: 'BEEONLY' })}`)).body.id, bOnly.body.id);
  });

  it('a customer e-mail referred in B can be referred in A, and sales by that e-mail stay in each program', async () => {
    const mine = await a.get(`/affiliates${q({ email: sharedAffiliateEmail })}`);
    const referral = await a.post('/referrals', {
      name: 'Same Person',
      email: sharedCustomerEmail,
      referredUserExternalId: 'cus_same',
      affiliateId: mine.body.id,
    });
    assert.equal(referral.status, 201, JSON.stringify(referral.body));
    assert.notEqual(referral.body.id, B.referral.id);

    const bSalesBefore = await b.get('/sales');
    const sale = await a.post('/sales', { email: sharedCustomerEmail.toUpperCase(), totalEarned: 30 });
    assert.equal(sale.status, 201, JSON.stringify(sale.body));
    assert.equal(sale.body.referralId, referral.body.id);
    assert.equal(sale.body.affiliateId, mine.body.id);
    assert.deepEqual((await b.get('/sales')).body, bSalesBefore.body);

    const bSale = await b.post('/sales', { email: sharedCustomerEmail, totalEarned: 40 });
    assert.equal(bSale.status, 201);
    assert.equal(bSale.body.referralId, B.referral.id);
    assert.deepEqual(
      (await a.get(`/sales${q({ referralId: referral.body.id })}`)).body.map((s: { id: number }) => s.id),
      [sale.body.id],
    );
  });

  it('an Idempotency-Key used in B is free in A: never a replay of B\'s response, never a conflict', async () => {
    const body = { firstName: 'Idem', lastName: 'Potent', email: 'idem@example.com' };
    const first = await b.request('POST', '/affiliates', body, { 'idempotency-key': 'shared-key-1' });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    assert.equal((await b.request('POST', '/affiliates', body, { 'idempotency-key': 'shared-key-1' })).headers.get('idempotent-replayed'), 'true');

    // The same key and the same body in A: A's own request runs, B's stored response stays hidden.
    const same = await a.request('POST', '/affiliates', body, { 'idempotency-key': 'shared-key-1' });
    assert.equal(same.status, 201, JSON.stringify(same.body));
    assert.equal(same.headers.get('idempotent-replayed'), null);
    assert.equal(same.body.programId, a.programId);
    assert.notEqual(same.body.id, first.body.id);

    // The same key with another body in A is not "reused" either.
    const other = await a.request('POST', '/affiliates', { ...body, email: 'idem-other@example.com' }, { 'idempotency-key': 'shared-key-2' });
    assert.equal(other.status, 201);
    const bOther = await b.request('POST', '/affiliates', { ...body, email: 'idem-b@example.com' }, { 'idempotency-key': 'shared-key-2' });
    assert.equal(bOther.status, 201, JSON.stringify(bOther.body));
    assert.equal(bOther.body.programId, b.programId);
  });

  it('each program\'s affiliate counters only count its own referrals and sales', async () => {
    const mineA = await a.get(`/affiliates${q({ email: sharedAffiliateEmail })}`);
    const mineB = await b.get(`/affiliates${q({ email: sharedAffiliateEmail })}`);
    // A: one referral via the code, one direct; one sale of 30 at 20 %.
    assert.equal(mineA.body.numberOfReferredUsers, 2);
    assert.equal(mineA.body.totalCommissionEarned, 6);
    // B: the seeded referral; sales of 100 and 40 at 20 %.
    assert.equal(mineB.body.numberOfReferredUsers, 1);
    assert.equal(mineB.body.totalCommissionEarned, 28);
  });
});
