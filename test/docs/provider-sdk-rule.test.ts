// Only a billing provider's module imports its SDK (issue 32, eslint.config.js): the rest of
// Tandem speaks the neutral actions of billing/billing-provider.ts. Checked here with ESLint's own
// API on small files placed where the rule looks, so the rule cannot quietly stop applying.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({ cwd: ROOT });

/** The SDK rule's complaints about `code` were it the file `path`. */
async function sdkComplaints(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${ROOT}/${path}` });
  return result!.messages.filter((m) => m.message.includes("billing provider's SDK")).map((m) => m.ruleId ?? '');
}

describe("the billing providers' SDK rule", () => {
  it('refuses a provider SDK, static, type-only or dynamic, anywhere outside its provider folder', async () => {
    assert.deepEqual(await sdkComplaints('src/web/probe.ts', "import type Stripe from 'stripe';\nexport type S = Stripe;\n"), ['no-restricted-imports']);
    assert.deepEqual(await sdkComplaints('src/modules/billing/probe.ts', "export const load = () => import('stripe');\n"), ['no-restricted-syntax']);
    assert.deepEqual(await sdkComplaints('src/modules/billing/providers/stripe/probe.ts', "import type { Paddle } from '@paddle/paddle-node-sdk';\nexport type P = Paddle;\n"), ['no-restricted-imports']);
  });

  it('lets a provider folder import its own SDK, and any file import a provider module (only the SDK packages are refused)', async () => {
    assert.deepEqual(await sdkComplaints('src/modules/billing/providers/stripe/probe.ts', "import type Stripe from 'stripe';\nexport const load = () => import('stripe');\nexport type S = Stripe;\n"), []);
    assert.deepEqual(await sdkComplaints('src/modules/billing/probe.ts', "export { stripeProvider } from './providers/stripe/stripe.provider.ts';\n"), []);
  });
});
