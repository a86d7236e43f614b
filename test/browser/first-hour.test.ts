// The first hour, walked in Chromium as a new user walks it (issue 21, "Done when"): sign up on
// a fresh instance (becoming its operator), create the program, an API key and an affiliate,
// run the checklist's test sale, refund part of it from the sale's page, look at the chart,
// download the CSV, and call the API from /docs with "Try it out" — at a phone's and a
// desktop's width, with no console error and no serious or critical axe violation on the way.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { launchChromium, newContext } from '../helpers/browser.ts';
import { axeProblems } from '../helpers/axe.ts';

let browser: Browser;
before(async () => {
  browser = await launchChromium();
});
after(() => browser?.close());

const PASSWORD = 'correct horse battery staple';

describe('the first hour', () => {
  for (const width of [390, 1280]) {
    it(`at ${width} px`, async () => {
      // A fresh instance as `npm start` makes it: sign-up open only for its first person.
      const t: TestServer = await startTestServer({ signup: null, worker: false });
      const context = await newContext(browser, { viewport: { width, height: width < 500 ? 844 : 800 }, bypassCSP: true, acceptDownloads: true });
      const page = await context.newPage();
      const consoleErrors: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') consoleErrors.push(`${page.url()}: ${message.text()}`);
      });
      page.on('pageerror', (error) => consoleErrors.push(`${page.url()}: ${error.message}`));
      const problems: string[] = [];
      const check = async (step: string) => problems.push(...(await axeProblems(page)).map((p) => `${step}: ${p}`));
      const acceptNextDialog = () => page.once('dialog', (dialog) => void dialog.accept());
      try {
        // 1. Sign up: the first account, the operator's.
        await page.goto(t.url);
        await page.waitForURL('**/signup');
        await check('sign-up');
        await page.getByLabel('E-mail').fill('founder@example.com');
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Create account' }).click();
        await page.waitForURL('**/dashboard');
        await check('programs');

        // 2. The program.
        await page.getByLabel('Name').fill('Acme');
        await page.getByLabel('Domain').fill('acme.example');
        await page.getByRole('button', { name: /Create program/ }).click();
        await page.waitForURL(/\/dashboard\/programs\/[0-9a-f-]{36}\?done=program-created$/);
        const base = new URL(page.url()).pathname;
        await page.getByText('1 of 6 done').waitFor();
        await check('overview');

        // 3. An API key, shown once.
        await page.goto(`${t.url}${base}/keys`);
        await page.getByLabel('Name').fill('Billing');
        await page.getByRole('button', { name: 'Create key' }).click();
        const token = (await page.locator('#new-token').textContent())!.trim();
        assert.match(token, /^tdm_/);
        await check('new key');

        // 4. An affiliate.
        await page.goto(`${t.url}${base}/affiliates/new`);
        await page.getByLabel('First name').fill('Jane');
        await page.getByLabel('Last name').fill('Doe');
        await page.getByRole('textbox', { name: 'E-mail', exact: true }).fill('jane@example.com');
        await page.getByLabel(/Affiliate link|Link/).first().fill('jane');
        await page.getByRole('button', { name: 'Create affiliate' }).click();
        await page.waitForURL(/\/affiliates\/[0-9a-f-]{36}\?done=created$/);
        await check('affiliate');

        // 5. The checklist's test sale, run as the user would (their full key in place of the prefix).
        await page.goto(`${t.url}${base}`);
        await page.getByText('3 of 6 done').waitFor();
        const command = (await page.locator('#checklist-curl').textContent())!;
        const url = /^curl (\S+)/.exec(command)![1]!;
        const body = /-d '([^']+)'/.exec(command)![1]!;
        const answer = await fetch(url.replace(/^http:\/\/localhost:\d+/, t.url).replace('http://tandem.test', t.url), { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body });
        assert.equal(answer.status, 201, await answer.text());
        await page.reload();
        await page.getByText('4 of 6 done').waitFor();

        // 6. Refund part of it from the sale's page.
        await page.goto(`${t.url}${base}/sales`);
        await check('sales');
        await page.getByRole('link', { name: 'Test customer' }).click();
        await page.waitForURL(/\/sales\/\d+$/);
        await check('sale');
        await page.getByLabel(/Amount to refund/).fill('4');
        acceptNextDialog();
        await page.getByRole('button', { name: 'Refund' }).click();
        await page.getByText('Refund recorded').waitFor();
        assert.match((await page.locator('dl.details').textContent()) ?? '', /Refunded\s*\$4\.00/);
        await page.getByText('sale.refunded').waitFor();

        // 7. The chart, on the overview.
        await page.goto(`${t.url}${base}`);
        const chart = page.locator('.chart svg[role="img"]');
        await chart.waitFor();
        assert.match((await page.locator('#chart-desc, .chart').first().textContent()) ?? '', /1 sales?|sales from/);

        // 8. The CSV of the sales list.
        await page.goto(`${t.url}${base}/sales`);
        const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: /Download CSV/ }).click()]);
        const csv = readFileSync((await download.path())!, 'utf8').trim().split('\r\n');
        assert.equal(csv.length, 2);
        assert.match(csv[1]!, /,Test customer,test-customer@example\.com,/);
        assert.match(csv[1]!, /,USD,10\.00,4\.00,20,2\.00,0\.80,1\.20,/);

        // 9. /docs: Try it out with the key.
        await tryItOut(page, t.url, token);
        await check('docs');
      } finally {
        await context.close();
        await t.close();
      }
      assert.deepEqual(consoleErrors, [], 'no console error');
      assert.deepEqual(problems, [], 'no serious or critical axe violation');
    });
  }
});

/** Authorizes Swagger UI with the key, runs GET /api/v1/affiliates and reads the 200 it shows. */
async function tryItOut(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/docs`);
  await page.getByRole('button', { name: /Authorize/ }).first().click();
  await page.locator('.modal-ux input[type="text"], .modal-ux input[type="password"]').first().fill(token);
  await page.locator('.modal-ux button.authorize').click();
  await page.locator('.modal-ux button.btn-done').click();
  const operation = page.locator('.opblock-get', { has: page.locator('[data-path="/api/v1/affiliates"]') }).first();
  await operation.locator('.opblock-summary').first().click();
  await operation.getByRole('button', { name: 'Try it out' }).click();
  await operation.getByRole('button', { name: 'Execute' }).click();
  await operation.locator('.live-responses-table tbody .response-col_status').first().waitFor();
  assert.equal((await operation.locator('.live-responses-table tbody .response-col_status').first().textContent())?.trim(), '200');
}
