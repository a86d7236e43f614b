import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createUser } from '../../src/modules/users/user.service.ts';
import { createProgram, type Program } from '../../src/modules/programs/program.service.ts';
import { rawDb, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { launchChromium, newContext } from '../helpers/browser.ts';

// The Webhooks page in real Chromium: the checkboxes post the chosen event types ("All events"
// takes the single ones out of the choice), the secret is shown once with a working Copy
// button, and "Send test" shows the delivery's outcome beside the button without a reload —
// while without script the same forms still work. "Delete endpoint" asks first: in a dialog,
// or without script on a page of its own. No page logs an error or loads a missing file (the
// favicon included).

const PASSWORD = 'browser test password';

let test: TestServer;
let receiver: WebhookReceiver;
let browser: Browser;
let email: string;
let program: Program;

before(async () => {
  // Retries 1.5 s apart: long enough for the page (polled every 400 ms) to show a failure with its
  // next try before the last one gives up, short enough for the retry to land within the test.
  test = await startTestServer({ webhookAllowPrivateUrls: true, webhookRetrySchedule: [1500, 1500] });
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

/** Console errors and answers of 400 or more, on every page of the context. */
function watchForProblems(context: BrowserContext): string[] {
  const problems: string[] = [];
  context.on('page', (page) => {
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
    });
  });
  return problems;
}

async function logIn(page: Page): Promise<void> {
  await page.goto(`${test.url}/dashboard/programs/${program.id}/webhooks`);
  await page.waitForURL(/\/login\?next=/);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(`**/dashboard/programs/${program.id}/webhooks`);
}

describe('webhooks page in Chromium', () => {
  it('adds an endpoint for two event types, copies its secret, and sees a test event arrive', async () => {
    const context = await newContext(browser, { permissions: ['clipboard-read', 'clipboard-write'] });
    const problems = watchForProblems(context);
    try {
      const page = await context.newPage();
      await logIn(page);
      await page.getByText('No webhooks yet.').waitFor();

      const url = `${receiver.url}/browser`;
      await page.getByRole('textbox', { name: 'URL' }).fill(url);
      const all = page.getByRole('checkbox', { name: 'All events, including types added later' });
      const sale = page.getByRole('checkbox', { name: 'sale.created', exact: true });
      assert.equal(await all.isChecked(), true, '"All events" is the default');
      assert.equal(await sale.isDisabled(), true, 'while "All events" is checked, the single types are out of the choice');
      await all.uncheck();
      assert.equal(await sale.isEnabled(), true, 'unchecking it gives them back');
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

      // "Send test" from the list: the outcome shows beside the button; the page stays.
      await page.goto(`${test.url}/dashboard/programs/${program.id}/webhooks`);
      const listUrl = page.url();
      let navigations = 0;
      page.on('framenavigated', (frame) => {
        if (frame === page.mainFrame()) navigations++;
      });
      await page.getByRole('button', { name: `Send test to ${url}` }).click();
      const result = page.locator(`tr[data-webhook="${row.id}"] .test-result`);
      await result.filter({ hasText: /^Delivered/ }).waitFor({ timeout: 20_000 });
      assert.match(await result.innerText(), /^Delivered: HTTP 200 in \d+ ms\.$/);
      assert.equal(await result.getAttribute('role'), 'status', 'read out by screen readers');
      assert.equal(page.url(), listUrl);
      assert.equal(navigations, 0, 'no reload');
      await receiver.waitFor((r) => r.some((d) => d.json?.type === 'webhook.test'), 5000, 'the test event');

      // A failing receiver: the failure and the next try, from the endpoint's own page.
      receiver.respondWith(500, 'down for the test');
      await page.goto(`${test.url}/dashboard/programs/${program.id}/webhooks/${row.id}`);
      await page.getByRole('button', { name: 'Send a test event', exact: true }).click();
      const failed = page.locator('.test-result');
      await failed.filter({ hasText: /^Failed/ }).waitFor({ timeout: 20_000 });
      assert.match(await failed.innerText(), /^Failed: HTTP 500 in \d+ ms\. Tandem tries again at \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC\.$/);
      assert.equal(await failed.getAttribute('data-result'), 'bad');
      receiver.respondWith(200, 'received by the browser test');

      // The attempts are on the endpoint's page, the retry's success last once it has run.
      let text = '';
      for (let i = 0; i < 40 && !/HTTP 200/.test(text); i++) {
        if (i > 0) await new Promise((resolve) => setTimeout(resolve, 250));
        await page.reload();
        text = await page.locator('tr[data-attempt]').last().innerText();
      }
      assert.match(text, /webhook\.test/);
      assert.match(text, /HTTP 200/);
      assert.match(text, /received by the browser test/);
      assert.equal(await page.locator('#new-secret').count(), 0, 'the secret is not shown again');
      assert.deepEqual(problems, [], 'no console error, no missing file (favicon included)');
    } finally {
      await context.close();
    }
  });

  it('"All events" checked over single types subscribes to all events only', async () => {
    const context = await newContext(browser);
    try {
      const page = await context.newPage();
      await logIn(page);
      const url = `${receiver.url}/all-over-some`;
      await page.getByRole('textbox', { name: 'URL' }).fill(url);
      const all = page.getByRole('checkbox', { name: 'All events, including types added later' });
      await all.uncheck();
      await page.getByRole('checkbox', { name: 'payout.paid', exact: true }).check();
      await all.check();
      assert.equal(await page.getByRole('checkbox', { name: 'payout.paid', exact: true }).isDisabled(), true);
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.locator('#new-secret').waitFor();
      const row = await rawDb(test).selectFrom('webhooks').select('events').where('url', '=', url).executeTakeFirstOrThrow();
      assert.deepEqual(JSON.parse(row.events), ['*'], 'the disabled boxes were not sent: no "not both" refusal');
    } finally {
      await context.close();
    }
  });

  it('"Delete endpoint" asks in a dialog: dismissed, nothing changes; accepted, deleted at once', async () => {
    const context = await newContext(browser);
    try {
      const page = await context.newPage();
      await logIn(page);
      const url = `${receiver.url}/delete-with-script`;
      await page.getByRole('textbox', { name: 'URL' }).fill(url);
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.locator('#new-secret').waitFor();
      const row = await rawDb(test).selectFrom('webhooks').select('id').where('url', '=', url).executeTakeFirstOrThrow();
      const endpoint = `${test.url}/dashboard/programs/${program.id}/webhooks/${row.id}`;
      await page.goto(endpoint);
      const questions: string[] = [];
      page.once('dialog', (dialog) => {
        questions.push(dialog.message());
        void dialog.dismiss();
      });
      await page.getByRole('button', { name: 'Delete endpoint' }).click();
      assert.equal(page.url(), endpoint, 'dismissed: the page stays');
      page.once('dialog', (dialog) => {
        questions.push(dialog.message());
        void dialog.accept();
      });
      await page.getByRole('button', { name: 'Delete endpoint' }).click();
      await page.waitForURL('**/webhooks?done=deleted');
      assert.deepEqual(questions, [`Delete the endpoint ${url}? It receives no more events.`, `Delete the endpoint ${url}? It receives no more events.`]);
      assert.equal(await rawDb(test).selectFrom('webhooks').select('id').where('id', '=', row.id).executeTakeFirst(), undefined, 'accepted once: deleted, no second question');
    } finally {
      await context.close();
    }
  });

  it('without script, the same forms work: every box stays usable, and Send test goes to the endpoint page', async () => {
    const context = await newContext(browser, { javaScriptEnabled: false });
    try {
      const page = await context.newPage();
      await logIn(page);
      assert.equal(await page.getByRole('checkbox', { name: 'sale.created', exact: true }).isEnabled(), true);
      const url = `${receiver.url}/no-script`;
      await page.getByRole('textbox', { name: 'URL' }).fill(url);
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.locator('#new-secret').waitFor();
      const row = await rawDb(test).selectFrom('webhooks').select('id').where('url', '=', url).executeTakeFirstOrThrow();
      await page.getByRole('button', { name: 'Send a test event', exact: true }).click();
      await page.waitForURL(`**/webhooks/${row.id}?done=test-sent`);
      await page.getByText(/Test event queued/).waitFor();
      await receiver.waitFor((r) => r.some((d) => d.path === '/hooks/no-script' && d.json?.type === 'webhook.test'), 5000, 'the test event');

      // "Delete endpoint" asks on a page: Cancel keeps the endpoint, its own button deletes it.
      const exists = async () => (await rawDb(test).selectFrom('webhooks').select('id').where('id', '=', row.id).executeTakeFirst()) !== undefined;
      await page.getByRole('button', { name: 'Delete endpoint' }).click();
      await page.getByRole('heading', { name: 'Delete this webhook endpoint?' }).waitFor();
      assert.ok(await exists(), 'asked, not deleted');
      await page.getByRole('link', { name: 'Cancel' }).click();
      await page.waitForURL(`**/webhooks/${row.id}`);
      assert.ok(await exists(), 'cancelled');
      await page.getByRole('button', { name: 'Delete endpoint' }).click();
      await page.getByRole('button', { name: 'Delete endpoint' }).click();
      await page.waitForURL('**/webhooks?done=deleted');
      assert.equal(await exists(), false, 'deleted once confirmed');
    } finally {
      await context.close();
    }
  });
});
