import { systemClock } from '../../domain/clock.ts';
import { findUserByEmail, requireUser } from '../../modules/users/user.service.ts';
import {
  COMMISSION_TYPES,
  createProgram,
  DEFAULT_COMMISSION_RATE,
  DEFAULT_CURRENCY,
  getProgram,
  listPrograms,
  PORTAL_SIGNUPS,
  updateProgramSettings,
} from '../../modules/programs/program.service.ts';
import { connectStripe } from '../../modules/billing/billing.service.ts';
import { minute, optionalCount, optionalNumber, optionalText, table, text, UsageError, uuid, withMigratedDatabase, type Command } from '../command.ts';

// Programs: an owner's affiliate program, its commission plan, portal and Stripe connection.

const unchanged = 'unchanged';

export const programCommands = {
  'program create': {
    summary: 'create a program owned by a user',
    description: 'Creates an affiliate program for the user with this e-mail, paying a percentage commission; change its plan and portal with tandem program update.',
    flags: {
      owner: { value: 'E', description: 'e-mail of the owner, a user made with tandem user create', required: true },
      name: { value: 'N', description: 'the program\'s name, as affiliates see it (1 to 200 characters)', required: true },
      domain: { value: 'D', description: 'the merchant\'s domain, such as acme.com', required: true },
      currency: { value: 'C', description: 'ISO 4217 code of its amounts', default: DEFAULT_CURRENCY },
      'commission-rate': { value: 'R', description: 'percentage of each sale paid to the affiliate, 0 to 100', default: String(DEFAULT_COMMISSION_RATE) },
      'logo-url': { value: 'U', description: 'http(s) URL of its logo, shown in the portal', default: 'none' },
    },
    example: 'tandem program create --owner you@example.com --name Acme --domain acme.com --currency USD --commission-rate 20',
    run(config, options) {
      const owner = text(options, 'owner');
      const input = {
        name: text(options, 'name'),
        domain: text(options, 'domain'),
        currency: optionalText(options, 'currency'),
        commissionRate: optionalNumber(options, 'commission-rate'),
        logoUrl: optionalText(options, 'logo-url'),
      };
      return withMigratedDatabase(config, async ({ db }) => {
        const user = requireUser(await findUserByEmail(db, owner), owner);
        const program = await createProgram(db, { ownerUserId: user.id, ...input });
        return { text: `created program "${program.name}" with id ${program.id}`, json: program };
      });
    },
  },
  'program update': {
    summary: 'change a program\'s settings, commission plan, portal or Stripe secret',
    description: 'Changes the settings it names and keeps every other one (docs/payouts.md for the plan, docs/portal.md for the portal, docs/stripe.md for Stripe); name at least one.',
    flags: {
      program: { value: 'ID', description: 'the program\'s id (tandem program list)', required: true },
      name: { value: 'N', description: 'the program\'s name', default: unchanged },
      domain: { value: 'D', description: 'the merchant\'s domain', default: unchanged },
      currency: { value: 'C', description: 'ISO 4217 code; only until amounts are recorded in the current one', default: unchanged },
      'logo-url': { value: 'U', description: 'http(s) URL of its logo', default: unchanged },
      'commission-type': { value: 'T', description: 'a percentage of each sale, or a flat amount per sale', choices: COMMISSION_TYPES, default: unchanged },
      'commission-rate': { value: 'R', description: 'the percentage, 0 to 100', default: unchanged },
      'commission-amount': { value: 'A', description: 'the flat amount per sale, in the program\'s currency', default: unchanged },
      'duration-months': { value: 'N|none', description: 'months after the referral that sales earn commission; none: forever', default: unchanged },
      'max-sales-per-customer': { value: 'N|none', description: 'how many of a customer\'s sales earn commission; none: all', default: unchanged },
      'hold-days': { value: 'N', description: 'days a commission waits before it is due (0 to 365; refunds in that time take it back)', default: unchanged },
      'minimum-payout': { value: 'A', description: 'the smallest due balance a payout run pays', default: unchanged },
      'portal-slug': { value: 'S', description: 'the affiliate portal\'s address: SITE_URL/portal/S', default: unchanged },
      'portal-signup': { value: 'P', description: 'who may join through the portal: anyone at once, after approval, or by invitation only', choices: PORTAL_SIGNUPS, default: unchanged },
      'stripe-webhook-secret': { value: 'whsec_…', description: 'the signing secret of the program\'s Stripe webhook endpoint (stored sealed, never shown again)', default: unchanged },
    },
    example: 'tandem program update --program 7f0c2a4e-1b3d-4c5e-8f90-a1b2c3d4e5f6 --commission-type flat --commission-amount 10 --hold-days 14',
    run(config, options) {
      const id = uuid(options, 'program', 'a program');
      const changes = {
        name: optionalText(options, 'name'),
        domain: optionalText(options, 'domain'),
        currency: optionalText(options, 'currency'),
        logoUrl: optionalText(options, 'logo-url'),
        commissionType: optionalText(options, 'commission-type'),
        commissionRate: optionalNumber(options, 'commission-rate'),
        commissionAmount: optionalNumber(options, 'commission-amount'),
        durationMonths: optionalCount(options, 'duration-months'),
        maxSalesPerCustomer: optionalCount(options, 'max-sales-per-customer'),
        holdDays: optionalNumber(options, 'hold-days'),
        minimumPayout: optionalNumber(options, 'minimum-payout'),
        portalSlug: optionalText(options, 'portal-slug'),
        portalSignup: optionalText(options, 'portal-signup'),
      };
      const stripeSecret = optionalText(options, 'stripe-webhook-secret');
      if (Object.values(changes).every((value) => value === undefined) && stripeSecret === undefined) throw new UsageError('name at least one setting to change; run tandem help program update');
      return withMigratedDatabase(config, async ({ db }) => {
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
      });
    },
  },
  'program list': {
    summary: 'list every program, or one owner\'s, oldest first',
    description: 'Lists the id, name, domain, currency, owner and creation time of every program of the instance, or only those of one owner.',
    flags: {
      owner: { value: 'E', description: 'only the programs of the user with this e-mail', default: 'every owner' },
    },
    example: 'tandem program list --owner you@example.com',
    run(config, options) {
      const owner = optionalText(options, 'owner');
      return withMigratedDatabase(config, async ({ db }) => {
        const ownerUserId = owner === undefined ? undefined : requireUser(await findUserByEmail(db, owner), owner).id;
        const programs = await listPrograms(db, { ownerUserId });
        const rows = programs.map((p) => [p.id, p.name, p.domain, p.currency, p.ownerEmail, minute(p.createdAt)]);
        const none = owner === undefined ? 'no programs; create one with tandem program create' : `${owner} owns no program`;
        return { text: programs.length ? table(['ID', 'NAME', 'DOMAIN', 'CURRENCY', 'OWNER', 'CREATED (UTC)'], rows) : none, json: { programs } };
      });
    },
  },
} satisfies Record<string, Command>;
