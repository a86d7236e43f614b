import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { axeProblems } from '../helpers/axe.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { launchChromium, newContext } from '../helpers/browser.ts';
import { createProgram, updateProgramSettings } from '../../src/modules/programs/program.service.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { apiClient } from '../helpers/test-server.ts';
import { uniqueEmail } from '../helpers/fixtures.ts';

// The affiliate portal's pages against axe-core (WCAG 2.1 AA rules) in Chromium, at a phone's
// and a desktop's width (issue 19 item 3): no serious or critical violation, and no sideways
// scroll. axe is injected through the DevTools protocol (bypassCSP), as the pages allow no
// inline script.

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

describe('the portal with axe-core', () => {
  it('join, sign-in, link and figures pages at 390 and 1280 px have no serious or critical violation', async () => {
    const db = test.server.database.db;
    const owner = await createUser(db, { email: uniqueEmail('owner'), password: 'a long password' });
    const program = await createProgram(db, { ownerUserId: owner.id, name: 'Acme Outdoor', domain: 'acme.example', commissionRate: 20 });
    await updateProgramSettings(db, program.id, { portalTerms: 'Do not bid on our brand name.', portalLinksAllowed: true, holdDays: 0 });
    const { token } = await issueToken(db, { programId: program.id, name: 'test', kind: 'api_key' });
    const api = apiClient(test.url, token, program.id);
    const jane = (await api.post('/affiliates', { firstName: 'Jane', lastName: 'Cooper', email: uniqueEmail('jane') })).body;
    await api.post('/sales', { referralId: jane.id, email: uniqueEmail('c'), name: 'C', totalEarned: 120 });
    await api.post('/payouts', {});

    const problems: string[] = [];
    for (const width of [390, 1280]) {
      const context = await newContext(browser, { viewport: { width, height: 800 }, bypassCSP: true });
      try {
        const page = await context.newPage();
        const check = async (name: string) => problems.push(...(await axeProblems(page)).map((p) => `${width} px ${name}: ${p}`));
        await page.goto(`${test.url}/portal/${program.portal.slug}`);
        await check('join');
        await page.goto(`${test.url}/portal/${program.portal.slug}/login`);
        await check('sign-in');
        const { url } = (await api.post('/affiliates/portal-link', { affiliateId: jane.id })).body;
        await page.goto(`${test.url}${new URL(url).pathname}`);
        await check('link');
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.waitForURL('**/home');
        await check('figures');
      } finally {
        await context.close();
      }
    }
    assert.deepEqual(problems, []);
  });
});
