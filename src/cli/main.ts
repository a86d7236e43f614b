import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { openDatabase, type DatabaseHandle } from '../db/database.ts';
import { migrateToLatest, MigrationError } from '../db/migrate.ts';
import { ApiError } from '../domain/errors.ts';
import { closeOnSignals, startServer } from '../server.ts';
import { pino } from 'pino';
import { systemClock } from '../domain/clock.ts';
import { createDeliveryWorker } from '../modules/webhooks/delivery-worker.ts';
import { createMailWorker } from '../modules/mail/mail-worker.ts';
import { createMailTransport } from '../modules/mail/mail-transport.ts';
import { createUser, findUserByEmail, requireUser } from '../modules/users/user.service.ts';
import { createProgram, getProgram, toProgramContext, updateProgramSettings } from '../modules/programs/program.service.ts';
import { runPayouts } from '../modules/payouts/payout.service.ts';
import { connectStripe } from '../modules/billing/stripe.service.ts';
import { issueToken, revokeToken } from '../modules/tokens/token.service.ts';
import { copyData, CopyError } from '../db/copy-data.ts';
import { addIntegration, listIntegrations, removeIntegration, type Integration } from '../modules/integrations/integration.service.ts';

// The operator command line. Every command accepts --json and then prints one JSON object
// on its last line of stdout; bad arguments print a one-line reason and exit non-zero.

class UsageError extends Error {}

type Options = Record<string, string | string[] | boolean | undefined>;

interface Command {
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  run(config: Config, options: Options): Promise<{ text: string; json: unknown } | void>;
}

function required(options: Options, name: string): string {
  const value = options[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

function optionalNumber(options: Options, name: string): number | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  const number = Number(value);
  if (typeof value !== 'string' || value.trim() === '' || !Number.isFinite(number)) throw new UsageError(`--${name} must be a number`);
  return number;
}

/** A whole number, or `none` (null) for "no limit". */
function optionalCount(options: Options, name: string): number | null | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  const number = optionalNumber(options, name)!;
  if (!Number.isInteger(number)) throw new UsageError(`--${name} must be a whole number or none`);
  return number;
}

function programId(options: Options): string {
  const id = required(options, 'program');
  if (!/^[0-9a-f-]{36}$/i.test(id)) throw new UsageError('--program must be a program id (a UUID)');
  return id.toLowerCase();
}

async function withMigratedDatabase<T>(config: Config, work: (database: DatabaseHandle) => Promise<T>): Promise<T> {
  const database = openDatabase(config);
  try {
    await migrateToLatest(database.db as never);
    return await work(database);
  } finally {
    await database.close();
  }
}

const commands: Record<string, Command> = {
  serve: {
    usage: 'tandem serve',
    options: {},
    async run(config) {
      const server = await startServer(config);
      closeOnSignals(server);
      await server.announce();
    },
  },
  worker: {
    usage: 'tandem worker',
    options: {},
    async run(config) {
      // Webhook delivery in its own process (run servers with WORKER=off, or beside them:
      // workers share the queue safely).
      const database = openDatabase(config);
      await migrateToLatest(database.db as never);
      const log = pino({ level: config.logLevel });
      const worker = createDeliveryWorker({ db: database.db, config, clock: systemClock, log });
      const transport = createMailTransport(config, log);
      const mail = createMailWorker({ db: database.db, config, clock: systemClock, transport, log });
      worker.start();
      mail.start();
      log.info('Tandem webhook worker started');
      let stopping = false;
      const stop = (signal: NodeJS.Signals) => {
        if (stopping) process.exit(1);
        stopping = true;
        log.info({ signal }, 'worker stopping: finishing in-flight deliveries');
        Promise.all([worker.stop(), mail.stop()])
          .then(() => transport.close())
          .then(() => database.close())
          .then(
            () => process.exit(0),
            () => process.exit(1),
          );
      };
      process.on('SIGTERM', stop);
      process.on('SIGINT', stop);
    },
  },
  migrate: {
    usage: 'tandem migrate',
    options: {},
    async run(config) {
      const database = openDatabase(config);
      try {
        const applied = await migrateToLatest(database.db as never);
        return { text: applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date', json: { applied } };
      } finally {
        await database.close();
      }
    },
  },
  'user create': {
    usage: 'tandem user create --email E --password P',
    options: { email: { type: 'string' }, password: { type: 'string' } },
    run: (config, options) =>
      withMigratedDatabase(config, async ({ db }) => {
        const user = await createUser(db, { email: required(options, 'email'), password: required(options, 'password') });
        return { text: `created user ${user.email} (${user.id})`, json: user };
      }),
  },
  'program create': {
    usage: 'tandem program create --owner E --name N --domain D [--currency USD] [--commission-rate 20] [--logo-url U]',
    options: {
      owner: { type: 'string' },
      name: { type: 'string' },
      domain: { type: 'string' },
      currency: { type: 'string' },
      'commission-rate': { type: 'string' },
      'logo-url': { type: 'string' },
    },
    run: (config, options) =>
      withMigratedDatabase(config, async ({ db }) => {
        const owner = required(options, 'owner');
        const user = requireUser(await findUserByEmail(db, owner), owner);
        const program = await createProgram(db, {
          ownerUserId: user.id,
          name: required(options, 'name'),
          domain: required(options, 'domain'),
          currency: options.currency as string | undefined,
          commissionRate: optionalNumber(options, 'commission-rate'),
          logoUrl: options['logo-url'] as string | undefined,
        });
        return { text: `created program "${program.name}" with id ${program.id}`, json: program };
      }),
  },
  'program update': {
    usage:
      'tandem program update --program ID [--name N] [--domain D] [--currency C] [--logo-url U] [--commission-type percentage|flat] [--commission-rate R] [--commission-amount A] [--duration-months N|none] [--max-sales-per-customer N|none] [--hold-days N] [--minimum-payout A] [--portal-slug S] [--portal-signup open|approval|invite] [--stripe-webhook-secret whsec_…]',
    options: {
      program: { type: 'string' },
      name: { type: 'string' },
      domain: { type: 'string' },
      currency: { type: 'string' },
      'logo-url': { type: 'string' },
      'commission-type': { type: 'string' },
      'commission-rate': { type: 'string' },
      'commission-amount': { type: 'string' },
      'duration-months': { type: 'string' },
      'max-sales-per-customer': { type: 'string' },
      'hold-days': { type: 'string' },
      'minimum-payout': { type: 'string' },
      'portal-slug': { type: 'string' },
      'portal-signup': { type: 'string' },
      'stripe-webhook-secret': { type: 'string' },
    },
    run: (config, options) =>
      withMigratedDatabase(config, async ({ db }) => {
        const id = programId(options);
        const changes = {
          name: options.name as string | undefined,
          domain: options.domain as string | undefined,
          currency: options.currency as string | undefined,
          logoUrl: options['logo-url'] as string | undefined,
          commissionType: options['commission-type'] as string | undefined,
          commissionRate: optionalNumber(options, 'commission-rate'),
          commissionAmount: optionalNumber(options, 'commission-amount'),
          durationMonths: optionalCount(options, 'duration-months'),
          maxSalesPerCustomer: optionalCount(options, 'max-sales-per-customer'),
          holdDays: optionalNumber(options, 'hold-days'),
          minimumPayout: optionalNumber(options, 'minimum-payout'),
          portalSlug: options['portal-slug'] as string | undefined,
          portalSignup: options['portal-signup'] as string | undefined,
        };
        const stripeSecret = options['stripe-webhook-secret'] as string | undefined;
        if (Object.values(changes).every((value) => value === undefined) && stripeSecret === undefined) throw new UsageError('name at least one setting to change; run tandem --help');
        if (stripeSecret !== undefined) {
          await getProgram(db, id);
          await connectStripe(db, id, stripeSecret, systemClock().toISOString());
        }
        const program = await updateProgramSettings(db, id, changes);
        const plan = program.commission;
        const pays = plan.type === 'flat' ? `${plan.amount} ${program.currency} per sale` : `${plan.rate} %`;
        const limits = [plan.durationMonths === null ? 'forever' : `for ${plan.durationMonths} months`, plan.maxSalesPerCustomer === null ? null : `first ${plan.maxSalesPerCustomer} sales`].filter(Boolean).join(', ');
        return {
          text: `updated program "${program.name}" (${program.id}): pays ${pays} ${limits}; hold ${plan.holdDays} days; minimum payout ${plan.minimumPayout} ${program.currency}; portal ${config.siteUrl}/portal/${program.portal.slug} (sign-up: ${program.portal.signup})`,
          json: program,
        };
      }),
  },
  'payout run': {
    usage: 'tandem payout run --program ID',
    options: { program: { type: 'string' } },
    run: (config, options) =>
      withMigratedDatabase(config, async ({ db }) => {
        const program = toProgramContext(await getProgram(db, programId(options)), systemClock);
        const payouts = await runPayouts(db, program, {});
        const lines = payouts.map((p) => `  ${p.affiliate.firstName} ${p.affiliate.lastName} <${p.affiliate.payoutEmail}>: ${p.amount} ${p.currency} (${p.entryCount} entries, payout ${p.id})`);
        const text = payouts.length ? [`made ${payouts.length} payout${payouts.length === 1 ? '' : 's'}:`, ...lines].join('\n') : 'nothing to pay: no affiliate has a due balance at or above the minimum';
        return { text, json: { payouts } };
      }),
  },
  'key create': {
    usage: 'tandem key create --program ID [--name N]',
    options: { program: { type: 'string' }, name: { type: 'string' } },
    run: (config, options) =>
      withMigratedDatabase(config, async ({ db }) => {
        const programId = required(options, 'program');
        if (!/^[0-9a-f-]{36}$/i.test(programId)) throw new UsageError('--program must be a program id (a UUID)');
        await getProgram(db, programId);
        const key = await issueToken(db, { programId, name: (options.name as string | undefined) ?? 'CLI key', kind: 'api_key' });
        return {
          text: `API key ${key.id} for program ${programId}. Copy the token now; it is not shown again:\n${key.token}`,
          json: { id: key.id, token: key.token, programId, name: key.name },
        };
      }),
  },
  'key revoke': {
    usage: 'tandem key revoke --token-id ID',
    options: { 'token-id': { type: 'string' } },
    run: (config, options) =>
      withMigratedDatabase(config, async ({ db }) => {
        const id = required(options, 'token-id');
        if (!/^[0-9a-f-]{36}$/i.test(id)) throw new UsageError('--token-id must be a token id (a UUID)');
        await revokeToken(db, id);
        return { text: `revoked token ${id}`, json: { id, revoked: true } };
      }),
  },
  'integration add': {
    usage: 'tandem integration add --name N [--display-name D] --redirect-uri U [--redirect-uri U2 …] [--client-id C --client-secret S]',
    options: {
      name: { type: 'string' },
      'display-name': { type: 'string' },
      'redirect-uri': { type: 'string', multiple: true },
      'client-id': { type: 'string' },
      'client-secret': { type: 'string' },
    },
    run: (config, options) =>
      withMigratedDatabase(config, async ({ db }) => {
        const redirectUris = (options['redirect-uri'] as string[] | undefined) ?? [];
        if (redirectUris.length === 0) throw new UsageError('--redirect-uri is required (repeat it for several)');
        if (options['client-secret'] !== undefined && options['client-id'] === undefined) throw new UsageError('--client-secret needs --client-id');
        const integration = await addIntegration(db, {
          name: required(options, 'name'),
          displayName: options['display-name'] as string | undefined,
          redirectUris,
          clientId: options['client-id'] as string | undefined,
          clientSecret: options['client-secret'] as string | undefined,
        });
        return { text: `added integration ${describeIntegration(integration)}\nconnect URL: ${config.siteUrl}/connect/${integration.name}/choose-affiliate-program\ntoken URL:   ${config.siteUrl}/api/${integration.name}/token`, json: integration };
      }),
  },
  'integration list': {
    usage: 'tandem integration list',
    options: {},
    run: (config) =>
      withMigratedDatabase(config, async ({ db }) => {
        const integrations = await listIntegrations(db);
        const text = integrations.length ? integrations.map(describeIntegration).join('\n') : 'no integrations; add one with tandem integration add';
        return { text, json: { integrations } };
      }),
  },
  'integration remove': {
    usage: 'tandem integration remove --name N',
    options: { name: { type: 'string' } },
    run: (config, options) =>
      withMigratedDatabase(config, async ({ db }) => {
        const name = required(options, 'name');
        await removeIntegration(db, name);
        return { text: `removed integration ${name}; tokens it issued keep working until revoked`, json: { name, removed: true } };
      }),
  },
  'migrate-data': {
    usage: 'tandem migrate-data --from sqlite:./data/tandem.db --to postgres://user@host/db',
    options: { from: { type: 'string' }, to: { type: 'string' } },
    async run(config, options) {
      const [fromUrl, toUrl] = [required(options, 'from'), required(options, 'to')];
      for (const url of [fromUrl, toUrl]) {
        if (!/^(sqlite:|postgres(ql)?:\/\/)/.test(url)) throw new UsageError(`--from and --to must be sqlite:<path> or postgres://… URLs, got "${url}"`);
      }
      if (fromUrl === toUrl) throw new UsageError('--from and --to name the same database');
      const from = openDatabase({ ...config, databaseUrl: fromUrl });
      const to = openDatabase({ ...config, databaseUrl: toUrl });
      try {
        const report = await copyData(from, to);
        const total = Object.values(report.tables).reduce((a, b) => a + b, 0);
        const lines = Object.entries(report.tables).map(([table, n]) => `  ${table}: ${n}`);
        return { text: `copied ${total} rows; counts verified:\n${lines.join('\n')}`, json: report };
      } finally {
        await Promise.all([from.close(), to.close()]);
      }
    },
  },
};

function describeIntegration(integration: Integration): string {
  const client = integration.clientId ? `, client id ${integration.clientId}${integration.hasClientSecret ? ' (with secret)' : ''}` : '';
  return `${integration.name} ("${integration.displayName}")${client}\n  redirect URIs: ${integration.redirectUris.join(' ')}`;
}

function helpText(): string {
  return ['Usage:', ...Object.values(commands).map((c) => `  ${c.usage} [--json]`)].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const words = argv.filter((a) => !a.startsWith('-'));
  const name = [words.slice(0, 2).join(' '), words[0] ?? ''].find((n) => n in commands);
  if (argv.length === 0) {
    console.error(helpText());
    return 1;
  }
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(helpText());
    return 0;
  }
  const json = argv.includes('--json');
  try {
    if (!name) throw new UsageError(`unknown command "${words.join(' ')}"; run tandem --help`);
    const command = commands[name]!;
    const { values, positionals } = parseArgs({
      args: argv.filter((a) => a !== '--json'),
      options: command.options,
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length !== name.split(' ').length) throw new UsageError(`unexpected argument "${positionals.at(-1)}"; usage: ${command.usage}`);
    const config = loadConfig();
    const result = await command.run(config, values as Options);
    if (result) console.log(json ? JSON.stringify(result.json) : result.text);
    return 0;
  } catch (error) {
    const reason = describe(error);
    if (json) console.log(JSON.stringify({ error: reason }));
    console.error(`tandem: ${reason}`);
    return 1;
  }
}

function describe(error: unknown): string {
  if (error instanceof ApiError) {
    const field = error.errors?.[0];
    return field ? `${field.pointer.replace('#/', '')} ${field.detail}` : error.detail;
  }
  if (error instanceof UsageError || error instanceof ConfigError || error instanceof MigrationError || error instanceof CopyError) return error.message;
  const code = (error as { code?: string }).code;
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') return (error as Error).message.split('\n')[0]!;
  if (code === 'EADDRINUSE') return `port already in use: ${(error as Error).message}`;
  return error instanceof Error ? error.message.split('\n')[0]! : String(error);
}
