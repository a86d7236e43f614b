// What an outside attack found in the affiliate portal (issue 29): access that a deactivation
// or rejection ended stays ended (item 12).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { createProgram } from '../../src/modules/programs/program.service.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { apiClient, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { uniqueEmail } from '../helpers/fixtures.ts';
import { csrfOf, WebClient } from '../helpers/web-client.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.ts';

let t: TestServer;
let smtp: SmtpReceiver;
let addresses = 0;

before(async () => {
  smtp = await startSmtpReceiver();
  t = await startTestServer({ smtpUrl: smtp.url, trustProxy: ['127.0.0.1'] });
});
after(async () => {
  await t?.close();
  await smtp?.close();
});

async function programWithAffiliate(name: string): Promise<{ api: ApiClient; programId: string; slug: string; affiliate: any }> {
  const db = rawDb(t);
  const owner = await createUser(db, { email: uniqueEmail('owner'), password: 'a long password' });
  const program = await createProgram(db, { ownerUserId: owner.id, name, domain: 'acme.example', commissionRate: 20 });
  const { token } = await issueToken(db, { programId: program.id, name: 'test', kind: 'api_key' });
  const api = apiClient(t.url, token, program.id);
  const affiliate = (await api.post('/affiliates', { firstName: 'Jane', lastName: 'Cooper', email: uniqueEmail('jane') })).body;
  return { api, programId: program.id, slug: program.portal.slug, affiliate };
}

/** A browser at an address of its own (the login limits count per address). */
function visitor(): WebClient {
  return new WebClient(t.url, { 'x-forwarded-for': `10.29.${(++addresses >> 8) & 255}.${addresses & 255}` });
}

/** Asks for a login link by e-mail; returns its path from the message that arrives. */
async function loginLinkFor(slug: string, email: string): Promise<string> {
  const before = smtp.received.length;
  const who = visitor();
  const page = await who.get(`/portal/${slug}/login`);
  assert.equal((await who.post(`/portal/${slug}/login`, { _csrf: csrfOf(page.text), email })).status, 200);
  const mail = await smtp.waitFor((m) => smtp.received.indexOf(m) >= before && m.to.includes(email), 'the login e-mail');
  const link = /http:\/\/tandem\.test(\/portal\/[a-z0-9-]+\/login\/[A-Za-z0-9_-]+)/.exec(mail.text);
  assert.ok(link, mail.text);
  return link[1]!;
}

/** Opens a login link and presses its button; returns the signed-in browser. */
async function signIn(path: string, who = visitor()): Promise<WebClient> {
  const page = await who.get(path);
  assert.equal(page.status, 200, page.text.slice(0, 300));
  const done = await who.post(path, { _csrf: csrfOf(page.text) });
  assert.equal(done.status, 303);
  assert.match(done.location ?? '', /\/home$/);
  return who;
}

describe('a deactivation or rejection ends portal access for good (item 12)', () => {
  for (const [end, restore] of [
    [{ status: 'inactive' }, { status: 'active' }],
    [{ approval: 'rejected' }, { approval: 'approved' }],
  ] as const) {
    it(`${JSON.stringify(end)} then ${JSON.stringify(restore)}: sessions and unused links stay dead; a new link works`, async () => {
      const { api, slug, affiliate } = await programWithAffiliate(`Ended Outdoor ${Object.keys(end)[0]}`);
      const jane = await signIn(await loginLinkFor(slug, affiliate.email));
      const mailed = await loginLinkFor(slug, affiliate.email);
      const handed = new URL((await api.post('/affiliates/portal-link', { affiliateId: affiliate.id })).body.url).pathname;
      assert.equal((await jane.get(`/portal/${slug}/me.json`)).status, 200);

      assert.equal((await api.put('/affiliates', { id: affiliate.id, ...end })).status, 200);
      assert.equal((await jane.get(`/portal/${slug}/me.json`)).status, 401, 'ended at once');
      assert.equal((await api.put('/affiliates', { id: affiliate.id, ...restore })).status, 200);

      assert.equal((await jane.get(`/portal/${slug}/me.json`)).status, 401, 'the session does not come back');
      assert.equal((await jane.get(`/portal/${slug}/home`)).status, 302);
      for (const path of [mailed, handed]) {
        assert.equal((await visitor().get(path)).status, 410, `${path} does not come back`);
        const who = visitor();
        const page = await who.get(`/portal/${slug}/login`);
        const pressed = await who.post(path, { _csrf: csrfOf(page.text) });
        assert.ok(!pressed.headers.getSetCookie().some((c) => c.startsWith('tandem_portal=')), 'pressing its button signs nobody in');
      }
      // The affiliate is back: a new link signs in.
      const again = await signIn(await loginLinkFor(slug, affiliate.email));
      assert.equal((await again.get(`/portal/${slug}/me.json`)).status, 200);
    });
  }

  it('an edit that ends nothing (a new name, status active once more) keeps the session', async () => {
    const { api, slug, affiliate } = await programWithAffiliate('Kept Outdoor');
    const jane = await signIn(await loginLinkFor(slug, affiliate.email));
    assert.equal((await api.put('/affiliates', { id: affiliate.id, firstName: 'Janet', status: 'active' })).status, 200);
    assert.equal((await jane.get(`/portal/${slug}/me.json`)).status, 200);
  });
});
