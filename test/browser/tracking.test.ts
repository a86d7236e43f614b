// Click tracking end to end in real Chromium (issue 10 item 4): a merchant's page, served by
// this test at http://shop.localhost:<port>, includes /tracker.js from Tandem on 127.0.0.1 and
// is opened with ?ref=<link>. The click is counted once across reloads, the first-party cookie
// and window.tandem.referral are set, tandem:ready fires, a referral created with that value
// is credited to the right affiliate — and when Tandem is down or slow the page still loads
// without an error.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { launchChromium, newContext } from '../helpers/browser.ts';
import { newAffiliate, uniqueEmail, unique } from '../helpers/fixtures.ts';

const TRACKER = readFileSync(new URL('../../src/web/assets/tracker.js', import.meta.url), 'utf8');

let t: TestServer;
let api: ApiClient;
let browser: Browser;
let shop: Server;
let shopPort: number;
/** How the shop's fake "Tandem" answers click reports: drop the connection, or never answer. */
let fakeTandem: 'down' | 'slow' = 'down';

/** The merchant's page: the one-tag install, plus a listener that records tandem:ready. */
function merchantPage(trackerSrc: string, programId: string): string {
  return `<!doctype html><html><head><title>Shop</title>
<script>window.readyEvents = []; addEventListener('tandem:ready', function (e) { window.readyEvents.push(e.detail.referral); });</script>
<script src="${trackerSrc}" data-program-id="${programId}" async></script>
</head><body><h1>Welcome to the shop</h1>
<a id="buy" href="https://buy.stripe.com/test_fixture">Buy</a>
<a id="buy-own" href="https://buy.stripe.com/test_own?client_reference_id=set-by-page">Buy (own id)</a>
<stripe-pricing-table id="table" pricing-table-id="prctbl_fixture"></stripe-pricing-table>
</body></html>`;
}

before(async () => {
  t = await startTestServer();
  api = await t.createTenant({ domain: 'localhost' });
  browser = await launchChromium();
  shop = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://shop.localhost');
    if (url.pathname === '/fake-tandem/tracker.js') {
      response.writeHead(200, { 'content-type': 'text/javascript' }).end(TRACKER);
    } else if (url.pathname === '/api/track/click') {
      // The script's base is where it was loaded from: here, a Tandem that is down or hangs.
      if (fakeTandem === 'down') request.socket.destroy();
      // 'slow': never answered; the script gives up after its timeout.
    } else if (url.pathname === '/down') {
      response.writeHead(200, { 'content-type': 'text/html' }).end(merchantPage(`http://shop.localhost:${shopPort}/fake-tandem/tracker.js`, api.programId));
    } else if (url.pathname === '/elsewhere') {
      // The tag of another program (one whose domain is not localhost): its reports are refused.
      response.writeHead(200, { 'content-type': 'text/html' }).end(merchantPage(`${t.url}/tracker.js`, url.searchParams.get('program') ?? ''));
    } else if (url.pathname === '/stopped') {
      response.writeHead(200, { 'content-type': 'text/html' }).end(merchantPage(`${url.searchParams.get('tandem')}/tracker.js`, api.programId));
    } else {
      response.writeHead(200, { 'content-type': 'text/html' }).end(merchantPage(`${t.url}/tracker.js`, api.programId));
    }
  });
  await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
  shopPort = (shop.address() as AddressInfo).port;
});

after(async () => {
  await browser?.close();
  shop?.closeAllConnections();
  await new Promise((resolve) => shop?.close(resolve));
  await t?.close();
});

/** Opens a page and waits for the tracker to be done (window.tandem.ready). */
async function land(page: Page, path: string): Promise<{ referral: string | null; readyEvents: (string | null)[] }> {
  await page.goto(`http://shop.localhost:${shopPort}${path}`);
  await page.waitForFunction(() => (window as any).tandem?.ready === true, undefined, { timeout: 20_000 });
  return page.evaluate(() => ({ referral: (window as any).tandem.referral, readyEvents: (window as any).readyEvents }));
}

async function clicksOf(affiliateId: string): Promise<number> {
  return (await api.get(`/affiliates?id=${affiliateId}`)).body.numberOfClicks;
}

/** Uncaught errors of every page of a context. */
function collectPageErrors(context: BrowserContext): Error[] {
  const errors: Error[] = [];
  context.on('page', (page) => page.on('pageerror', (error) => errors.push(error)));
  return errors;
}

describe('tracker.js on a merchant page in Chromium', () => {
  it('counts the click once across reloads, keeps the referral, and it credits the right affiliate', async () => {
    const affiliate = await newAffiliate(api);
    await newAffiliate(api); // someone else, who must not be credited
    const context = await newContext(browser);
    const errors = collectPageErrors(context);
    try {
      const page = await context.newPage();
      const landed = await land(page, `/pricing?ref=${affiliate.link}`);
      assert.equal(landed.referral, affiliate.link);
      assert.deepEqual(landed.readyEvents, [affiliate.link], 'tandem:ready fired once, with the referral');

      const cookies = await context.cookies(`http://shop.localhost:${shopPort}`);
      const ref = cookies.find((c) => c.name === 'tandem_ref');
      assert.equal(ref?.value, affiliate.link);
      assert.equal(ref?.sameSite, 'Lax');
      const days = (ref!.expires - Date.now() / 1000) / 86400;
      assert.ok(days > 59 && days <= 60, `the cookie lasts the program's 60 days (${days})`);
      assert.ok(!cookies.some((c) => c.name === 'tandem_vid'), 'no visitor id: the server tells visitors apart');

      // Reloads and other pages of the visit: still one click; the referral stays without the parameter.
      await land(page, `/pricing?ref=${affiliate.link}`);
      await page.reload();
      await page.waitForFunction(() => (window as any).tandem?.ready === true);
      assert.equal((await land(page, '/checkout')).referral, affiliate.link);
      assert.equal(await clicksOf(affiliate.id), 1);

      // The checkout hand-off: the value the page holds is what POST /referrals takes.
      const referral = await api.post('/referrals', { name: 'Tracked Buyer', email: uniqueEmail('buyer'), referredUserExternalId: unique('cus'), affiliateId: landed.referral });
      assert.equal(referral.status, 201, JSON.stringify(referral.body));
      assert.equal(referral.body.affiliateId, affiliate.id);

      // Stripe Payment Links and pricing tables carry the referral to Checkout (docs/stripe.md).
      const stripe = await page.evaluate(() => ({
        link: (document.getElementById('buy') as HTMLAnchorElement).href,
        own: (document.getElementById('buy-own') as HTMLAnchorElement).href,
        table: document.getElementById('table')!.getAttribute('client-reference-id'),
      }));
      assert.deepEqual(stripe, {
        link: `https://buy.stripe.com/test_fixture?client_reference_id=${affiliate.link}`,
        own: 'https://buy.stripe.com/test_own?client_reference_id=set-by-page',
        table: affiliate.link,
      });
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it('first-click programs keep the first referral; last-click programs take the newest', async () => {
    const [first, second] = [await newAffiliate(api), await newAffiliate(api)];
    const context = await newContext(browser);
    try {
      const page = await context.newPage();
      await rawDb(t).updateTable('programs').set({ attribution: 'first' }).where('id', '=', api.programId).execute();
      assert.equal((await land(page, `/?ref=${first.link}`)).referral, first.link);
      assert.equal((await land(page, `/?ref=${second.link}`)).referral, first.link, 'first click wins');
      assert.equal(await clicksOf(second.id), 1, 'the later click is still counted');
      await rawDb(t).updateTable('programs').set({ attribution: 'last' }).where('id', '=', api.programId).execute();
      assert.equal((await land(page, `/?ref=${second.link}`)).referral, second.link, 'last click wins');
    } finally {
      await rawDb(t).updateTable('programs').set({ attribution: 'last' }).where('id', '=', api.programId).execute();
      await context.close();
    }
  });

  it('a page without the parameter sends nothing and has no referral', async () => {
    const before = await rawDb(t).selectFrom('clicks').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
    const context = await newContext(browser);
    try {
      const page = await context.newPage();
      const requests: string[] = [];
      page.on('request', (request) => requests.push(request.url()));
      const landed = await land(page, '/about');
      assert.equal(landed.referral, null);
      assert.deepEqual(landed.readyEvents, [null]);
      assert.ok(!requests.some((url) => url.includes('/api/track/click')), 'no report without a query string');
    } finally {
      await context.close();
    }
    const after = await rawDb(t).selectFrom('clicks').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow();
    assert.equal(Number(after.n), Number(before.n));
  });

  it('when Tandem is down or hangs, the page loads, nothing throws, and the earlier referral stays', async () => {
    const context = await newContext(browser);
    const errors = collectPageErrors(context);
    try {
      const page = await context.newPage();
      fakeTandem = 'down';
      const down = await land(page, '/down?ref=someone');
      assert.equal(down.referral, null);
      assert.equal(await page.locator('h1').textContent(), 'Welcome to the shop');
      // A referral kept from an earlier visit survives a failed report.
      await context.addCookies([{ name: 'tandem_ref', value: 'kept-link', url: `http://shop.localhost:${shopPort}` }]);
      fakeTandem = 'slow';
      const slow = await land(page, '/down?ref=someone-else');
      assert.equal(slow.referral, 'kept-link', 'the script gave up after its timeout and kept the old referral');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it("on a page outside the program's domain, the console says why (not a CORS error), and nothing is counted", async () => {
    const acme = await t.createTenant({ domain: 'acme.example' });
    const affiliate = await newAffiliate(acme);
    const context = await newContext(browser);
    const errors = collectPageErrors(context);
    try {
      const page = await context.newPage();
      const logged: string[] = [];
      page.on('console', (message) => logged.push(`${message.type()}: ${message.text()}`));
      for (const [path, why] of [
        [`/elsewhere?program=${acme.programId}&ref=${affiliate.link}`, `Tandem: Pages at http://shop.localhost:${shopPort} are not on this program's domain (acme.example) or its subdomains`],
        [`/elsewhere?program=00000000-0000-4000-8000-000000000000&ref=${affiliate.link}`, "Tandem: No program has the id 00000000-0000-4000-8000-000000000000 (the tag's data-program-id)"],
      ] as const) {
        logged.length = 0;
        const landed = await land(page, path);
        assert.equal(landed.referral, null);
        assert.deepEqual(landed.readyEvents, [null], 'tandem:ready still fires');
        // The warning is written after the answer's body is read: give it a moment.
        for (let i = 0; i < 50 && !logged.some((line) => line.includes(why)); i++) await page.waitForTimeout(50);
        assert.ok(logged.some((line) => line.startsWith('warning: ') && line.includes(why)), `the console says why:\n${logged.join('\n')}`);
        assert.ok(!logged.some((line) => /CORS|Access-Control-Allow-Origin/i.test(line)), `no CORS error:\n${logged.join('\n')}`);
      }
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
    assert.equal((await acme.get(`/affiliates?id=${affiliate.id}`)).body.numberOfClicks, 0);
  });

  it('with Tandem stopped, the page still loads without an error', async () => {
    // A port nothing listens on: the tracker itself cannot be fetched.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const context = await newContext(browser);
    const errors = collectPageErrors(context);
    try {
      const page = await context.newPage();
      await page.goto(`http://shop.localhost:${shopPort}/stopped?ref=x&tandem=${encodeURIComponent(`http://127.0.0.1:${port}`)}`, { waitUntil: 'load' });
      assert.equal(await page.locator('h1').textContent(), 'Welcome to the shop');
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });
});
