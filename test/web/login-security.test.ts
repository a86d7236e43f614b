// Logging in as an attacker on the internet would try it. Login, sign-up and password change
// are limited per client address, logins per device cookie or else per account, and password
// changes per account, counted in the database and only for requests that pass the CSRF
// check, so nobody can guess passwords quickly or lock anyone else out. The server sits behind a simulated balancer: TRUST_PROXY names 127.0.0.1 (where
// the test connects from), and each simulated client sends its own address in X-Forwarded-For.
// Sessions end on time: the server's clock is moved forward instead of waiting.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rawDb, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, PASSWORD, uniqueEmail } from '../helpers/browser-session.ts';
import { csrfOf, WebClient, type WebResponse } from '../helpers/web-client.ts';
import { ADDRESS_LIMIT, DEVICE_LOGIN_LIMIT, PASSWORD_CHANGE_LIMIT, UNTRUSTED_LOGIN_LIMIT } from '../../src/web/attempt-throttle.ts';
import { DEVICE_COOKIE, DEVICE_COOKIE_DAYS } from '../../src/web/device-cookie.ts';
import { createUser, MAX_EMAIL_LENGTH, MAX_PASSWORD_LENGTH } from '../../src/modules/users/user.service.ts';
import { ApiError } from '../../src/domain/errors.ts';
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
  assert.ok(retryAfter >= 1 && retryAfter <= UNTRUSTED_LOGIN_LIMIT.windowMs / 1000, `Retry-After in seconds: ${response.headers.get('retry-after')}`);
}

const UNTRUSTED_FULL = /Too many failed logins to this account from devices it was not used on; a device you logged in on before can still log in\. Try again in \d+ minutes?\./;

/** Signs up a new account in `client`'s browser (which keeps the device cookie it is given); returns the e-mail. */
async function signUpIn(client: WebClient, email = uniqueEmail('owner')): Promise<string> {
  const page = await client.get('/signup');
  const response = await client.post('/signup', { _csrf: csrfOf(page.text), email, password: PASSWORD, next: '' });
  assert.equal(response.status, 303, response.text.slice(0, 300));
  const cookie = response.headers.getSetCookie().find((c) => c.startsWith(`${DEVICE_COOKIE}=`));
  assert.ok(cookie, 'sign-up gives the browser a device cookie');
  for (const attribute of [/; HttpOnly/i, /; SameSite=Lax/i, /; Path=\/login/i, new RegExp(`; Max-Age=${DEVICE_COOKIE_DAYS * 86_400}`, 'i')]) assert.match(cookie, attribute);
  return email;
}

async function logOut(client: WebClient): Promise<void> {
  const dashboard = await client.get('/dashboard');
  assert.equal((await client.post('/logout', { _csrf: csrfOf(dashboard.text) })).status, 303);
}

/** A visitor at an address of its own whose browser sends `deviceCookie` (copied, altered or forged). */
function visitorWithCookie(deviceCookie: string): WebClient {
  const client = visitorAt();
  client.setCookie(DEVICE_COOKIE, deviceCookie);
  return client;
}

/** Fails logins of `email` from `count` browsers at new addresses without a device cookie (a stranger's guesses). */
async function strangerGuesses(email: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) assert.equal((await attemptLogin(visitorAt(), email, `stranger's guess ${i}`)).status, 401, `guess ${i + 1}`);
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

  it('counts an IPv6 network (/64) as one address: hopping within it does not escape the limit', async () => {
    const user = await BrowserSession.signUp(test.url, uniqueEmail('v6'));
    for (let i = 0; i < ADDRESS_LIMIT.max; i++) {
      const response = await attemptLogin(visitorAt(`2001:db8:aa:bb::${(i + 1).toString(16)}`), `guess-v6-${i}@example.com`, 'wrong password');
      assert.equal(response.status, 401, `attempt ${i + 1} is answered normally`);
    }
    assertThrottled(await attemptLogin(visitorAt('2001:db8:aa:bb:ffff::1'), user.email, PASSWORD), /Too many attempts from your network/);
    // The next /64 is another network.
    assert.equal((await attemptLogin(visitorAt('2001:db8:aa:bc::1'), user.email, PASSWORD)).status, 303);
    clockOffsetMs += ADDRESS_LIMIT.windowMs;
  });

  it('stops guesses on one account spread over many addresses, until the window ends', async () => {
    const user = await BrowserSession.signUp(test.url, uniqueEmail('target'));
    for (let i = 0; i < UNTRUSTED_LOGIN_LIMIT.max; i++) {
      assert.equal((await attemptLogin(visitorAt(), user.email.toUpperCase(), `guess ${i}`)).status, 401);
    }
    // Even the right password is refused now, without being checked, from any address whose
    // browser has not logged in to the account before.
    assertThrottled(await attemptLogin(visitorAt(), user.email, PASSWORD), /Too many failed logins to this account .* Try again in 15 minutes\./);
    // Other accounts are not affected.
    const other = await BrowserSession.signUp(test.url, uniqueEmail('other'));
    assert.equal((await attemptLogin(visitorAt(), other.email, PASSWORD)).status, 303);
    // The user's own session still works: the limit guards logging in, not being logged in.
    assert.equal((await user.get('/dashboard')).status, 200);
    clockOffsetMs += UNTRUSTED_LOGIN_LIMIT.windowMs;
    assert.equal((await attemptLogin(visitorAt(), user.email, PASSWORD)).status, 303);
  });

  it('lets through at most the limit of guesses fired at one account at once' + raceNote, async () => {
    const user = await BrowserSession.signUp(test.url, uniqueEmail('parallel'));
    // Each guesser loads its form first, so the guesses themselves go out together.
    const guessers = await Promise.all(
      Array.from({ length: UNTRUSTED_LOGIN_LIMIT.max * 2 }, async (_, i) => {
        const client = visitorAt();
        return { client, csrf: csrfOf((await client.get('/login')).text), password: `guess ${i}` };
      }),
    );
    const results = await Promise.all(guessers.map(({ client, csrf, password }) => client.post('/login', { _csrf: csrf, email: user.email, password, next: '' })));
    const statuses = results.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 401).length, UNTRUSTED_LOGIN_LIMIT.max, JSON.stringify(statuses));
    assert.equal(statuses.filter((s) => s === 429).length, UNTRUSTED_LOGIN_LIMIT.max);
    clockOffsetMs += UNTRUSTED_LOGIN_LIMIT.windowMs;
  });

  it("refused sign-ups with a user's e-mail do not lock the user out", async () => {
    const user = await BrowserSession.signUp(test.url, uniqueEmail('taken'));
    for (let i = 0; i < UNTRUSTED_LOGIN_LIMIT.max + 2; i++) {
      const client = visitorAt();
      const page = await client.get('/signup');
      const response = await client.post('/signup', { _csrf: csrfOf(page.text), email: user.email, password: PASSWORD, next: '' });
      assert.equal(response.status, 422, 'the e-mail is taken');
    }
    assert.equal((await attemptLogin(visitorAt(), user.email, PASSWORD)).status, 303);
  });

  it('counts wrong current passwords on the password form against the account, apart from logins', async () => {
    const user = await BrowserSession.signUp(test.url, uniqueEmail('pw'));
    for (let i = 0; i < PASSWORD_CHANGE_LIMIT.max; i++) {
      const response = await user.submit('/account/password', '/account/password', { current: `wrong ${i}`, password: 'another long password' });
      // The per-address limit (10 a minute) would stop this loop first; move past its window.
      clockOffsetMs += ADDRESS_LIMIT.windowMs;
      assert.equal(response.status, 401);
    }
    const blocked = await user.submit('/account/password', '/account/password', { current: PASSWORD, password: 'another long password' });
    assertThrottled(blocked, /Too many wrong current passwords for this account\. Try again in \d+ minutes\./);
    // Logging in counts apart: it still works (so the password was not changed).
    assert.equal((await attemptLogin(visitorAt(), user.email, PASSWORD)).status, 303, 'the password was not changed');
    clockOffsetMs += PASSWORD_CHANGE_LIMIT.windowMs;
  });
});

describe('device cookies: a stranger cannot lock the owner out', () => {
  it("lets the owner log in on a device that logged in before while a stranger's guesses refuse everyone else", async () => {
    const owner = visitorAt();
    const email = await signUpIn(owner);
    await logOut(owner);
    const issued = owner.cookie(DEVICE_COOKIE)!;
    const someoneElse = visitorAt();
    await signUpIn(someoneElse);

    await strangerGuesses(email, UNTRUSTED_LOGIN_LIMIT.max);
    // The owner on a new device, with the right password: refused.
    assertThrottled(await attemptLogin(visitorAt(), email, PASSWORD), UNTRUSTED_FULL);
    // A device cookie that is not this account's valid one counts as none.
    const [nonce, expiresAt, signature] = issued.split('.');
    const lastChar = signature!.at(-1) === 'A' ? 'B' : 'A';
    const invalid: Record<string, string> = {
      "another account's": someoneElse.cookie(DEVICE_COOKIE)!,
      'altered signature': `${nonce}.${expiresAt}.${signature!.slice(0, -1)}${lastChar}`,
      'altered expiry': `${nonce}.${Number(expiresAt) + 86_400}.${signature}`,
      'altered nonce': `${nonce!.slice(0, -1)}${nonce!.at(-1) === 'A' ? 'B' : 'A'}.${expiresAt}.${signature}`,
      'made up': `${'A'.repeat(32)}.${expiresAt}.${'B'.repeat(43)}`,
      garbage: 'x'.repeat(5000),
    };
    for (const [what, value] of Object.entries(invalid)) {
      const response = await attemptLogin(visitorWithCookie(value), email, PASSWORD);
      assert.equal(response.status, 429, `${what} device cookie`);
      assert.match(response.text, UNTRUSTED_FULL);
    }
    // The owner's own browser is trusted: logged in, and given a fresh device cookie.
    const login = await attemptLogin(owner, email, PASSWORD);
    assert.equal(login.status, 303, login.text.slice(0, 300));
    assert.equal(login.location, '/dashboard');
    assert.equal((await owner.get('/dashboard')).status, 200);
    assert.ok(owner.cookie(DEVICE_COOKIE) && owner.cookie(DEVICE_COOKIE) !== issued, 'a new device cookie');
    // The same cookie copied to a browser elsewhere is trusted just the same.
    assert.equal((await attemptLogin(visitorWithCookie(issued), email.toUpperCase(), PASSWORD)).status, 303);
    clockOffsetMs += UNTRUSTED_LOGIN_LIMIT.windowMs;
  });

  it('stops a valid device cookie used to guess after its limit, leaving the untrusted bucket and other devices alone', async () => {
    const deviceA = visitorAt();
    const email = await signUpIn(deviceA);
    await logOut(deviceA);
    const deviceB = visitorAt();
    await deviceB.logIn(email, PASSWORD);
    await logOut(deviceB);
    const stolen = deviceA.cookie(DEVICE_COOKIE)!;

    // A thief with device A's cookie, moving between addresses: its guesses count on the device alone.
    for (let i = 0; i < DEVICE_LOGIN_LIMIT.max; i++) {
      assert.equal((await attemptLogin(visitorWithCookie(stolen), email, `thief's guess ${i}`)).status, 401, `guess ${i + 1}`);
    }
    // Past its limit the cookie is no longer trusted: this guess counts as an untrusted one.
    assert.equal((await attemptLogin(visitorWithCookie(stolen), email, 'one more guess')).status, 401);
    // The untrusted bucket took that one guess and nothing else from the thief.
    await strangerGuesses(email, UNTRUSTED_LOGIN_LIMIT.max - 1);
    assertThrottled(await attemptLogin(visitorAt(), email, PASSWORD), UNTRUSTED_FULL);
    // Device A is untrusted until its window ends: refused now, even with the right password.
    assertThrottled(await attemptLogin(deviceA, email, PASSWORD), UNTRUSTED_FULL);
    // Device B is unaffected.
    assert.equal((await attemptLogin(deviceB, email, PASSWORD)).status, 303);
    clockOffsetMs += DEVICE_LOGIN_LIMIT.windowMs;
    assert.equal((await attemptLogin(deviceA, email, PASSWORD)).status, 303, 'device A is trusted again after its window');
  });

  it('takes back the count of a successful login, so only failures add up', async () => {
    const email = await signUpIn(visitorAt());
    // From browsers without the device cookie: typos, then the right password, which is not counted…
    await strangerGuesses(email, UNTRUSTED_LOGIN_LIMIT.max - 1);
    assert.equal((await attemptLogin(visitorAt(), email, PASSWORD)).status, 303);
    // …so one more failure still fits in the bucket, and only the one after it is refused.
    await strangerGuesses(email, 1);
    assertThrottled(await attemptLogin(visitorAt(), email, PASSWORD), UNTRUSTED_FULL);
    clockOffsetMs += UNTRUSTED_LOGIN_LIMIT.windowMs;
  });

  it('trusts a device cookie for a year', async () => {
    const owner = visitorAt();
    const email = await signUpIn(owner);
    await logOut(owner);
    clockOffsetMs += DEVICE_COOKIE_DAYS * 86_400_000 - 60_000;
    await strangerGuesses(email, UNTRUSTED_LOGIN_LIMIT.max);
    clockOffsetMs += 120_000;
    assertThrottled(await attemptLogin(owner, email, PASSWORD), UNTRUSTED_FULL);
    clockOffsetMs += UNTRUSTED_LOGIN_LIMIT.windowMs;
  });

  it("a stranger's failed logins do not stop the logged-in owner from changing the password", async () => {
    const owner = visitorAt();
    const email = await signUpIn(owner);
    await strangerGuesses(email, UNTRUSTED_LOGIN_LIMIT.max);
    assertThrottled(await attemptLogin(visitorAt(), email, PASSWORD), UNTRUSTED_FULL);
    const page = await owner.get('/account/password');
    const changed = await owner.post('/account/password', { _csrf: csrfOf(page.text), current: PASSWORD, password: 'another long password' });
    assert.equal(changed.status, 200, changed.text.slice(0, 300));
    assert.match(changed.text, /Password changed/);
    clockOffsetMs += UNTRUSTED_LOGIN_LIMIT.windowMs;
  });
});

describe('account fields are bounded', () => {
  const snapshot = async () => {
    const db = rawDb(test);
    return JSON.stringify([
      await db.selectFrom('users').select(['id', 'email', 'password_hash']).orderBy('id').execute(),
      await db.selectFrom('sessions').select(['id_hash', 'user_id']).orderBy('id_hash').execute(),
      await db.selectFrom('attempt_counters').selectAll().orderBy('key').execute(),
    ]);
  };
  const atMost = (local: string, total: number) => `${local}@${'d'.repeat(total - local.length - 1 - '.example'.length)}.example`;
  const tooLongEmail = atMost(`long-${process.pid}-${Date.now()}`, MAX_EMAIL_LENGTH + 1);
  const tooLongPassword = 'p'.repeat(MAX_PASSWORD_LENGTH + 1);

  it('refuses an over-long e-mail or password at sign-up and login with a clear page, and writes nothing', async () => {
    const cases = [
      { form: 'signup', email: tooLongEmail, password: PASSWORD, message: /Email must be at most 254 characters\./ },
      { form: 'signup', email: uniqueEmail('long-pw'), password: tooLongPassword, message: /Password must be at most 1,024 characters\./ },
      { form: 'signup', email: ` ${'e'.repeat(40_000)}@example.com`, password: 'x'.repeat(20_000), message: /Email must be at most 254 characters\./ },
      { form: 'login', email: tooLongEmail, password: PASSWORD, message: /Email must be at most 254 characters\./ },
      { form: 'login', email: uniqueEmail('long-pw'), password: 'x'.repeat(60_000), message: /Password must be at most 1,024 characters\./ },
    ];
    for (const { form, email, password, message } of cases) {
      const client = visitorAt();
      const page = await client.get(`/${form}`);
      assert.match(page.text, /maxlength="254"/);
      const before = await snapshot();
      const response = await client.post(`/${form}`, { _csrf: csrfOf(page.text), email, password, next: '' });
      assert.equal(response.status, 422, `${form}: ${response.text.slice(0, 300)}`);
      assert.match(response.text, message);
      assert.equal(await snapshot(), before, `a refused ${form} writes nothing, not even an attempt count`);
    }
    await assert.rejects(createUser(rawDb(test), { email: tooLongEmail, password: PASSWORD }), (error: ApiError) => error.code === 'validation_failed');
  });

  it('accepts an e-mail of exactly 254 characters and a password of 1,024', async () => {
    const client = visitorAt();
    const email = atMost(`edge-${process.pid}-${Date.now()}`, MAX_EMAIL_LENGTH);
    const password = 'p'.repeat(MAX_PASSWORD_LENGTH);
    const page = await client.get('/signup');
    assert.equal((await client.post('/signup', { _csrf: csrfOf(page.text), email, password, next: '' })).status, 303);
    assert.equal((await attemptLogin(visitorAt(), email, password)).status, 303);
  });

  it('refuses an over-long current or new password on the password form, changing nothing', async () => {
    const owner = visitorAt();
    const email = await signUpIn(owner);
    for (const fields of [{ current: tooLongPassword, password: 'another long password' }, { current: PASSWORD, password: tooLongPassword }]) {
      const page = await owner.get('/account/password');
      const before = await snapshot();
      const response = await owner.post('/account/password', { _csrf: csrfOf(page.text), ...fields });
      assert.equal(response.status, 422);
      assert.match(response.text, /A password is at most 1,024 characters\./);
      assert.equal(await snapshot(), before);
    }
    assert.equal((await attemptLogin(visitorAt(), email, PASSWORD)).status, 303, 'the password is unchanged');
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
