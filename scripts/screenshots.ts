// `npm run screenshots`: starts Tandem on a throwaway SQLite file, seeds a believable program,
// drives Chromium through the main pages and saves PNGs to docs/screenshots/. Exits non-zero
// when a page is missing or fails, after saving every page it could.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { loadConfig, WEBHOOK_DNS_DEFAULTS } from '../src/config.ts';
import { startServer } from '../src/server.ts';
import { createUser } from '../src/modules/users/user.service.ts';
import { createProgram, getProgram, toProgramContext } from '../src/modules/programs/program.service.ts';
import { systemClock } from '../src/domain/clock.ts';
import { createWebhook } from '../src/modules/webhooks/webhook.service.ts';
import { webhookDnsFor } from '../src/modules/webhooks/webhook-dns.ts';
import { issueToken } from '../src/modules/tokens/token.service.ts';
import { addIntegration } from '../src/modules/integrations/integration.service.ts';
import { launchChromium, newContext } from '../test/helpers/browser.ts';

const OUT = fileURLToPath(new URL('../docs/screenshots/', import.meta.url));
const EMAIL = 'maria@acme-outdoor.example';
const PASSWORD = 'screenshots password';
const TOOL_CALLBACK = 'https://zapier.com/dashboard/auth/oauth/return/App123456CLIAPI/';

const dir = mkdtempSync(join(tmpdir(), 'tandem-screenshots-'));
// Webhook endpoints on this machine (one healthy, one answering 503) give the Webhooks page real attempts.
const receiver = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    const healthy = request.url?.startsWith('/hooks/orders');
    response.writeHead(healthy ? 200 : 503, { 'content-type': 'application/json' });
    response.end(healthy ? '{"received":true}' : '{"error":"maintenance window, try again later"}');
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const hooksOrigin = `http://localhost:${(receiver.address() as AddressInfo).port}`;
const server = await startServer(
  loadConfig({}, { port: 0, host: '127.0.0.1', databaseUrl: `sqlite:${join(dir, 'tandem.db')}`, logLevel: 'silent', webhookAllowPrivateUrls: true, webhookRetrySchedule: [200, 200] }),
);
const failures: string[] = [];

async function seed() {
  const db = server.database.db;
  const user = await createUser(db, { email: EMAIL, password: PASSWORD });
  const program = await createProgram(db, { ownerUserId: user.id, name: 'Acme Outdoor', domain: 'acme-outdoor.example', commissionRate: 20 });
  await createProgram(db, { ownerUserId: user.id, name: 'Trailhead Books', domain: 'trailhead-books.example', currency: 'EUR' });
  await issueToken(db, { programId: program.id, name: 'Checkout webhook', kind: 'api_key', createdByUserId: user.id });
  const { token } = await issueToken(db, { programId: program.id, name: 'Zapier connection', kind: 'connect', integration: 'zapier', createdByUserId: user.id });
  await addIntegration(db, { name: 'zapier', displayName: 'Zapier', redirectUris: [TOOL_CALLBACK] });
  const context = toProgramContext(await getProgram(db, program.id), systemClock);
  const webhookOptions = { allowPrivate: true, dns: webhookDnsFor(WEBHOOK_DNS_DEFAULTS), tokenId: null };
  const orders = await createWebhook(db, context, { url: `${hooksOrigin}/hooks/orders`, events: ['sale.created', 'referral.created'] }, webhookOptions);
  const crm = await createWebhook(db, context, { url: `${hooksOrigin}/crm/tandem-events`, events: ['affiliate.created'] }, webhookOptions);
  const legacy = await createWebhook(db, context, { url: `${hooksOrigin}/legacy/affiliates`, events: ['*'] }, webhookOptions);

  const api = async (path: string, body: unknown) => {
    const response = await fetch(`${server.url}/api/v1${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (response.status !== 201) throw new Error(`seeding ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as { id: string };
  };
  const people = [['Jane', 'Cooper'], ['Wade', 'Warren'], ['Esther', 'Howard'], ['Cameron', 'Williamson'], ['Brooklyn', 'Simmons']] as const;
  let n = 0;
  for (const [firstName, lastName] of people) {
    const affiliate = await api('/affiliates', { firstName, lastName, email: `${firstName.toLowerCase()}@partners.example` });
    for (let i = 0; i < 3; i++) {
      n++;
      const referral = await api('/referrals', { name: `Customer ${n}`, email: `customer${n}@example.com`, referredUserExternalId: `cus_${n}`, affiliateId: affiliate.id });
      await api('/sales', { referralId: referral.id, totalEarned: 29 + ((n * 37) % 120) + 0.99 });
    }
  }
  // Spread the sales over the last four weeks so the overview chart has a shape.
  const sales = await db.selectFrom('sales').select('id').orderBy('id').execute();
  for (const [i, sale] of sales.entries()) {
    const at = new Date(Date.now() - ((i * 53) % 28) * 86_400_000 - i * 3_600_000).toISOString();
    await db.updateTable('sales').set({ created_at: at }).where('id', '=', sale.id).execute();
  }
  // The worker delivers to the healthy endpoint and gives up on the failing one (three attempts
  // each); the third endpoint has been failing for a week and is disabled.
  const settled = async () => {
    const open = await db.selectFrom('webhook_deliveries').select('id').where('webhook_id', 'in', [orders.id, crm.id]).where('state', 'not in', ['delivered', 'failed']).execute();
    return open.length === 0;
  };
  for (let i = 0; i < 200 && !(await settled()); i++) await new Promise((r) => setTimeout(r, 50));
  const weekAgo = new Date(Date.now() - 7 * 86_400_000).toISOString();
  await db.updateTable('webhooks').set({ failing_since: weekAgo, disabled_at: new Date(Date.now() - 2 * 86_400_000).toISOString() }).where('id', '=', legacy.id).execute();
  return { program, failingWebhookId: crm.id };
}

async function shoot(page: Page, name: string, path: string, check?: (page: Page) => Promise<void>) {
  try {
    const response = await page.goto(`${server.url}${path}`);
    if (!response || response.status() >= 400) throw new Error(`HTTP ${response?.status()}`);
    await check?.(page);
    await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
    console.log(`saved docs/screenshots/${name}.png  (${path})`);
  } catch (error) {
    failures.push(`${name} (${path}): ${(error as Error).message.split('\n')[0]}`);
  }
}

try {
  const { program, failingWebhookId } = await seed();
  mkdirSync(OUT, { recursive: true });
  const browser = await launchChromium();
  try {
    const context = await newContext(browser, { viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
    const page = await context.newPage();
    const connect = `/connect/zapier/choose-affiliate-program?state=demo&redirect_uri=${encodeURIComponent(TOOL_CALLBACK)}`;

    await shoot(page, 'login', `/login?next=${encodeURIComponent('/dashboard')}`);
    await page.getByLabel('E-mail').fill(EMAIL);
    await page.getByLabel('Password').fill(PASSWORD);
    await Promise.all([page.waitForURL('**/dashboard'), page.getByRole('button', { name: 'Log in' }).click()]);

    const base = `/dashboard/programs/${program.id}`;
    await shoot(page, 'dashboard', '/dashboard');
    await shoot(page, 'overview', base);
    await shoot(page, 'affiliates', `${base}/affiliates`);
    await shoot(page, 'keys', `${base}/keys`);
    await shoot(page, 'connected-apps', `${base}/apps`);
    await shoot(page, 'webhooks', `${base}/webhooks`);
    await shoot(page, 'webhook-attempts', `${base}/webhooks/${failingWebhookId}`);
    await shoot(page, 'connect-choose', connect, (p) => p.getByRole('radio', { name: /Acme Outdoor/ }).check());
    await shoot(page, 'connect-consent-dialog', connect, async (p) => {
      await p.getByRole('radio', { name: /Acme Outdoor/ }).check();
      await p.getByRole('button', { name: 'Connect', exact: true }).click();
      await p.getByRole('dialog').waitFor();
    });

    const phone = await newContext(browser, { viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true, storageState: await context.storageState() });
    await shoot(await phone.newPage(), 'overview-phone', base);
  } finally {
    await browser.close();
  }
} finally {
  await server.close();
  receiver.close();
  rmSync(dir, { recursive: true, force: true });
}

if (failures.length > 0) {
  console.error(`\n${failures.length} page(s) could not be captured:\n  ${failures.join('\n  ')}`);
  process.exit(1);
}
