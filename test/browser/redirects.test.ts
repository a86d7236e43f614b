// Open redirects, checked where they matter: in a real browser (issue 12 item 6). For every
// crafted `next`, logging in through the form in Chromium ends on a page of Tandem, never on
// another origin — including the tricks browsers themselves normalise (tabs and newlines
// dropped from URLs, backslashes read as slashes).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { launchChromium, newContext } from '../helpers/browser.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { uniqueEmail } from '../helpers/fixtures.ts';

let t: TestServer;
let browser: Browser;
const password = 'a long password';

before(async () => {
  // Each login comes from its own address (through a trusted proxy), so the per-address login
  // limit does not turn the later cases into 429 pages.
  t = await startTestServer({ trustProxy: ['127.0.0.1'] });
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await t?.close();
});

const CRAFTED = [
  '//evil.example',
  '/\t/evil.example',
  '/%09/evil.example',
  '/\n/evil.example',
  '/\\evil.example',
  '\\\\evil.example',
  '/\\/evil.example',
  '/.//evil.example',
  '/%2e//evil.example',
  '/%2F%2Fevil.example',
  '/a/../..//evil.example',
  'https://evil.example/',
  'https:evil.example',
  '///evil.example',
  ' //evil.example',
  'javascript:alert(1)',
  'http://127.0.0.1:1/',
];

describe('login redirects in Chromium', () => {
  it('every crafted next ends on a page of Tandem', async () => {
    const context = await newContext(browser);
    // Nothing may leave Tandem's origin, not even a request: count navigations elsewhere.
    const tandem = new URL(t.url).origin;
    const elsewhere: string[] = [];
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (new URL(url).origin !== tandem && !url.startsWith('data:')) {
        elsewhere.push(url);
        return route.abort();
      }
      return route.continue();
    });
    try {
      for (const [i, next] of CRAFTED.entries()) {
        const email = uniqueEmail('redirect');
        await createUser(t.server.database.db, { email, password });
        const page = await context.newPage();
        await page.setExtraHTTPHeaders({ 'x-forwarded-for': `10.9.0.${i + 1}` });
        await page.goto(`${t.url}/login?next=${encodeURIComponent(next)}`);
        await page.getByLabel('E-mail').fill(email);
        await page.getByLabel('Password').fill(password);
        await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Log in' }).click()]);
        await page.waitForLoadState('load');
        assert.equal(new URL(page.url()).origin, tandem, `next=${JSON.stringify(next)} went to ${page.url()}`);
        assert.doesNotMatch(new URL(page.url()).pathname, /^\/login/, `next=${JSON.stringify(next)}: logged in (${page.url()})`);
        await page.close();
        await context.clearCookies();
      }
      assert.deepEqual(elsewhere, [], 'no request left Tandem');
    } finally {
      await context.close();
    }
  });
});
