// A first hour without friction (issue parts 6 and 7), over real HTTP: Settings says how to try
// the tracking tag locally and shows the last click counted; coupons say "1 time"; the site has
// a favicon; unknown paths and failures outside /api are pages of the site (404 and 500 with the
// layout), while the API keeps its problem bodies.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { apiClient, rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, uniqueEmail } from '../helpers/browser-session.ts';
import { newAffiliate, newCode, newCoupon, newReferral } from '../helpers/fixtures.ts';

const BROWSER = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';

let test: TestServer;
let owner: BrowserSession;
let program: { id: string; base: string };
let api: ApiClient;

before(async () => {
  test = await startTestServer();
  owner = await BrowserSession.signUp(test.url, uniqueEmail('first-hour'));
  program = await owner.createProgram({ name: 'First Hour', domain: 'first-hour.example' });
  api = apiClient(test.url, (await owner.createApiKey(program.base)).token, program.id);
});

after(async () => {
  await test?.close();
});

/** The text of the element marked data-stat="key", tags removed. */
function stat(page: string, key: string): string {
  const match = new RegExp(`data-stat="${key}">([\\s\\S]*?)</p>`).exec(page);
  assert.ok(match, `the page shows ${key}`);
  return match[1]!.replace(/<[^>]+>/g, '').replace(/\s+/g, ' ').trim();
}

describe('settings: trying the tracking tag', () => {
  it('says a localhost page is refused here and how to try the tag locally, and shows the last click counted', async () => {
    const settings = `${program.base}/settings`;
    let page = await owner.page(settings);
    assert.match(page, /Only pages of first-hour\.example and its subdomains may report clicks: a page at <code>http:\/\/localhost<\/code> is refused/);
    assert.match(page, /<a href="\/dashboard#new-program">create a test program<\/a> whose domain is <code>localhost<\/code>/);
    assert.match(page, /open it with <code>\?ref=<\/code>/);
    assert.equal(stat(page, 'last-click'), 'No click received yet.');

    // A real report from a page of the program's domain, as /tracker.js sends it.
    const affiliate = await newAffiliate(api, { firstName: 'Jane', lastName: 'Clicker' });
    const landing = `https://shop.first-hour.example/pricing?ref=${affiliate.link}&utm_source=news#plans`;
    const click = await fetch(`${test.url}/api/track/click?programId=${program.id}`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', origin: 'https://shop.first-hour.example', 'user-agent': BROWSER },
      body: JSON.stringify({ url: landing }),
    });
    assert.equal(click.status, 200, await click.clone().text());
    assert.equal((await click.json()).counted, true);

    page = await owner.page(settings);
    const last = stat(page, 'last-click');
    assert.match(last, new RegExp(`^Last click counted: \\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2} UTC, on the link ${affiliate.link} of Jane Clicker, landing on https://shop\\.first-hour\\.example/pricing\\?ref=${affiliate.link}&amp;utm_source=news\\.$`), last);
    assert.doesNotMatch(last, /#plans/, 'the landing URL as stored: without its fragment');

    // Its rows purged (CLICK_RETENTION_DAYS), the counters still know a click was counted.
    await rawDb(test).deleteFrom('clicks').where('program_id', '=', program.id).execute();
    assert.equal(stat(await owner.page(settings), 'last-click'), 'No click in the last 30 days.');
  });

  it('tells a program whose domain is localhost which local pages may report', async () => {
    const local = await owner.createProgram({ name: 'Local Test', domain: 'localhost' });
    const page = await owner.page(`${local.base}/settings`);
    assert.match(page, /This program's domain is <code>localhost<\/code>: pages at <code>http:\/\/localhost<\/code> and <code>http:\/\/\*\.localhost<\/code>, on any port, may report clicks/);
    assert.match(page, /<code>http:\/\/localhost:8080\/\?ref=jane<\/code>/);
    assert.doesNotMatch(page, /create a test program/);
  });
});

describe('coupons: proper plurals', () => {
  it('says "redeemed 1 time", and "times" otherwise', async () => {
    const affiliate = await newAffiliate(api);
    const once = await newCoupon<{ id: string }>(api, { name: 'Once Coupon' });
    const capped = await newCoupon<{ id: string }>(api, { name: 'Capped Coupon', maxRedemptions: 5 });
    const code = await newCode<{ id: string; code: string }>(api, { couponId: once.id, affiliateId: affiliate.id });
    await newCode(api, { couponId: capped.id, affiliateId: affiliate.id });
    await newReferral(api, { promoCode: code.code });

    const list = await owner.page(`${program.base}/coupons`);
    const card = (name: string) => new RegExp(`<h2 id="coupon-[^"]+">${name}</h2>[\\s\\S]*?<p>([\\s\\S]*?)</p>`).exec(list)?.[1] ?? '';
    assert.match(card('Once Coupon'), /· redeemed 1 time(?!s)/);
    assert.match(card('Capped Coupon'), /· redeemed 0 of 5 times/);
    assert.doesNotMatch(list, /redeemed 1 times/);
    const codePage = await owner.page(`${program.base}/coupons/codes/${code.id}`);
    assert.match(codePage, /· redeemed 1 time\.</);
  });
});

describe('date inputs', () => {
  it('say they are read in UTC, on every page that has one', async () => {
    const coupon = await newCoupon<{ id: string }>(api, { name: 'Dated Coupon' });
    const affiliate = await newAffiliate(api);
    const code = await newCode<{ id: string }>(api, { couponId: coupon.id, affiliateId: affiliate.id });
    const pages = [`${program.base}/sales`, `${program.base}/coupons/new`, `${program.base}/coupons/${coupon.id}/codes/new`, `${program.base}/coupons/codes/${code.id}`];
    let seen = 0;
    for (const path of pages) {
      const page = await owner.page(path);
      for (const [, id] of page.matchAll(/<input id="([^"]+)"[^>]* type="(?:date|datetime-local)"/g)) {
        seen++;
        const label = new RegExp(`<label for="${id}">([^<]*)`).exec(page)?.[1] ?? '';
        assert.match(label, /\(UTC\)$/, `${path}: the label of #${id} says its zone ("${label}")`);
      }
    }
    assert.ok(seen >= 4, `date inputs found: ${seen}`);
  });
});

describe('favicon', () => {
  it('is served at /favicon.ico and /assets/favicon.svg, and every layout links it', async () => {
    for (const path of ['/favicon.ico', '/assets/favicon.svg']) {
      const response = await fetch(`${test.url}${path}`);
      assert.equal(response.status, 200, path);
      assert.match(response.headers.get('content-type') ?? '', /^image\/svg\+xml/, path);
      assert.match(await response.text(), /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/, path);
    }
    assert.match(await owner.page('/dashboard'), /<link rel="icon" href="\/assets\/favicon\.svg" type="image\/svg\+xml">/);
    assert.match((await new BrowserSession(test.url, 'anonymous').page('/login')), /<link rel="icon" href="\/assets\/favicon\.svg"/);
    const slug = (await api.get('/me')).body.portalUrl.split('/portal/')[1];
    assert.match(await new BrowserSession(test.url, 'affiliate').page(`/portal/${slug}`), /<link rel="icon" href="\/assets\/favicon\.svg">/);
  });
});

/** An HTML page of the site's layout, answered with `status`. */
function assertSitePage(response: { status: number; headers: Headers; text: string }, status: number, what: string): void {
  assert.equal(response.status, status, `${what}: ${response.text.slice(0, 300)}`);
  assert.match(response.headers.get('content-type') ?? '', /^text\/html/, what);
  assert.match(response.text, /^<!doctype html>/, what);
  assert.match(response.text, /<header class="top">/, `${what}: the site's header`);
  assert.match(response.text, /<link rel="stylesheet" href="\/assets\/app\.css">/, what);
  assert.match(response.headers.get('content-security-policy') ?? '', /script-src 'self'/, `${what}: the pages' CSP`);
}

describe('404 and 500 pages', () => {
  it('answers unknown paths outside /api with a page of the site, and /api with a problem body', async () => {
    const anonymous = new BrowserSession(test.url, 'nobody');
    for (const [client, path] of [
      [owner, `${program.base}/no-such-page`],
      [owner, '/dashboard/nope/deeper?x=1'],
      [anonymous, '/portal/no-such-program'],
      [anonymous, '/portal/no-such-program/home'],
      [anonymous, '/no-such-page'],
      [anonymous, '/connect/nope'],
      [anonymous, '/assets/missing.css'],
    ] as const) {
      const response = await client.get(path);
      assertSitePage(response, 404, path);
      assert.match(response.text, /<h1>Page not found<\/h1>/, path);
      assert.ok(response.text.includes(`There is no page at <code>${path.split('?')[0]}</code>.`) || path.startsWith('/portal/'), path);
    }
    // A signed-in visitor keeps the dashboard's header (and a way back to the programs).
    const mine = await owner.get('/dashboard/nope');
    assert.ok(mine.text.includes(owner.email), 'the header names the signed-in user');
    assert.match(mine.text, /<a href="\/dashboard">Your programs<\/a>/);

    for (const path of ['/api/v1/no-such-route', '/api/nope', '/api/track/nope']) {
      const response = await fetch(`${test.url}${path}`);
      assert.equal(response.status, 404, path);
      assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/, path);
      assert.equal((await response.json()).code, 'not_found', path);
    }
  });

  it('answers a failing page with a 500 page of the site and its reference, never the error; the API keeps its problem body', async () => {
    // A server of its own: tables are taken away under it.
    const broken = await startTestServer();
    try {
      const merchant = await BrowserSession.signUp(broken.url, uniqueEmail('broken'));
      const shop = await merchant.createProgram({ name: 'Broken Shop', domain: 'broken.example' });
      const token = (await merchant.createApiKey(shop.base)).token;
      const slug = (await apiClient(broken.url, token, shop.id).get('/me')).body.portalUrl.split('/portal/')[1];
      const db = rawDb(broken);

      // The dashboard: Settings reads the clicks table.
      await sql`alter table clicks rename to clicks_away`.execute(db);
      try {
        const failed = await merchant.get(`${shop.base}/settings`);
        assertSitePage(failed, 500, 'a failing dashboard page');
        assert.match(failed.text, /<h1>Something went wrong<\/h1>/);
        const reference = failed.headers.get('x-request-id')!;
        assert.ok(failed.text.includes(`<code>${reference}</code>`), 'the page gives the request id to report');
        assert.ok(failed.text.includes(merchant.email), "with the signed-in user's header");
        assert.doesNotMatch(failed.text, /clicks|no such table|does not exist|SQL/i, 'the error itself is not shown');
      } finally {
        await sql`alter table clicks_away rename to clicks`.execute(db);
      }
      assert.equal((await merchant.get(`${shop.base}/settings`)).status, 200, 'back once the table is');

      // The portal and the API, both reading programs.
      await sql`alter table programs rename to programs_away`.execute(db);
      try {
        const portal = await new BrowserSession(broken.url, 'affiliate').get(`/portal/${slug}`);
        assertSitePage(portal, 500, 'a failing portal page');
        assert.match(portal.text, /<h1>Something went wrong<\/h1>/);
        assert.doesNotMatch(portal.text, /programs|no such table|does not exist/i);
        const apiFailure = await fetch(`${broken.url}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } });
        assert.equal(apiFailure.status, 500);
        assert.match(apiFailure.headers.get('content-type') ?? '', /^application\/problem\+json/);
        assert.equal((await apiFailure.json()).code, 'internal');
      } finally {
        await sql`alter table programs_away rename to programs`.execute(db);
      }
    } finally {
      await broken.close();
    }
  });
});
