// Accounts (issue 21 item 2): who may sign up (SIGNUP, and the default that lets exactly the
// first person in, who becomes the operator), "Forgot password?" through a real SMTP server
// with a one-time link, and form errors tied to the field they are about.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rawDb, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { uniqueEmail } from '../helpers/fixtures.ts';
import { csrfOf, WebClient } from '../helpers/web-client.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.ts';
import { isOperator } from '../../src/modules/users/user.service.ts';
import { createPasswordResetLink } from '../../src/modules/users/password-reset.service.ts';

const PASSWORD = 'a long passphrase';
let addresses = 0;

function visitor(t: TestServer): WebClient {
  return new WebClient(t.url, { 'x-forwarded-for': `10.9.${(++addresses >> 8) & 255}.${addresses & 255}` });
}

async function signUp(t: TestServer, email: string, password = PASSWORD, who = visitor(t)) {
  const page = await who.get('/signup');
  if (page.status !== 200) return { page, answer: page, who };
  return { page, answer: await who.post('/signup', { _csrf: csrfOf(page.text), email, password, next: '/dashboard' }), who };
}

async function logIn(t: TestServer, email: string, password: string, who = visitor(t)) {
  const page = await who.get('/login');
  return who.post('/login', { _csrf: csrfOf(page.text), email, password });
}

const userCount = async (t: TestServer) => Number((await rawDb(t).selectFrom('users').select((e) => e.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);

describe('sign-up control', () => {
  it('SIGNUP unset: the first person signs up and is the operator; then sign-up is closed', async () => {
    const t = await startTestServer({ signup: null, trustProxy: ['127.0.0.1'] });
    try {
      const home = await visitor(t).get('/');
      assert.equal(home.location, '/signup', 'an empty instance sends the first visitor to sign up');
      const { page, answer } = await signUp(t, 'founder@example.com');
      assert.match(page.text, /yours will be its operator/);
      assert.equal(answer.status, 303);
      const [user] = await rawDb(t).selectFrom('users').select('id').execute();
      assert.ok(await isOperator(rawDb(t), user!.id));

      const second = visitor(t);
      const closed = await second.get('/signup');
      assert.equal(closed.status, 403);
      assert.match(closed.text, /Sign-up is closed/);
      const login = await second.get('/login');
      assert.doesNotMatch(login.text, /Create an account/);
      assert.match(login.text, /Ask this Tandem's operator/);
      // A form posted anyway (its token from the login page) makes nothing.
      const posted = await second.post('/signup', { _csrf: csrfOf(login.text), email: 'late@example.com', password: PASSWORD });
      assert.equal(posted.status, 403);
      assert.equal(await userCount(t), 1);
      assert.equal((await visitor(t).get('/')).location, '/login');
    } finally {
      await t.close();
    }
  });

  it('SIGNUP unset: two first sign-ups at once make one account', async () => {
    const t = await startTestServer({ signup: null, trustProxy: ['127.0.0.1'] });
    try {
      const forms = await Promise.all(
        Array.from({ length: 6 }, async (_, i) => {
          const who = visitor(t);
          const page = await who.get('/signup');
          return { who, csrf: csrfOf(page.text), email: `first-${i}@example.com` };
        }),
      );
      const answers = await Promise.all(forms.map((f) => f.who.post('/signup', { _csrf: f.csrf, email: f.email, password: PASSWORD })));
      assert.deepEqual(answers.map((a) => a.status).sort(), [303, 403, 403, 403, 403, 403]);
      assert.equal(await userCount(t), 1);
    } finally {
      await t.close();
    }
  });

  it('SIGNUP=open lets anyone in; SIGNUP=closed lets nobody in, even on an empty instance', async () => {
    const open = await startTestServer({ signup: 'open', trustProxy: ['127.0.0.1'] });
    try {
      assert.equal((await signUp(open, uniqueEmail('a'))).answer.status, 303);
      assert.equal((await signUp(open, uniqueEmail('b'))).answer.status, 303);
      assert.match((await visitor(open).get('/login')).text, /Create an account/);
    } finally {
      await open.close();
    }
    const closed = await startTestServer({ signup: 'closed', trustProxy: ['127.0.0.1'] });
    try {
      assert.equal((await visitor(closed).get('/signup')).status, 403);
      assert.equal(await userCount(closed), 0);
    } finally {
      await closed.close();
    }
  });
});

describe('form errors', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ trustProxy: ['127.0.0.1'] });
  });
  after(() => t?.close());

  /** The input named `name`: its tag. */
  const input = (page: string, name: string) => new RegExp(`<input id="f-${name}"[^>]*>`).exec(page)?.[0] ?? '';

  it('a refused sign-up shows the error at its field, ties it to the input and focuses it', async () => {
    const { answer } = await signUp(t, uniqueEmail('short'), 'short');
    assert.equal(answer.status, 422);
    const tag = input(answer.text, 'password');
    assert.match(tag, /aria-invalid="true"/);
    assert.match(tag, /autofocus/);
    assert.match(tag, /aria-describedby="[^"]*f-password-error/);
    assert.match(answer.text, /<p class="error" id="f-password-error">Password must be at least 10 characters\.<\/p>/);
    assert.doesNotMatch(input(answer.text, 'email'), /autofocus/);

    const bad = await signUp(t, 'not-an-email');
    assert.match(input(bad.answer.text, 'email'), /aria-invalid="true"[^>]*autofocus/);
  });

  it('a wrong login is said at the password, which gets the focus; the e-mail is kept', async () => {
    const email = uniqueEmail('login');
    await signUp(t, email);
    const answer = await logIn(t, email, 'wrong password!');
    assert.equal(answer.status, 401);
    assert.match(input(answer.text, 'password'), /aria-invalid="true"[^>]*autofocus/);
    assert.match(answer.text, /id="f-password-error">E-mail or password is incorrect\./);
    assert.match(input(answer.text, 'email'), new RegExp(`value="${email}"`));
  });
});

describe('forgot password', () => {
  let t: TestServer;
  let smtp: SmtpReceiver;
  let now = new Date('2026-11-01T10:00:00.000Z');
  before(async () => {
    smtp = await startSmtpReceiver();
    t = await startTestServer({ smtpUrl: smtp.url, trustProxy: ['127.0.0.1'] }, { clock: () => now });
  });
  after(async () => {
    await t?.close();
    await smtp?.close();
  });

  async function ask(email: string, who = visitor(t)) {
    const page = await who.get('/forgot-password');
    assert.equal(page.status, 200);
    return who.post('/forgot-password', { _csrf: csrfOf(page.text), email });
  }

  async function linkFor(email: string): Promise<string> {
    const before = smtp.received.length;
    const answer = await ask(email);
    assert.equal(answer.status, 200);
    const mail = await smtp.waitFor((m) => smtp.received.indexOf(m) >= before && m.to.includes(email), 'the reset e-mail');
    assert.equal(mail.subject, 'Reset your Tandem password');
    const link = /http:\/\/tandem\.test(\/reset-password\/[A-Za-z0-9_-]{43})/.exec(mail.text);
    assert.ok(link, mail.text);
    return link[1]!;
  }

  it('the login page links to it', async () => {
    assert.match((await visitor(t).get('/login')).text, /<a href="\/forgot-password">Forgot password\?<\/a>/);
  });

  it('e-mails a one-time link; using it sets the password, logs in, and ends the other sessions', async () => {
    const email = uniqueEmail('forgot');
    const elsewhere = visitor(t);
    await signUp(t, email, PASSWORD, elsewhere);
    assert.equal((await elsewhere.get('/dashboard')).status, 200);

    const path = await linkFor(email);
    const who = visitor(t);
    // Opening it (a mail scanner does) changes nothing.
    assert.equal((await visitor(t).get(path)).status, 200);
    const page = await who.get(path);
    assert.match(page.text, new RegExp(`For <strong>${email}</strong>`));
    // A refused password leaves the link usable and says why at the field.
    const short = await who.post(path, { _csrf: csrfOf(page.text), password: 'short' });
    assert.equal(short.status, 422);
    assert.match(short.text, /id="f-password-error">Password must be at least 10 characters\./);
    const done = await who.post(path, { _csrf: csrfOf(short.text), password: 'the new passphrase' });
    assert.equal(done.status, 303);
    assert.equal(done.location, '/dashboard');
    assert.equal((await who.get('/dashboard')).status, 200, 'logged in after the reset');

    assert.notEqual((await elsewhere.get('/dashboard')).status, 200, 'the other session ended');
    assert.equal((await logIn(t, email, PASSWORD)).status, 401, 'the old password no longer works');
    assert.equal((await logIn(t, email, 'the new passphrase')).status, 303);
    // Used once.
    const again = await visitor(t).get(path);
    assert.equal(again.status, 410);
    assert.match(again.text, /This link no longer works/);
  });

  it('answers the same for an unknown e-mail and sends nothing', async () => {
    const known = uniqueEmail('known');
    await signUp(t, known);
    const before = smtp.received.length;
    const unknown = uniqueEmail('nobody');
    const answer = await ask(unknown);
    assert.equal(answer.status, 200);
    assert.match(answer.text, /If an account uses/);
    const knownAnswer = await ask(known);
    assert.equal(knownAnswer.text.replace(known, 'X').replace(/value="[^"]*"/g, ''), answer.text.replace(unknown, 'X').replace(/value="[^"]*"/g, ''));
    await smtp.waitFor((m) => smtp.received.indexOf(m) >= before && m.to.includes(known), 'the known address');
    assert.ok(!smtp.received.some((m) => m.to.includes(unknown)));
  });

  it('a link expires after 30 minutes; a newer reset voids older links', async () => {
    const email = uniqueEmail('expiry');
    await signUp(t, email);
    const late = await linkFor(email);
    now = new Date(now.getTime() + 31 * 60_000);
    assert.equal((await visitor(t).get(late)).status, 410);

    const first = await linkFor(email);
    const second = await linkFor(email);
    const who = visitor(t);
    const page = await who.get(second);
    assert.equal((await who.post(second, { _csrf: csrfOf(page.text), password: 'another long one' })).status, 303);
    assert.equal((await visitor(t).get(first)).status, 410, 'the older link was voided');
  });

  it('a password change voids every outstanding reset link: the dashboard form, and a completed reset', async () => {
    const email = uniqueEmail('change');
    const owner = visitor(t);
    await signUp(t, email, PASSWORD, owner);
    // Links of both kinds: e-mailed by the form, and printed by `tandem user reset-password`.
    const printed = async () => new URL((await createPasswordResetLink(rawDb(t), () => now, email, 'http://tandem.test')).url).pathname;
    const mailed = await linkFor(email);
    const handed = await printed();
    for (const path of [mailed, handed]) assert.equal((await visitor(t).get(path)).status, 200, 'usable before the change');

    const form = await owner.get('/account/password');
    const changed = await owner.post('/account/password', { _csrf: csrfOf(form.text), current: PASSWORD, password: 'the changed passphrase' });
    assert.equal(changed.status, 200, changed.text.slice(0, 300));
    for (const path of [mailed, handed]) {
      assert.equal((await visitor(t).get(path)).status, 410, `${path} was voided by the change`);
      const who = visitor(t);
      const page = await who.get('/login');
      assert.equal((await who.post(path, { _csrf: csrfOf(page.text), password: 'an attacker passphrase' })).status, 410);
    }
    assert.equal((await logIn(t, email, 'an attacker passphrase')).status, 401, 'an old link set nothing');
    assert.equal((await logIn(t, email, 'the changed passphrase')).status, 303);

    // A completed reset voids the others, printed ones included.
    const second = await linkFor(email);
    const third = await printed();
    const who = visitor(t);
    const page = await who.get(second);
    assert.equal((await who.post(second, { _csrf: csrfOf(page.text), password: 'the reset passphrase' })).status, 303);
    assert.equal((await visitor(t).get(third)).status, 410);
  });

  it('three e-mails per address per 15 minutes, then the same answer and nothing sent', async () => {
    now = new Date(now.getTime() + 60 * 60_000);
    const email = uniqueEmail('flood');
    await signUp(t, email);
    const before = smtp.received.length;
    for (let i = 0; i < 4; i++) assert.equal((await ask(email)).status, 200);
    await smtp.waitFor(() => smtp.received.slice(before).filter((m) => m.to.includes(email)).length >= 3, 'three e-mails');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(smtp.received.slice(before).filter((m) => m.to.includes(email)).length, 3);
  });

  it('refuses a malformed e-mail at its field', async () => {
    const answer = await ask('nope');
    assert.equal(answer.status, 422);
    assert.match(answer.text, /<input id="f-email"[^>]*aria-invalid="true"[^>]*autofocus/);
  });
});
