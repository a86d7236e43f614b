import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { sql } from 'kysely';
import type { Config } from '../../src/config.ts';
import { loadConfig } from '../../src/config.ts';
import { startServer } from '../../src/server.ts';
import { openDatabase } from '../../src/db/database.ts';
import { copyData } from '../../src/db/copy-data.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { apiClient, rawDb, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createTestDatabase, testDialect, type TestDialect } from '../helpers/test-database.ts';
import { createProgram } from '../../src/modules/programs/program.service.ts';
import { C0_AND_DEL, hostileJson, hostileQueryValue, hostileString, ODD_SUFFIXES, operationsOf, RawQuery, requestPlan, type Operation, type QueryValue, type RequestPlan } from './request-arbitraries.ts';
import { describeRequest, learnFrom, nextAddress, seedTenant, sendPlan, snapshotDifference, takeSnapshot, type SentRequest, type Snapshot, type Tenant, type World } from './fuzz-world.ts';

// Property-based fuzzing (docs/security.md#fuzzing) of every API operation in the OpenAPI
// document, the click endpoint, the tracking script, the anonymous forms (login, sign-up) and
// the logged-in new-program form, with generated, mostly hostile requests. Each must get an
// answer below 500; a 4xx must leave the program data exactly as it was; a success must leave
// other programs' data alone, and what a create answers must be what a read returns. What the
// SQLite run stored must copy to PostgreSQL with `tandem migrate-data`'s code. `npm test` runs a
// fixed seed; `npm run fuzz` runs many more with a random seed (FUZZ_SEED=<n> repeats a run,
// FUZZ_RUNS=<n> sets its length).

const SEED = process.env.FUZZ_SEED === undefined || process.env.FUZZ_SEED === '' ? 20_261_212 : process.env.FUZZ_SEED === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FUZZ_SEED);
const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);
const FORM_RUNS = Number(process.env.FUZZ_FORM_RUNS ?? Math.max(20, Math.round(RUNS / 6)));
/** FUZZ_VERBOSE=1 prints statuses per route at the end; FUZZ_VERBOSE=requests prints every request. */
const VERBOSE = process.env.FUZZ_VERBOSE;
/** A new pair of tenants after this many requests, so the compared rows stay few and snapshots fast. */
const REQUESTS_PER_WORLD = 300;

/** No limit may end the run: no API rate limit, client addresses from X-Forwarded-For, no worker changing rows meanwhile. */
const FUZZ_CONFIG: Partial<Config> = { rateLimitPerMinute: 0, trustProxy: ['127.0.0.1'], worker: false };

interface FuzzStats {
  seed: number;
  requests: number;
  routes: Set<string>;
  statuses: Map<number, number>;
  /** Every tenant the run made (a new pair every REQUESTS_PER_WORLD requests). */
  tenants: Tenant[];
}

function histogram(statuses: Map<number, number>): string {
  return [...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(' ');
}

function report(label: string, stats: FuzzStats, operations?: number, dialect: TestDialect = testDialect): void {
  console.log(
    `fuzz ${label} on ${dialect}: seed ${stats.seed}, ${stats.requests} requests, ${stats.routes.size}${operations ? ` of ${operations}` : ''} routes, statuses ${histogram(stats.statuses)}`,
  );
}

/** The operations to fuzz: everything under /api/v1/ in the document, the click endpoint, and the tracking script. */
async function fuzzedOperations(url: string): Promise<Operation[]> {
  const doc = await (await fetch(`${url}/api/v1/openapi.json`)).json();
  const operations = operationsOf(doc, ['/api/v1/', '/api/track/click']);
  // Hidden from the document, public on the internet: the script, and the click endpoint's CORS preflight.
  operations.push({ method: 'GET', path: '/tracker.js', query: [{ name: 'v', required: false, schema: { type: 'string' } }] });
  const click = operations.find((op) => op.method === 'POST' && op.path === '/api/track/click');
  assert.ok(click, 'the document lists POST /api/track/click');
  operations.push({ method: 'OPTIONS', path: click.path, query: click.query });
  return operations;
}

/** Programs a request may change: the one whose token it carries (API), or whose id it names (click report). */
function programsItMayChange(sent: SentRequest, world: World): Set<string> {
  const may = new Set<string>();
  for (const tenant of [world.a, world.b]) {
    if (sent.headers.authorization?.includes(tenant.client.token)) may.add(tenant.programId);
    if (!sent.url.includes('/api/v1/') && sent.url.toLowerCase().includes(tenant.programId)) may.add(tenant.programId);
  }
  return may;
}

/** A JSON API answer of 4xx is a problem body whose status is the HTTP status. */
function checkProblemBody(sent: SentRequest): string | null {
  const type = sent.responseHeaders.get('content-type') ?? '';
  if (!type.startsWith('application/problem+json')) return `a ${sent.status} answer with content type "${type}", not application/problem+json`;
  try {
    const body = JSON.parse(sent.responseText);
    if (body.status !== sent.status || typeof body.code !== 'string') return `a ${sent.status} problem body with status ${body.status} and code ${body.code}`;
  } catch {
    return `a ${sent.status} answer that is not JSON`;
  }
  return null;
}

/**
 * A success answers every top-level number it was sent as that number (float noise of the
 * client's own arithmetic aside): a value stored as something else, such as an amount of
 * 1e-300 stored as 0, shows up here.
 */
function checkEchoedNumbers(sent: SentRequest): string | null {
  if ((sent.method !== 'POST' && sent.method !== 'PUT') || sent.body === undefined || !sent.url.includes('/api/v1/')) return null;
  let request: unknown;
  let answer: unknown;
  try {
    [request, answer] = [JSON.parse(sent.body), JSON.parse(sent.responseText)];
  } catch {
    return null;
  }
  const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (!isObject(request) || !isObject(answer)) return null;
  for (const [field, value] of Object.entries(request)) {
    const echoed = answer[field];
    if (typeof value !== 'number' || typeof echoed !== 'number') continue;
    if (Math.abs(echoed - value) > 4 * Number.EPSILON * Math.abs(value)) return `${field} was sent as ${value} and answered as ${echoed}`;
  }
  return null;
}

/** Whether text holds a %-escape that decodes to nothing valid (`%zz`, a lone `%`, bytes that are no UTF-8). */
function brokenEncoding(text: string): boolean {
  try {
    decodeURIComponent(text);
    return false;
  } catch {
    return true;
  }
}

/**
 * A broken %-escape is refused before anything else: in the path always (the router cannot
 * read it; only headers too large for Node come first), in the query string of an API route as
 * soon as the token is known.
 */
function checkBrokenEncoding(sent: SentRequest, plan: RequestPlan): string | null {
  if (!sent.url.includes('/api/v1/')) return null;
  const { pathname, search } = new URL(sent.url);
  const refused = (brokenEncoding(pathname) && plan.auth !== 'huge') || (brokenEncoding(search.slice(1)) && plan.auth === 'token' && plan.pathSuffix === '');
  return refused && sent.status !== 400 ? `a broken %-escape answered ${sent.status}, not 400` : null;
}

/** Where a created resource is read back by id (webhooks are not: their secret is shown once). */
const READ_BACK: Record<string, string> = {
  '/api/v1/affiliates': '/affiliates',
  '/api/v1/referrals': '/referrals',
  '/api/v1/sales': '/sales',
  '/api/v1/coupons': '/coupons',
  '/api/v1/promotional-codes': '/promotional-codes',
};

/**
 * What a create answered is what was stored: reading it back by id returns the same body.
 * (A value the database stores differently, such as a lone surrogate, shows up here.)
 */
async function readBack(sent: SentRequest, path: string, tenant: Tenant): Promise<string | null> {
  const list = READ_BACK[path];
  if (sent.method !== 'POST' || sent.status !== 201 || !list) return null;
  const answered = JSON.parse(sent.responseText);
  const res = await tenant.client.get(`${list}?id=${encodeURIComponent(String(answered.id))}`);
  if (res.status !== 200) return `the created resource cannot be read back: GET ${list}?id=${answered.id} answered ${res.status}`;
  const [was, now] = [JSON.stringify(answered), JSON.stringify(res.body)];
  return was === now ? null : `the created resource reads back differently:\n  answered ${was.slice(0, 1500)}\n  stored   ${now.slice(0, 1500)}`;
}

async function fuzzApi(t: TestServer, seed: number, runs: number): Promise<FuzzStats & { operations: number }> {
  const operations = await fuzzedOperations(t.url);
  assert.ok(operations.length >= 30, `the document lists ${operations.length} operations`);
  const db = rawDb(t);
  const stats: FuzzStats = { seed, requests: 0, routes: new Set(), statuses: new Map(), tenants: [] };
  let world: World | undefined;
  let sinceNewWorld = 0;
  let before: Snapshot | undefined;
  const perRoute = new Map<string, Map<number, number>>();
  const failure = (what: string, sent: SentRequest, plan: RequestPlan) => new Error(`${what}\n${describeRequest(sent, plan)}\n(seed ${seed}; repeat with FUZZ_SEED=${seed} FUZZ_RUNS=${runs})`);

  const property = fc.asyncProperty(
    fc.oneof(...operations.map((op) => requestPlan(op))),
    async (plan) => {
      if (!world || sinceNewWorld >= REQUESTS_PER_WORLD) {
        world = { a: await seedTenant(t, 'USD'), b: await seedTenant(t, 'JPY') };
        stats.tenants.push(world.a, world.b);
        sinceNewWorld = 0;
        before = undefined;
      }
      sinceNewWorld++;
      const programIds = [world.a.programId, world.b.programId];
      before ??= await takeSnapshot(db, programIds);
      let sent: SentRequest;
      try {
        sent = await sendPlan(t.url, plan, world);
      } catch (error) {
        throw new Error(`${plan.operation.method} ${plan.operation.path} got no answer: ${String(error)} (${String((error as Error).cause ?? '')})\nmutations: ${plan.mutations.join('; ')}`);
      }
      stats.requests++;
      stats.routes.add(`${plan.operation.method} ${plan.operation.path}`);
      stats.statuses.set(sent.status, (stats.statuses.get(sent.status) ?? 0) + 1);
      if (VERBOSE) {
        const route = `${plan.operation.method} ${plan.operation.path}`;
        const byStatus = perRoute.get(route) ?? new Map<number, number>();
        byStatus.set(sent.status, (byStatus.get(sent.status) ?? 0) + 1);
        perRoute.set(route, byStatus);
        if (VERBOSE === 'requests') console.log(`${sent.status} ${route} [${plan.mutations.join('; ')}] ${sent.body?.slice(0, 300) ?? ''} → ${sent.responseText.slice(0, 300)}`);
      }
      const after = await takeSnapshot(db, programIds);
      if (sent.status >= 500) throw failure(`a ${sent.status} answer`, sent, plan);
      const encoding = checkBrokenEncoding(sent, plan);
      if (encoding) throw failure(encoding, sent, plan);
      if (sent.status >= 400) {
        const changed = snapshotDifference(before, after, programIds, true);
        if (changed) throw failure(`a ${sent.status} answer that changed data:\n${changed}`, sent, plan);
        if (sent.url.includes('/api/')) {
          const wrong = checkProblemBody(sent);
          if (wrong) throw failure(wrong, sent, plan);
        }
      } else {
        const may = programsItMayChange(sent, world);
        const changed = snapshotDifference(before, after, programIds.filter((id) => !may.has(id)), false);
        if (changed) throw failure(`a ${sent.status} answer that changed another program's data:\n${changed}`, sent, plan);
      }
      if (sent.status < 300) {
        const echo = checkEchoedNumbers(sent);
        if (echo) throw failure(`a ${sent.status} answer that changed a number: ${echo}`, sent, plan);
        for (const tenant of [world.a, world.b]) {
          if (sent.headers.authorization !== `Bearer ${tenant.client.token}`) continue;
          learnFrom(sent, plan.operation.path, tenant);
          const stored = await readBack(sent, plan.operation.path, tenant);
          if (stored) throw failure(stored, sent, plan);
        }
      }
      before = after;
    },
  );
  await fc.assert(property, { seed, numRuns: runs, endOnFailure: true });
  for (const [route, byStatus] of [...perRoute].sort()) console.log(`  ${route}: ${histogram(byStatus)}`);
  return { ...stats, operations: operations.length };
}

// ---------------------------------------------------------------- the anonymous forms

const KNOWN_EMAIL = 'fuzz-known@example.com';
const KNOWN_PASSWORD = 'a long password';
// eslint-disable-next-line no-control-regex -- looking for control characters is the point
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;
/** What no e-mail or domain may hold: any whitespace or control character (free text may hold tab and line breaks). */
// eslint-disable-next-line no-control-regex -- looking for control characters is the point
const SPACE_OR_CONTROL = /[\s\u0000-\u001f\u007f]/;

type FieldValue = { kind: 'fresh' | 'known' | 'known-padded' | 'right' | 'short' } | { kind: 'hostile'; value: unknown } | { kind: 'long'; length: number };

/** An e-mail-shaped value (a password too) past every bound: 254 characters for e-mails, 1,024 for passwords, the 64 KiB body. */
const longField = fc.constantFrom(242, 243, 1100, 70_000).map((length): FieldValue => ({ kind: 'long', length }));

/** Dashboard pages whose query strings become list filters, searches and pagers. */
const DASHBOARD_PAGES = ['', '/sales', '/referrals', '/affiliates', '/coupons', '/webhooks', '/keys', '/settings'];

const formPlan = fc.record({
  // login and signup are anonymous; program is the dashboard's "new program" form, logged in,
  // the one form here that writes what it is sent (names and domains).
  form: fc.constantFrom('login' as const, 'login' as const, 'signup' as const, 'signup' as const, 'program' as const, 'program' as const, 'list' as const, 'list' as const),
  // list: a logged-in GET of a dashboard page with one hostile query parameter.
  list: fc.record({ page: fc.constantFrom(...DASHBOARD_PAGES), param: fc.constantFrom('affiliate', 'q', 'from', 'to', 'cursor', 'done', 'x'), value: hostileQueryValue }),
  // Plausible text with one odd character appended (a control character, a lone surrogate…) in one field.
  odd: fc.record({ field: fc.constantFrom('none', 'first', 'second'), suffix: fc.constantFrom(...ODD_SUFFIXES, ...C0_AND_DEL) }),
  next: fc.option(
    fc.oneof(
      fc.constantFrom('/dashboard', '//evil.example', '/\\evil.example', 'https://evil.example', 'http://tandem.test/dashboard', '/%2F%2Fevil.example', 'javascript:alert(1)', '/\u0000x', '\t/dashboard', '/dashboard\r\nSet-Cookie: x=1', '///evil', '/.//evil', '/..//evil'),
      hostileString.map((s) => s.slice(0, 3000)),
    ),
  ),
  csrf: fc.oneof({ weight: 6, arbitrary: fc.constant('valid') }, { weight: 6, arbitrary: fc.constantFrom('missing', 'forged', 'repeated-valid-first', 'repeated-forged-first', 'stale', 'empty') }),
  email: fc.oneof({ weight: 5, arbitrary: fc.constantFrom<FieldValue>({ kind: 'fresh' }, { kind: 'fresh' }, { kind: 'known' }, { kind: 'known' }, { kind: 'known-padded' }) }, { weight: 2, arbitrary: hostileJson.map((value): FieldValue => ({ kind: 'hostile', value })) }, { weight: 1, arbitrary: longField }),
  password: fc.oneof({ weight: 5, arbitrary: fc.constantFrom<FieldValue>({ kind: 'right' }, { kind: 'right' }, { kind: 'right' }, { kind: 'short' }) }, { weight: 2, arbitrary: hostileJson.map((value): FieldValue => ({ kind: 'hostile', value })) }, { weight: 1, arbitrary: longField }),
  repeat: fc.constantFrom('none', 'none', 'email', 'password', 'next'),
  encoding: fc.oneof({ weight: 4, arbitrary: fc.constant('form') }, { weight: 3, arbitrary: fc.constant('json') }, { weight: 3, arbitrary: fc.constantFrom('text', 'multipart', 'none', 'garbage') }),
});

/** A cookie jar of one: the session or anonymous CSRF cookies the login page sets. */
function cookiesOf(response: Response): string {
  return response.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .join('; ');
}

/** Logs the known user in over HTTP; returns the cookies to send and the session's CSRF token. */
async function logInOverHttp(url: string): Promise<{ cookie: string; csrf: string }> {
  const address = nextAddress();
  const page = await fetch(`${url}/login`, { headers: { 'x-forwarded-for': address } });
  const anonymous = cookiesOf(page);
  const form = new URLSearchParams({ _csrf: /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!, email: KNOWN_EMAIL, password: KNOWN_PASSWORD, next: '' });
  const login = await fetch(`${url}/login`, { method: 'POST', redirect: 'manual', headers: { 'x-forwarded-for': address, cookie: anonymous, 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() });
  assert.equal(login.status, 303, 'the known user logs in');
  const cookie = [anonymous, cookiesOf(login)].filter(Boolean).join('; ');
  const home = await fetch(`${url}/dashboard`, { headers: { 'x-forwarded-for': address, cookie } });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await home.text())?.[1];
  assert.ok(csrf, 'the dashboard has a form with a CSRF token');
  return { cookie, csrf };
}

async function fuzzForms(t: TestServer, seed: number, runs: number): Promise<FuzzStats> {
  const db = rawDb(t);
  const dashboard = await logInOverHttp(t.url);
  const programs = async () => JSON.stringify(await db.selectFrom('programs').select(['id', 'name', 'domain', 'currency', 'default_commission_rate']).orderBy('id').execute());
  const stats: FuzzStats = { seed, requests: 0, routes: new Set(), statuses: new Map(), tenants: [] };
  let fresh = 0;
  let staleToken = 'stale';
  const users = async () => JSON.stringify(await db.selectFrom('users').select(['id', 'email', 'email_key', 'password_hash']).orderBy('id').execute());
  const loggedIn = async () => JSON.stringify(await db.selectFrom('sessions').select(['id_hash', 'user_id']).where('user_id', 'is not', null).orderBy('id_hash').execute());
  const count = (status: number, route: string) => {
    stats.requests++;
    stats.routes.add(route);
    stats.statuses.set(status, (stats.statuses.get(status) ?? 0) + 1);
  };

  const owner = await db.selectFrom('users').select('id').where('email_key', '=', KNOWN_EMAIL).executeTakeFirstOrThrow();
  const listed = await createProgram(db, { ownerUserId: owner.id, name: 'Fuzz lists', domain: 'fuzz-lists.example.com' });

  const property = fc.asyncProperty(formPlan, async (plan) => {
    if (plan.form === 'program') return fuzzProgramForm(plan);
    if (plan.form === 'list') return fuzzDashboardList(plan.list);
    const address = nextAddress();
    const pagePath = `/${plan.form}${plan.next === null ? '' : `?next=${encodeURIComponent(Buffer.from(plan.next, 'utf8').toString('utf8'))}`}`;
    const page = await fetch(`${t.url}${pagePath}`, { headers: { 'x-forwarded-for': address }, redirect: 'manual' });
    const pageText = await page.text();
    count(page.status, `GET /${plan.form}`);
    assert.ok(page.status < 500, `GET ${pagePath} answered ${page.status}: ${pageText.slice(0, 500)}`);
    const cookie = cookiesOf(page);
    let token = '';
    if (page.status === 200) {
      token = /name="_csrf" value="([^"]+)"/.exec(pageText)?.[1] ?? '';
      // The page never offers to go anywhere but a path of this site after logging in.
      const next = /name="next" value="([^"]*)"/.exec(pageText)?.[1];
      assert.ok(next !== undefined && next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/\\'), `GET ${pagePath} offers next=${next}`);
    }

    const value = (field: FieldValue): unknown => {
      switch (field.kind) {
        case 'fresh':
          return `fuzz-${++fresh}-${process.pid}@example.com`;
        case 'known':
          return KNOWN_EMAIL;
        case 'known-padded':
          return ` ${KNOWN_EMAIL.toUpperCase()} `;
        case 'right':
          return KNOWN_PASSWORD;
        case 'short':
          return 'short';
        case 'hostile':
          return field.value;
        case 'long':
          return `${'a'.repeat(field.length)}@example.com`;
      }
    };
    const csrf: Record<string, unknown[]> = {
      valid: [token],
      missing: [],
      forged: ['x'.repeat(token.length || 43)],
      'repeated-valid-first': [token, 'forged'],
      'repeated-forged-first': ['forged', token],
      stale: [staleToken],
      empty: [''],
    };
    const oddly = (v: unknown, field: string) => (plan.odd.field === field && typeof v === 'string' ? `${v}${plan.odd.suffix}` : v);
    const fields: [string, unknown][] = [
      ...csrf[plan.csrf]!.map((v): [string, unknown] => ['_csrf', v]),
      ['email', oddly(value(plan.email), 'first')],
      ['password', oddly(value(plan.password), 'second')],
      ['next', plan.next ?? ''],
    ];
    if (plan.repeat !== 'none') fields.push([plan.repeat, plan.repeat === 'next' ? '//evil.example' : 'second@example.com']);
    const { body, type } = encodeForm(fields, plan.encoding);
    const [usersBefore, sessionsBefore] = [await users(), await loggedIn()];
    const headers: Record<string, string> = { 'x-forwarded-for': address };
    if (cookie) headers.cookie = cookie;
    if (type) headers['content-type'] = type;
    const response = await fetch(`${t.url}/${plan.form}`, { method: 'POST', headers, body, redirect: 'manual' });
    const answer = await response.text();
    count(response.status, `POST /${plan.form}`);
    const what = () => `POST /${plan.form} (${plan.encoding}, csrf ${plan.csrf}) ${JSON.stringify(body)?.slice(0, 1500)}\nanswer: ${response.status} ${answer.slice(0, 800)}\n(seed ${seed})`;
    assert.ok(response.status < 500, what());
    const [usersAfter, sessionsAfter] = [await users(), await loggedIn()];
    if (response.status !== 303) {
      assert.equal(usersAfter, usersBefore, `a refused ${plan.form} changed users: ${what()}`);
      assert.equal(sessionsAfter, sessionsBefore, `a refused ${plan.form} logged a session in: ${what()}`);
    } else {
      // Success: a sign-up adds exactly one user; a login adds none. Either logs one session in.
      const added = (JSON.parse(usersAfter) as unknown[]).length - (JSON.parse(usersBefore) as unknown[]).length;
      assert.equal(added, plan.form === 'signup' ? 1 : 0, what());
      assert.equal((JSON.parse(sessionsAfter) as unknown[]).length, (JSON.parse(sessionsBefore) as unknown[]).length + 1, what());
      const location = response.headers.get('location') ?? '';
      assert.ok(location.startsWith('/') && !location.startsWith('//') && !location.startsWith('/\\'), `redirected to ${location}: ${what()}`);
    }
    for (const user of JSON.parse(usersAfter) as { email: string }[]) {
      assert.ok(!SPACE_OR_CONTROL.test(user.email), `a user was stored with the e-mail ${JSON.stringify(user.email)}: ${what()}`);
      assert.ok(user.email.length <= 254, `a user was stored with a ${user.email.length}-character e-mail: ${what()}`);
    }
    if (token) staleToken = token;
  });

  /**
   * A logged-in GET of a dashboard page with a hostile query parameter: never a 5xx, and a
   * control character or a broken %-escape is the 400 page (PostgreSQL refused NUL: a 500).
   */
  async function fuzzDashboardList(list: { page: string; param: string; value: QueryValue }): Promise<void> {
    const value = list.value instanceof RawQuery ? list.value.text : encodeURIComponent(Buffer.from(String(list.value), 'utf8').toString('utf8'));
    const path = `/dashboard/programs/${listed.id}${list.page}?${list.param}=${value}`;
    const response = await fetch(`${t.url}${path}`, { headers: { 'x-forwarded-for': nextAddress(), cookie: dashboard.cookie }, redirect: 'manual' });
    const answer = await response.text();
    count(response.status, `GET /dashboard/programs/:id${list.page}`);
    const what = `GET ${path}\nanswer: ${response.status} ${answer.slice(0, 800)}\n(seed ${seed})`;
    assert.ok(response.status < 500, what);
    let decoded: string | null;
    try {
      decoded = decodeURIComponent(value);
    } catch {
      decoded = null;
    }
    if (decoded === null || CONTROL.test(decoded)) assert.equal(response.status, 400, what);
  }

  /** The logged-in "new program" form: the same encodings and CSRF variants, with hostile names and domains. */
  async function fuzzProgramForm(plan: typeof formPlan extends fc.Arbitrary<infer P> ? P : never): Promise<void> {
    let name = plan.email.kind === 'hostile' ? plan.email.value : plan.email.kind === 'known-padded' ? '  Fuzz program  ' : `Fuzz ${++fresh}`;
    let domain = plan.password.kind === 'hostile' ? plan.password.value : plan.password.kind === 'short' ? 'x' : `fuzz${fresh}.example.com`;
    if (plan.odd.field === 'first' && typeof name === 'string') name = `${name}${plan.odd.suffix}`;
    if (plan.odd.field === 'second' && typeof domain === 'string') domain = `${domain}${plan.odd.suffix}`;
    const csrf: Record<string, unknown[]> = {
      valid: [dashboard.csrf],
      missing: [],
      forged: ['x'.repeat(dashboard.csrf.length)],
      'repeated-valid-first': [dashboard.csrf, 'forged'],
      'repeated-forged-first': ['forged', dashboard.csrf],
      stale: [staleToken],
      empty: [''],
    };
    const fields: [string, unknown][] = [...csrf[plan.csrf]!.map((v): [string, unknown] => ['_csrf', v]), ['name', name], ['domain', domain], ['currency', 'USD'], ['commissionRate', '20']];
    if (plan.repeat !== 'none') fields.push(['name', 'Second']);
    const { body, type } = encodeForm(fields, plan.encoding);
    const before = await programs();
    const headers: Record<string, string> = { 'x-forwarded-for': nextAddress(), cookie: dashboard.cookie };
    if (type) headers['content-type'] = type;
    const response = await fetch(`${t.url}/dashboard/programs`, { method: 'POST', headers, body, redirect: 'manual' });
    const answer = await response.text();
    count(response.status, 'POST /dashboard/programs');
    const what = `POST /dashboard/programs (${plan.encoding}, csrf ${plan.csrf}) ${JSON.stringify(body)?.slice(0, 1500)}\nanswer: ${response.status} ${answer.slice(0, 800)}\n(seed ${seed})`;
    assert.ok(response.status < 500, what);
    const after = await programs();
    if (response.status !== 303) assert.equal(after, before, `a refused form changed programs: ${what}`);
    for (const program of JSON.parse(after) as { name: string; domain: string }[]) {
      assert.ok(!CONTROL.test(program.name) && !SPACE_OR_CONTROL.test(program.domain), `a program was stored as ${JSON.stringify(program)}: ${what}`);
    }
  }

  await fc.assert(property, { seed, numRuns: runs, endOnFailure: true });
  return stats;
}

/** A form's fields in one of the encodings a client might send: form-encoded, JSON (non-text values kept), text, multipart, or garbage. */
function encodeForm(fields: [string, unknown][], encoding: string): { body?: string; type?: string } {
  const text = (v: unknown) => Buffer.from(typeof v === 'string' ? v : (JSON.stringify(v) ?? ''), 'utf8').toString('utf8');
  switch (encoding) {
    case 'form':
      return { body: fields.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(text(v))}`).join('&'), type: 'application/x-www-form-urlencoded' };
    case 'json': {
      // Non-text values where the form has text: arrays for repeated fields, numbers, objects.
      const object: Record<string, unknown> = {};
      for (const [k, v] of fields) object[k] = k in object ? [object[k], v].flat() : v;
      return { body: JSON.stringify(object), type: 'application/json' };
    }
    case 'text':
      return { body: fields.map(([k, v]) => `${k}=${text(v)}`).join('\n'), type: 'text/plain' };
    case 'multipart':
      return { body: fields.map(([k, v]) => `------x\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${text(v)}\r\n`).join('') + '------x--\r\n', type: 'multipart/form-data; boundary=----x' };
    case 'garbage':
      return { body: '%%%&=&==&%zz=%00&_csrf', type: 'application/x-www-form-urlencoded' };
    default:
      return {};
  }
}

// ---------------------------------------------------------------- migrate-data

const LIST_PATHS = ['/me', '/affiliates?limit=1000', '/links?limit=1000', '/referrals?limit=1000', '/sales?limit=1000', '/coupons?limit=1000', '/promotional-codes?limit=1000', '/webhooks?limit=1000', '/events?limit=1000'];

async function listAnswers(url: string, tenants: Tenant[]): Promise<Map<string, string>> {
  const answers = new Map<string, string>();
  for (const tenant of tenants) {
    const client = apiClient(url, tenant.client.token, tenant.programId);
    for (const path of LIST_PATHS) {
      const res = await client.get(path);
      assert.equal(res.status, 200, `GET ${path}: ${JSON.stringify(res.body).slice(0, 500)}`);
      answers.set(`${tenant.programId} ${path}`, JSON.stringify(res.body));
    }
  }
  return answers;
}

/**
 * Copies the fuzzed SQLite database with `tandem migrate-data`'s code into a fresh PostgreSQL
 * database: the copy must succeed, every table's count match, and the API answer the same.
 * Closes `source`'s server (its database is kept for the caller to drop).
 */
async function copyToPostgres(source: TestServer, tenants: Tenant[]): Promise<Record<string, number>> {
  const answers = await listAnswers(source.url, tenants);
  await source.server.close();
  const target = await createTestDatabase('postgres');
  try {
    const from = openDatabase({ databaseUrl: source.database.url });
    const to = openDatabase({ databaseUrl: target.url });
    let tables: Record<string, number>;
    try {
      ({ tables } = await copyData(from, to));
      for (const [table, copied] of Object.entries(tables)) {
        const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}`.execute(from.db);
        assert.equal(copied, Number(rows[0]!.n), `table ${table}`);
      }
    } finally {
      await Promise.all([from.close(), to.close()]);
    }
    const server = await startServer(loadConfig({}, { port: 0, host: '127.0.0.1', databaseUrl: target.url, logLevel: 'silent', siteUrl: 'http://tandem.test', ...FUZZ_CONFIG }));
    try {
      const copied = await listAnswers(server.url, tenants);
      for (const [key, answer] of answers) assert.equal(copied.get(key), answer, `GET ${key} differs after the copy to PostgreSQL`);
    } finally {
      await server.close();
    }
    return tables;
  } finally {
    await target.drop();
  }
}

// ---------------------------------------------------------------- the tests

async function startFuzzServer(dialect: TestDialect = testDialect): Promise<TestServer> {
  const t = await startTestServer(FUZZ_CONFIG, {}, dialect);
  await createUser(rawDb(t), { email: KNOWN_EMAIL, password: KNOWN_PASSWORD });
  return t;
}

/** Closes a fuzz server whose server may already be closed (after a copy). */
async function closeFuzzServer(t: TestServer | undefined, serverClosed: boolean): Promise<void> {
  if (!t) return;
  if (serverClosed) await t.database.drop();
  else await t.close();
}

describe(`fuzzing: every API operation, the click endpoint and the web forms (seed ${SEED}, ${RUNS} runs)`, () => {
  let t: TestServer;
  let serverClosed = false;
  let apiStats: FuzzStats | undefined;

  before(async () => {
    t = await startFuzzServer();
  });

  after(async () => {
    await closeFuzzServer(t, serverClosed);
  });

  it('API: never a 5xx; a 4xx changes no program data; a success changes no other program', async () => {
    const stats = await fuzzApi(t, SEED, RUNS);
    apiStats = stats;
    report('API', stats, stats.operations);
    // The generator reaches deep code: many requests succeed, many are refused, every operation is tried.
    const ok = [...stats.statuses].filter(([s]) => s < 300).reduce((n, [, c]) => n + c, 0);
    assert.ok(ok >= stats.requests * 0.1, `only ${ok} of ${stats.requests} requests succeeded`);
    assert.ok(ok <= stats.requests * 0.9, `${ok} of ${stats.requests} requests succeeded: the mutations do not bite`);
    if (RUNS >= stats.operations * 10) assert.equal(stats.routes.size, stats.operations, 'every operation was tried');
  });

  it('every write route with an Idempotency-Key: never a 5xx, and the same request again replays the first answer', async () => {
    // The random run sends keys on some writes only; here every POST and PUT of the document
    // gets well-formed requests with a key of its own until one succeeds, each sent twice.
    const operations = (await fuzzedOperations(t.url)).filter((op) => op.path.startsWith('/api/v1/') && (op.method === 'POST' || op.method === 'PUT'));
    const world: World = { a: await seedTenant(t, 'USD'), b: await seedTenant(t, 'JPY') };
    const neverSucceeded: string[] = [];
    let keys = 0;
    for (const op of operations) {
      const route = `${op.method} ${op.path}`;
      const plans = fc.sample(requestPlan(op), { seed: SEED, numRuns: 200 }).filter((plan) => plan.mutations.length === 0 && plan.actor === 'a');
      let succeeded = false;
      for (const plan of plans.slice(0, 12)) {
        const keyed: RequestPlan = { ...plan, idempotencyKey: { kind: 'odd', value: `sweep-${process.pid}-${++keys}` } };
        const first = await sendPlan(t.url, keyed, world);
        assert.ok(first.status < 500, `${route} with an Idempotency-Key: ${first.status}\n${describeRequest(first, keyed)}`);
        const again = await sendPlan(t.url, keyed, world);
        assert.equal(again.status, first.status, `${route}: the replay answered another status\n${describeRequest(again, keyed)}`);
        if (first.status < 300) {
          assert.equal(again.responseHeaders.get('idempotent-replayed'), 'true', `${route}: the second answer is a replay`);
          learnFrom(first, op.path, world.a);
          succeeded = true;
          break;
        }
      }
      if (!succeeded) neverSucceeded.push(route);
    }
    // Most write routes are reached with a success (a few need state the sample did not find).
    assert.ok(neverSucceeded.length <= operations.length / 4, `write routes never answered 2xx: ${neverSucceeded.join(', ')}`);
  });

  it('forms (login, sign-up, and the logged-in new-program form): never a 5xx; a refused form writes nothing and logs no session in', async () => {
    const stats = await fuzzForms(t, SEED, FORM_RUNS);
    report('forms', stats);
    assert.ok((stats.statuses.get(303) ?? 0) > 0, 'some logins or sign-ups succeed');
  });

  // Whatever the SQLite run accepted, migrate-data copies to PostgreSQL: here when this (SQLite)
  // leg has a PostgreSQL server; otherwise the PostgreSQL leg makes a SQLite run of its own below.
  it('migrate-data copies what the SQLite run accepted to PostgreSQL', { skip: !(testDialect === 'sqlite' && process.env.TEST_DATABASE_URL) && 'needs TEST_DATABASE_URL in the SQLite leg (the PostgreSQL leg checks it)' }, async () => {
    assert.ok(apiStats, 'the API run finished');
    serverClosed = true;
    const tables = await copyToPostgres(t, apiStats.tenants);
    console.log(`fuzz migrate-data: copied ${Object.values(tables).reduce((a, b) => a + b, 0)} rows from the fuzzed SQLite database to PostgreSQL`);
  });
});

describe('fuzzing: the SQLite run copies to PostgreSQL (tandem migrate-data)', { skip: testDialect !== 'postgres' && 'runs in the PostgreSQL leg' }, () => {
  let s: TestServer | undefined;
  let serverClosed = false;

  after(async () => {
    await closeFuzzServer(s, serverClosed);
  });

  it('copies every row the fuzzer got stored in SQLite, and the API answers the same', async () => {
    s = await startFuzzServer('sqlite');
    const stats = await fuzzApi(s, SEED, RUNS);
    report('API (to copy)', stats, stats.operations, 'sqlite');
    serverClosed = true;
    const tables = await copyToPostgres(s, stats.tenants);
    console.log(`fuzz migrate-data: copied ${Object.values(tables).reduce((a, b) => a + b, 0)} rows from the fuzzed SQLite database to PostgreSQL`);
  });
});
