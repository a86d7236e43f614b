import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { apiClient, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { launchChromium, newContext } from '../helpers/browser.ts';
import { BrowserSession, PASSWORD, uniqueEmail } from '../helpers/browser-session.ts';

// A month end in real Chromium (issue 18): set the plan, run payouts, download the PayPal file,
// mark a payout paid — with the buttons and forms a merchant uses, at desktop and phone widths.

let test: TestServer;
let browser: Browser;

before(async () => {
  test = await startTestServer({ worker: false });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await test?.close();
});

describe('a month end in Chromium', () => {
  for (const width of [1280, 390]) {
    it(`at ${width} px: saves the plan, runs payouts, downloads the PayPal file and marks a payout paid`, async () => {
      const merchant = await BrowserSession.signUp(test.url);
      const program = await merchant.createProgram({ name: 'Acme', commissionRate: '20' });
      const { token } = await issueToken(test.server.database.db, { programId: program.id, name: 'site', kind: 'api_key' });
      const api = apiClient(test.url, token, program.id);
      const affiliate = (await api.post('/affiliates', { firstName: 'Jane', lastName: 'Cooper', email: uniqueEmail('jane'), payoutEmail: uniqueEmail('jane-paypal') })).body;

      const context = await newContext(browser, { viewport: { width, height: 900 }, acceptDownloads: true });
      try {
        const page = await context.newPage();
        await page.goto(`${test.url}/login`);
        await page.getByLabel('E-mail').fill(merchant.email);
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Log in' }).click();
        await page.waitForURL('**/dashboard**');

        // The plan: no hold, so this month's sales can be paid now.
        await page.goto(`${test.url}${program.base}/settings`);
        await page.getByLabel('Hold (days)').fill('0');
        await page.getByRole('button', { name: 'Save plan' }).click();
        await page.getByText('Commission plan saved.').waitFor();
        assert.equal((await api.get('/me')).body.commission.holdDays, 0);

        await api.post('/sales', { referralId: affiliate.id, name: 'Customer', email: uniqueEmail('c'), totalEarned: 150 });
        await page.goto(`${test.url}${program.base}/payouts`);
        await page.getByRole('button', { name: 'Run payouts' }).click();
        await page.getByText('Payouts made: pay them, then mark each one paid.').waitFor();

        const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'PayPal file' }).click()]);
        const file = readFileSync((await download.path())!, 'utf8');
        assert.match(file, new RegExp(`^${affiliate.payoutEmail.replace(/[.+]/g, '\\$&')},30\\.00,USD,[0-9a-f]{30},Affiliate commission from Acme,PAYPAL\\r\\n$`));

        await page.getByRole('link', { name: /Payout of \$30\.00 to Jane Cooper/ }).click();
        await page.getByLabel('Reference').fill('PP-1234');
        await page.getByRole('button', { name: 'Save' }).click();
        await page.getByText('Payout marked paid.').waitFor();
        const [payout] = (await api.get('/payouts')).body;
        assert.deepEqual([payout.status, payout.reference, payout.amount], ['paid', 'PP-1234', 30]);

        await page.goto(`${test.url}${program.base}/affiliates/${affiliate.id}`);
        assert.equal((await page.locator('[data-stat="paid"]').innerText()).trim(), '$30.00');
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        assert.ok(overflow <= 0, `the affiliate page does not scroll sideways at ${width} px (${overflow} px)`);
      } finally {
        await context.close();
      }
    });
  }
});
