// CSRF is app-wide: every unsafe route of the browser side needs the session's token unless it
// opts out explicitly. The routes are read from the sources, so a form added tomorrow is
// covered by this test without anyone remembering to add it here.
// Before login there is no session: the login and sign-up forms' token is bound to a signed,
// stateless cookie, so anonymous visitors write no row (issue 12: 3,000 rows in 4 s).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { sql } from 'kysely';
import { createUser } from '../../src/modules/users/user.service.ts';
import { createProgram } from '../../src/modules/programs/program.service.ts';
import { addIntegration } from '../../src/modules/integrations/integration.service.ts';
import { startServer } from '../../src/server.ts';
import { rawDb, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { csrfOf, WebClient } from '../helpers/web-client.ts';

const WEB = 'src/web';
/** Routes that opt out, and why; a new opt-out must be added here on purpose. */
const OPTED_OUT: Record<string, 'in-handler' | 'exempt'> = {
  '/connect/:integration/programs': 'in-handler', // the logged-out user is sent to log in first
  '/connect/:integration/authorize': 'in-handler',
  '/api/:integration/token': 'exempt', // called by the tool's server, not a browser form
  // A signed-in affiliate's forms: the token must be bound to the portal session (test/web/portal-security.test.ts).
  '/portal/:slug/logout': 'in-handler',
  '/portal/:slug/payout-email': 'in-handler',
  '/portal/:slug/links': 'in-handler',
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Every POST/PUT/PATCH/DELETE route of the web side, with its full path and declared opt-out. */
function unsafeRoutes(): { path: string; csrf: string | undefined }[] {
  const routes: { path: string; csrf: string | undefined }[] = [];
  for (const file of sourceFiles(WEB)) {
    const text = readFileSync(file, 'utf8');
    // Dashboard plugins other than the program list are mounted under one program.
    const inProgram = relative(WEB, file).startsWith('dashboard/') && !file.endsWith('programs.routes.ts');
    for (const match of text.matchAll(/app\.(post|put|patch|delete)(?:<[^>]*>)?\(\s*'([^']+)'(,\s*\{[^]*?\}\s*,)?/g)) {
      const options = match[3] ?? '';
      const csrf = /csrf:\s*'([a-z-]+)'/.exec(options)?.[1];
      routes.push({ path: (inProgram ? '/dashboard/programs/:programId' : '') + match[2], csrf });
    }
  }
  return routes;
}

async function rowCounts(t: TestServer): Promise<Record<string, number>> {
  const db = rawDb(t);
  const counts: Record<string, number> = {};
  for (const table of await db.introspection.getTables()) {
    const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table.name)}`.execute(db);
    counts[table.name] = Number(rows[0]!.n);
  }
  return counts;
}

describe('CSRF on every unsafe page route', () => {
  let t: TestServer;
  let owner: WebClient;
  let programId: string;

  before(async () => {
    t = await startTestServer({ worker: false });
    const db = rawDb(t);
    const email = `csrf-${Date.now()}@example.com`;
    const user = await createUser(db, { email, password: 'a long password' });
    programId = (await createProgram(db, { ownerUserId: user.id, name: 'Guarded', domain: 'guarded.example.com' })).id;
    owner = new WebClient(t.url);
    await owner.logIn(email, 'a long password');
  });
  after(() => t.close());

  it('finds the routes, and only the known ones opt out', () => {
    const routes = unsafeRoutes();
    assert.ok(routes.length >= 25, `found ${routes.length} routes`);
    const optedOut = Object.fromEntries(routes.filter((r) => r.csrf !== undefined).map((r) => [r.path, r.csrf]));
    assert.deepEqual(optedOut, OPTED_OUT);
  });

  it('refuses each protected route without the token with 403, changing nothing', async () => {
    const before = await rowCounts(t);
    for (const { path, csrf } of unsafeRoutes()) {
      if (csrf !== undefined) continue;
      const url = path
        .replace(':programId', programId)
        .replace(/:[A-Za-z]+Id/g, () => randomUUID())
        .replace(/:[A-Za-z]+/g, 'zapier');
      // Fields a real form would carry, without _csrf (and once with a wrong one).
      const forms: Record<string, string>[] = [{ name: 'x', email: 'x@example.com', url: 'https://example.com/' }, { _csrf: 'forged', name: 'x' }];
      for (const form of forms) {
        const res = await owner.post(url, form);
        assert.equal(res.status, 403, `POST ${path} without a valid CSRF token: ${res.status}`);
        assert.match(res.text, /This form has expired/);
      }
    }
    assert.deepEqual(await rowCounts(t), before, 'no row written or deleted');
    // Still logged in: the refused logout did not log out.
    assert.equal((await owner.get('/account/password')).status, 200);
  });
});

describe('CSRF before login: a signed anonymous cookie, no session row', () => {
  const PASSWORD = 'a long password';
  const CALLBACK = 'https://tool.example/callback';
  let t: TestServer;
  let email: string;

  /** One request as a browser would send it, with exactly the cookies given. */
  async function send(method: 'GET' | 'POST', path: string, cookies: string[] = [], form?: Record<string, string> | string) {
    const headers: Record<string, string> = {};
    if (cookies.length > 0) headers.cookie = cookies.join('; ');
    if (form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await fetch(new URL(path, t.url), { method, headers, body: typeof form === 'string' ? form : form && new URLSearchParams(form).toString(), redirect: 'manual' });
    return { status: response.status, text: await response.text(), location: response.headers.get('location'), setCookies: response.headers.getSetCookie() };
  }

  /** The Set-Cookie line for `name`, if the response has one. */
  const setCookie = (lines: string[], name: string) => lines.find((line) => line.startsWith(`${name}=`));
  /** `name=value` of a Set-Cookie line, as a browser sends it back. */
  const pair = (line: string) => line.split(';')[0]!;

  /** A new anonymous visitor: the cookie a page set and its form's token. */
  async function anonymousVisitor(path = '/login'): Promise<{ cookie: string; csrf: string }> {
    const page = await send('GET', path);
    assert.equal(page.status, 200);
    const line = setCookie(page.setCookies, 'tandem_anon');
    assert.ok(line, 'the page sets the anonymous cookie');
    return { cookie: pair(line), csrf: csrfOf(page.text) };
  }

  const sessionCount = async () => Number((await rawDb(t).selectFrom('sessions').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

  before(async () => {
    t = await startTestServer({ worker: false });
    const db = rawDb(t);
    email = `anonymous-csrf-${Date.now()}@example.com`;
    const user = await createUser(db, { email, password: PASSWORD });
    await createProgram(db, { ownerUserId: user.id, name: 'Connected', domain: 'connected.example.com' });
    await addIntegration(db, { name: 'zapier', displayName: 'Zapier', redirectUris: [CALLBACK] });
  });
  after(() => t.close());

  it('writes no row for 200 anonymous visits to the login, sign-up and connect-flow login pages', async () => {
    const before = await rowCounts(t);
    const choose = `/connect/zapier/choose-affiliate-program?${new URLSearchParams({ state: 'xyz', redirect_uri: CALLBACK, response_type: 'code' })}`;
    for (let i = 0; i < 200; i++) {
      // A visitor with a session cookie that names no session is anonymous too.
      const cookies = i % 10 === 0 ? [`tandem_session=${randomBytes(32).toString('base64url')}`] : [];
      const login = await send('GET', '/login', cookies);
      assert.equal(login.status, 200);
      assert.equal(setCookie(login.setCookies, 'tandem_session'), undefined, 'no session before login');
      const anonymous = pair(setCookie(login.setCookies, 'tandem_anon') ?? assert.fail('the login page sets the anonymous cookie'));
      // The same visitor on the sign-up page: the same cookie, nothing set again.
      const signup = await send('GET', '/signup', [...cookies, anonymous]);
      assert.equal(signup.status, 200);
      assert.deepEqual(signup.setCookies.filter((line) => /^tandem_/.test(line)), []);
      assert.equal(csrfOf(signup.text), csrfOf(login.text), 'one token per visitor');
      // The connect flow sends a logged-out visitor to log in, and back afterwards.
      const connect = await send('GET', choose);
      assert.equal(connect.status, 303);
      const connectLogin = await send('GET', connect.location!);
      assert.equal(connectLogin.status, 200);
      assert.match(connectLogin.text, /name="next" value="\/connect\/zapier\/choose-affiliate-program\?/);
    }
    assert.deepEqual(await rowCounts(t), before, 'no row written by anonymous visitors');
  });

  it('makes the anonymous cookie HttpOnly, SameSite=Lax and Path=/; Secure on an https site, as the session cookie', async () => {
    const line = setCookie((await send('GET', '/login')).setCookies, 'tandem_anon')!;
    assert.match(line, /; HttpOnly/i);
    assert.match(line, /; SameSite=Lax/i);
    assert.match(line, /; Path=\//i);
    assert.doesNotMatch(line, /; Secure/i, 'an http site cannot use a Secure cookie');
    const https = await startTestServer({ siteUrl: 'https://affiliates.example.com', worker: false });
    try {
      const page = await fetch(`${https.url}/signup`);
      const anonymous = setCookie(page.headers.getSetCookie(), 'tandem_anon') ?? '';
      const signUp = await fetch(`${https.url}/signup`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: pair(anonymous), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: csrfOf(await page.text()), email: `secure-${Date.now()}@example.com`, password: PASSWORD, next: '' }).toString(),
      });
      assert.equal(signUp.status, 303);
      const session = setCookie(signUp.headers.getSetCookie(), 'tandem_session') ?? '';
      for (const cookie of [anonymous, session]) {
        assert.match(cookie, /; Secure/i, cookie);
        assert.match(cookie, /; HttpOnly/i, cookie);
        assert.match(cookie, /; SameSite=Lax/i, cookie);
      }
    } finally {
      await https.close();
    }
  });

  it('refuses a missing token, a forged cookie and token, and another visitor\'s token, writing nothing', async () => {
    const a = await anonymousVisitor('/login');
    const b = await anonymousVisitor('/signup');
    assert.notEqual(a.csrf, b.csrf);
    // A forger who knows the scheme but not the instance key, and one who uses the session scheme.
    const nonce = randomBytes(32).toString('base64url');
    const guessedKey = randomBytes(32);
    const hmac = (key: Buffer | string, text: string) => createHmac('sha256', key).update(text).digest('base64url');
    const forgedCookie = `tandem_anon=${nonce}.${hmac(guessedKey, `anonymous-cookie:${nonce}`)}`;
    const forgedToken = hmac(hmac(guessedKey, `anonymous-csrf:${nonce}`), 'csrf');
    const plain = randomBytes(32).toString('base64url');
    const cases: [string, string[], Record<string, string> | string][] = [
      ['no token', [a.cookie], {}],
      ['a wrong token', [a.cookie], { _csrf: 'forged' }],
      ['a repeated field whose first value is wrong', [a.cookie], `_csrf=${b.csrf}&_csrf=${a.csrf}`],
      ["another visitor's token", [b.cookie], { _csrf: a.csrf }],
      ['a token without its cookie', [], { _csrf: a.csrf }],
      ['a token with an unknown session cookie', [`tandem_session=${plain}`], { _csrf: a.csrf }],
      ['a forged cookie and token', [forgedCookie], { _csrf: forgedToken }],
      ['an unsigned cookie and a token derived from it', [`tandem_anon=${plain}`], { _csrf: hmac(plain, 'csrf') }],
    ];
    const before = await rowCounts(t);
    for (const path of ['/login', '/signup']) {
      for (const [what, cookies, csrf] of cases) {
        const fields = new URLSearchParams({ email: `forged-${randomUUID()}@example.com`, password: PASSWORD, next: '' }).toString();
        const response = await send('POST', path, cookies, `${new URLSearchParams(csrf).toString()}&${fields}`.replace(/^&/, ''));
        assert.equal(response.status, 403, `POST ${path} with ${what}: ${response.status}`);
        assert.match(response.text, /This form has expired/);
        assert.deepEqual(response.setCookies.filter((line) => /^tandem_/.test(line)), [], `POST ${path} with ${what} sets no cookie`);
      }
    }
    assert.deepEqual(await rowCounts(t), before, 'no row written: no session, user or attempt counted');
    // The genuine pair passes the check (and the wrong password is then answered as such).
    assert.equal((await send('POST', '/login', [a.cookie], { _csrf: a.csrf, email, password: 'not the password', next: '' })).status, 401);
  });

  it('treats a tampered anonymous cookie as absent', async () => {
    const a = await anonymousVisitor();
    // The same visitor again: the cookie is kept and the token is stable.
    const again = await send('GET', '/login', [a.cookie]);
    assert.equal(setCookie(again.setCookies, 'tandem_anon'), undefined);
    assert.equal(csrfOf(again.text), a.csrf);
    const [name, value] = a.cookie.split('=') as [string, string];
    const [nonce, mac] = value.split('.') as [string, string];
    const flip = (text: string) => text.slice(0, -1) + (text.endsWith('A') ? 'B' : 'A');
    const tampered = [`${nonce}.${flip(mac)}`, `${flip(nonce)}.${mac}`, nonce, `${value}.${mac}`, `${value}x`];
    for (const bad of tampered) {
      const cookie = `${name}=${bad}`;
      const page = await send('GET', '/login', [cookie]);
      const fresh = setCookie(page.setCookies, 'tandem_anon');
      assert.ok(fresh && pair(fresh) !== cookie, `a new cookie replaces ${bad}`);
      assert.notEqual(csrfOf(page.text), a.csrf);
      const response = await send('POST', '/login', [cookie], { _csrf: a.csrf, email, password: PASSWORD, next: '' });
      assert.equal(response.status, 403, `the token of the genuine cookie does not work with ${bad}`);
    }
  });

  it('keeps a cookie valid across processes: the key is the instance\'s, shared through the database', async () => {
    const a = await anonymousVisitor();
    const other = await startServer(t.config);
    try {
      const response = await fetch(`${other.url}/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: a.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: a.csrf, email, password: 'not the password', next: '' }).toString(),
      });
      assert.equal(response.status, 401, 'the CSRF check passed on the other process');
    } finally {
      await other.close();
    }
  });

  it('logs in and signs up end to end: one session row each, the anonymous cookie goes, then only the session token counts', async () => {
    const sessions = await sessionCount();
    const newcomer = await anonymousVisitor('/signup');
    const signUp = await send('POST', '/signup', [newcomer.cookie], { _csrf: newcomer.csrf, email: `newcomer-${Date.now()}@example.com`, password: PASSWORD, next: '/dashboard' });
    assert.equal(signUp.status, 303, signUp.text.slice(0, 300));
    assert.equal(signUp.location, '/dashboard');
    assert.equal(await sessionCount(), sessions + 1);
    assert.match(setCookie(signUp.setCookies, 'tandem_anon') ?? '', /Max-Age=0|Expires=Thu, 01 Jan 1970/i, 'the anonymous cookie is cleared');
    const newcomerSession = pair(setCookie(signUp.setCookies, 'tandem_session')!);
    assert.equal((await send('GET', '/dashboard', [newcomerSession])).status, 200);

    const visitor = await anonymousVisitor('/login');
    const login = await send('POST', '/login', [visitor.cookie], { _csrf: visitor.csrf, email, password: PASSWORD, next: '' });
    assert.equal(login.status, 303);
    assert.equal(await sessionCount(), sessions + 2);
    assert.match(setCookie(login.setCookies, 'tandem_anon') ?? '', /Max-Age=0|Expires=Thu, 01 Jan 1970/i);
    const session = pair(setCookie(login.setCookies, 'tandem_session')!);
    // A browser that kept the anonymous cookie: with a session, only the session's token counts.
    const stale = await send('POST', '/logout', [session, visitor.cookie], { _csrf: visitor.csrf });
    assert.equal(stale.status, 403);
    const passwordPage = await send('GET', '/account/password', [session, visitor.cookie]);
    assert.equal(passwordPage.status, 200, 'still logged in');
    const sessionToken = csrfOf(passwordPage.text);
    assert.notEqual(sessionToken, visitor.csrf);
    // Nor does the session's token work for the anonymous cookie alone.
    assert.equal((await send('POST', '/login', [visitor.cookie], { _csrf: sessionToken, email, password: PASSWORD })).status, 403);
    const logout = await send('POST', '/logout', [session], { _csrf: sessionToken });
    assert.equal(logout.status, 303);
    assert.equal(await sessionCount(), sessions + 1);
  });

  it('rotates the session at login: the old session id stops working', async () => {
    const client = new WebClient(t.url);
    const first = await client.logIn(email, PASSWORD);
    const firstSession = pair(setCookie(first.headers.getSetCookie(), 'tandem_session')!);
    const sessions = await sessionCount();
    // Logging in again from the logged-in session (its own token).
    const token = csrfOf((await client.get('/account/password')).text);
    const again = await client.post('/login', { _csrf: token, email, password: PASSWORD, next: '' });
    assert.equal(again.status, 303);
    const secondSession = pair(setCookie(again.headers.getSetCookie(), 'tandem_session')!);
    assert.notEqual(secondSession, firstSession);
    assert.equal(await sessionCount(), sessions, 'the old session row is gone, the new one is in');
    assert.equal((await send('GET', '/dashboard', [firstSession])).status, 302, 'the old id is logged out');
    assert.equal((await send('GET', '/dashboard', [secondSession])).status, 200);
  });

  it("takes a logged-out user of the connect flow through login and back to the tool's request", async () => {
    const client = new WebClient(t.url);
    const choose = `/connect/zapier/choose-affiliate-program?${new URLSearchParams({ state: 'round trip', redirect_uri: CALLBACK })}`;
    const toLogin = await client.get(choose);
    assert.equal(toLogin.status, 303);
    const next = new URL(toLogin.location!, t.url).searchParams.get('next')!;
    assert.equal(next, choose);
    const loginPage = await client.get(toLogin.location!);
    const login = await client.post('/login', { _csrf: csrfOf(loginPage.text), email, password: PASSWORD, next });
    assert.equal(login.status, 303);
    assert.equal(login.location, choose);
    const page = await client.get(choose);
    assert.equal(page.status, 200);
    assert.match(page.text, /Connected/);
    assert.notEqual(csrfOf(page.text), csrfOf(loginPage.text), 'the consent form carries the session token');
  });
});
