import { systemClock } from '../../domain/clock.ts';
import { getProgram } from '../../modules/programs/program.service.ts';
import { billingProviderOf, connectBilling, disconnectBilling, getBillingConnections } from '../../modules/billing/billing.service.ts';
import { BILLING_PROVIDERS } from '../../modules/billing/providers/index.ts';
import { minute, table, text, uuid, withMigratedDatabase, type Command } from '../command.ts';

// Billing providers: a program's connection to each, by the secret the provider issues
// (CONTRACT "Billing providers beyond Stripe"; docs/billing.md). The secret is stored sealed and
// never printed again; `list` says who is connected since when and the last event received.

const PROVIDER_NAMES = BILLING_PROVIDERS.map((provider) => provider.name);

export const billingCommands = {
  'billing connect': {
    summary: 'connect a billing provider to a program by its secret',
    description:
      "Saves the provider's secret for the program (sealed; it is never shown again), replacing one saved before: the provider's events posted to {SITE_URL}/api/billing/{provider}/{program id} are verified with it from then on.",
    flags: {
      program: { value: 'ID', description: 'the program\'s id', required: true },
      provider: { value: 'P', description: 'the billing provider', choices: PROVIDER_NAMES, required: true },
      secret: { value: 'S', description: "the provider's secret: Stripe's signing secret (whsec_…), Paddle's secret key (pdl_ntfset_…), Lemon Squeezy's signing secret, Polar's webhook secret, Chargebee's user:password (docs/billing.md)", required: true },
      test: { description: "the provider's test secret (its test mode, sandbox or test site): events it verifies go to the program's test side only (docs/test-mode.md)", default: 'off: the live secret' },
    },
    example: 'tandem billing connect --program 4f0c…-…-… --provider stripe --secret whsec_…',
    run(config, options) {
      const id = uuid(options, 'program', 'a program');
      const provider = billingProviderOf(text(options, 'provider'), '--provider');
      const secret = text(options, 'secret');
      return withMigratedDatabase(config, async ({ db }) => {
        const program = await getProgram(db, id);
        const mode = options.test === true ? 'test' : 'live';
        await connectBilling(db, id, provider, secret, systemClock().toISOString(), '--secret', mode);
        const side = mode === 'test' ? `${provider.displayName}'s test events` : 'its events';
        return {
          text: `connected ${provider.displayName}${mode === 'test' ? ' (test)' : ''} to program "${program.name}" (${id}): ${side} go to ${config.siteUrl}/api/billing/${provider.name}/${id}`,
          json: { program: id, provider: provider.name, mode, receiver: `${config.siteUrl}/api/billing/${provider.name}/${id}` },
        };
      });
    },
  },
  'billing list': {
    summary: "list a program's billing connections",
    description: 'Lists each billing provider connected to the program: since when, and when its last verified event arrived (never the secret).',
    flags: {
      program: { value: 'ID', description: 'the program\'s id', required: true },
    },
    example: 'tandem billing list --program 4f0c…-…-…',
    run(config, options) {
      const id = uuid(options, 'program', 'a program');
      return withMigratedDatabase(config, async ({ db }) => {
        const program = await getProgram(db, id);
        const connections = await getBillingConnections(db, id);
        const rows = connections.map((c) => [c.provider, c.mode, minute(c.connectedAt), minute(c.lastEventAt), `${config.siteUrl}/api/billing/${c.provider}/${id}`]);
        return {
          text: connections.length === 0 ? `program "${program.name}" has no billing provider connected` : table(['PROVIDER', 'MODE', 'CONNECTED', 'LAST EVENT', 'RECEIVER'], rows),
          json: { program: id, connections },
        };
      });
    },
  },
  'billing disconnect': {
    summary: 'disconnect a billing provider from a program',
    description: "Forgets the provider's secret for the program: its events are refused (400) from then on, and what they recorded stays.",
    flags: {
      program: { value: 'ID', description: 'the program\'s id', required: true },
      provider: { value: 'P', description: 'the billing provider', choices: PROVIDER_NAMES, required: true },
      test: { description: "forget the test secret instead of the live one", default: 'off: the live secret' },
    },
    example: 'tandem billing disconnect --program 4f0c…-…-… --provider stripe',
    run(config, options) {
      const id = uuid(options, 'program', 'a program');
      const provider = billingProviderOf(text(options, 'provider'), '--provider');
      return withMigratedDatabase(config, async ({ db }) => {
        const program = await getProgram(db, id);
        const mode = options.test === true ? 'test' : 'live';
        const removed = await disconnectBilling(db, id, provider, mode);
        const name = `${provider.displayName}${mode === 'test' ? ' (test)' : ''}`;
        return {
          text: removed ? `disconnected ${name} from program "${program.name}" (${id})` : `${name} was not connected to program "${program.name}" (${id}): nothing changed`,
          json: { program: id, provider: provider.name, mode, disconnected: removed },
        };
      });
    },
  },
} satisfies Record<string, Command>;
