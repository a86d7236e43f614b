import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions } from 'playwright-core';

// Real headless Chromium (Debian's `chromium` package) driven by playwright-core. A missing
// browser fails the tests — CI installs it (.ci/run); a skipped browser test proves nothing.

export const CHROMIUM = '/usr/bin/chromium';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Launches Chromium on a fresh temporary profile (Playwright creates and deletes it). */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is missing at ${CHROMIUM}: install it with "apt-get install -y chromium" (the browser tests need it).`);
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
}

/** A context (its own cookies) with timeouts suited to a busy CI machine. */
export async function newContext(browser: Browser, options: BrowserContextOptions = {}): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 }, ...options });
  context.setDefaultTimeout(30_000);
  context.setDefaultNavigationTimeout(30_000);
  return context;
}
