import { isExecutableFile } from './executables.ts';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions } from 'playwright-core';

// Real headless Chromium driven by playwright-core: Debian's `chromium` package when it is
// installed (CI installs it), else the Chromium build shipped in the npm package
// @sparticuz/chromium, so the browser tests run on a machine with only Node. A browser that
// cannot start fails the tests; a skipped browser test proves nothing.

export const SYSTEM_CHROMIUM = '/usr/bin/chromium';

let executable: Promise<string> | undefined;

/** The system Chromium, or the npm package's (unpacked to a temporary directory on first use). */
export function chromiumPath(): Promise<string> {
  executable ??= isExecutableFile(SYSTEM_CHROMIUM)
    ? Promise.resolve(SYSTEM_CHROMIUM)
    : import('@sparticuz/chromium').then(({ default: packaged }) => packaged.executablePath());
  return executable;
}

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
  return chromium.launch({ executablePath: await chromiumPath(), headless: true, args: ARGS });
}

/** A context (its own cookies) with timeouts suited to a busy CI machine. */
export async function newContext(browser: Browser, options: BrowserContextOptions = {}): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 }, ...options });
  context.setDefaultTimeout(30_000);
  context.setDefaultNavigationTimeout(30_000);
  return context;
}
