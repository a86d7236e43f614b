// One input discipline for both dialects (issue 12 item 2): control characters, identifiers,
// strict date-times, nesting depth, signed cursors bound to their list, and repeated or
// non-text form fields. Every refusal is a 4xx with the contract's body and writes nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { newAffiliate, newReferral, unique, uniqueEmail } from '../helpers/fixtures.ts';
import { csrfOf, WebClient } from '../helpers/web-client.ts';
import { isStrictDateTime } from '../../src/http/validation.ts';
import { MAX_BODY_DEPTH } from '../../src/http/input-guard.ts';
import { createUser } from '../../src/modules/users/user.service.ts';

let t: TestServer;
let api: ApiClient;
let other: ApiClient;

before(async () => {
  t = await startTestServer();
  api = await t.createTenant();
  other = await t.createTenant();
});
after(() => t?.close());

/** Rows the program holds in the tables a refused write could touch. */
async function footprint(programId: string) {
  const db = rawDb(t);
  const count = async (table: 'affiliates' | 'referrals' | 'sales' | 'events') =>
    Number((await db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).where('program_id', '=', programId).executeTakeFirstOrThrow()).n);
  return { affiliates: await count('affiliates'), referrals: await count('referrals'), sales: await count('sales'), events: await count('events') };
}

describe('control characters', () => {
  it('refuses NUL and other C0 codes in any body string or key, with a pointer, and writes nothing', async () => {
    const before = await footprint(api.programId);
    for (const [body, pointer] of [
      [{ firstName: 'A\u0000da', lastName: 'L', email: uniqueEmail() }, '#/firstName'],
      [{ firstName: 'Ada', lastName: 'L\u001b[31m', email: uniqueEmail() }, '#/lastName'],
      [{ firstName: 'Ada', lastName: 'L', email: `a\u0000${uniqueEmail()}` }, '#/email'],
      [{ firstName: 'Ada', lastName: 'L', email: uniqueEmail(), ['bad\u0001key']: 1 }, '#/bad\u0001key'],
      [{ firstName: 'Ada', lastName: 'L', email: uniqueEmail(), nested: { deeper: ['ok', 'no\u007f'] } }, '#/nested/deeper/1'],
    ] as const) {
      assertProblem(await api.post('/affiliates', body), 422, 'validation_failed', pointer);
    }
    assert.deepEqual(await footprint(api.programId), before);
  });

  // Found by the fuzzer: "\ud800" was answered back by the 201 but stored as three U+FFFD by
  // SQLite and one by PostgreSQL.
  it('refuses a lone surrogate in a body string or key, and writes nothing', async () => {
    const before = await footprint(api.programId);
    for (const [body, pointer] of [
      ['{"firstName":"Ada","lastName":"L\\ud800","email":"lone1@example.com"}', '#/lastName'],
      ['{"firstName":"\\udc00Ada","lastName":"L","email":"lone2@example.com"}', '#/firstName'],
      ['{"firstName":"Ada","lastName":"L","email":"lone3@example.com","k\\ud83d":1}', '#/k\ud83d'],
    ] as const) {
      assertProblem(await api.request('POST', '/affiliates', body), 422, 'validation_failed', pointer);
    }
    assert.deepEqual(await footprint(api.programId), before);
    const paired = await api.request('POST', '/affiliates', `{"firstName":"Ada \\ud83d\\ude00","lastName":"L","email":"${uniqueEmail()}"}`);
    assert.equal(paired.status, 201, 'a whole pair (an emoji) is fine');
    assert.equal(paired.body.firstName, 'Ada 😀');
  });

  it('refuses them in query strings too (no 5xx on PostgreSQL)', async () => {
    assertProblem(await api.get('/affiliates?email=a%00b@example.com'), 422, 'validation_failed', '#/email');
    assertProblem(await api.get('/referrals?externalId=cus%00x'), 422, 'validation_failed', '#/externalId');
    assertProblem(await api.get('/promotional-codes?code=A%00B'), 422, 'validation_failed', '#/code');
  });

  it('allows tab and line breaks in free text (names) but not in identifiers', async () => {
    const affiliate = await newAffiliate(api);
    const ok = await api.post('/referrals', { name: 'Line\tBreak', email: uniqueEmail(), referredUserExternalId: unique('cus'), affiliateId: affiliate.id });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    assertProblem(
      await api.post('/referrals', { name: 'X', email: uniqueEmail(), referredUserExternalId: 'cus\n1', affiliateId: affiliate.id }),
      422,
      'validation_failed',
      '#/referredUserExternalId',
    );
    assertProblem(await api.post('/sales', { referralId: affiliate.id, email: uniqueEmail(), name: 'N', totalEarned: 1, externalInvoiceId: 'in\t1' }), 422, 'validation_failed', '#/externalInvoiceId');
  });
});

describe('nesting depth', () => {
  it(`refuses bodies nested deeper than ${MAX_BODY_DEPTH} levels with a 400, also with an Idempotency-Key`, async () => {
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    const body = `{"firstName":"A","lastName":"B","email":"${uniqueEmail()}","x":${deep}}`;
    const res = await api.request('POST', '/affiliates', body, { 'idempotency-key': unique('deep') });
    assertProblem(res, 400, 'bad_request');
    const shallow = { firstName: 'A', lastName: 'B', email: uniqueEmail(), x: JSON.parse('['.repeat(MAX_BODY_DEPTH - 2) + ']'.repeat(MAX_BODY_DEPTH - 2)) };
    assert.equal((await api.post('/affiliates', shallow)).status, 201, 'within the bound is fine');
  });
});

describe('date-times', () => {
  it('accepts RFC 3339 with an offset, years 1970 to 9999, and refuses the rest', () => {
    for (const ok of ['2026-11-23T10:00:00Z', '2026-11-23T10:00:00.123+02:00', '1970-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z', '2024-02-29T00:00:00Z']) {
      assert.ok(isStrictDateTime(ok), ok);
    }
    for (const bad of ['2026-12-31T23:59:60Z', '0000-01-01T00:00:00Z', '1969-12-31T23:59:59Z', '2025-02-29T00:00:00Z', '2026-11-23T10:00:00', '2026-11-23', '10000-01-01T00:00:00Z', '2026-13-01T00:00:00Z', '1970-01-01T00:30:00+01:00']) {
      assert.ok(!isStrictDateTime(bad), bad);
    }
  });

  it('answers 422 for a leap second or year 0, never 500', async () => {
    assertProblem(await api.get('/affiliates?createdAfter=2016-12-31T23:59:60Z'), 422, 'validation_failed', '#/createdAfter');
    assertProblem(await api.post('/coupons', { name: 'Y0', couponType: 'PERCENTAGE', percentOff: 5, redeemBy: '0000-01-01T00:00:00Z' }), 422, 'validation_failed', '#/redeemBy');
  });
});

describe('cursors', () => {
  it('are signed and bound to their list: forged, tampered and foreign cursors are 400 invalid_cursor', async () => {
    for (let i = 0; i < 3; i++) await newReferral(api, { affiliateId: (await newAffiliate(api)).id });
    const first = await api.get('/affiliates?limit=1');
    const next = new URL(/<([^>]+)>/.exec(first.headers.get('link')!)![1]!);
    const cursor = next.searchParams.get('cursor')!;
    assert.equal((await api.get(`/affiliates?limit=1&cursor=${cursor}`)).status, 200, 'our own cursor works');

    const [payload, mac] = cursor.split('.');
    const forgedPayload = Buffer.from(JSON.stringify(['9999-01-01T00:00:00.000Z', "x' or 1=1"])).toString('base64url');
    for (const bad of [
      `${forgedPayload}.${mac}`,
      `${payload}.AAAAAAAAAAAAAAAAAAAAAA`,
      payload!,
      Buffer.from(JSON.stringify(['2026-01-01T00:00:00Z', 1])).toString('base64url'),
      'not a cursor',
    ]) {
      assertProblem(await api.get(`/affiliates?limit=1&cursor=${encodeURIComponent(bad)}`), 400, 'invalid_cursor');
    }
    assertProblem(await api.get(`/referrals?limit=1&cursor=${cursor}`), 400, 'invalid_cursor');
    assertProblem(await other.get(`/affiliates?limit=1&cursor=${cursor}`), 400, 'invalid_cursor');
  });
});

describe('web forms', () => {
  it('take the first value of a repeated field and refuse control characters, with a 4xx page', async () => {
    const web = new WebClient(t.url);
    const login = await web.get('/login');
    const csrf = csrfOf(login.text);
    const repeated = await web.request('POST', '/login', `_csrf=${encodeURIComponent(csrf)}&email=a%40example.com&email=b%40example.com&password=x&password=y`);
    assert.ok(repeated.status >= 200 && repeated.status < 500, `repeated fields: ${repeated.status}`);
    const nul = await web.request('POST', '/signup', `_csrf=${encodeURIComponent(csrf)}&email=a%00b%40example.com&password=a+long+password`);
    assert.ok(nul.status >= 400 && nul.status < 500, `NUL: ${nul.status}`);
    const users = await rawDb(t).selectFrom('users').select('email').execute();
    assert.ok(!users.some((u) => u.email.includes('\u0000')));
  });

  // Found by the fuzzer: only form-encoded bodies were checked, and a JSON body reaches the same
  // routes, so a logged-in user could store a NUL (SQLite) or get a 500 (PostgreSQL).
  it('hold a JSON body to the same rule as a form-encoded one', async () => {
    const email = uniqueEmail('owner');
    await createUser(rawDb(t), { email, password: 'a long password' });
    const page = await fetch(`${t.url}/login`);
    const anonymous = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const loggedIn = await fetch(`${t.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: anonymous, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrfOf(await page.text()), email, password: 'a long password' }).toString(),
    });
    assert.equal(loggedIn.status, 303, 'logged in');
    const cookie = [anonymous, ...loggedIn.headers.getSetCookie().map((c) => c.split(';')[0])].join('; ');
    const csrf = csrfOf(await (await fetch(`${t.url}/dashboard`, { headers: { cookie } })).text());
    const before = await rawDb(t).selectFrom('programs').select('id').execute();
    for (const name of ['Evil\u0000Name', 'Evil\u0011', 'Lone \ud800']) {
      const res = await fetch(`${t.url}/dashboard/programs`, { method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/json' }, body: JSON.stringify({ _csrf: csrf, name, domain: 'evil.example.com', currency: 'USD' }) });
      assert.equal(res.status, 422, `${JSON.stringify(name)}: ${res.status}`);
    }
    assert.deepEqual(await rawDb(t).selectFrom('programs').select('id').execute(), before, 'no program was created');
  });
});
