import { addIntegration, listIntegrations, removeIntegration, type Integration } from '../../modules/integrations/integration.service.ts';
import { optionalText, text, UsageError, withMigratedDatabase, type Command } from '../command.ts';

// The automation tools (Zapier, n8n, Make) allowed to use the connect flow (docs/integrations.md).

function describeIntegration(integration: Integration): string {
  const client = integration.clientId ? `, client id ${integration.clientId}${integration.hasClientSecret ? ' (with secret)' : ''}` : '';
  return `${integration.name} ("${integration.displayName}")${client}\n  redirect URIs: ${integration.redirectUris.join(' ')}`;
}

export const integrationCommands = {
  'integration add': {
    summary: 'allow an automation tool (Zapier, n8n, Make) to use the connect flow',
    description: 'Registers a tool by name with the exact redirect URIs it may send users back to, and prints its connect and token URLs (docs/integrations.md).',
    flags: {
      name: { value: 'N', description: 'its name in the URLs, 1 to 50 lowercase letters, digits or hyphens', required: true },
      'display-name': { value: 'D', description: 'the name users see on the connect page', default: 'the --name' },
      'redirect-uri': { value: 'U', multiple: true, description: 'a redirect URI, matched character for character; repeat for several', required: true },
      'client-id': { value: 'C', description: 'the client id the tool sends to the token URL', default: 'none' },
      'client-secret': { value: 'S', description: 'the client secret the tool sends (stored hashed); needs --client-id', default: 'none' },
    },
    example: 'tandem integration add --name zapier --display-name Zapier --redirect-uri https://zapier.com/dashboard/auth/oauth/return/App123CLIAPI/',
    run(config, options) {
      if (options['client-secret'] !== undefined && options['client-id'] === undefined) throw new UsageError('--client-secret needs --client-id');
      const input = {
        name: text(options, 'name'),
        displayName: optionalText(options, 'display-name'),
        redirectUris: (options['redirect-uri'] as string[] | undefined) ?? [],
        clientId: optionalText(options, 'client-id'),
        clientSecret: optionalText(options, 'client-secret'),
      };
      return withMigratedDatabase(config, async ({ db }) => {
        const integration = await addIntegration(db, input);
        return {
          text: `added integration ${describeIntegration(integration)}\nconnect URL: ${config.siteUrl}/connect/${integration.name}/choose-affiliate-program\ntoken URL:   ${config.siteUrl}/api/${integration.name}/token`,
          json: integration,
        };
      });
    },
  },
  'integration list': {
    summary: 'list the automation tools allowed to connect',
    description: 'Lists every integration with its display name, client id and redirect URIs (never a client secret).',
    flags: {},
    example: 'tandem integration list',
    run: (config) =>
      withMigratedDatabase(config, async ({ db }) => {
        const integrations = await listIntegrations(db);
        const text = integrations.length ? integrations.map(describeIntegration).join('\n') : 'no integrations; add one with tandem integration add';
        return { text, json: { integrations } };
      }),
  },
  'integration remove': {
    summary: 'stop an automation tool from connecting (its tokens keep working until revoked)',
    description: 'Removes the integration and its pending codes; tokens it already issued keep working until revoked (tandem key revoke, or Connected apps).',
    flags: {
      name: { value: 'N', description: 'the integration\'s name (tandem integration list)', required: true },
    },
    example: 'tandem integration remove --name zapier',
    run(config, options) {
      const name = text(options, 'name');
      return withMigratedDatabase(config, async ({ db }) => {
        await removeIntegration(db, name);
        return { text: `removed integration ${name}; tokens it issued keep working until revoked`, json: { name, removed: true } };
      });
    },
  },
} satisfies Record<string, Command>;
