// Logging in as an attacker on the internet would try it. Login, sign-up and password change
// are limited per client address and per account, counted in the database and only for
// requests that pass the CSRF check, so nobody can guess passwords quickly or lock everyone
// else out. The server sits behind a simulated balancer: TRUST_PROXY names 127.0.0.1 (where
// the test connects from), and each simulated client sends its own address in X-Forwarded-For.
// Sessions end on time: the server's clock is moved forward instead of waiting.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rawDb, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, PASSWORD, uniqueEmail } from '../helpers/browser-session.ts';
import { csrfOf, WebClient, type WebResponse } from '../helpers/web-client.ts';
import { ACCOUNT_LIMIT, ADDRESS_LIMIT } from '../../src/web/attempt-throttle.ts';
import { raceNote } from '../helpers/test-database.ts';
import { ConfigError, parseTrustProxy } from '../../src/config.ts';

let clockOffsetMs = 0;
let test: TestServer;
let addressCount = 0;

/** A visitor at a public address of its own, as the balancer reports it. */
function visitorAt(address = `203.0.113.${++addressCount}`): WebClient {
  return new WebClient(test.url, { 'x-forwarded-for': address });
}

/** Loads the login page (for its CSRF token) and submits it. */
async function attemptLogin(client: WebClient, email: string, password: string): Promise<WebResponse> {
  const page = await client.get('/login');
  return client.post('/login', { _csrf: csrfOf(page.text), email, password, next: '' });
}

function assertThrottled(response: WebResponse, message: RegExp): void {
  assert.equal(response.status, 429, response.text.slice(0, 300));
  assert.match(response.text, message);
  const retryAfter = Number(response.headers.get('retry-after'));
  assert.ok(retryAfter >= 1 && retryAfter <= ACCOUNT_LIMIT.windowMs / 1000, `Retry-After in seconds: ${response.headers.get('retry-after')}`);
}

before(async () => {
  test = await startTestServer({ trustProxy: ['127.0.0.1'] }, { clock: () => new Date(Date.now() + clockOffsetMs) });
});
after(() => test?.close());

describe('login throttling behind a proxy', () => {
  it('does not count requests without a valid CSRF token, however many', async () => {
    const attacker = visitorAt();
    const counters = () => rawDb(test).selectFrom('attempt_counters').selectAll().orderBy('key').execute();
    const before = await counters();
    for (let i = 0; i < ADDRESS_LIMIT.max * 3; i++) {
      const response = await attacker.post('/login', { email: 'someone@example.com', password: 'guess' });
      assert.equal(response.status, 403);
    }
    assert.deepEqual(await counters(), before, 'a forged form counts for nothing and writes nothing');
  });

  it('slows a burst from one address with a clear message, and lets a user elsewhere log in', async () => {
    const user = await BrowserSession.signUp(test.url, uniqueEmail('victim'));
    const attacker = visitorAt('198.51.100.66');
    for (let i = 0; i < ADDRESS_LIMIT.max; i++) {
      const response = await attemptLogin(attacker, `guess${i}@example.com`, 'wrong password');
      assert.equal(response.status, 401, `attempt ${i + 1} is answered normally`);
    }
    assertThrottled(await attemptLogin(attacker, user.email, PASSWORD), /Too many attempts from your network\. Try again in (\d+ seconds?|1 minute)\./);
    // Another client of the same balancer is not affected.
    const elsewhere = await attemptLogin(visitorAt(), user.email, PASSWORD);
    assert.equal(elsewhere.status, 303);
    // Sign-up counts apart from login, so the attacker's burst did not block it either.
    const sameAddress = visitorAt('198.51.100.66');
    const page = await sameAddress.get('/signup');
    const signUp = await sameAddress.post('/signup', { _csrf: csrfOf(page.text), email: uniqueEmail('new'), password: PASSWORD, next: '' });
    assert.equal(signUp.status, 303);
    // The window passes; the address may try again.
    clockOffsetMs += ADDRESS_LIMIT.windowMs;
    assert.equal((await attemptLogin(attacker, user.email, PASSWORD)).status, 303);
  });

  it('stops guesses on one account spread over many addresses, until the window ends', async () => {
    const user = await BrowserSession.signUp(test.url, uniqueEmail('target'));
    for (let i = 0; i < ACCOUNT_LIMIT.max; i++) {
      assert.equal((await attemptLogin(visitorAt(), user.email.toUpperCase(), `guess ${i}`)).status, 401);
    }
    // Even the right password is refused now, without being checked, from any address.
    assertThrottled(await attemptLogin(visitorAt(), user.email, PASSWORD), /Too many failed attempts for this account\. Try again in 15 minutes\./);
    // Other accounts are not affected.
    const other = await BrowserSession.signUp(test.url, uniqueEmail('other'));
    assert.equal((await attemptLogin(visitorAt(), other.email, PASSWORD)).status, 303);
    // The user's own session still works: the limit guards logging in, not being logged in.
    assert.equal((await user.get('/dashboard')).status, 200);
    clockOffsetMs += ACCOUNT_LIMIT.windowMs;
    assert.equal((await attemptLogin(visitorAt(), user.email, PASSWORD)).status, 303);
  });

  it('lets through at most the limit of guesses fired at one account at once' + raceNote, async () => {
    const user = await BrowserSession.signUp(test.url, uniqueEmail('parallel'));
    // Each guesser loads its form first, so the guesses themselves go out together.
    const guessers = await Promise.all(
      Array.from({ length: ACCOUNT_LIMIT.max * 2 }, async (_, i) => {
        const client = visitorAt();
        return { client, csrf: csrfOf((await client.get('/login')).text), password: `guess ${i}` };
      }),
    );
    const results = await Promise.all(guessers.map(({ client, csrf, password }) => client.post('/login', { _csrf: csrf, email: user.email, password, next: '' })));
    const statuses = results.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 401).length, ACCOUNT_LIMIT.max, JSON.stringify(statuses));
    assert.equal(statuses.filter((s) => s === 429).length, ACCOUNT_LIMIT.max);
    clockOffsetMs += ACCOUNT_LIMIT.windowMs;
  });

  it("refused sign-ups with a user's e-mail do not lock the user out", async () => {
    const user = await BrowserSession.signUp(test.url, uniqueEmail('taken'));
    for (let i = 0; i < ACCOUNT_LIMIT.max + 2; i++) {
      const client = visitorAt();
      const page = await client.get('/signup');
      const response = await client.post('/signup', { _csrf: csrfOf(page.text), email: user.email, password: PASSWORD, next: '' });
      assert.equal(response.status, 422, 'the e-mail is taken');
    }
    assert.equal((await attemptLogin(visitorAt(), user.email, PASSWORD)).status, 303);
  });

  it('counts wrong current passwords on the password form against the account', async () => {
    const user = await BrowserSession.signUp(test.url, uniqueEmail('pw'));
    for (let i = 0; i < ACCOUNT_LIMIT.max; i++) {
      const response = await user.submit('/account/password', '/account/password', { current: `wrong ${i}`, password: 'another long password' });
      // The per-address limit (10 a minute) would stop this loop first; move past its window.
      clockOffsetMs += ADDRESS_LIMIT.windowMs;
      assert.equal(response.status, 401);
    }
    const blocked = await user.submit('/account/password', '/account/password', { current: PASSWORD, password: 'another long password' });
    assertThrottled(blocked, /Too many failed attempts for this account/);
    clockOffsetMs += ACCOUNT_LIMIT.windowMs;
    assert.equal((await attemptLogin(visitorAt(), user.email, PASSWORD)).status, 303, 'the password was not changed');
  });
});

describe('which address is the client', () => {
  it('TRUST_PROXY reads off, a hop count, or addresses and ranges, and refuses anything else', () => {
    for (const off of [undefined, '', 'off', 'false', '0']) assert.equal(parseTrustProxy(off), false);
    assert.equal(parseTrustProxy('2'), 2);
    assert.deepEqual(parseTrustProxy('10.0.0.0/8, 192.0.2.7,loopback,fd00::/8'), ['10.0.0.0/8', '192.0.2.7', 'loopback', 'fd00::/8']);
    for (const bad of ['true', '10.0.0.0/33', '999.1.1.1', 'balancer.internal', '10.0.0.1/8/1', '::1/129']) {
      assert.throws(() => parseTrustProxy(bad), ConfigError, bad);
    }
  });

  it('without TRUST_PROXY, X-Forwarded-For is ignored: a forged header does not escape the limit', async () => {
    const direct = await startTestServer();
    try {
      let last: WebResponse | undefined;
      for (let i = 0; i <= ADDRESS_LIMIT.max; i++) {
        const client = new WebClient(direct.url, { 'x-forwarded-for': `192.0.2.${i + 1}` });
        last = await client.post('/login', { _csrf: csrfOf((await client.get('/login')).text), email: `x${i}@example.com`, password: 'nope' });
      }
      assert.equal(last!.status, 429, 'every attempt came from 127.0.0.1');
    } finally {
      await direct.close();
    }
  });

  it('with a hop count, the address the balancer saw is used, not what the client wrote before it', async () => {
    const behindOne = await startTestServer({ trustProxy: 1 });
    try {
      let last: WebResponse | undefined;
      for (let i = 0; i <= ADDRESS_LIMIT.max; i++) {
        // The client forges the first entry; the balancer appends the address it saw.
        const client = new WebClient(behindOne.url, { 'x-forwarded-for': `10.9.9.${i + 1}, 198.51.100.7` });
        last = await client.post('/login', { _csrf: csrfOf((await client.get('/login')).text), email: `y${i}@example.com`, password: 'nope' });
      }
      assert.equal(last!.status, 429);
      const other = new WebClient(behindOne.url, { 'x-forwarded-for': '198.51.100.8' });
      const response = await other.post('/login', { _csrf: csrfOf((await other.get('/login')).text), email: 'z@example.com', password: 'nope' });
      assert.equal(response.status, 401, 'another client of the balancer is not limited');
    } finally {
      await behindOne.close();
    }
  });
});

describe('session lifetime (the clock is moved, not waited for)', () => {
  it('a session ends after 14 days; the user is sent to log in again', async () => {
    const user = await BrowserSession.signUp(test.url, uniqueEmail('lifetime'));
    clockOffsetMs += 13 * 86_400_000;
    assert.equal((await user.get('/dashboard')).status, 200, 'still logged in on day 13');
    clockOffsetMs += 86_400_000 + 1000;
    const expired = await user.get('/dashboard');
    assert.equal(expired.status, 302);
    assert.equal(expired.location, '/login?next=%2Fdashboard');
  });
});
