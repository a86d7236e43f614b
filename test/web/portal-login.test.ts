// Signing in to the affiliate portal without a password (issue 19 items 2, 3, 5): the login
// e-mail through a real SMTP server, a link that opening does not use up, single use and
// expiry with the injected clock, sessions bound to one affiliate of one program, the figures
// (the same as the API's and the ledger's), me.json, portal-link for the merchant's app, and
// the limits that flood no inbox and lock nobody out.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { createProgram, updateProgramSettings } from '../../src/modules/programs/program.service.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { apiClient, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { uniqueEmail } from '../helpers/fixtures.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { csrfOf, WebClient } from '../helpers/web-client.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.ts';
import { emailedLoginPath, signInByLink } from '../helpers/portal-client.ts';

let t: TestServer;
let smtp: SmtpReceiver;
let now = new Date('2026-11-01T10:00:00.000Z');
let addresses = 0;

before(async () => {
  smtp = await startSmtpReceiver();
  t = await startTestServer({ smtpUrl: smtp.url, trustProxy: ['127.0.0.1'] }, { clock: () => now });
});
after(async () => {
  await t?.close();
  await smtp?.close();
});

async function programWithAffiliate(name: string): Promise<{ api: ApiClient; slug: string; affiliate: any }> {
  const db = rawDb(t);
  const owner = await createUser(db, { email: uniqueEmail('owner'), password: 'a long password' });
  const program = await createProgram(db, { ownerUserId: owner.id, name, domain: 'acme.example', commissionRate: 20 });
  await updateProgramSettings(db, program.id, { holdDays: 0 });
  const { token } = await issueToken(db, { programId: program.id, name: 'test', kind: 'api_key' });
  const api = apiClient(t.url, token, program.id);
  const affiliate = (await api.post('/affiliates', { firstName: 'Jane', lastName: 'Cooper', email: uniqueEmail('jane') })).body;
  return { api, slug: program.portal.slug, affiliate };
}

function visitor(): WebClient {
  return new WebClient(t.url, { 'x-forwarded-for': `10.8.${(++addresses >> 8) & 255}.${addresses & 255}` });
}

/** Asks for a login link by e-mail; returns the link from the message that arrives. */
async function loginLinkFor(slug: string, email: string, who = visitor()): Promise<string> {
  return emailedLoginPath(who, smtp, slug, email);
}

/** Opens a login link and presses its button; returns the signed-in browser. */
function signIn(path: string, who = visitor()): Promise<WebClient> {
  return signInByLink(who, path);
}

describe('signing in by e-mail', () => {
  it('sends a link; opening it uses nothing; its button signs in once; the figures match the API', async () => {
    const { api, slug, affiliate } = await programWithAffiliate('Login Outdoor');
    const path = await loginLinkFor(slug, affiliate.email);
    const jane = visitor();
    // A mail scanner opens the link first: nothing is used up.
    assert.equal((await visitor().get(path)).status, 200);
    const page = await jane.get(path);
    assert.match(page.text, /Sign in as Jane Cooper/);
    const signedIn = await jane.post(path, { _csrf: csrfOf(page.text) });
    assert.equal(signedIn.status, 303);
    assert.equal(signedIn.location, `/portal/${slug}/home`);
    const cookie = signedIn.headers.getSetCookie().find((c) => c.startsWith('tandem_portal='))!;
    assert.match(cookie, new RegExp(`Path=/portal/${slug}(;|$)`), 'the cookie is scoped to this portal');
    assert.match(cookie, /HttpOnly/);
    assert.equal((await visitor().get(path)).status, 410, 'used once');
    const again = visitor();
    const againPage = await again.get(`/portal/${slug}/login`);
    const reused = await again.post(path, { _csrf: csrfOf(againPage.text) });
    assert.ok(!reused.headers.getSetCookie().some((c) => c.startsWith('tandem_portal=')), 'pressing the button of a used link signs nobody in');

    // Figures, to the cent, as the API and the ledger give them.
    const sale = (await api.post('/sales', { referralId: affiliate.id, email: uniqueEmail('c'), name: 'C', totalEarned: 100.05 })).body;
    await api.post('/sales/refund', { saleId: sale.id, amount: 0.05 });
    const [payout] = (await api.post('/payouts', {})).body;
    await api.put('/payouts', { payoutId: payout.id, status: 'paid' });
    await api.post('/sales', { referralId: affiliate.id, email: uniqueEmail('c'), name: 'C', totalEarned: 10 });
    const me = await jane.get(`/portal/${slug}/me.json`);
    assert.equal(me.status, 200);
    const view = JSON.parse(me.text);
    assert.deepEqual(Object.keys(view).sort(), ['affiliate', 'commission', 'links', 'payouts', 'promotionalCodes', 'stats']);
    const fromApi = (await api.get(`/affiliates?id=${affiliate.id}`)).body;
    assert.deepEqual(view.affiliate, fromApi);
    assert.deepEqual(view.stats, { clicks: 0, referrals: 2, sales: 2, revenue: 110 });
    const entries = (await api.get(`/commissions?affiliateId=${affiliate.id}`)).body as { amount: number; status: string }[];
    const sum = (status: string) => Math.round(entries.filter((e) => e.status === status).reduce((s, e) => s + e.amount * 100, 0)) / 100;
    assert.deepEqual(view.commission, { pending: sum('pending'), due: sum('due'), paid: sum('paid') });
    assert.deepEqual(view.commission, { pending: 0, due: 2, paid: 20 });
    assert.deepEqual(view.payouts.map((p: any) => [p.id, p.status]), [[payout.id, 'paid']]);
    assert.equal(view.links[0].link, affiliate.link);
    const home = await jane.get(`/portal/${slug}/home`);
    assert.match(home.text, /data-stat="paid">\$20\.00</);
    assert.ok(home.text.includes(`https://acme.example/?ref=${affiliate.link}`));

    // Signing out ends the session.
    const out = await jane.post(`/portal/${slug}/logout`, { _csrf: csrfOf(home.text) });
    assert.equal(out.status, 303);
    assert.equal((await jane.get(`/portal/${slug}/me.json`)).status, 401);
  });

  it('answers the same for an unknown or pending address and sends nothing; a link expires after 15 minutes', async () => {
    const { api, slug, affiliate } = await programWithAffiliate('Quiet Outdoor');
    await updateProgramSettings(rawDb(t), (await api.get('/me')).body.id, { portalSignup: 'approval' });
    const who = visitor();
    const page = await who.get(`/portal/${slug}/login`);
    const unknown = await who.post(`/portal/${slug}/login`, { _csrf: csrfOf(page.text), email: 'nobody@example.com' });
    assert.equal(unknown.status, 200);
    assert.match(unknown.text, /If <strong>nobody@example\.com<\/strong> belongs to an approved affiliate/);
    await api.put('/affiliates', { id: affiliate.id, status: 'inactive' });
    const before = smtp.received.length;
    await who.post(`/portal/${slug}/login`, { _csrf: csrfOf(page.text), email: affiliate.email });
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.equal(smtp.received.slice(before).filter((m) => m.to.includes(affiliate.email) || m.to.includes('nobody@example.com')).length, 0);

    await api.put('/affiliates', { id: affiliate.id, status: 'active' });
    const path = await loginLinkFor(slug, affiliate.email);
    now = new Date(now.getTime() + 16 * 60_000);
    assert.equal((await visitor().get(path)).status, 410, 'expired after 15 minutes');
    const late = visitor();
    const latePage = await late.get(`/portal/${slug}/login`);
    const tried = await late.post(path, { _csrf: csrfOf(latePage.text) });
    assert.equal(tried.status, 303);
    assert.ok(!tried.headers.getSetCookie().some((c) => c.startsWith('tandem_portal=')), 'no session from an expired link');
  });

  it("a session opens one affiliate's data in one program only", async () => {
    const a = await programWithAffiliate('Alpha Outdoor');
    const b = await programWithAffiliate('Beta Outdoor');
    const jane = await signIn(await loginLinkFor(a.slug, a.affiliate.email));
    assert.equal((await jane.get(`/portal/${a.slug}/me.json`)).status, 200);
    // The cookie sent to another program's portal (a browser would not: its path is /portal/{slug}).
    assert.equal((await jane.get(`/portal/${b.slug}/me.json`)).status, 401);
    assert.equal((await jane.get(`/portal/${b.slug}/home`)).status, 302);
    const forged = visitor();
    forged.setCookie('tandem_portal', 'not-a-session');
    assert.equal((await forged.get(`/portal/${a.slug}/me.json`)).status, 401);
    // A merchant's own session is not a portal session.
    assert.equal((await new WebClient(t.url).get(`/portal/${a.slug}/me.json`)).status, 401);
    // Deactivated by the merchant: the session stops at once.
    await a.api.put('/affiliates', { id: a.affiliate.id, status: 'inactive' });
    assert.equal((await jane.get(`/portal/${a.slug}/me.json`)).status, 401);
  });

  it('limits login e-mails per address (429) and per e-mail address (quietly), without locking anyone out', async () => {
    const { slug, affiliate } = await programWithAffiliate('Limited Outdoor');
    const who = visitor();
    const page = await who.get(`/portal/${slug}/login`);
    const before = smtp.received.length;
    for (let i = 0; i < 5; i++) assert.equal((await who.post(`/portal/${slug}/login`, { _csrf: csrfOf(page.text), email: affiliate.email })).status, 200);
    await smtp.waitFor((m) => smtp.received.indexOf(m) >= before + 2 && m.to.includes(affiliate.email), 'three login e-mails');
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.equal(smtp.received.slice(before).filter((m) => m.to.includes(affiliate.email)).length, 3, 'at most 3 e-mails per address in 15 minutes');
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await who.post(`/portal/${slug}/login`, { _csrf: csrfOf(page.text), email: 'someone@example.com' })).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429], '10 requests a minute per client address');
    // The links already sent still work: nobody was locked out.
    const mails = smtp.received.slice(before).filter((m) => m.to.includes(affiliate.email));
    const path = /http:\/\/tandem\.test(\/portal\/[a-z0-9-]+\/login\/[A-Za-z0-9_-]+)/.exec(mails[0]!.text)![1]!;
    await signIn(path);
  });
});

describe('what the affiliate changes in the portal', () => {
  it('sets the payout e-mail, and adds links only when the program allows it', async () => {
    const { api, slug, affiliate } = await programWithAffiliate('Self Outdoor');
    const jane = await signIn(await loginLinkFor(slug, affiliate.email));
    const home = await jane.get(`/portal/${slug}/home`);
    const csrf = csrfOf(home.text);
    const bad = await jane.post(`/portal/${slug}/payout-email`, { _csrf: csrf, payoutEmail: 'not-an-email' });
    assert.equal(bad.status, 422);
    assert.match(bad.text, /id="f-payoutEmail-error">/);
    const saved = await jane.post(`/portal/${slug}/payout-email`, { _csrf: csrf, payoutEmail: 'Jane.Pays@Example.com' });
    assert.equal(saved.status, 303);
    assert.equal((await api.get(`/affiliates?id=${affiliate.id}`)).body.payoutEmail, 'Jane.Pays@Example.com');
    assert.equal((await api.get('/events?type=affiliate.updated')).body.at(-1).data.payoutEmail, 'Jane.Pays@Example.com');

    assert.equal((await jane.post(`/portal/${slug}/links`, { _csrf: csrf, link: 'jane-blog' })).status, 403, 'links are the merchant\'s to allow');
    await updateProgramSettings(rawDb(t), (await api.get('/me')).body.id, { portalLinksAllowed: true });
    const made = await jane.post(`/portal/${slug}/links`, { _csrf: csrf, link: 'jane-blog' });
    assert.equal(made.status, 303);
    assert.deepEqual((await api.get(`/links?affiliateId=${affiliate.id}`)).body.map((l: any) => l.link).sort(), [affiliate.link, 'jane-blog'].sort());
    const taken = await jane.post(`/portal/${slug}/links`, { _csrf: csrf, link: 'JANE-BLOG' });
    assert.equal(taken.status, 409);
    assert.match(taken.text, /already used/);
    assert.equal((await jane.post(`/portal/${slug}/links`, { link: 'no-token' })).status, 403, 'CSRF');
    assert.equal((await visitor().post(`/portal/${slug}/links`, { _csrf: csrf, link: 'stranger' })).status, 403, 'no session, no CSRF binding');
  });
});

describe('POST /api/v1/affiliates/portal-link', () => {
  it('gives a 5-minute, single-use link for an approved, active affiliate of the program only', async () => {
    const { api, slug, affiliate } = await programWithAffiliate('App Outdoor');
    const other = await programWithAffiliate('Other Outdoor');
    const res = await api.post('/affiliates/portal-link', { affiliateId: affiliate.id });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(Object.keys(res.body).sort(), ['expiresAt', 'url']);
    assert.match(res.body.url, new RegExp(`^http://tandem\\.test/portal/${slug}/login/[A-Za-z0-9_-]{43}$`));
    assert.equal(Date.parse(res.body.expiresAt) - now.getTime(), 5 * 60_000);
    const path = new URL(res.body.url).pathname;
    await signIn(path);
    assert.equal((await visitor().get(path)).status, 410, 'single use');
    const byEmail = await api.post('/affiliates/portal-link', { email: affiliate.email.toUpperCase() });
    assert.equal(byEmail.status, 201);
    now = new Date(now.getTime() + 5 * 60_000 + 1);
    assert.equal((await visitor().get(new URL(byEmail.body.url).pathname)).status, 410, 'expired after 5 minutes');
    assertProblem(await api.post('/affiliates/portal-link', { affiliateId: other.affiliate.id }), 404, 'not_found');
    assertProblem(await api.post('/affiliates/portal-link', {}), 422, 'validation_failed', '#/affiliateId');
    await api.put('/affiliates', { id: affiliate.id, status: 'inactive' });
    assertProblem(await api.post('/affiliates/portal-link', { affiliateId: affiliate.id }), 422, 'affiliate_inactive');
  });
});
