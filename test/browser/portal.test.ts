import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { launchChromium, newContext } from '../helpers/browser.ts';
import { createProgram, updateProgramSettings } from '../../src/modules/programs/program.service.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { uniqueEmail } from '../helpers/fixtures.ts';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { apiClient } from '../helpers/test-server.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.ts';

// Joining through the portal in real Chromium (issue 19): the program's colour applies under
// the pages' CSP (no inline style), the terms must be ticked, and the sign-up lands pending.

let test: TestServer;
let browser: Browser;
let smtp: SmtpReceiver;

before(async () => {
  smtp = await startSmtpReceiver();
  test = await startTestServer({ smtpUrl: smtp.url });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await test?.close();
  await smtp?.close();
});

describe('the portal in Chromium', () => {
  for (const width of [1280, 390]) {
    it(`at ${width} px: shows the program's colour and terms, and signs up an affiliate who waits for approval`, async () => {
      const db = test.server.database.db;
      const owner = await createUser(db, { email: uniqueEmail('owner'), password: 'a long password' });
      const program = await createProgram(db, { ownerUserId: owner.id, name: 'Acme Outdoor', domain: 'acme.example' });
      await updateProgramSettings(db, program.id, { portalColor: '#0b7285', portalTerms: 'Do not bid on our brand name.' });
      const context = await newContext(browser, { viewport: { width, height: 900 } });
      try {
        const page = await context.newPage();
        const problems: string[] = [];
        // Statuses are asserted where they matter (the form's 422, a missing favicon); anything else — a CSP refusal — is a problem.
        page.on('console', (message) => {
          if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) problems.push(message.text());
        });
        await page.goto(`${test.url}/portal/${program.portal.slug}`);
        await page.getByRole('heading', { name: "Join Acme Outdoor's affiliate program" }).waitFor();
        const colour = await page.getByRole('button', { name: 'Apply' }).evaluate((button) => getComputedStyle(button).backgroundColor);
        assert.equal(colour, 'rgb(11, 114, 133)', "the button takes the program's colour");

        const email = uniqueEmail('jane');
        await page.getByLabel('First name').fill('Jane');
        await page.getByLabel('Last name').fill('Cooper');
        await page.getByLabel('E-mail').fill(email);
        await page.getByRole('button', { name: 'Apply' }).click();
        await page.getByText('Must be accepted to join.').waitFor();
        await page.getByLabel('I accept the program terms').check();
        await page.getByRole('button', { name: 'Apply' }).click();
        await page.getByText('Your application waits for review').waitFor();
        const stored = await db.selectFrom('affiliates').select(['approval', 'status']).where('program_id', '=', program.id).execute();
        assert.deepEqual(stored.map((a) => [a.approval, a.status]), [['pending', 'inactive']]);
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        assert.ok(overflow <= 0, `no sideways scroll at ${width} px (${overflow} px)`);
        assert.deepEqual(problems, [], 'no console errors (CSP included)');
      } finally {
        await context.close();
      }
    });
  }

  it('an approved affiliate signs in from the e-mail, sees exactly its own figures, and cannot use the link twice', async () => {
    const db = test.server.database.db;
    const owner = await createUser(db, { email: uniqueEmail('owner'), password: 'a long password' });
    const program = await createProgram(db, { ownerUserId: owner.id, name: 'Login Outdoor', domain: 'acme.example', commissionRate: 20 });
    await updateProgramSettings(db, program.id, { holdDays: 0 });
    const { token } = await issueToken(db, { programId: program.id, name: 'test', kind: 'api_key' });
    const api = apiClient(test.url, token, program.id);
    const jane = (await api.post('/affiliates', { firstName: 'Jane', lastName: 'Cooper', email: uniqueEmail('jane') })).body;
    const sam = (await api.post('/affiliates', { firstName: 'Sam', lastName: 'Other', email: uniqueEmail('sam') })).body;
    await api.post('/sales', { referralId: jane.id, email: uniqueEmail('c'), name: 'C', totalEarned: 250 });
    await api.post('/sales', { referralId: sam.id, email: uniqueEmail('c'), name: 'C', totalEarned: 999 });

    const context = await newContext(browser);
    try {
      const page = await context.newPage();
      await page.goto(`${test.url}/portal/${program.portal.slug}/login`);
      await page.getByLabel('E-mail').fill(jane.email);
      await page.getByRole('button', { name: 'E-mail me a link' }).click();
      await page.getByText('a sign-in link is on its way').waitFor();
      const mail = await smtp.waitFor((m) => m.to.includes(jane.email), 'the login e-mail');
      const link = /http:\/\/tandem\.test(\/portal\/\S+)/.exec(mail.text)![1]!;

      await page.goto(`${test.url}${link}`);
      await page.getByRole('heading', { name: 'Sign in as Jane Cooper' }).waitFor();
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`**/portal/${program.portal.slug}/home`);
      assert.equal((await page.locator('[data-stat="revenue"]').innerText()).split(' ')[0], '$250.00', "Jane's revenue, not Sam's");
      assert.equal((await page.locator('[data-stat="due"]').innerText()).trim(), '$50.00');
      assert.ok((await page.content()).includes(`?ref=${jane.link}`));
      assert.ok(!(await page.content()).includes(sam.link), "nothing of another affiliate's");

      await page.goto(`${test.url}${link}`);
      await page.getByRole('heading', { name: 'This link no longer works' }).waitFor();
      // Its session opens no other program's portal.
      const other = await createProgram(db, { ownerUserId: owner.id, name: 'Other Outdoor', domain: 'other.example' });
      await page.goto(`${test.url}/portal/${other.portal.slug}/home`);
      await page.waitForURL(`**/portal/${other.portal.slug}/login`);
      const meJson = await page.goto(`${test.url}/portal/${other.portal.slug}/me.json`);
      assert.equal(meJson?.status(), 401);
    } finally {
      await context.close();
    }
  });
});
