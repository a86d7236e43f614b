// Every dashboard page, and the account pages, against axe-core (WCAG 2.1 AA) in Chromium at a
// phone's and a desktop's width (issue 21 item 5): no serious or critical violation, no sideways
// scroll, the current tab marked and in view, lists that keep amount, commission and status in
// view (or scroll in a labelled, focusable region), the chart's labels at least 11 px, ids unique
// per page, and every form reachable and usable with the keyboard alone.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser, Page } from 'playwright-core';
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
const paths: Record<string, string> = {};

before(async () => {
  t = await startTestServer({ worker: false, webhookAllowPrivateUrls: true });
  browser = await launchChromium();
  merchant = await BrowserSession.signUp(t.url);
  program = await merchant.createProgram({ name: 'Acme Outdoor', commissionRate: '20' });
  await merchant.createApiKey(program.base, 'Website backend');
  const { token } = await issueToken(t.server.database.db, { programId: program.id, name: 'site', kind: 'api_key' });
  api = apiClient(t.url, token, program.id);
  const jane = (await api.post('/affiliates', { firstName: 'Jane', lastName: 'Cooper', email: uniqueEmail('jane'), affiliateLink: 'jane' })).body;
  await api.post('/referrals', { name: 'Sam Lee', email: uniqueEmail('sam'), referredUserExternalId: 'cus_1', affiliateId: jane.id });
  const sale = (await api.post('/sales', { referralId: jane.id, name: 'Sam Lee', email: uniqueEmail('buyer'), totalEarned: 120, externalInvoiceId: 'in_1' })).body;
  await api.post('/sales/refund', { saleId: sale.id, amount: 20 });
  const coupon = (await api.post('/coupons', { name: 'Spring sale', couponType: 'PERCENTAGE', percentOff: 15 })).body;
  await api.post('/promotional-codes', { couponId: coupon.id, code: 'JANE15', affiliateId: jane.id });
  const hook = (await api.post('/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['*'] })).body;
  await merchant.submit(`${program.base}/settings`, `${program.base}/settings/plan`, { commissionType: 'percentage', commissionRate: '20', commissionAmount: '', durationMonths: '', maxSalesPerCustomer: '', holdDays: '0', minimumPayout: '0' });
  const payouts = (await api.post('/payouts', {})).body;
  Object.assign(paths, {
    programs: '/dashboard',
    overview: program.base,
    affiliates: `${program.base}/affiliates`,
    'new affiliate': `${program.base}/affiliates/new`,
    affiliate: `${program.base}/affiliates/${jane.id}`,
    'edit affiliate': `${program.base}/affiliates/${jane.id}/edit`,
    referrals: `${program.base}/referrals`,
    'new referral': `${program.base}/referrals/new`,
    sales: `${program.base}/sales`,
    'new sale': `${program.base}/sales/new`,
    sale: `${program.base}/sales/${sale.id}`,
    payouts: `${program.base}/payouts`,
    payout: `${program.base}/payouts/${(payouts[0] ?? payouts.payouts?.[0])?.id}`,
    coupons: `${program.base}/coupons`,
    'new coupon': `${program.base}/coupons/new`,
    keys: `${program.base}/keys`,
    apps: `${program.base}/apps`,
    webhooks: `${program.base}/webhooks`,
    webhook: `${program.base}/webhooks/${hook.id}`,
    settings: `${program.base}/settings`,
    password: '/account/password',
    'not found': `${program.base}/no-such-page`,
  });
});

after(async () => {
  await browser?.close();
  await t?.close();
});

async function loggedIn(width: number): Promise<Page> {
  const context = await newContext(browser, { viewport: { width, height: width < 500 ? 844 : 800 }, bypassCSP: true });
  const page = await context.newPage();
  await page.goto(`${t.url}/login`);
  await page.getByLabel('E-mail').fill(merchant.email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL('**/dashboard');
  return page;
}

/** Ids used more than once on the page. */
const duplicateIds = (page: Page) =>
  page.evaluate(() => {
    const seen = new Map<string, number>();
    for (const el of document.querySelectorAll('[id]')) seen.set(el.id, (seen.get(el.id) ?? 0) + 1);
    return [...seen].filter(([, n]) => n > 1).map(([id]) => id);
  });

describe('the dashboard with axe-core', () => {
  for (const width of [390, 1280]) {
    it(`every page at ${width} px: no serious or critical violation, no sideways scroll, unique ids`, async () => {
      const page = await loggedIn(width);
      const problems: string[] = [];
      try {
        for (const [name, path] of Object.entries(paths)) {
          await page.goto(`${t.url}${path}`);
          problems.push(...(await axeProblems(page)).map((p) => `${width} px ${name}: ${p}`));
          for (const id of await duplicateIds(page)) problems.push(`${width} px ${name}: id "${id}" used twice`);
        }
        const context = await newContext(browser, { viewport: { width, height: 800 }, bypassCSP: true });
        const anonymous = await context.newPage();
        for (const path of ['/login', '/forgot-password', '/reset-password/not-a-real-token', '/signup']) {
          await anonymous.goto(`${t.url}${path}`);
          problems.push(...(await axeProblems(anonymous)).map((p) => `${width} px ${path}: ${p}`));
        }
        await context.close();
      } finally {
        await page.context().close();
      }
      assert.deepEqual(problems, []);
    });
  }

  it('at 390 px: the current tab is marked and in view; tables scroll in labelled, focusable regions with amount, commission and status first', async () => {
    const page = await loggedIn(390);
    try {
      await page.goto(`${t.url}${paths.settings}`);
      const current = page.locator('nav.tabs a[aria-current="page"]');
      assert.equal(await current.textContent(), 'Settings');
      const box = await current.boundingBox();
      assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `the current tab is in view: ${JSON.stringify(box)}`);

      await page.goto(`${t.url}${paths.sales}`);
      const region = page.getByRole('region', { name: 'Sales' });
      assert.equal(await region.getAttribute('tabindex'), '0');
      const headers = await region.locator('thead th').allTextContents();
      assert.deepEqual(headers.slice(0, 4), ['Customer', 'Amount', 'Commission', 'Status']);
      for (const header of ['Amount', 'Commission', 'Status']) {
        const cell = await region.locator('thead th', { hasText: header }).boundingBox();
        assert.ok(cell && cell.x + cell.width <= 390, `${header} is in view without scrolling`);
      }
    } finally {
      await page.context().close();
    }
  });

  it("the chart's labels are at least 11 px at 390 px, and it shows today", async () => {
    const page = await loggedIn(390);
    try {
      await page.goto(`${t.url}${program.base}`);
      const sizes = await page.evaluate(() => [...document.querySelectorAll('.chart svg text')].map((el) => el.getBoundingClientRect().height));
      assert.ok(sizes.length > 0);
      assert.ok(Math.min(...sizes) >= 11, `label heights ${Math.min(...sizes)} px`);
      const inView = await page.evaluate(() => {
        const bars = [...document.querySelectorAll('.chart svg rect.revenue, .chart svg rect')];
        const last = bars.at(-1)?.getBoundingClientRect();
        const scroller = document.querySelector('.chart-scroll')?.getBoundingClientRect();
        return last && scroller ? last.right <= scroller.right + 1 && last.left >= scroller.left - 1 : false;
      });
      assert.ok(inView, "today's bar is in view");
    } finally {
      await page.context().close();
    }
  });
});

describe('the keyboard', () => {
  it('tabs through each form to its submit button, and destructive buttons ask first', async () => {
    const page = await loggedIn(1280);
    try {
      const forms: [string, string][] = [
        [paths['new affiliate']!, 'Create affiliate'],
        [paths['new sale']!, 'Record sale'],
        [paths['new referral']!, 'Record referral'],
        [paths.sale!, 'Refund'],
        [paths.keys!, 'Create key'],
        [paths.password!, 'Change password'],
      ];
      for (const [path, button] of forms) {
        await page.goto(`${t.url}${path}`);
        await page.locator('main form[method="post"] input:not([type=hidden]), main form[method="post"] select').first().focus();
        let reached = false;
        for (let i = 0; i < 40 && !reached; i++) {
          await page.keyboard.press('Tab');
          reached = await page.evaluate((label) => document.activeElement?.tagName === 'BUTTON' && document.activeElement.textContent?.trim() === label, button);
        }
        assert.ok(reached, `${path}: Tab reaches "${button}"`);
        // A string, not a function: the test runner's transform would name inner functions (__name).
        const ring = (await page.evaluate(`(() => {
          const style = getComputedStyle(document.activeElement);
          const channels = (color) => (color.match(/[0-9.]+/g) || []).slice(0, 3).map(Number).map((v) => (v / 255 <= 0.03928 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4));
          const luminance = (color) => { const c = channels(color); return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]; };
          const ring = luminance(style.outlineColor), page = luminance(getComputedStyle(document.documentElement).backgroundColor);
          return { style: style.outlineStyle, contrast: (Math.max(ring, page) + 0.05) / (Math.min(ring, page) + 0.05) };
        })()`)) as { style: string; contrast: number };
        assert.notEqual(ring.style, 'none', `${path}: the focused button shows a focus ring`);
        assert.ok(ring.contrast >= 3, `${path}: the focus ring's contrast with the page is ${ring.contrast.toFixed(2)}:1`);
      }

      // Void asks first; dismissing it changes nothing.
      await page.goto(`${t.url}${paths.sale}`);
      let asked = '';
      page.once('dialog', (dialog) => {
        asked = dialog.message();
        void dialog.dismiss();
      });
      await page.getByRole('button', { name: 'Void sale' }).click();
      assert.match(asked, /^Void sale #\d+\? It cannot be undone\.$/);
      assert.equal(new URL(page.url()).pathname, paths.sale);
    } finally {
      await page.context().close();
    }
  });
});
