// Joining through the affiliate portal (issue 19 item 1): /portal/{slug} in the program's name
// and colour, sign-up under each policy, approval by the merchant (API and dashboard) with its
// e-mails through a real SMTP server, and the guards (CSRF, the per-address limit, a taken
// e-mail that reveals nothing, another program's slug).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { createProgram, updateProgramSettings } from '../../src/modules/programs/program.service.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { apiClient, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, uniqueEmail } from '../helpers/browser-session.ts';
import { csrfOf, WebClient } from '../helpers/web-client.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.ts';
import { portalLinkPathIn, signInByLink } from '../helpers/portal-client.ts';

let t: TestServer;
let smtp: SmtpReceiver;
let addresses = 0;

before(async () => {
  smtp = await startSmtpReceiver();
  // Sign-ups come "through a proxy" from many addresses unless a test means one.
  t = await startTestServer({ smtpUrl: smtp.url, trustProxy: ['127.0.0.1'] });
});
after(async () => {
  await t?.close();
  await smtp?.close();
});

/** A program of a new owner, with the portal policy given, and an API client for it. */
async function programWith(signup: 'open' | 'approval' | 'invite', name = 'Acme Outdoor', terms = ''): Promise<{ api: ApiClient; slug: string; id: string }> {
  const db = rawDb(t);
  const owner = await createUser(db, { email: uniqueEmail('owner'), password: 'a long password' });
  const program = await createProgram(db, { ownerUserId: owner.id, name, domain: 'acme.example', commissionRate: 20 });
  const updated = await updateProgramSettings(db, program.id, { portalSignup: signup, portalTerms: terms });
  const { token } = await issueToken(db, { programId: program.id, name: 'test', kind: 'api_key' });
  return { api: apiClient(t.url, token, program.id), slug: updated.portal.slug, id: program.id };
}

/** A visitor filling in the portal's form, from an address of its own. */
async function signUp(slug: string, fields: Record<string, string>, address = `10.9.${(++addresses >> 8) & 255}.${addresses & 255}`) {
  const visitor = new WebClient(t.url, { 'x-forwarded-for': address });
  const page = await visitor.get(`/portal/${slug}`);
  assert.equal(page.status, 200);
  const response = await visitor.post(`/portal/${slug}/signup`, { _csrf: csrfOf(page.text), ...fields });
  return { visitor, page, response };
}

const person = (tag: string) => ({ firstName: 'Jane', lastName: 'Cooper', email: uniqueEmail(tag) });

describe('the portal address', () => {
  it('comes from the program name, unique (acme-outdoor, acme-outdoor-2), and GET /me names it with the policy', async () => {
    const first = await programWith('approval', 'Zephyr Bikes & Co.');
    const second = await programWith('approval', 'Zephyr Bikes & Co.');
    assert.equal(first.slug, 'zephyr-bikes-co');
    assert.equal(second.slug, 'zephyr-bikes-co-2');
    const me = await first.api.get('/me');
    assert.equal(me.body.portalUrl, `http://tandem.test/portal/${first.slug}`);
    assert.equal(me.body.portalSignup, 'approval');
    await assert.rejects(updateProgramSettings(rawDb(t), second.id, { portalSlug: first.slug }), (error: any) => error.code === 'conflict');
    await assert.rejects(updateProgramSettings(rawDb(t), second.id, { portalSlug: 'Not a slug!' }), (error: any) => error.errors?.[0]?.pointer === '#/portal/slug');
    assert.equal((await second.api.get('/me')).body.portalUrl, `http://tandem.test/portal/${second.slug}`, 'nothing changed');
    assert.equal((await new WebClient(t.url).get('/portal/no-such-program')).status, 404);
  });
});

describe('signing up', () => {
  it('approval: the sign-up waits, pending and inactive, with an e-mail; approving activates it and mails the link', async () => {
    const { api, slug } = await programWith('approval', 'Acme Outdoor');
    const jane = person('jane');
    const { page, response } = await signUp(slug, jane);
    assert.match(page.text, /Join Acme Outdoor&#39;s affiliate program|Join Acme Outdoor's affiliate program/);
    assert.match(page.text, new RegExp(`<link rel="stylesheet" href="/portal/${slug}/theme.css">`));
    const theme = await new WebClient(t.url).get(`/portal/${slug}/theme.css`);
    assert.equal(theme.text, 'body.portal { --brand: #3b5bdb; --brand-dark: #3b5bdb; }\n', 'the colour comes as a stylesheet (no inline style under the CSP)');
    assert.equal(response.status, 303);
    assert.equal(response.location, `/portal/${slug}?joined=pending`);
    const affiliate = (await api.get(`/affiliates?email=${encodeURIComponent(jane.email)}`)).body;
    assert.deepEqual([affiliate.status, affiliate.approval, affiliate.firstName], ['inactive', 'pending', 'Jane']);
    const events = (await api.get('/events?type=affiliate.created')).body;
    assert.equal(events.at(-1).data.id, affiliate.id);
    // Nothing goes to an address nobody has confirmed (issue 29): the approval mail is the first.
    assert.equal((await api.post('/sales', { referralId: affiliate.id, email: uniqueEmail('c'), name: 'C', totalEarned: 10 })).status, 422, 'a pending affiliate earns nothing yet');

    const approved = await api.put('/affiliates', { id: affiliate.id, approval: 'approved' });
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    assert.deepEqual([approved.body.status, approved.body.approval], ['active', 'approved']);
    const welcome = await smtp.waitFor((m) => m.to.includes(jane.email) && m.subject.startsWith('You are approved'), 'the approval e-mail');
    assert.ok(welcome.text.includes(`https://acme.example/?ref=${affiliate.link}`), welcome.text);
    const updated = (await api.get('/events?type=affiliate.updated')).body;
    assert.equal(updated.at(-1).data.approval, 'approved');

    const bob = person('bob');
    await signUp(slug, bob);
    const bobRow = (await api.get(`/affiliates?email=${encodeURIComponent(bob.email)}`)).body;
    const rejected = await api.put('/affiliates', { id: bobRow.id, approval: 'rejected' });
    assert.deepEqual([rejected.body.status, rejected.body.approval], ['inactive', 'rejected']);
    assert.equal((await api.put('/affiliates', { id: bobRow.id, approval: 'maybe' })).status, 422);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(smtp.received.filter((m) => m.to.includes(jane.email)).length, 1, 'the approval mail only');
    assert.equal(smtp.received.filter((m) => m.to.includes(bob.email)).length, 0, 'an application and its rejection send nothing');
  });

  it('open: in at once, active; the address gets only a confirmation link until it is used, then the welcome with the link to share', async () => {
    const { api, slug } = await programWith('open', 'Open "Outdoor"   Buy now');
    const jane = person('open');
    const { response } = await signUp(slug, jane);
    assert.equal(response.location, `/portal/${slug}?joined=open`);
    const affiliate = (await api.get(`/affiliates?email=${encodeURIComponent(jane.email)}`)).body;
    assert.deepEqual([affiliate.status, affiliate.approval, affiliate.emailVerified], ['active', 'approved', false]);
    const confirm = await smtp.waitFor((m) => m.to.includes(jane.email), 'the confirmation e-mail');
    // The merchant's text is quoted in the subject, on one line.
    assert.equal(confirm.subject, `Confirm your e-mail for the affiliate program of "Open 'Outdoor' Buy now"`);
    assert.ok(!confirm.text.includes(affiliate.link), 'no welcome, no link to share before the address is confirmed');
    await signInByLink(new WebClient(t.url), portalLinkPathIn(confirm.text));
    const welcome = await smtp.waitFor((m) => m.to.includes(jane.email) && m.subject.startsWith('Welcome'), 'the welcome e-mail');
    assert.equal(welcome.subject, `Welcome to the affiliate program of "Open 'Outdoor' Buy now"`);
    assert.ok(welcome.text.includes(`https://acme.example/?ref=${affiliate.link}`));
    const confirmed = (await api.get(`/affiliates?id=${affiliate.id}`)).body;
    assert.equal(confirmed.emailVerified, true);
    const updated = (await api.get('/events?type=affiliate.updated')).body;
    assert.equal(updated.at(-1).data.emailVerified, true);
  });

  it('open: a sign-up with somebody else\'s address sends them only the confirmation, and nothing more without it', async () => {
    const { slug } = await programWith('open', 'Spam Outdoor');
    const victim = person('victim');
    await signUp(slug, victim);
    await smtp.waitFor((m) => m.to.includes(victim.email), 'the confirmation e-mail');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const mails = smtp.received.filter((m) => m.to.includes(victim.email));
    assert.deepEqual(mails.map((m) => m.subject), ['Confirm your e-mail for the affiliate program of "Spam Outdoor"']);
  });

  it('invite: no form, and a posted sign-up is refused with nothing made', async () => {
    const { api, slug } = await programWith('invite', 'Invite Outdoor');
    const visitor = new WebClient(t.url);
    const page = await visitor.get(`/portal/${slug}`);
    assert.equal(page.status, 200);
    assert.match(page.text, /takes affiliates by invitation/);
    assert.doesNotMatch(page.text, /<form/);
    // A form posted anyway (its CSRF token from another page of the site) is refused.
    const response = await visitor.post(`/portal/${slug}/signup`, { _csrf: csrfOf((await visitor.get('/login')).text), ...person('invite') });
    assert.equal(response.status, 403);
    assert.deepEqual((await api.get('/affiliates')).body, []);
  });

  it('terms: must be accepted when the program has them; bad fields are refused beside the field; nothing is made', async () => {
    const { api, slug } = await programWith('open', 'Terms Outdoor', 'Do not bid on our brand name.');
    const jane = person('terms');
    const page = await new WebClient(t.url).get(`/portal/${slug}`);
    assert.match(page.text, /Do not bid on our brand name\./);
    const refused = (await signUp(slug, jane)).response;
    assert.equal(refused.status, 422);
    assert.match(refused.text, /id="f-acceptTerms-error">Must be accepted to join/);
    const bad = (await signUp(slug, { firstName: '', lastName: 'X', email: 'not-an-email', acceptTerms: 'on' })).response;
    assert.equal(bad.status, 422);
    assert.match(bad.text, /id="f-email-error">/);
    assert.deepEqual((await api.get('/affiliates')).body, []);
    assert.equal((await signUp(slug, { ...jane, acceptTerms: 'on' })).response.status, 303);
    assert.equal((await api.get('/affiliates')).body.length, 1);
  });

  it('an empty sign-up marks every missing field beside it, the terms with the others; nothing is made', async () => {
    const { api, slug } = await programWith('open', 'Empty Outdoor', 'Do not bid on our brand name.');
    const required = { firstName: 'Is required.', lastName: 'Is required.', email: 'Is required.', acceptTerms: 'Must be accepted to join.' };
    for (const fields of [{}, { firstName: '', lastName: '', email: '' }, { firstName: '  ', lastName: '\t', email: ' ' }] as Record<string, string>[]) {
      const { response } = await signUp(slug, fields);
      assert.equal(response.status, 422, JSON.stringify(fields));
      for (const [name, message] of Object.entries(required)) {
        assert.match(response.text, new RegExp(`<p class="error" id="f-${name}-error">${message}</p>`), `${name} is marked (${JSON.stringify(fields)})`);
        assert.match(response.text, new RegExp(`<input [^>]*id="f-${name}"[^>]*aria-describedby="[^"]*f-${name}-error"[^>]*aria-invalid="true"`), `${name} is tied to its error and invalid`);
      }
    }
    // One field missing: only it is marked, beside the values kept.
    const { response } = await signUp(slug, { firstName: 'Jane', lastName: '', email: uniqueEmail('one'), acceptTerms: 'on' });
    assert.equal(response.status, 422);
    assert.deepEqual([...response.text.matchAll(/id="f-(\w+)-error"/g)].map((m) => m[1]), ['lastName']);
    // Without terms there is no terms field to mark.
    const plain = await programWith('open', 'Plain Outdoor');
    const empty = (await signUp(plain.slug, {})).response;
    assert.deepEqual([...empty.text.matchAll(/id="f-(\w+)-error"/g)].map((m) => m[1]), ['firstName', 'lastName', 'email']);
    assert.deepEqual((await api.get('/affiliates')).body, []);
    assert.deepEqual((await plain.api.get('/affiliates')).body, []);
  });

  it('an e-mail already in the program gets the same answer, and nothing new is made or sent', async () => {
    const { api, slug } = await programWith('open', 'Twice Outdoor');
    const jane = person('twice');
    await signUp(slug, jane);
    await smtp.waitFor((m) => m.to.includes(jane.email), 'the first confirmation e-mail');
    const again = (await signUp(slug, { ...jane, email: jane.email.toUpperCase() })).response;
    assert.equal(again.status, 303);
    assert.equal(again.location, `/portal/${slug}?joined=open`);
    assert.equal((await api.get('/affiliates')).body.length, 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(smtp.received.filter((m) => m.to.includes(jane.email)).length, 1);
  });

  it('refuses a form without its CSRF token, and more than 10 sign-ups a minute from one address', async () => {
    const { api, slug } = await programWith('open', 'Guarded Outdoor');
    const visitor = new WebClient(t.url);
    assert.equal((await visitor.post(`/portal/${slug}/signup`, person('forged'))).status, 403);
    const address = '10.200.0.1';
    const statuses = [];
    for (let i = 0; i < 11; i++) statuses.push((await signUp(slug, person(`burst${i}`), address)).response.status);
    assert.deepEqual(statuses, [...Array(10).fill(303), 429]);
    assert.equal((await api.get('/affiliates')).body.length, 10);
  });
});

describe('the approval queue on the dashboard', () => {
  it('counts the waiting sign-ups and approves one with its button', async () => {
    const merchant = await BrowserSession.signUp(t.url);
    const program = await merchant.createProgram({ name: 'Queue Outdoor' });
    const { token } = await issueToken(rawDb(t), { programId: program.id, name: 'test', kind: 'api_key' });
    const api = apiClient(t.url, token, program.id);
    const slug = (await api.get('/me')).body.portalUrl.split('/portal/')[1];
    const people = [person('q1'), person('q2')];
    for (const p of people) await signUp(slug, p);
    const list = await merchant.page(`${program.base}/affiliates`);
    assert.match(list, /data-stat="pending-signups">2</);
    const first = (await api.get(`/affiliates?email=${encodeURIComponent(people[0]!.email)}`)).body;
    const approved = await merchant.submit(`${program.base}/affiliates`, `${program.base}/affiliates/${first.id}/approval`, { approval: 'approved' });
    assert.equal(approved.status, 303);
    assert.equal((await api.get(`/affiliates?id=${first.id}`)).body.approval, 'approved');
    assert.match(await merchant.page(`${program.base}/affiliates`), /data-stat="pending-signups">1</);

    // The portal settings on the same dashboard: a new address and policy.
    const saved = await merchant.submit(`${program.base}/settings`, `${program.base}/settings/portal`, { portalSlug: 'queue-partners', portalSignup: 'open', portalColor: '#0b7285', portalTerms: '' });
    assert.equal(saved.status, 303, saved.text.slice(0, 400));
    const me = (await api.get('/me')).body;
    assert.deepEqual([me.portalUrl, me.portalSignup], ['http://tandem.test/portal/queue-partners', 'open']);
    const badSlug = await merchant.submit(`${program.base}/settings`, `${program.base}/settings/portal`, { portalSlug: 'Queue Partners', portalSignup: 'open', portalColor: '#0b7285' });
    assert.equal(badSlug.status, 422);
    assert.match(badSlug.text, /id="f-portalSlug-error">Must be 1 to 64 lowercase letters/);
    const badColour = await merchant.submit(`${program.base}/settings`, `${program.base}/settings/portal`, { portalSlug: 'queue-partners', portalSignup: 'open', portalColor: 'blue' });
    assert.equal(badColour.status, 422);
    assert.match(badColour.text, /id="f-portalColor-error">Must be a colour/);
    assert.equal((await api.get('/me')).body.portalUrl, 'http://tandem.test/portal/queue-partners', 'nothing changed');
  });
});
