import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
import { apiClient, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { launchChromium, newContext } from '../helpers/browser.ts';
import { createProgram, updateProgramSettings } from '../../src/modules/programs/program.service.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { uniqueEmail } from '../helpers/fixtures.ts';
import { startSmtpReceiver, type SmtpReceiver } from '../helpers/smtp-receiver.ts';

// Issue 19's "done when", in Chromium with the mail through a real SMTP server: the merchant
// shares the portal; an affiliate signs up, is approved, signs in from the e-mail, shares their
// link; a visitor clicks it and buys; the affiliate sees the click, the referral, the sale, the
// commission waiting in the hold and, after a payout, the paid amount.

let test: TestServer;
let browser: Browser;
let smtp: SmtpReceiver;
let now = new Date('2026-11-02T09:00:00.000Z');

before(async () => {
  smtp = await startSmtpReceiver();
  test = await startTestServer({ smtpUrl: smtp.url }, { clock: () => now });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await test?.close();
  await smtp?.close();
});

const stat = async (page: Page, key: string) => (await page.locator(`[data-stat="${key}"]`).innerText()).trim().split(' ')[0];

describe('an affiliate from sign-up to payout, in Chromium', () => {
  it('joins, is approved, signs in from the e-mail and follows a click, a sale and a payout', async () => {
    const db = test.server.database.db;
    const owner = await createUser(db, { email: uniqueEmail('owner'), password: 'a long password' });
    const program = await createProgram(db, { ownerUserId: owner.id, name: 'Journey Outdoor', domain: 'journey.example', commissionRate: 10 });
    await updateProgramSettings(db, program.id, { holdDays: 7 });
    const { token } = await issueToken(db, { programId: program.id, name: 'site', kind: 'api_key' });
    const api = apiClient(test.url, token, program.id);
    const email = uniqueEmail('jane');

    const context = await newContext(browser);
    try {
      const page = await context.newPage();
      await page.goto(`${test.url}/portal/${program.portal.slug}`);
      await page.getByLabel('First name').fill('Jane');
      await page.getByLabel('Last name').fill('Cooper');
      await page.getByLabel('E-mail').fill(email);
      await page.getByRole('button', { name: 'Apply' }).click();
      await page.getByText('Your application waits for review').waitFor();

      const affiliate = (await api.get(`/affiliates?email=${encodeURIComponent(email)}`)).body;
      assert.equal((await api.put('/affiliates', { id: affiliate.id, approval: 'approved' })).status, 200);
      const approved = await smtp.waitFor((m) => m.to.includes(email) && m.subject.startsWith('You are approved'), 'the approval e-mail');
      assert.ok(approved.text.includes(`https://journey.example/?ref=${affiliate.link}`));

      await page.goto(`${test.url}/portal/${program.portal.slug}/login`);
      await page.getByLabel('E-mail').fill(email);
      await page.getByRole('button', { name: 'E-mail me a link' }).click();
      const login = await smtp.waitFor((m) => m.to.includes(email) && m.subject.startsWith('Your link'), 'the login e-mail');
      await page.goto(`${test.url}${/http:\/\/tandem\.test(\/portal\/\S+)/.exec(login.text)![1]}`);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL('**/home');
      assert.ok((await page.content()).includes(`https://journey.example/?ref=${affiliate.link}`), 'the link to share');

      // A visitor clicks the link on the merchant's site, signs up and pays.
      const click = await fetch(`${test.url}/api/track/click?programId=${program.id}`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', origin: 'https://journey.example', 'user-agent': 'Mozilla/5.0 Chrome/131.0' },
        body: JSON.stringify({ url: `https://journey.example/?ref=${affiliate.link}` }),
      });
      assert.equal(click.status, 200);
      const customer = uniqueEmail('customer');
      await api.post('/referrals', { name: 'Carl', email: customer, referredUserExternalId: 'cus_1', affiliateId: affiliate.link });
      await api.post('/sales', { email: customer, totalEarned: 80 });
      await page.reload();
      assert.deepEqual(
        [await stat(page, 'clicks'), await stat(page, 'referrals'), await stat(page, 'sales'), await stat(page, 'revenue'), await stat(page, 'pending'), await stat(page, 'paid')],
        ['1', '1', '1', '$80.00', '$8.00', '$0.00'],
      );

      // A week later the merchant pays out; the affiliate sees it paid.
      now = new Date(now.getTime() + 8 * 86_400_000);
      const [payout] = (await api.post('/payouts', {})).body;
      await api.put('/payouts', { payoutId: payout.id, status: 'paid', method: 'paypal' });
      await smtp.waitFor((m) => m.to.includes(email) && m.subject.includes('paid you'), 'the payout e-mail');
      await page.reload();
      assert.deepEqual([await stat(page, 'pending'), await stat(page, 'due'), await stat(page, 'paid')], ['$0.00', '$0.00', '$8.00']);
    } finally {
      await context.close();
    }
  });
});
