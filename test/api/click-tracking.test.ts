// Click tracking's server side (CONTRACT.md "Click tracking"; issue 10 item 3): the script is
// served small and loadable from other sites, and POST /api/track/click counts one click per
// visitor, link and day, only from pages of the program's domain, never for bots or inactive
// affiliates, within a per-address limit. The browser side is test/browser/tracking.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { newAffiliate, unique } from '../helpers/fixtures.ts';
import { assertCountersMatchRows } from '../helpers/recount.ts';
import { CLICK_ADDRESS_LIMIT } from '../../src/modules/tracking/tracking.routes.ts';

const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';

let t: TestServer;
let api: ApiClient;
let other: ApiClient;
let domain: string;

before(async () => {
  t = await startTestServer();
  api = await t.createTenant();
  other = await t.createTenant();
  domain = (await api.get('/me')).body.domain;
});
after(() => t?.close());

interface Click {
  origin?: string;
  url?: string;
  visitorId?: string;
  userAgent?: string;
  programId?: string;
  contentType?: string;
  body?: string;
}

async function click(c: Click) {
  const headers: Record<string, string> = { 'content-type': c.contentType ?? 'text/plain', 'user-agent': c.userAgent ?? BROWSER };
  if (c.origin !== '') headers.origin = c.origin ?? `https://shop.${domain}`;
  const res = await fetch(`${t.url}/api/track/click?programId=${c.programId ?? api.programId}`, {
    method: 'POST',
    headers,
    body: c.body ?? JSON.stringify({ url: c.url, ...(c.visitorId === undefined ? {} : { visitorId: c.visitorId }) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

async function clicksOf(affiliateId: string) {
  const affiliate = (await api.get(`/affiliates?id=${affiliateId}`)).body;
  const link = (await api.get(`/links?link=${affiliate.link}`)).body;
  return { affiliate: affiliate.numberOfClicks as number, link: link.clicks as number };
}

async function storedClicks(programId = api.programId): Promise<number> {
  const { n } = await rawDb(t).selectFrom('clicks').select((eb) => eb.fn.countAll().as('n')).where('program_id', '=', programId).executeTakeFirstOrThrow();
  return Number(n);
}

describe('GET /tracker.js', () => {
  it('is JavaScript under 3 KB gzipped, cacheable and loadable by other sites', async () => {
    const res = await fetch(`${t.url}/tracker.js`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.equal(res.headers.get('cross-origin-resource-policy'), 'cross-origin');
    assert.match(res.headers.get('cache-control') ?? '', /public, max-age=\d+/);
    const source = Buffer.from(await res.arrayBuffer());
    assert.ok(gzipSync(source).length < 3 * 1024, `${gzipSync(source).length} bytes gzipped`);
    assert.doesNotMatch(source.toString(), /\bimport\b|\brequire\(/, 'no dependencies');
    assert.match(source.toString(), /data-program-id/);
  });
});

describe('POST /api/track/click', () => {
  it('counts one click per visitor, link and day, and answers the referral with the program cookie rules', async () => {
    const affiliate = await newAffiliate(api);
    const first = await click({ url: `https://shop.${domain}/pricing?ref=${affiliate.link.toUpperCase()}&utm_source=x`, visitorId: 'visitor-one' });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(first.body, { referral: affiliate.link, counted: true, cookieDays: 60, attribution: 'last', domain });
    assert.equal(first.headers.get('access-control-allow-origin'), `https://shop.${domain}`);
    assert.deepEqual(await clicksOf(affiliate.id), { affiliate: 1, link: 1 });

    // A reload, another page with the parameter: the same visitor that day counts once, whatever
    // visitor id the report carries (the address and browser are the visitor).
    const again = await click({ url: `https://${domain}/?ref=${affiliate.link}`, origin: `http://${domain}:8080`, visitorId: 'visitor-two' });
    assert.deepEqual([again.status, again.body.counted, again.body.referral], [200, false, affiliate.link]);
    assert.equal((await click({ url: `https://${domain}/?ref=${affiliate.link}` })).body.counted, false);
    const someoneElse = await click({ url: `https://${domain}/?ref=${affiliate.link}`, userAgent: `${BROWSER} Edg/131.0` });
    assert.equal(someoneElse.body.counted, true);
    assert.deepEqual(await clicksOf(affiliate.id), { affiliate: 2, link: 2 });
    await assertCountersMatchRows(rawDb(t), api.programId);
  });

  it('answers referral null and stores nothing for a page without the parameter, an unknown link, or a bot', async () => {
    const affiliate = await newAffiliate(api);
    const before = await storedClicks();
    for (const c of [
      { url: `https://${domain}/?utm_source=newsletter`, visitorId: 'visitor-three' },
      { url: `https://${domain}/?via=${affiliate.link}`, visitorId: 'visitor-three' },
      { url: `https://${domain}/?ref=${unique('nobody')}`, visitorId: 'visitor-three' },
      { url: `https://${domain}/?ref=${affiliate.link}`, visitorId: 'visitor-three', userAgent: 'Googlebot/2.1 (+http://www.google.com/bot.html)' },
      { url: `https://${domain}/?ref=${affiliate.link}`, visitorId: 'visitor-three', userAgent: 'facebookexternalhit/1.1' },
      { url: `https://${domain}/?ref=${affiliate.link}`, visitorId: 'visitor-three', userAgent: '' },
    ]) {
      const res = await click(c);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual([res.body.referral, res.body.counted], [null, false], JSON.stringify(c));
    }
    assert.equal(await storedClicks(), before);
    assert.deepEqual(await clicksOf(affiliate.id), { affiliate: 0, link: 0 });
  });

  it("refuses pages outside the program's domain, readably (CORS on the refusal) and with nothing stored", async () => {
    const affiliate = await newAffiliate(api);
    const before = await storedClicks();
    for (const origin of ['https://evil.example', `https://${domain}.evil.example`, `https://not${domain}`, 'null', 'http://localhost:8080']) {
      const res = await click({ origin, url: `https://${domain}/?ref=${affiliate.link}`, visitorId: 'visitor-four' });
      assertProblem({ status: res.status, headers: res.headers, body: res.body }, 403, 'origin_not_allowed');
      // Any page may read why it was refused (never that it is allowed: no origin is echoed).
      assert.equal(res.headers.get('access-control-allow-origin'), '*', origin);
      assert.equal(res.body.detail.startsWith(`Pages at ${origin} are not on this program's domain (${domain}) or its subdomains: check the tag's data-program-id`), true, res.body.detail);
      assert.match(res.body.detail, /use a program whose domain is localhost/);
    }
    // Without an Origin (not a browser) there is nothing to allow.
    const bare = await click({ origin: '', url: `https://${domain}/?ref=${affiliate.link}` });
    assertProblem({ status: bare.status, headers: bare.headers, body: bare.body }, 403, 'origin_not_allowed');
    assert.equal(bare.headers.get('access-control-allow-origin'), null);
    // Another program's domain is not this program's.
    const theirs = (await other.get('/me')).body.domain;
    assertProblem(await click({ origin: `https://${theirs}`, url: `https://${theirs}/?ref=${affiliate.link}`, visitorId: 'visitor-four' }), 403, 'origin_not_allowed');
    // An allowed page reporting a landing elsewhere.
    assertProblem(await click({ url: `https://evil.example/?ref=${affiliate.link}`, visitorId: 'visitor-four' }), 422, 'validation_failed', '#/url');
    assert.equal(await storedClicks(), before);
  });

  it('answers a preflight only for the program’s site', async () => {
    const preflight = (origin: string) =>
      fetch(`${t.url}/api/track/click?programId=${api.programId}`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
    const allowed = await preflight(`http://app.${domain}:3000`);
    assert.equal(allowed.status, 204);
    assert.equal(allowed.headers.get('access-control-allow-origin'), `http://app.${domain}:3000`);
    assert.match(allowed.headers.get('access-control-allow-methods') ?? '', /POST/);
    const refused = await preflight('https://evil.example');
    assert.equal(refused.status, 403);
    assert.equal(refused.headers.get('access-control-allow-origin'), null);
  });

  it('gives an inactive affiliate no click credit (422 affiliate_inactive)', async () => {
    const affiliate = await newAffiliate(api, { status: 'inactive' });
    assertProblem(await click({ url: `https://${domain}/?ref=${affiliate.link}`, visitorId: 'visitor-five' }), 422, 'affiliate_inactive');
    assert.deepEqual(await clicksOf(affiliate.id), { affiliate: 0, link: 0 });
  });

  it('refuses bad input with a 4xx: program id, JSON, URL, visitor id, size', async () => {
    assertProblem(await click({ programId: 'nope', url: `https://${domain}/` }), 422, 'validation_failed');
    const unknown = await click({ programId: '00000000-0000-4000-8000-000000000000', url: `https://${domain}/` });
    assertProblem(unknown, 404, 'not_found');
    assert.match(unknown.body.detail, /^No program has the id 00000000-0000-4000-8000-000000000000 \(the tag's data-program-id\)/);
    // Every refusal of a browser's report is readable by the page, whatever stage refused it.
    for (const refused of [unknown, await click({ body: '{"url":' }), await click({ programId: 'nope', url: `https://${domain}/` }), await click({ body: JSON.stringify({ url: `https://${domain}/`, pad: 'x'.repeat(9000) }) })]) {
      assert.equal(refused.headers.get('access-control-allow-origin'), '*', String(refused.status));
    }
    assertProblem(await click({ body: '{"url":' }), 400, 'bad_request');
    assertProblem(await click({ url: 'not a url' }), 422, 'validation_failed', '#/url');
    assertProblem(await click({ url: `https://${domain}/?ref=x`, visitorId: 'bad id!' }), 422, 'validation_failed', '#/visitorId');
    // Longer than 2,000 characters is stored cut (test/api/click-abuse.test.ts); longer than the body allows is refused.
    assertProblem(await click({ url: `https://${domain}/?ref=${'x'.repeat(8000)}` }), 422, 'validation_failed', '#/url');
    assert.equal((await click({ body: JSON.stringify({ url: `https://${domain}/`, pad: 'x'.repeat(9000) }) })).status, 413);
    // application/json works too (a client that does not mind the preflight).
    assert.equal((await click({ contentType: 'application/json', url: `https://${domain}/` })).status, 200);
  });

  it('new programs use ?ref= in fullURLs, the parameter the script reads', async () => {
    const affiliate = await newAffiliate(api);
    const link = (await api.get(`/links?link=${affiliate.link}`)).body;
    assert.deepEqual(link.fullURLs, [{ baseUrl: `https://${domain}`, fullUrl: `https://${domain}/?ref=${affiliate.link}` }]);
  });
});

describe('POST /api/track/click: the per-address limit', () => {
  it(`refuses more than ${CLICK_ADDRESS_LIMIT.max} reports a minute from one address with 429 and Retry-After`, async () => {
    const own = await startTestServer();
    try {
      const tenant = await own.createTenant();
      const site = (await tenant.get('/me')).body.domain;
      const send = () =>
        fetch(`${own.url}/api/track/click?programId=${tenant.programId}`, {
          method: 'POST',
          headers: { 'content-type': 'text/plain', origin: `https://${site}`, 'user-agent': BROWSER },
          body: JSON.stringify({ url: `https://${site}/?ref=x` }),
        });
      for (let i = 0; i < CLICK_ADDRESS_LIMIT.max; i++) assert.equal((await send()).status, 200);
      const refused = await send();
      assert.equal(refused.status, 429);
      assert.ok(Number(refused.headers.get('retry-after')) > 0);
      // The page may read the refusal and its Retry-After.
      assert.equal(refused.headers.get('access-control-allow-origin'), '*');
      assert.match(refused.headers.get('access-control-expose-headers') ?? '', /retry-after/);
      assert.equal((await refused.json()).code, 'rate_limited');
    } finally {
      await own.close();
    }
  });
});
