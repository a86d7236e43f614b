import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

// axe-core (WCAG 2.1 A and AA rules) run in a real page. axe is evaluated through the DevTools
// protocol, so the page's CSP (no inline script) needs the context's bypassCSP.

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Serious and critical violations, and a sideways scroll, as one line each (empty: none). */
export async function axeProblems(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const results = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(options: object): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe;
    return axe.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
  });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  return [
    ...results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
    ...(overflow > 0 ? [`scrolls sideways by ${overflow} px`] : []),
  ];
}
