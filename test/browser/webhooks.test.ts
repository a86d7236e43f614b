import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { createUser } from '../../src/modules/users/user.service.ts';
import { createProgram, type Program } from '../../src/modules/programs/program.service.ts';
import { rawDb, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { launchChromium, newContext } from '../helpers/browser.ts';

// The Webhooks page in real Chromium: the checkboxes post the chosen event types, the secret
// is shown once with a working Copy button, and a test event reaches a real receiver and
// shows up among the endpoint's attempts.

const PASSWORD = 'browser test password';

let test: TestServer;
let receiver: WebhookReceiver;
let browser: Browser;
let email: string;
let program: Program;

before(async () => {
  test = await startTestServer({ webhookAllowPrivateUrls: true, webhookRetrySchedule: [100, 100] });
  email = `webhooks-${Date.now()}@example.com`;
  const user = await createUser(rawDb(test), { email, password: PASSWORD });
  program = await createProgram(rawDb(test), { ownerUserId: user.id, name: 'Hook Shop', domain: 'hook-shop.example.com' });
  receiver = await startWebhookReceiver();
  receiver.respondWith(200, 'received by the browser test');
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await receiver?.close();
  await test?.close();
});

describe('webhooks page in Chromium', () => {
  it('adds an endpoint for two event types, copies its secret, and sees a test event arrive', async () => {
    const context = await newContext(browser, { permissions: ['clipboard-read', 'clipboard-write'] });
    try {
      const page = await context.newPage();
      await page.goto(`${test.url}/dashboard/programs/${program.id}/webhooks`);
      await page.waitForURL(/\/login\?next=/);
      await page.getByLabel('E-mail').fill(email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.waitForURL(`**/dashboard/programs/${program.id}/webhooks`);
      await page.getByText('No webhooks yet.').waitFor();

      const url = `${receiver.url}/browser`;
      await page.getByRole('textbox', { name: 'URL' }).fill(url);
      await page.getByRole('checkbox', { name: 'All events, including types added later' }).uncheck();
      await page.getByRole('checkbox', { name: 'sale.created', exact: true }).check();
      await page.getByRole('checkbox', { name: 'affiliate.created', exact: true }).check();
      await page.getByRole('button', { name: 'Add endpoint' }).click();

      const secret = (await page.locator('#new-secret').innerText()).trim();
      assert.match(secret, /^whsec_/);
      await page.getByRole('button', { name: 'Copy' }).click();
      await page.getByText(/Copied to the clipboard\.|Select the text and copy it\./).waitFor();
      assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret, 'the Copy button copies the secret');
      const row = await rawDb(test).selectFrom('webhooks').select(['id', 'events', 'secret']).where('program_id', '=', program.id).executeTakeFirstOrThrow();
      assert.deepEqual(JSON.parse(row.events), ['affiliate.created', 'sale.created'], 'the checked boxes, and only they');
      assert.equal(row.secret, secret);

      await page.getByRole('button', { name: `Send test to ${url}` }).click();
      await page.waitForURL(`**/webhooks/${row.id}?done=test-sent`);
      await receiver.waitFor((r) => r.some((d) => d.json?.type === 'webhook.test'), 5000, 'the test event');
      // The attempt is stored right after the answer: reload until the page lists it.
      const attempt = page.locator('tr[data-attempt]');
      for (let i = 0; i < 40 && (await attempt.count()) === 0; i++) {
        await page.waitForTimeout(100);
        await page.reload();
      }
      const text = await attempt.first().innerText();
      assert.match(text, /webhook\.test/);
      assert.match(text, /HTTP 200/);
      assert.match(text, /received by the browser test/);
      assert.equal(await page.locator('#new-secret').count(), 0, 'the secret is not shown again');
    } finally {
      await context.close();
    }
  });
});
