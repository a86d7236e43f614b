import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { launchChromium, newContext } from '../helpers/browser.ts';

// The API reference at /docs in real Chromium, at a desktop's and a phone's width: the page
// loads with no console error and no Content-Security-Policy violation (its policy allows no
// inline script or style), "Authorize" with a real API key and "Try it out" → "Execute" on
// GET /api/v1/affiliates answers 200 from the address the page was loaded from (SITE_URL names
// another host), and axe-core (WCAG 2.1 AA) finds no serious or critical violation, with the
// list shown, the authorization dialog open, the answer shown and a write's body editor and
// schema open, nor any sideways scroll.
// axe is evaluated through the DevTools protocol, which the page's policy does not govern.

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const OPERATION = '#operations-Affiliates-get_api_v1_affiliates';

let test: TestServer;
let api: ApiClient;
let browser: Browser;

before(async () => {
  // A SITE_URL that does not resolve: "Try it out" must not go there.
  test = await startTestServer({ siteUrl: 'https://tandem.invalid', worker: false });
  api = await test.createTenant();
  const created = await api.post('/affiliates', { firstName: 'Jane', lastName: 'Doe', email: 'jane.doe@example.com' });
  assert.equal(created.status, 201);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await test?.close();
});

async function axeProblems(page: Page, state: string): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const results = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(options: object): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
    return axe.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
  });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  return [
    ...results.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${state}: ${v.impact} ${v.id}: ${v.nodes.slice(0, 5).map((n) => n.target.join(' ')).join(', ')}${v.nodes.length > 5 ? ` and ${v.nodes.length - 5} more` : ''}`),
    ...(overflow > 0 ? [`${state}: scrolls sideways by ${overflow} px`] : []),
  ];
}

describe('the API reference at /docs in Chromium', () => {
  for (const width of [1280, 390]) {
    it(`at ${width} px: no console error or CSP violation, Authorize and Try it out answer 200, no serious axe violation`, async () => {
      const context = await newContext(browser, { viewport: { width, height: 900 } });
      try {
        const page = await context.newPage();
        const errors: string[] = [];
        page.on('console', (message) => {
          if (message.type() === 'error') errors.push(`console: ${message.text()}`);
        });
        page.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
        page.on('requestfailed', (request) => errors.push(`request failed: ${request.url()} (${request.failure()?.errorText})`));
        page.on('response', (response) => {
          if (response.status() >= 400) errors.push(`${response.status()} for ${response.url()}`);
        });
        // Recorded by the page itself, from before its first script runs.
        await page.addInitScript(() => {
          const seen: string[] = [];
          (window as unknown as { cspViolations: string[] }).cspViolations = seen;
          document.addEventListener('securitypolicyviolation', (event) => seen.push(`${event.violatedDirective} ${event.blockedURI || 'inline'} at ${event.sourceFile}:${event.lineNumber}`));
        });
        const cspViolations = () => page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations);
        const problems: string[] = [];

        await page.goto(`${test.url}/docs`);
        await page.locator(OPERATION).waitFor();
        assert.equal(await page.title(), 'Tandem API reference');
        problems.push(...(await axeProblems(page, 'the list')));

        // Authorize with the program's API key.
        await page.locator('.scheme-container').getByRole('button', { name: 'Authorize' }).click();
        const dialog = page.getByRole('dialog');
        await dialog.getByLabel('Value:').fill(api.token);
        await dialog.getByRole('button', { name: 'Apply credentials' }).click();
        await dialog.getByRole('button', { name: /^Logout/ }).waitFor();
        problems.push(...(await axeProblems(page, 'the authorization dialog')));
        await dialog.getByRole('button', { name: 'Close', exact: true }).click();

        // GET /api/v1/affiliates: expand, Try it out, Execute.
        const operation = page.locator(OPERATION);
        await operation.locator('button.opblock-summary-control').click();
        await operation.getByRole('button', { name: 'Try it out' }).click();
        const call = page.waitForRequest((request) => new URL(request.url()).pathname === '/api/v1/affiliates');
        await operation.getByRole('button', { name: 'Execute' }).click();
        const request = await call;
        assert.equal(new URL(request.url()).origin, test.url, 'the call goes to the address the page came from, not SITE_URL');
        assert.equal(request.headers().authorization, `Bearer ${api.token}`);
        const status = operation.locator('.live-responses-table tbody .response-col_status').first();
        await status.waitFor();
        assert.equal((await status.innerText()).trim(), '200');
        assert.match(await operation.locator('.live-responses-table tbody .response-col_description').first().innerText(), /jane\.doe@example\.com/);
        problems.push(...(await axeProblems(page, 'the answer')));

        // A write: its body editor, and its schema.
        const write = page.locator('#operations-Sales-post_api_v1_sales');
        await write.locator('button.opblock-summary-control').click();
        await write.getByRole('tab', { name: 'Schema' }).first().click();
        await write.locator('.json-schema-2020-12').first().waitFor();
        problems.push(...(await axeProblems(page, "a write's schema")));
        await write.getByRole('button', { name: 'Try it out' }).click();
        await write.getByRole('tab', { name: 'Edit Value' }).click();
        assert.match(await write.getByRole('textbox', { name: 'Request body' }).inputValue(), /"totalEarned": 49\.99/);
        problems.push(...(await axeProblems(page, "a write's body editor")));

        assert.deepEqual(await cspViolations(), [], 'no Content-Security-Policy violation');
        assert.deepEqual(errors, [], 'no console error, failed request or error status');
        assert.deepEqual(problems, [], 'no serious or critical axe violation, no sideways scroll');
      } finally {
        await context.close();
      }
    });
  }
});
