import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { apiClient, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { launchChromium, newContext } from '../helpers/browser.ts';

// A newcomer's first minutes, in real Chromium: sign up, create a program, create an API key,
// and call the API with it — without the command line.

let test: TestServer;
let browser: Browser;

before(async () => {
  test = await startTestServer();
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await test?.close();
});

describe('a new user in Chromium', () => {
  it('signs up, creates a program and an API key, and the key works on /api/v1/affiliates', async () => {
    const context = await newContext(browser);
    try {
      const page = await context.newPage();
      // An instance with no account sends its first visitor to sign up.
      await page.goto(`${test.url}/`);
      await page.waitForURL('**/signup');

      await page.getByLabel('E-mail').fill(`newcomer-${Date.now()}@example.com`);
      await page.getByLabel('Password').fill('my first password');
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.waitForURL('**/dashboard');
      await page.getByText('You have no affiliate program yet.').waitFor();

      await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Acme Outdoor');
      await page.getByRole('textbox', { name: 'Domain', exact: true }).fill('acme-outdoor.example');
      await page.getByRole('button', { name: 'Create program' }).click();
      await page.waitForURL(/\/dashboard\/programs\/[0-9a-f-]{36}/);
      const programId = /\/dashboard\/programs\/([0-9a-f-]{36})/.exec(page.url())![1]!;

      await page.getByRole('link', { name: 'API keys' }).click();
      await page.waitForURL(`**/dashboard/programs/${programId}/keys`);
      await page.getByRole('textbox', { name: 'Name', exact: true }).fill('Website backend');
      await page.getByRole('button', { name: 'Create key' }).click();
      const token = (await page.locator('#new-token').innerText()).trim();
      assert.match(token, /^tdm_[A-Za-z0-9_-]{43}$/);
      await page.getByRole('row', { name: /Website backend/ }).waitFor();

      const api = apiClient(test.url, token, programId);
      const empty = await api.get('/affiliates');
      assert.equal(empty.status, 200);
      assert.deepEqual(empty.body, []);
      const created = await api.post('/affiliates', { firstName: 'Jane', lastName: 'Cooper', email: 'jane@partners.example' });
      assert.equal(created.status, 201);
      const list = await api.get('/affiliates');
      assert.deepEqual(list.body.map((a: { email: string }) => a.email), ['jane@partners.example']);
      const me = await api.get('/me');
      assert.equal(me.body.id, programId);
      assert.equal(me.body.name, 'Acme Outdoor');

      // The key's secret is on the page once: reloading the keys page does not show it again.
      await page.goto(`${test.url}/dashboard/programs/${programId}/keys`);
      assert.equal(await page.getByText(token).count(), 0);
    } finally {
      await context.close();
    }
  });
});
