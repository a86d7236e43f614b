// What an outside attack found in the affiliate portal (issue 29): access that a deactivation
// or rejection ended stays ended (item 12); a portal form's token works only with the portal
// session it was shown in, and a changed payout e-mail is told to the old address (item 11);
// the 20-link cap holds under concurrent adds (item 10).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { createProgram, updateProgramSettings } from '../../src/modules/programs/program.service.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { apiClient, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { uniqueEmail } from '../helpers/fixtures.ts';
import { csrfOf, WebClient } from '../helpers/web-client.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.ts';
import { emailedLoginPath, signInByLink } from '../helpers/portal-client.ts';
import { raceNote } from '../helpers/test-database.ts';

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
  return emailedLoginPath(visitor(), smtp, slug, email);
}

/** Opens a login link and presses its button; returns the signed-in browser. */
function signIn(path: string, who = visitor()): Promise<WebClient> {
  return signInByLink(who, path);
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

describe("portal forms are bound to the portal session; a payout e-mail change is told to the old address (item 11)", () => {
  it("refuses a token from another affiliate's session, or from a session that ended, and changes nothing", async () => {
    const { api, slug, affiliate: jane } = await programWithAffiliate('Bound Outdoor');
    const omar = (await api.post('/affiliates', { firstName: 'Omar', lastName: 'Haddad', email: uniqueEmail('omar') })).body;
    const janeBrowser = await signIn(await loginLinkFor(slug, jane.email));
    const omarBrowser = await signIn(await loginLinkFor(slug, omar.email));
    const janeToken = csrfOf((await janeBrowser.get(`/portal/${slug}/home`)).text);
    const payoutOf = async (id: string) => (await api.get(`/affiliates?id=${id}`)).body.payoutEmail;

    // Jane's token (and every cookie of her browser but the portal session) in Omar's session.
    for (const name of ['tandem_anon', 'tandem_session']) {
      const value = janeBrowser.cookie(name);
      if (value !== undefined) omarBrowser.setCookie(name, value);
    }
    const crossed = await omarBrowser.post(`/portal/${slug}/payout-email`, { _csrf: janeToken, payoutEmail: 'thief@example.com' });
    assert.equal(crossed.status, 403, 'a token of another session');
    assert.equal(await payoutOf(omar.id), omar.payoutEmail, 'nothing changed');
    assert.equal((await omarBrowser.post(`/portal/${slug}/logout`, { _csrf: janeToken })).status, 403, 'nor signs out');
    assert.equal((await omarBrowser.get(`/portal/${slug}/me.json`)).status, 200);

    // Jane signs out and in again in the same browser: the old session's token no longer works.
    assert.equal((await janeBrowser.post(`/portal/${slug}/logout`, { _csrf: janeToken })).status, 303);
    assert.equal((await janeBrowser.post(`/portal/${slug}/payout-email`, { _csrf: janeToken, payoutEmail: 'thief@example.com' })).status, 403, 'signed out');
    await signIn(await loginLinkFor(slug, jane.email), janeBrowser);
    assert.equal((await janeBrowser.post(`/portal/${slug}/payout-email`, { _csrf: janeToken, payoutEmail: 'thief@example.com' })).status, 403, 'a token of the ended session');
    assert.equal(await payoutOf(jane.id), jane.payoutEmail, 'nothing changed');
    const fresh = csrfOf((await janeBrowser.get(`/portal/${slug}/home`)).text);
    assert.notEqual(fresh, janeToken);
    assert.equal((await janeBrowser.post(`/portal/${slug}/payout-email`, { _csrf: fresh, payoutEmail: uniqueEmail('jane-pays') })).status, 303, "the session's own token works");
  });

  it('e-mails the old payout address, through the outbox in the change\'s transaction, whoever changes it', async () => {
    const { api, programId, slug, affiliate: jane } = await programWithAffiliate('Told Outdoor');
    const browser = await signIn(await loginLinkFor(slug, jane.email));
    const home = await browser.get(`/portal/${slug}/home`);
    const first = uniqueEmail('jane-pays');
    const before = smtp.received.length;
    assert.equal((await browser.post(`/portal/${slug}/payout-email`, { _csrf: csrfOf(home.text), payoutEmail: first })).status, 303);
    const notice = (m: { subject: string }) => m.subject.startsWith('Your payout e-mail for ') && m.subject.includes('Told Outdoor');
    const told = await smtp.waitFor((m) => smtp.received.indexOf(m) >= before && notice(m), 'the change notice');
    assert.deepEqual(told.to, [jane.email], 'sent to the old address (her e-mail: the payout e-mail until now)');
    assert.match(told.text, new RegExp(`changed from ${jane.email.replace(/[.+]/g, '\\$&')} to ${first.replace(/[.+]/g, '\\$&')}`));
    assert.match(told.text, /If you did not, sign in/);

    // Changed by the merchant: told at the address it replaces, never at the new one.
    const second = uniqueEmail('jane-new');
    assert.equal((await api.put('/affiliates', { id: jane.id, payoutEmail: second })).status, 200);
    const again = await smtp.waitFor((m) => notice(m) && m.to.includes(first), 'the second notice');
    assert.match(again.text, new RegExp(second.replace(/[.+]/g, '\\$&')));

    const notices = () => rawDb(t).selectFrom('mail_outbox').select(['to_address']).where('kind', '=', 'payout_email_changed').where('program_id', '=', programId).execute();
    const queued = async () => (await notices()).length;
    assert.equal(await queued(), 2);
    assert.equal((await api.put('/affiliates', { id: jane.id, payoutEmail: second })).status, 200);
    assert.equal(await queued(), 2, 'the same address again: nothing to tell');
    // A change that rolls back (its link is taken) tells nobody.
    const other = (await api.post('/affiliates', { firstName: 'Omar', lastName: 'Haddad', email: uniqueEmail('omar'), affiliateLink: `taken-${Date.now()}` })).body;
    assert.equal((await api.put('/affiliates', { id: jane.id, payoutEmail: uniqueEmail('rolled-back'), affiliateLink: other.link })).status, 409);
    assert.equal(await queued(), 2, 'nothing queued by a change that did not commit');
    assert.ok((await notices()).every((n) => n.to_address !== second), 'never to the new address');
  });
});

describe("the portal's 20-link cap (item 10)", () => {
  it('holds under 40 concurrent adds through the portal: exactly 20 links' + raceNote, async () => {
    const { api, programId, slug, affiliate } = await programWithAffiliate('Capped Outdoor');
    await updateProgramSettings(rawDb(t), programId, { portalLinksAllowed: true });
    const jane = await signIn(await loginLinkFor(slug, affiliate.email));
    const csrf = csrfOf((await jane.get(`/portal/${slug}/home`)).text);
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => jane.post(`/portal/${slug}/links`, { _csrf: csrf, link: `jane-${i}` })));
    const statuses = answers.map((a) => a.status);
    assert.equal(statuses.filter((s) => s === 303).length, 19, `19 added beside her own link: ${statuses.join(' ')}`);
    assert.equal(statuses.filter((s) => s === 422).length, 21, statuses.join(' '));
    assert.ok(answers.filter((a) => a.status === 422).every((a) => /you have the most links an affiliate may add \(20\)/i.test(a.text)));
    const links = (await api.get(`/links?affiliateId=${affiliate.id}&limit=100`)).body;
    assert.equal(links.length, 20, 'exactly 20 links');
    // At the cap, one more is refused; the merchant's API is not capped.
    assert.equal((await jane.post(`/portal/${slug}/links`, { _csrf: csrf, link: 'jane-more' })).status, 422);
    assert.equal((await api.post('/links', { affiliateId: affiliate.id, link: 'jane-by-merchant' })).status, 201);
  });
});
