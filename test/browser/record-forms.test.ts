// "Record a referral" and "Record a sale" in Chromium (issue 29 item 16): the affiliate field
// suggests affiliates as a name is typed (dashboard.js asks the server, so one older than the
// page's newest 50 is found too), and without script a name comes back with the affiliates
// matching it to choose from, in a labelled list that passes axe-core; both ways record.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { apiClient, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { launchChromium, newContext } from '../helpers/browser.ts';
import { axeProblems } from '../helpers/axe.ts';
import { BrowserSession, PASSWORD } from '../helpers/browser-session.ts';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { uniqueEmail } from '../helpers/fixtures.ts';

let t: TestServer;
let browser: Browser;
let merchant: BrowserSession;
let program: { id: string; base: string };
let api: ApiClient;
/** The oldest affiliate: not among the newest 50 the page suggests. */
let quentin: { id: string; email: string };

before(async () => {
  t = await startTestServer({ worker: false });
  browser = await launchChromium();
  merchant = await BrowserSession.signUp(t.url);
  program = await merchant.createProgram({ name: 'Acme Outdoor', commissionRate: '20' });
  const { token } = await issueToken(t.server.database.db, { programId: program.id, name: 'site', kind: 'api_key' });
  api = apiClient(t.url, token, program.id);
  quentin = (await api.post('/affiliates', { firstName: 'Quentin', lastName: 'Quillfeather', email: uniqueEmail('quentin') })).body;
  for (let i = 1; i <= 55; i++) assert.equal((await api.post('/affiliates', { firstName: `Member${i}`, lastName: 'Crowd', email: uniqueEmail(`member${i}`) })).status, 201);
});

after(async () => {
  await browser?.close();
  await t?.close();
});

async function loggedIn(options: { javaScriptEnabled?: boolean } = {}): Promise<{ page: Page; context: BrowserContext; problems: string[] }> {
  const context = await newContext(browser, { bypassCSP: true, ...options });
  const problems: string[] = [];
  const page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  await page.goto(`${t.url}/login`);
  await page.getByLabel('E-mail').fill(merchant.email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL('**/dashboard');
  return { page, context, problems };
}

const suggestions = (page: Page) => page.locator('#affiliate-choices option').evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value));

describe('the affiliate field of the record forms', () => {
  it('with script: typing a name suggests the affiliates matching it, older ones included; the suggestion records the referral', async () => {
    const { page, context, problems } = await loggedIn();
    try {
      await page.goto(`${t.url}${program.base}/referrals/new`);
      const initial = await suggestions(page);
      assert.equal(initial.length, 50, 'the page suggests the newest 50');
      assert.ok(!initial.includes(quentin.email), 'not the oldest');

      await page.getByLabel("Customer's name").fill('Sam Lee');
      await page.getByLabel("Customer's e-mail").fill(uniqueEmail('sam'));
      await page.getByLabel('Your id for the customer').fill('cus_browser_1');
      const field = page.getByRole('combobox', { name: 'Affiliate' });
      await field.pressSequentially('quill');
      await page.waitForFunction((email) => {
        const options = [...document.querySelectorAll('#affiliate-choices option')] as HTMLOptionElement[];
        return options.length === 1 && options[0]!.value === email;
      }, quentin.email);
      assert.match(await page.locator('#affiliate-choices option').textContent() ?? '', /^Quentin Quillfeather · /);

      // Choosing the suggestion puts its value (the e-mail) in the field.
      await field.fill(quentin.email);
      await page.getByRole('button', { name: 'Record referral' }).click();
      await page.waitForURL('**/referrals?done=recorded');
      const [referral] = (await api.get('/referrals?externalId=cus_browser_1')).body;
      assert.equal(referral.affiliateId, quentin.id);
      assert.deepEqual(problems, []);
    } finally {
      await context.close();
    }
  });

  it('without script: a name comes back with the affiliates matching it in a labelled list; the choice records the sale', async () => {
    const { page, context } = await loggedIn({ javaScriptEnabled: false });
    try {
      await page.goto(`${t.url}${program.base}/sales/new`);
      await page.getByRole('textbox', { name: 'Amount paid (USD)' }).fill('80');
      await page.getByRole('textbox', { name: 'Customer', exact: true }).fill(uniqueEmail('buyer'));
      await page.getByLabel("Customer's name").fill('New Buyer');
      await page.getByRole('combobox', { name: 'Affiliate, for a new customer' }).fill('Quillfeather');
      await page.getByRole('button', { name: 'Record sale' }).click();
      await page.getByText('“Quillfeather” is not an affiliate’s e-mail, link or id. One active affiliate matches it: choose below.').waitFor();
      const picker = page.getByLabel('Affiliates matching “Quillfeather”');
      assert.deepEqual(await picker.locator('option').allTextContents(), ['Choose one…', `Quentin Quillfeather · ${quentin.email} · ${(await api.get(`/affiliates?id=${quentin.id}`)).body.link}`]);
      await picker.selectOption(quentin.id);
      await page.getByRole('button', { name: 'Record sale' }).click();
      await page.waitForURL(/\/sales\/\d+\?done=recorded$/);
      const id = /\/sales\/(\d+)/.exec(page.url())![1];
      assert.equal((await api.get(`/sales?id=${id}`)).body.affiliateId, quentin.id);
    } finally {
      await context.close();
    }
  });

  for (const width of [390, 1280]) {
    it(`the list to choose from passes axe-core at ${width} px`, async () => {
      const { page, context } = await loggedIn();
      try {
        await page.setViewportSize({ width, height: 844 });
        await page.goto(`${t.url}${program.base}/referrals/new`);
        await page.getByRole('combobox', { name: 'Affiliate' }).fill('Member');
        await page.getByRole('button', { name: 'Record referral' }).click();
        await page.getByLabel('Affiliates matching “Member”').waitFor();
        assert.deepEqual(await axeProblems(page), []);
      } finally {
        await context.close();
      }
    });
  }
});
