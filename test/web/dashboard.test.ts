// The dashboard over real HTTP: a browser stand-in signs up with the real forms, keeps its
// cookie, and submits forms with their CSRF token. What the pages change is checked through
// the JSON API, as a merchant's site would see it. Chromium tests live in test/browser/.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { addIntegration } from '../../src/modules/integrations/integration.service.ts';
import { apiClient, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, uniqueEmail } from '../helpers/browser-session.ts';
import { csrfOf, nextLink, WebClient } from '../helpers/web-client.ts';

let test: TestServer;
/** The first account: the instance's operator. */
let owner: BrowserSession;
/** Another account, with a program of its own. */
let stranger: BrowserSession;
let program: { id: string; base: string };
let strangerProgram: { id: string; base: string };
let api: ApiClient;


/** The text of an overview figure (`data-stat`). */
function stat(page: string, key: string): string {
  const match = new RegExp(`data-stat="${key}">([^<]*)<`).exec(page);
  assert.ok(match, `the overview shows ${key}`);
  return match[1]!;
}

/** How many rows link to an affiliate's page (one per row of the affiliates table). */
function affiliateRowCount(page: string, base: string): number {
  const table = page.split('<tbody>')[1]?.split('</tbody>')[0] ?? '';
  return (table.match(new RegExp(`<td><a href="${base}/affiliates/[0-9a-f-]{36}">`, 'g')) ?? []).length;
}

const money = (amount: number, currency = 'USD') => new Intl.NumberFormat('en-US', { style: 'currency', currency }).format(amount);

async function createAffiliateWithApi(client: ApiClient, fields: Record<string, unknown> = {}) {
  const response = await client.post('/affiliates', { firstName: 'Api', lastName: 'Made', email: uniqueEmail(), ...fields });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return response.body as { id: string; email: string; link: string };
}

async function createSaleWithApi(client: ApiClient, affiliateId: string, totalEarned: number, extra: Record<string, unknown> = {}) {
  const response = await client.post('/sales', { referralId: affiliateId, name: 'Customer', email: uniqueEmail('customer'), totalEarned, ...extra });
  assert.equal(response.status, 201, JSON.stringify(response.body));
  return response.body as { id: number; totalEarned: number };
}

const BROWSER_AGENT = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';

/**
 * A click as /tracker.js reports it from a landing page of the program's domain. The server
 * tells visitors apart by address and browser: here every visitor has a browser of its own.
 */
async function trackClick(programId: string, domain: string, link: string, visitor: string, userAgent = `${BROWSER_AGENT} ${visitor}`) {
  const response = await fetch(`${test.url}/api/track/click?programId=${programId}`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', origin: `https://${domain}`, 'user-agent': userAgent },
    body: JSON.stringify({ url: `https://${domain}/?ref=${link}` }),
  });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return JSON.parse(text) as { referral: string | null; counted: boolean };
}

before(async () => {
  test = await startTestServer();
  owner = await BrowserSession.signUp(test.url, uniqueEmail('owner'));
  stranger = await BrowserSession.signUp(test.url, uniqueEmail('stranger'));
  program = await owner.createProgram({ name: 'Acme Rockets', domain: 'rockets.example', commissionRate: '20' });
  strangerProgram = await stranger.createProgram({ name: 'Stranger Things', domain: 'stranger.example' });
  api = apiClient(test.url, (await owner.createApiKey(program.base, 'setup key')).token, program.id);
});

after(async () => {
  await test?.close();
});

describe('dashboard: access', () => {
  it('sends visitors without a session to the login page and back', async () => {
    const anonymous = new WebClient(test.url);
    for (const path of ['/dashboard', `${program.base}`, `${program.base}/affiliates?q=a`, `${program.base}/settings`]) {
      const response = await anonymous.get(path);
      assert.equal(response.status, 302, path);
      assert.equal(response.location, `/login?next=${encodeURIComponent(path)}`);
    }
    const post = await anonymous.post(`${program.base}/affiliates`, { firstName: 'No', lastName: 'Session', email: uniqueEmail() });
    assert.equal(post.status, 303);
    assert.match(post.location ?? '', /^\/login\?next=/);
    // After logging in, the user lands on the page they asked for.
    const login = await anonymous.logIn(owner.email, 'a long password', `${program.base}/sales`);
    assert.equal(login.location, `${program.base}/sales`);
  });

  it('after login, follows `next` only to a path of this site, whatever the encoding trick', async () => {
    // The issue's example, through the login form: to a browser `/<tab>/evil.example` is `//evil.example`.
    const login = await new WebClient(test.url).logIn(owner.email, 'a long password', '/\t/evil.example');
    assert.equal(login.location, '/dashboard');
    // The sign-up form follows the same rule.
    const newcomer = new WebClient(test.url);
    const signupPage = await newcomer.get('/signup');
    const signup = await newcomer.post('/signup', { _csrf: csrfOf(signupPage.text), email: uniqueEmail('next'), password: 'a long password', next: '/\\evil.example' });
    assert.equal(signup.status, 303);
    assert.equal(signup.location, '/dashboard');
    // Each of these is, to a browser, a way to another host (tabs and newlines are dropped,
    // backslashes read as slashes, dot segments normalised away). A logged-in GET /login?next=
    // takes the same check without spending the login limit.
    const user = new WebClient(test.url);
    await user.logIn(owner.email, 'a long password');
    const tricks = ['//evil.example', '/\n/evil.example', '/\\evil.example', '/.//evil.example', '/%2e//evil.example', '/a/../..//evil.example', 'https://evil.example/', ' /evil', '/\u0000/evil.example'];
    for (const next of tricks) {
      const response = await user.get(`/login?next=${encodeURIComponent(next)}`);
      assert.equal(response.location, '/dashboard', JSON.stringify(next));
    }
    // An encoded tab stays an encoded tab: a path on this site.
    assert.equal((await user.get(`/login?next=${encodeURIComponent('/%09/evil.example')}`)).location, '/%09/evil.example');
    assert.equal((await user.get(`/login?next=${encodeURIComponent(`${program.base}/sales?x=1`)}`)).location, `${program.base}/sales?x=1`);
  });

  it('sends security headers on every page, allows no inline script, and keeps the cookie from scripts and other sites', async () => {
    const anonymous = new WebClient(test.url);
    // The login page's anonymous CSRF cookie; the session cookie's attributes are in anonymous-csrf.test.ts.
    const cookie = (await fetch(`${test.url}/login`)).headers.getSetCookie().find((c) => c.startsWith('tandem_anon=')) ?? '';
    assert.match(cookie, /; HttpOnly/i);
    assert.match(cookie, /; SameSite=Lax/i);
    assert.doesNotMatch(cookie, /; Secure/i, 'an http site cannot use a Secure cookie (the https case is in test/ops)');
    const pages = [
      ['anonymous', anonymous, '/login'],
      ['anonymous', anonymous, '/signup'],
      ['owner', owner, program.base],
      ['owner', owner, `${program.base}/affiliates`],
      ['owner', owner, `${program.base}/settings`],
      ['owner', owner, `${program.base}/webhooks`],
    ] as const;
    for (const [who, client, path] of pages) {
      const response = await client.get(path);
      assert.equal(response.status, 200, `${who} ${path}`);
      const csp = response.headers.get('content-security-policy') ?? '';
      assert.match(csp, /(^|; )script-src 'self'(;|$)/, `${path}: scripts only from this site`);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, `${path}: no inline or eval'd script`);
      assert.match(csp, /frame-ancestors 'none'/, `${path}: never framed`);
      assert.equal(response.headers.get('x-frame-options'), 'DENY', path);
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff', path);
      assert.equal(response.headers.get('referrer-policy'), 'no-referrer', path);
      assert.equal(response.headers.get('cache-control'), 'no-store', path);
      // The CSP would block an inline script; make sure the pages do not rely on one.
      assert.doesNotMatch(response.text, /<script(?![^>]*\bsrc=)[^>]*>/i, `${path}: every script is a file`);
      assert.doesNotMatch(response.text, /\son[a-z]+="/i, `${path}: no inline event handlers`);
    }
  });

  it("answers 404 for another user's program, on every page and form, and changes nothing", async () => {
    const paths = ['', '/affiliates', '/affiliates/new', '/referrals', '/sales', '/coupons', '/coupons/new', '/keys', '/apps', '/settings'];
    for (const path of paths) {
      const response = await stranger.get(`${program.base}${path}`);
      assert.equal(response.status, 404, `GET ${path}`);
      assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
      assert.doesNotMatch(response.text, /Acme Rockets/, 'the page does not reveal the program');
    }
    const before = (await api.get('/affiliates')).body.length;
    const csrf = await stranger.csrf();
    const forged = [
      [`${program.base}/affiliates`, { firstName: 'Mallory', lastName: 'M', email: uniqueEmail() }],
      [`${program.base}/keys`, { name: 'stolen' }],
      [`${program.base}/settings`, { name: 'Taken over', domain: 'evil.example' }],
    ] as const;
    for (const [action, fields] of forged) {
      const response = await stranger.post(action, { _csrf: csrf, ...fields });
      assert.equal(response.status, 404, `POST ${action}`);
    }
    assert.equal((await api.get('/affiliates')).body.length, before);
    assert.equal((await api.get('/me')).body.name, 'Acme Rockets');
    assert.doesNotMatch(await owner.page(`${program.base}/keys`), /stolen/);
    // Unknown and malformed ids are 404s too, not errors.
    assert.equal((await owner.get('/dashboard/programs/00000000-0000-4000-8000-000000000000')).status, 404);
    assert.equal((await owner.get('/dashboard/programs/not-a-uuid/affiliates')).status, 404);
    assert.equal((await owner.get(`${program.base}/affiliates/not-a-uuid`)).status, 404);
    // The switcher's target is checked like any other page.
    const switched = await stranger.get(`/dashboard/switch?program=${program.id}`);
    assert.equal(switched.location, program.base);
    assert.equal((await stranger.get(switched.location!)).status, 404);
  });

  it('refuses a form without a valid CSRF token with 403 and changes nothing', async () => {
    const before = (await api.get('/affiliates')).body.length;
    const missing = await owner.post(`${program.base}/affiliates`, { firstName: 'No', lastName: 'Token', email: uniqueEmail() });
    assert.equal(missing.status, 403);
    const wrong = await owner.post(`${program.base}/affiliates`, { _csrf: 'x'.repeat(43), firstName: 'Bad', lastName: 'Token', email: uniqueEmail() });
    assert.equal(wrong.status, 403);
    // Another session's token is not this session's.
    const borrowed = await owner.post(`${program.base}/affiliates`, { _csrf: await stranger.csrf(), firstName: 'Borrowed', lastName: 'Token', email: uniqueEmail() });
    assert.equal(borrowed.status, 403);
    assert.equal((await api.get('/affiliates')).body.length, before);

    const { token } = await owner.createApiKey(program.base, 'csrf target');
    const keys = await owner.page(`${program.base}/keys`);
    const id = /action="[^"]+\/keys\/([0-9a-f-]{36})\/revoke"/.exec(keys)![1]!;
    assert.equal((await owner.post(`${program.base}/keys/${id}/revoke`, {})).status, 403);
    assert.equal((await apiClient(test.url, token, program.id).get('/me')).status, 200, 'the key still works');
  });
});

describe('dashboard: programs', () => {
  it('lists the programs and shows an empty state for a new account', async () => {
    const newcomer = new BrowserSession(test.url, owner.email);
    await newcomer.logIn(owner.email, 'a long password');
    const home = await newcomer.page('/dashboard');
    assert.match(home, /Acme Rockets/);
    assert.match(home, /rockets\.example/);
    assert.match(home, /action="\/dashboard\/programs"/);
    const strangerHome = await stranger.page('/dashboard');
    assert.doesNotMatch(strangerHome, /Acme Rockets/, "another user's programs are not listed");
  });

  it('creates a program from the form, with errors beside the fields', async () => {
    const invalid = await owner.submit('/dashboard', '/dashboard/programs', { name: 'Bad', domain: 'not a domain', currency: 'XYZ', commissionRate: '150' });
    assert.equal(invalid.status, 422);
    assert.match(invalid.text, /id="f-domain-error">Must be a domain name/);
    assert.match(invalid.text, /value="not a domain"/, 'what was typed is kept');
    const created = await owner.createProgram({ name: 'Second Program', domain: 'second.example', currency: 'eur', baseUrls: 'https://second.example/shop\nhttps://second.example/de', referralParam: 'ref' });
    const settings = await owner.page(`${created.base}/settings`);
    assert.match(settings, /value="Second Program"/);
    assert.match(settings, /value="EUR"/);
    assert.match(settings, />https:\/\/second\.example\/shop\nhttps:\/\/second\.example\/de</);
    // The switcher lists both and goes to the chosen one.
    assert.match(settings, new RegExp(`<option value="${program.id}"`));
    const switched = await owner.get(`/dashboard/switch?program=${created.id}`);
    assert.equal(switched.location, created.base);
  });

  it('shows the tracking tag with the program id on Settings, ready to copy', async () => {
    const settings = await owner.page(`${program.base}/settings`);
    const tag = `&lt;script src="${test.config.siteUrl}/tracker.js" data-program-id="${program.id}" async&gt;&lt;/script&gt;`;
    assert.ok(settings.includes(`<pre class="secret" id="tracker-tag">${tag}</pre>`), 'the exact tag, escaped');
    assert.match(settings, /<button type="button" class="secondary" data-copy="tracker-tag" hidden>Copy<\/button>/);
    assert.match(settings, /data-consent="required"/);
  });

  it('edits the program on Settings; the API sees the change', async () => {
    const { id, base } = await owner.createProgram({ name: 'Editable', domain: 'editable.example' });
    const key = apiClient(test.url, (await owner.createApiKey(base)).token, id);
    const saved = await owner.submit(`${base}/settings`, `${base}/settings`, {
      name: 'Edited', domain: 'edited.example', currency: 'GBP', commissionRate: '12.5', baseUrls: 'https://edited.example/in', referralParam: 'by', logoUrl: 'https://edited.example/logo.png',
    });
    assert.equal(saved.status, 303, saved.text.slice(0, 500));
    assert.equal(saved.location, `${base}/settings?done=saved`);
    const me = (await key.get('/me')).body;
    assert.deepEqual([me.name, me.domain, me.currency, me.commissionRate, me.baseUrls, me.referralParam, me.logoUrl], ['Edited', 'edited.example', 'GBP', 12.5, ['https://edited.example/in'], 'by', 'https://edited.example/logo.png']);
    const invalid = await owner.submit(`${base}/settings`, `${base}/settings`, { name: 'Edited', domain: 'edited.example', baseUrls: 'https://ok.example\nftp://nope' });
    assert.equal(invalid.status, 422);
    assert.match(invalid.text, /id="f-baseUrls-error">Must be an http\(s\) URL/);
    // Amounts are stored in the currency: once there are sales it cannot change.
    const affiliate = await createAffiliateWithApi(key);
    await createSaleWithApi(key, affiliate.id, 10);
    const switchCurrency = await owner.submit(`${base}/settings`, `${base}/settings`, { name: 'Edited', domain: 'edited.example', currency: 'JPY' });
    assert.equal(switchCurrency.status, 422);
    assert.match(switchCurrency.text, /id="f-currency-error">Cannot change once amounts are recorded in GBP/);
    assert.equal((await key.get('/me')).body.currency, 'GBP');
  });
});

describe('dashboard: affiliates', () => {
  it('creates an affiliate with the form; the list and the API show it', async () => {
    const address = uniqueEmail('jane');
    const created = await owner.submit(`${program.base}/affiliates/new`, `${program.base}/affiliates`, {
      firstName: 'Jane', lastName: 'Form', email: address, commissionRate: '', affiliateLink: 'jane-form', payoutEmail: '', paymentMethod: '',
    });
    assert.equal(created.status, 303, created.text.slice(0, 800));
    const match = new RegExp(`^${program.base}/affiliates/([0-9a-f-]{36})\\?done=created$`).exec(created.location ?? '');
    assert.ok(match, created.location ?? '');
    const detail = await owner.page(created.location!);
    assert.match(detail, /Affiliate created/);
    assert.match(detail, /https:\/\/rockets\.example\/\?ref=jane-form/, 'the detail page lists its link');
    assert.match(await owner.page(`${program.base}/affiliates`), new RegExp(address.replace('.', '\\.')));

    const fromApi = await api.get(`/affiliates?email=${encodeURIComponent(address)}`);
    assert.equal(fromApi.status, 200);
    assert.equal(fromApi.body.id, match[1]);
    assert.equal(fromApi.body.name, 'Jane Form');
    assert.equal(fromApi.body.link, 'jane-form');
    assert.equal(fromApi.body.commissionRate, 20, "the program's default rate");
    const events = await rawDb(test).selectFrom('events').select('type').where('program_id', '=', program.id).where('type', '=', 'affiliate.created').execute();
    assert.ok(events.length > 0, 'affiliate.created is recorded, as for the API');
  });

  it('shows validation and conflict errors beside the form', async () => {
    const invalid = await owner.submit(`${program.base}/affiliates/new`, `${program.base}/affiliates`, { firstName: ' ', lastName: 'X', email: 'not-an-email', commissionRate: 'lots' });
    assert.equal(invalid.status, 422);
    assert.match(invalid.text, /id="f-firstName-error">Must not be blank/);
    assert.match(invalid.text, /id="f-email-error">Must be an e-mail address/);
    assert.match(invalid.text, /id="f-commissionRate-error">Must be a number\./);
    assert.match(invalid.text, /aria-invalid="true"/);
    const existing = await createAffiliateWithApi(api);
    const taken = await owner.submit(`${program.base}/affiliates/new`, `${program.base}/affiliates`, { firstName: 'Dup', lastName: 'Licate', email: existing.email });
    assert.equal(taken.status, 409);
    assert.match(taken.text, /already exists/);
  });

  it('edits, deactivates and reactivates an affiliate', async () => {
    const affiliate = await createAffiliateWithApi(api);
    const edit = `${program.base}/affiliates/${affiliate.id}`;
    const saved = await owner.submit(`${edit}/edit`, edit, { firstName: 'Renamed', lastName: 'Person', commissionRate: '33.3', payoutEmail: 'payout@example.com', paymentMethod: 'paypal', status: 'active' });
    assert.equal(saved.status, 303, saved.text.slice(0, 800));
    let body = (await api.get(`/affiliates?id=${affiliate.id}`)).body;
    assert.deepEqual([body.name, body.commissionRate, body.payoutEmail, body.paymentMethod, body.detailsComplete], ['Renamed Person', 33.3, 'payout@example.com', 'paypal', true]);

    const invalid = await owner.submit(`${edit}/edit`, edit, { firstName: 'Renamed', lastName: 'Person', commissionRate: '101', payoutEmail: 'nope', paymentMethod: 'paypal', status: 'active' });
    assert.equal(invalid.status, 422);
    assert.match(invalid.text, /id="f-commissionRate-error">Must be at most 100\./);
    assert.match(invalid.text, /id="f-payoutEmail-error">/);

    // Back to the program's default rate: an empty rate field.
    await owner.submit(`${edit}/edit`, edit, { firstName: 'Renamed', lastName: 'Person', commissionRate: '', payoutEmail: 'payout@example.com', paymentMethod: 'paypal', status: 'active' });
    assert.equal((await api.get(`/affiliates?id=${affiliate.id}`)).body.commissionRate, 20);

    const deactivated = await owner.submit(edit, `${edit}/status`, { status: 'inactive' });
    assert.equal(deactivated.location, `${edit}?done=deactivated`);
    body = (await api.get(`/affiliates?id=${affiliate.id}`)).body;
    assert.equal(body.status, 'inactive');
    assert.match(await owner.page(deactivated.location!), /Reactivate/);
    await owner.submit(edit, `${edit}/status`, { status: 'active' });
    assert.equal((await api.get(`/affiliates?id=${affiliate.id}`)).body.status, 'active');
  });

  it('shows links, referrals and sales on the detail page, and adds a link', async () => {
    const affiliate = await createAffiliateWithApi(api, { firstName: 'Detail' });
    await createSaleWithApi(api, affiliate.id, 42.5, { name: 'Detail Customer' });
    const path = `${program.base}/affiliates/${affiliate.id}`;
    const added = await owner.submit(path, `${path}/links`, { link: 'detail-extra' });
    assert.equal(added.status, 303, added.text.slice(0, 500));
    const page = await owner.page(path);
    assert.match(page, /detail-extra/);
    assert.match(page, new RegExp(affiliate.link));
    assert.match(page, /Detail Customer/);
    assert.match(page, /\$42\.50/);
    assert.match(page, /\$8\.50/, 'the commission earned');
    const taken = await owner.submit(path, `${path}/links`, { link: 'detail-extra' });
    assert.equal(taken.status, 409);
    const malformed = await owner.submit(path, `${path}/links`, { link: 'no spaces' });
    assert.equal(malformed.status, 422);
    assert.match(malformed.text, /id="f-link-error">/);
  });

  it('searches by e-mail or name prefix and pages 50 at a time', async () => {
    const { id, base } = await owner.createProgram({ name: 'Crowd', domain: 'crowd.example' });
    const crowd = apiClient(test.url, (await owner.createApiKey(base)).token, id);
    for (let i = 0; i < 53; i++) await createAffiliateWithApi(crowd, { firstName: i === 7 ? 'Zelda' : `Member${i}`, email: `crowd${i}-${process.pid}@example.com` });
    const first = await owner.page(`${base}/affiliates`);
    assert.equal(affiliateRowCount(first, base), 50);
    const next = nextLink(first);
    assert.ok(next, 'a Next link');
    const second = await owner.page(next);
    assert.equal(affiliateRowCount(second, base), 3);
    assert.equal(nextLink(second), null);
    assert.match(second, /First page/);

    const byName = await owner.page(`${base}/affiliates?q=zel`);
    assert.equal(affiliateRowCount(byName, base), 1);
    assert.match(byName, /Zelda/);
    const byEmail = await owner.page(`${base}/affiliates?q=${encodeURIComponent('CROWD12-')}`);
    assert.equal(affiliateRowCount(byEmail, base), 1);
    const wildcard = await owner.page(`${base}/affiliates?q=${encodeURIComponent('%')}`);
    assert.equal(affiliateRowCount(wildcard, base), 0, 'LIKE wildcards match literally');
    assert.match(wildcard, /No affiliate/);
  });
});

describe('dashboard: API keys and connected apps', () => {
  it('shows a new key once; it works on the API until revoked', async () => {
    const { token, page } = await owner.createApiKey(program.base, 'Website backend');
    assert.match(token, /^tdm_[A-Za-z0-9_-]{43}$/);
    assert.match(page, /class="secret"/);
    assert.match(page, /data-copy="new-token"/);
    assert.match(page, /<script src="\/assets\/dashboard\.js" defer><\/script>/);
    assert.equal((await owner.get('/assets/dashboard.js')).status, 200);

    const list = await owner.page(`${program.base}/keys`);
    assert.doesNotMatch(list, new RegExp(token), 'the list never shows the secret again');
    assert.match(list, /Website backend/);
    assert.match(list, new RegExp(`${token.slice(0, 10)}…`), 'the list shows the prefix');

    const row = (page: string) => /<tr>\s*<td>Website backend<\/td>[\s\S]*?<\/tr>/.exec(page)?.[0] ?? '';
    assert.match(row(list), /<td>Never<\/td>/, 'not used yet');
    const key = apiClient(test.url, token, program.id);
    assert.equal((await key.get('/affiliates')).status, 200);
    assert.equal((row(await owner.page(`${program.base}/keys`)).match(/<time /g) ?? []).length, 2, 'created and last used');

    const id = new RegExp(`<td>Website backend</td>[\\s\\S]*?/keys/([0-9a-f-]{36})/revoke`).exec(list)![1]!;
    const revoked = await owner.submit(`${program.base}/keys`, `${program.base}/keys/${id}/revoke`, {});
    assert.equal(revoked.status, 303);
    assert.equal(revoked.location, `${program.base}/keys?done=revoked`);
    const refused = await key.get('/affiliates');
    assert.equal(refused.status, 401);
    assert.match(await owner.page(revoked.location!), /Revoked/);
    // Revoking twice, or from another program's page, finds nothing.
    assert.equal((await owner.submit(`${program.base}/keys`, `${program.base}/keys/${id}/revoke`, {})).status, 404);
  });

  it('lists connect-flow tokens with who connected them, and revokes them', async () => {
    const db = rawDb(test);
    const user = await db.selectFrom('users').select('id').where('email', '=', owner.email).executeTakeFirstOrThrow();
    await addIntegration(db, { name: 'zapier', displayName: 'Zapier', redirectUris: ['https://zapier.example/callback'] });
    const connection = await issueToken(db, { programId: program.id, name: 'Zapier connection', kind: 'connect', integration: 'zapier', createdByUserId: user.id });
    const tool = apiClient(test.url, connection.token, program.id);
    assert.equal((await tool.get('/me')).status, 200);

    const apps = await owner.page(`${program.base}/apps`);
    assert.match(apps, /Zapier/);
    assert.match(apps, new RegExp(owner.email.replace(/[.+]/g, '\\$&')));
    assert.doesNotMatch(apps, /setup key/, 'API keys are not connected apps');
    assert.doesNotMatch(await owner.page(`${program.base}/keys`), /Zapier connection/, 'connections are not API keys');
    // A connection cannot be revoked as an API key, nor by another user.
    assert.equal((await owner.submit(`${program.base}/keys`, `${program.base}/keys/${connection.id}/revoke`, {})).status, 404);
    assert.equal((await stranger.submit(`${strangerProgram.base}/apps`, `${strangerProgram.base}/apps/${connection.id}/revoke`, {})).status, 404);
    assert.equal((await tool.get('/me')).status, 200);

    const revoked = await owner.submit(`${program.base}/apps`, `${program.base}/apps/${connection.id}/revoke`, {});
    assert.equal(revoked.status, 303);
    assert.equal((await tool.get('/me')).status, 401, 'refused on the next call');
    assert.match(await owner.page(revoked.location!), /Connection revoked/);
  });
});

describe('dashboard: overview, referrals and sales', () => {
  it("shows totals equal to the API's numbers, and a chart with a text alternative", async () => {
    const { id, base } = await owner.createProgram({ name: 'Numbers', domain: 'numbers.example', commissionRate: '15' });
    const key = apiClient(test.url, (await owner.createApiKey(base)).token, id);
    let page = await owner.page(base);
    assert.deepEqual(['affiliates', 'referrals', 'sales', 'revenue', 'commission'].map((k) => stat(page, k)), ['0', '0', '0', '$0.00', '$0.00']);
    assert.match(page, /Get started/);

    const jane = await createAffiliateWithApi(key);
    const joe = await createAffiliateWithApi(key, { commissionRate: 33.33 });
    await createAffiliateWithApi(key);
    const referral = await key.post('/referrals', { name: 'Only referred', email: uniqueEmail('ref'), referredUserExternalId: 'ext-1', affiliateId: jane.id });
    assert.equal(referral.status, 201);
    for (const [who, amount] of [[jane, 19.99], [jane, 100], [joe, 0.01], [joe, 57.77], [joe, 1234.56]] as const) await createSaleWithApi(key, who.id, amount);

    const sales = (await key.get('/sales')).body as { totalEarned: number }[];
    const affiliates = (await key.get('/affiliates')).body as { totalCommissionEarned: number }[];
    const referrals = (await key.get('/referrals')).body as unknown[];
    const revenue = sales.reduce((sum, s) => sum + Math.round(s.totalEarned * 100), 0) / 100;
    const commission = affiliates.reduce((sum, a) => sum + Math.round(a.totalCommissionEarned * 100), 0) / 100;

    page = await owner.page(base);
    assert.equal(stat(page, 'affiliates'), String(affiliates.length));
    assert.equal(stat(page, 'referrals'), String(referrals.length));
    assert.equal(stat(page, 'sales'), String(sales.length));
    assert.equal(stat(page, 'revenue'), money(revenue));
    assert.equal(stat(page, 'commission'), money(commission));
    assert.equal(stat(page, 'revenue'), '$1,412.33');

    // The chart: inline SVG with an accessible name and a table of the days with sales.
    assert.match(page, /<svg viewBox="0 0 720 240" role="img" aria-labelledby="chart-title chart-desc"/);
    assert.match(page, /<desc id="chart-desc">5 sales from [A-Z][a-z]{2} \d+ to [A-Z][a-z]{2} \d+: revenue \$1,412\.33, commission /);
    assert.match(page, /class="bar-revenue"/);
    assert.match(page, /<th scope="row">\d{4}-\d{2}-\d{2}<\/th><td class="num">5<\/td><td class="num">\$1,412\.33<\/td>/);
    assert.doesNotMatch(page, /style=/, 'no inline styles (the CSP forbids them)');
    const ninety = await owner.page(`${base}?days=90`);
    assert.match(ninety, /last 90 days/);
    assert.equal((ninety.match(/<text class="axis-label" x="[\d.]+" y="232"/g) ?? []).length, 6, 'a date label every 15 days');

    // A refund and a void: revenue and commission are net, like the affiliates' totals.
    const [newest, second] = sales as unknown as { id: number; totalEarned: number }[];
    assert.deepEqual([newest!.totalEarned, second!.totalEarned], [1234.56, 57.77]);
    assert.equal((await key.post('/sales/refund', { saleId: newest!.id, amount: 34.56 })).status, 201);
    assert.equal((await key.request('DELETE', `/sales?id=${second!.id}`)).status, 200);
    const netCommission = ((await key.get('/affiliates')).body as { totalCommissionEarned: number }[]).reduce((sum, a) => sum + Math.round(a.totalCommissionEarned * 100), 0) / 100;
    page = await owner.page(base);
    assert.deepEqual(['sales', 'revenue', 'commission'].map((k) => stat(page, k)), ['4', '$1,320.00', money(netCommission)]);
    assert.match(await owner.page(`${base}/sales`), /\$34\.56 refunded/);
  });

  it('shows clicks and the conversion rate in the totals, the chart and its table', async () => {
    const { id, base } = await owner.createProgram({ name: 'Clicks', domain: 'clicks.example', commissionRate: '10' });
    const key = apiClient(test.url, (await owner.createApiKey(base)).token, id);
    let page = await owner.page(base);
    assert.deepEqual([stat(page, 'clicks'), stat(page, 'conversion')], ['0', '—'], 'no rate before the first click');
    assert.match(page, /<desc id="chart-desc">No sales from [^<]*\. No clicks\.<\/desc>/);
    assert.doesNotMatch(page, /class="line-clicks"/);

    const ann = await createAffiliateWithApi(key, { firstName: 'Ann' });
    const bob = await createAffiliateWithApi(key, { firstName: 'Bob' });
    assert.equal((await key.post('/links', { affiliateId: ann.id, link: 'ann-extra' })).status, 201);
    // Ann: two visitors on her own link (one of them twice: still one click that day) and one
    // on her extra link; Bob: two visitors. A crawler is not a click.
    const clicks = [[ann.link, 'visitor-a'], [ann.link, 'visitor-b'], [ann.link, 'visitor-a'], ['ann-extra', 'visitor-a'], [bob.link, 'visitor-c'], [bob.link, 'visitor-d']] as const;
    const counted = [];
    for (const [link, visitor] of clicks) counted.push((await trackClick(id, 'clicks.example', link, visitor)).counted);
    assert.deepEqual(counted, [true, true, false, true, true, true]);
    assert.equal((await trackClick(id, 'clicks.example', ann.link, 'visitor-bot', 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)')).counted, false);

    // Referrals named by link string, as a site hands window.tandem.referral on; Bob's comes with a sale.
    for (const link of [ann.link, 'ann-extra']) {
      const referral = await key.post('/referrals', { name: 'Clicked', email: uniqueEmail('clicked'), referredUserExternalId: `ext-${link}`, affiliateId: link });
      assert.equal(referral.status, 201, JSON.stringify(referral.body));
    }
    await createSaleWithApi(key, bob.link, 80);

    page = await owner.page(base);
    assert.equal(stat(page, 'clicks'), '5');
    assert.equal(stat(page, 'referrals'), '3');
    assert.equal(stat(page, 'conversion'), '60.0\u00a0%', '3 referrals ÷ 5 clicks');
    // The chart: a clicks line on its own axis, in the summary and in today's row of the table.
    const today = new Date().toISOString().slice(0, 10);
    assert.match(page, /<polyline class="line-clicks" points="[\d.,\s]+"\/>/);
    assert.match(page, /<desc id="chart-desc">1 sales from [^<]*\. 5 clicks\.<\/desc>/);
    assert.match(page, /<th scope="col" class="num">Commission<\/th><th scope="col" class="num">Clicks<\/th>/);
    assert.match(page, new RegExp(`<th scope="row">${today}</th><td class="num">1</td><td class="num">\\$80\\.00</td><td class="num">\\$8\\.00</td><td class="num">5</td></tr>`));
    assert.doesNotMatch(page, /style=/, 'no inline styles (the CSP forbids them)');
    // A day with clicks and no sale has its row too.
    const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
    await rawDb(test).updateTable('click_days').set({ day: yesterday }).where('program_id', '=', id).execute();
    assert.match(await owner.page(base), new RegExp(`<th scope="row">${yesterday}</th><td class="num">0</td><td class="num">\\$0\\.00</td><td class="num">\\$0\\.00</td><td class="num">5</td></tr>`));
    // The series covers the chart's window only; the totals are the stored counters.
    await rawDb(test).updateTable('click_days').set({ day: '2020-01-01' }).where('program_id', '=', id).execute();
    const older = await owner.page(base);
    assert.match(older, new RegExp(`<th scope="row">${today}</th>(?:<td class="num">[^<]*</td>){3}<td class="num">0</td></tr>`));
    assert.match(older, /<desc id="chart-desc">[^<]* No clicks\.<\/desc>/);
    assert.equal(stat(older, 'clicks'), '5');
    await rawDb(test).updateTable('click_days').set({ day: today }).where('program_id', '=', id).execute();

    // The affiliate's page: its clicks, its rate, and each link's clicks.
    const annPage = await owner.page(`${base}/affiliates/${ann.id}`);
    assert.equal(stat(annPage, 'clicks'), '3');
    assert.equal(stat(annPage, 'referrals'), '2');
    assert.equal(stat(annPage, 'conversion'), '66.7\u00a0%', '2 referred customers ÷ 3 clicks');
    const linkRow = (link: string) => new RegExp(`<code>${link}</code>(?:(?!</tr>)[\\s\\S])*</tr>`).exec(annPage)?.[0] ?? '';
    assert.match(linkRow(ann.link), /<td class="num">2<\/td><td class="num">1<\/td>/, 'own link: 2 clicks, 1 referral');
    assert.match(linkRow('ann-extra'), /<td class="num">1<\/td><td class="num">1<\/td>/, 'extra link: 1 click, 1 referral');
    assert.match(annPage, /<th scope="col" class="num">Clicks<\/th><th scope="col" class="num">Referrals<\/th>/);
    const bobPage = await owner.page(`${base}/affiliates/${bob.id}`);
    assert.deepEqual(['clicks', 'referrals', 'conversion'].map((k) => stat(bobPage, k)), ['2', '1', '50.0\u00a0%']);
    // The dashboard's figures are the API's.
    const fromApi = (await key.get(`/affiliates?id=${ann.id}`)).body as { numberOfClicks: number };
    assert.equal(fromApi.numberOfClicks, 3);
    const newcomer = await createAffiliateWithApi(key);
    assert.equal(stat(await owner.page(`${base}/affiliates/${newcomer.id}`), 'conversion'), '—');
  });

  it('lists referrals and sales, filtered by affiliate and by date', async () => {
    const { id, base } = await owner.createProgram({ name: 'Filters', domain: 'filters.example' });
    const key = apiClient(test.url, (await owner.createApiKey(base)).token, id);
    const empty = await owner.page(`${base}/sales`);
    assert.match(empty, /No sales yet/);
    assert.match(await owner.page(`${base}/referrals`), /No referrals yet/);

    const ann = await createAffiliateWithApi(key, { firstName: 'Ann' });
    const bob = await createAffiliateWithApi(key, { firstName: 'Bob' });
    const old = await createSaleWithApi(key, ann.id, 11.11, { name: 'Old Sale' });
    await createSaleWithApi(key, ann.id, 22.22, { name: 'Ann Sale' });
    await createSaleWithApi(key, bob.id, 33.33, { name: 'Bob Sale' });
    await rawDb(test).updateTable('sales').set({ created_at: '2025-03-10T12:00:00.000Z' }).where('id', '=', old.id).execute();

    const all = await owner.page(`${base}/sales`);
    for (const name of ['Old Sale', 'Ann Sale', 'Bob Sale']) assert.match(all, new RegExp(name));
    const anns = await owner.page(`${base}/sales?affiliate=${encodeURIComponent(ann.email)}`);
    assert.match(anns, /Ann Sale/);
    assert.match(anns, /Old Sale/);
    assert.doesNotMatch(anns, /Bob Sale/);
    const march = await owner.page(`${base}/sales?from=2025-03-10&to=2025-03-10`);
    assert.match(march, /Old Sale/);
    assert.doesNotMatch(march, /Ann Sale|Bob Sale/);
    const later = await owner.page(`${base}/sales?affiliate=${ann.id}&from=2025-03-11`);
    assert.match(later, /Ann Sale/);
    assert.doesNotMatch(later, /Old Sale|Bob Sale/);
    const unknown = await owner.page(`${base}/sales?affiliate=${encodeURIComponent('nobody@example.com')}`);
    assert.match(unknown, /No affiliate in this program has the e-mail/);
    const badDate = await owner.page(`${base}/sales?from=2025-02-30`);
    assert.match(badDate, /id="f-from-error">Use a date/);

    const referrals = await owner.page(`${base}/referrals?affiliate=${encodeURIComponent(bob.email)}`);
    assert.match(referrals, /<td>Bob Sale<br>/);
    assert.doesNotMatch(referrals, /Ann Sale|Old Sale/);
    assert.match(referrals, /Referrals of Bob/);
    assert.match(await owner.page(`${base}/referrals`), /<td>Ann Sale<br>/);
  });
});

describe('dashboard: coupons and promotional codes', () => {
  it('creates a coupon and a code assigned by e-mail, edits and deactivates the code', async () => {
    const coupons = `${program.base}/coupons`;
    assert.match(await owner.page(coupons), /No coupons yet/);
    const invalid = await owner.submit(`${coupons}/new`, coupons, { name: 'Half', couponType: 'PERCENTAGE', percentOff: '' });
    assert.equal(invalid.status, 422);
    assert.match(invalid.text, /id="f-percentOff-error">Is required for a PERCENTAGE coupon/);
    const created = await owner.submit(`${coupons}/new`, coupons, { name: 'Spring sale', couponType: 'PERCENTAGE', percentOff: '25', duration: 'once', maxRedemptions: '' });
    assert.equal(created.status, 303, created.text.slice(0, 800));
    const coupon = (await api.get('/coupons?name=Spring%20sale')).body[0];
    assert.equal(coupon.percentOff, 25);

    const affiliate = await createAffiliateWithApi(api, { firstName: 'Coded' });
    const newCode = `${coupons}/${coupon.id}/codes/new`;
    const page = await owner.page(newCode);
    assert.match(page, new RegExp(`<option value="${affiliate.email.replace('.', '\\.')}"`), 'affiliates are suggested');
    const unknown = await owner.submit(newCode, `${coupons}/${coupon.id}/codes`, { code: 'NOBODY', affiliateEmail: 'nobody@example.com' });
    assert.equal(unknown.status, 422);
    assert.match(unknown.text, /id="f-affiliateEmail-error">No affiliate of this program has this e-mail/);
    const code = await owner.submit(newCode, `${coupons}/${coupon.id}/codes`, { code: 'CODED25', affiliateEmail: affiliate.email, expiresAt: '2099-01-31T12:00', maxRedemptions: '10' });
    assert.equal(code.status, 303, code.text.slice(0, 800));
    let fromApi = (await api.get('/promotional-codes?code=CODED25')).body;
    assert.deepEqual([fromApi.affiliateId, fromApi.expiresAt, fromApi.maxRedemptions, fromApi.active], [affiliate.id, '2099-01-31T12:00:00.000Z', 10, true]);
    const list = await owner.page(coupons);
    assert.match(list, /CODED25/);
    assert.match(list, /Coded Made/);

    const edit = `${coupons}/codes/${fromApi.id}`;
    const editPage = await owner.page(edit);
    assert.match(editPage, /value="2099-01-31T12:00"/);
    const saved = await owner.submit(edit, edit, { active: 'on', affiliateEmail: '', expiresAt: '', maxRedemptions: '3' });
    assert.equal(saved.status, 303, saved.text.slice(0, 800));
    fromApi = (await api.get('/promotional-codes?code=CODED25')).body;
    assert.deepEqual([fromApi.affiliateId, fromApi.expiresAt, fromApi.maxRedemptions, fromApi.active], [null, null, 3, true]);

    const deactivated = await owner.submit(coupons, `${edit}/deactivate`, {});
    assert.equal(deactivated.location, `${coupons}?done=code-deactivated`);
    assert.equal((await api.get('/promotional-codes?code=CODED25')).body.active, false);
    const stranger404 = await stranger.submit(`${strangerProgram.base}/coupons`, `${strangerProgram.base}/coupons/codes/${fromApi.id}/deactivate`, {});
    assert.equal(stranger404.status, 404, "another program's code is not found");
  });
});

describe('dashboard: integrations', () => {
  it('lets the operator add and remove integrations; other accounts only see them', async () => {
    const settings = `${program.base}/settings`;
    const invalid = await owner.submit(settings, `${settings}/integrations`, { name: 'Bad Name', redirectUris: 'not a url' });
    assert.equal(invalid.status, 422);
    assert.match(invalid.text, /id="f-integration-name-error">Must be 1 to 50 lowercase letters/);
    const added = await owner.submit(settings, `${settings}/integrations`, { name: 'n8n', displayName: 'n8n', redirectUris: 'https://n8n.example/rest/oauth2-credential/callback', clientId: '', clientSecret: '' });
    assert.equal(added.status, 303, added.text.slice(0, 800));
    assert.equal(added.location, `${settings}?done=integration-added#integrations`);
    assert.match(await owner.page(settings), /https:\/\/n8n\.example\/rest\/oauth2-credential\/callback/);

    const strangerSettings = `${strangerProgram.base}/settings`;
    const seen = await stranger.page(strangerSettings);
    assert.match(seen, /n8n\.example/, 'every account sees which tools are allowed');
    assert.doesNotMatch(seen, /Add an integration/);
    const refused = await stranger.submit(strangerSettings, `${strangerSettings}/integrations`, { name: 'evil', redirectUris: 'https://evil.example/cb' });
    assert.equal(refused.status, 403);
    assert.equal((await stranger.submit(strangerSettings, `${strangerSettings}/integrations/n8n/remove`, {})).status, 403);
    const names = (await rawDb(test).selectFrom('integrations').select('name').execute()).map((r) => r.name);
    assert.ok(names.includes('n8n') && !names.includes('evil'));

    const removed = await owner.submit(settings, `${settings}/integrations/n8n/remove`, {});
    assert.equal(removed.status, 303);
    assert.doesNotMatch(await owner.page(settings), /n8n\.example/);
  });
});
