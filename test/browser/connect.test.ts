import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createUser } from '../../src/modules/users/user.service.ts';
import { createProgram, type Program } from '../../src/modules/programs/program.service.ts';
import { addIntegration } from '../../src/modules/integrations/integration.service.ts';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { apiClient, rawDb, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { startAutomationTool, type AutomationTool } from '../helpers/automation-tool.ts';
import { launchChromium, newContext } from '../helpers/browser.ts';

// The connect flow in real Chromium: a local HTTP server plays the automation tool (Zapier),
// the user logs in, picks the second of two programs, confirms in the dialog; the tool gets
// code and state, trades the code, and its token reads only that program's data.

const PASSWORD = 'browser test password';

let test: TestServer;
let tool: AutomationTool;
let browser: Browser;
let email: string;
let alpha: Program;
let beta: Program;
const affiliateIds: Record<string, string> = {};

async function logIn(page: Page): Promise<void> {
  await page.waitForURL(/\/login\?next=/);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(/\/connect\/zapier\/choose-affiliate-program/);
}

/** Starts at the tool, logs in, picks Beta Store; returns the page showing the choice. */
async function startAndChoose(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${tool.url}/start`);
  await logIn(page);
  await page.getByRole('radio', { name: /Beta Store/ }).check();
  return page;
}

before(async () => {
  test = await startTestServer();
  const db = rawDb(test);
  email = `browser-${Date.now()}@example.com`;
  const user = await createUser(db, { email, password: PASSWORD });
  alpha = await createProgram(db, { ownerUserId: user.id, name: 'Alpha Shop', domain: 'alpha.example.com' });
  beta = await createProgram(db, { ownerUserId: user.id, name: 'Beta Store', domain: 'beta.example.com' });
  for (const program of [alpha, beta]) {
    const { token } = await issueToken(db, { programId: program.id, name: 'seed', kind: 'api_key' });
    const created = await apiClient(test.url, token, program.id).post('/affiliates', { firstName: program.name, lastName: 'Partner', email: `partner@${program.domain}` });
    assert.equal(created.status, 201);
    affiliateIds[program.name] = created.body.id;
  }
  tool = await startAutomationTool({ tandemUrl: test.url, integration: 'zapier' });
  await addIntegration(db, { name: 'zapier', displayName: 'Zapier', redirectUris: [tool.callbackUrl] });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await tool?.close();
  await test?.close();
});

describe('connect flow in Chromium', () => {
  it('the tool connects to the second of two programs through login, choice and the confirmation dialog', async () => {
    const context = await newContext(browser);
    try {
      const page = await startAndChoose(context);
      // Both programs are offered, each with its name and domain.
      for (const text of ['Alpha Shop', 'alpha.example.com', 'Beta Store', 'beta.example.com']) await page.getByText(text).first().waitFor();

      await page.getByRole('button', { name: 'Connect', exact: true }).click();
      const dialog = page.getByRole('dialog');
      await dialog.waitFor();
      assert.equal(await page.locator('#consent-dialog').evaluate((d) => (d as HTMLDialogElement).open), true, 'a real <dialog>, opened by the script');
      const text = await dialog.innerText();
      assert.match(text, /Allow Zapier to use Beta Store\?/);
      assert.match(text, /Trigger on program events/);
      assert.match(text, /Act within the program/);
      assert.match(text, /Read affiliate, sales and referral data/);
      assert.match(page.url(), /choose-affiliate-program/, 'still on the choice page: the dialog is not a page load');

      await dialog.getByRole('button', { name: 'Confirm' }).click();
      await page.waitForURL(`${tool.callbackUrl}?**`);
      await page.getByRole('heading', { name: 'Connected to Beta Store' }).waitFor();

      assert.equal(tool.callbacks.length, 1);
      const callback = tool.callbacks[0]!;
      assert.ok(callback.stateMatches, `state came back unchanged: ${callback.query.state}`);
      assert.match(callback.query.code!, /^[A-Za-z0-9_-]{43}$/);
      assert.equal(callback.tokenResponse?.status, 200);
      assert.deepEqual(Object.keys(callback.tokenResponse!.body as object), ['access_token']);
      assert.equal(callback.me?.body.id, beta.id);

      // The tool's token reads Beta's data and nothing of Alpha's.
      const api = apiClient(test.url, callback.accessToken!, beta.id);
      const affiliates = await api.get('/affiliates');
      assert.equal(affiliates.status, 200);
      assert.deepEqual(affiliates.body.map((a: { id: string }) => a.id), [affiliateIds['Beta Store']]);
      assert.equal((await api.get(`/affiliates?id=${affiliateIds['Alpha Shop']}`)).status, 404);
    } finally {
      await context.close();
    }
  });

  it('revoking the connection makes the tool’s next call 401', async () => {
    const token = tool.callbacks[0]?.accessToken;
    assert.ok(token, 'the previous test connected the tool');
    const api = apiClient(test.url, token, beta.id);
    assert.equal((await api.get('/me')).status, 200);

    const context = await newContext(browser);
    try {
      const page = await context.newPage();
      await page.goto(`${test.url}/login?next=${encodeURIComponent(`/dashboard/programs/${beta.id}/apps`)}`);
      await page.getByLabel('E-mail').fill(email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.waitForURL(`**/dashboard/programs/${beta.id}/apps`);
      const row = page.getByRole('row', { name: /Zapier/ });
      await row.waitFor();
      // Revoking asks first; the user confirms.
      let asked = '';
      page.once('dialog', (dialog) => {
        asked = dialog.message();
        void dialog.accept();
      });
      await row.getByRole('button', { name: /Revoke/ }).click();
      await page.getByText(/Connection revoked/).waitFor();
      assert.match(asked, /^Revoke Zapier's access\?/);
    } finally {
      await context.close();
    }
    const next = await api.get('/me');
    assert.equal(next.status, 401);
    assert.equal(next.headers.get('www-authenticate'), 'Bearer');
  });

  it('Cancel in the dialog sends the tool error=access_denied with its state, and no code', async () => {
    const context = await newContext(browser);
    const before = tool.callbacks.length;
    try {
      const page = await startAndChoose(context);
      await page.getByRole('button', { name: 'Connect', exact: true }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
      await page.waitForURL(`${tool.callbackUrl}?**`);
      await page.getByRole('heading', { name: 'Not connected: access_denied' }).waitFor();
    } finally {
      await context.close();
    }
    const callback = tool.callbacks[before]!;
    assert.equal(callback.query.error, 'access_denied');
    assert.ok(callback.stateMatches);
    assert.equal(callback.query.code, undefined);
  });

  it('a consent form whose CSRF token was removed is refused: an error page, no code, no redirect', async () => {
    const context = await newContext(browser);
    const before = tool.callbacks.length;
    const codes = async () => (await rawDb(test).selectFrom('authorization_codes').select('code_hash').execute()).length;
    const codesBefore = await codes();
    try {
      const page = await startAndChoose(context);
      await page.getByRole('button', { name: 'Connect', exact: true }).click();
      await page.locator('#consent-dialog input[name="_csrf"]').evaluate((input) => input.remove());
      const response = page.waitForResponse((r) => r.url().endsWith('/connect/zapier/authorize'));
      await page.getByRole('dialog').getByRole('button', { name: 'Confirm' }).click();
      assert.equal((await response).status(), 403);
      await page.getByText('This form has expired').waitFor();
      assert.ok(page.url().startsWith(test.url));
    } finally {
      await context.close();
    }
    assert.equal(tool.callbacks.length, before);
    assert.equal(await codes(), codesBefore);
  });

  it('an unknown integration or a foreign redirect URI shows an error page and never leaves Tandem', async () => {
    const context = await newContext(browser);
    try {
      const page = await context.newPage();
      const unknown = await page.goto(`${test.url}/connect/nosuchtool/choose-affiliate-program?state=s&redirect_uri=${encodeURIComponent(tool.callbackUrl)}`);
      assert.equal(unknown?.status(), 400);
      await page.getByText(/does not know the app/).waitFor();
      const foreign = await page.goto(`${test.url}/connect/zapier/choose-affiliate-program?state=s&redirect_uri=${encodeURIComponent('https://evil.example/cb')}`);
      assert.equal(foreign?.status(), 400);
      await page.getByText(/not registered/).waitFor();
      assert.ok(page.url().startsWith(test.url));
    } finally {
      await context.close();
    }
  });

  it('without JavaScript, Connect opens a confirmation page and Confirm still connects', async () => {
    const context = await newContext(browser, { javaScriptEnabled: false });
    const before = tool.callbacks.length;
    try {
      const page = await startAndChoose(context);
      await page.getByRole('button', { name: 'Connect', exact: true }).click();
      await page.waitForURL(/\/connect\/zapier\/confirm\?/);
      await page.getByRole('heading', { name: 'Allow Zapier to use Beta Store?' }).waitFor();
      await page.getByRole('button', { name: 'Confirm' }).click();
      await page.getByRole('heading', { name: 'Connected to Beta Store' }).waitFor();
    } finally {
      await context.close();
    }
    assert.equal(tool.callbacks[before]?.me?.body.id, beta.id);
  });
});
