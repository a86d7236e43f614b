import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { addIntegration, listIntegrations, removeIntegration } from '../../modules/integrations/integration.service.ts';
import { updateProgram, type ProgramInput } from '../../modules/programs/program.service.ts';
import { isOperator } from '../../modules/users/user.service.ts';
import { connectBilling, disconnectBilling, getBillingStatus } from '../../modules/billing/billing.service.ts';
import { billingProviderNamed } from '../../modules/billing/providers/index.ts';
import { notFound } from '../../domain/errors.ts';
import { lastCountedClick } from '../../modules/tracking/click.service.ts';
import { html } from '../html.ts';
import { renderPage } from '../layout.ts';
import { currentProgram, currentUser, doneFlash, redirectDone, sendPage } from './dashboard-page.ts';
import { formErrorsOf, optionalNumber, optionalText, readForm, type FormValues } from './forms.ts';
import { programInputOf } from './programs.routes.ts';
import { settingsBody, type SettingsView } from './settings.view.ts';

// Settings: the program's own fields, and the integrations (automation tools) this Tandem
// instance lets use the connect flow. Integrations are instance-wide, so only the operator
// (isOperator) may change them; every other account sees the list. The page is settings.view.ts.

const DONE = {
  saved: 'Program saved.',
  'plan-saved': 'Commission plan saved. It applies to sales recorded from now on; recorded sales keep their commission.',
  'portal-saved': 'Portal saved.',
  'billing-saved': 'Secret saved. The provider’s events now record referrals, sales and refunds; the next one is listed below.',
  'billing-disconnected': 'Disconnected. The provider’s events are refused from now on; what they recorded stays.',
  'integration-added': 'Integration added. Its users can now connect it to their programs.',
  'integration-removed': 'Integration removed. Tokens it already issued keep working until revoked under Connected apps.',
};

const PORTAL_FIELDS = { 'portal/slug': 'portalSlug', 'portal/signup': 'portalSignup', 'portal/color': 'portalColor', 'portal/terms': 'portalTerms' };

function portalInputOf(form: FormValues): Partial<Omit<ProgramInput, 'ownerUserId'>> {
  return {
    portalSlug: form.portalSlug ?? '',
    portalSignup: form.portalSignup ?? '',
    portalColor: form.portalColor ?? '',
    portalTerms: form.portalTerms ?? '',
    portalLinksAllowed: form.portalLinksAllowed === 'on',
  };
}

/** The plan form's errors come back with the API's pointers (#/commission/holdDays): each goes beside its field. */
const PLAN_FIELDS = {
  'commission/type': 'commissionType',
  'commission/amount': 'commissionAmount',
  'commission/durationMonths': 'durationMonths',
  'commission/maxSalesPerCustomer': 'maxSalesPerCustomer',
  'commission/holdDays': 'holdDays',
  'commission/minimumPayout': 'minimumPayout',
};

/** The plan form as ProgramInput; text that is not a number is passed on, so the service's check names the field. */
function planInputOf(form: FormValues): Partial<Omit<ProgramInput, 'ownerUserId'>> {
  const count = (value: string | undefined) => (optionalText(value) === undefined ? null : (optionalNumber(value) as number));
  return {
    commissionType: form.commissionType ?? '',
    commissionRate: optionalNumber(form.commissionRate) as number | undefined,
    commissionAmount: (optionalNumber(form.commissionAmount) ?? 0) as number,
    durationMonths: count(form.durationMonths),
    maxSalesPerCustomer: count(form.maxSalesPerCustomer),
    holdDays: optionalNumber(form.holdDays) as number | undefined,
    minimumPayout: (optionalNumber(form.minimumPayout) ?? 0) as number,
  };
}

async function settingsPageOf({ db, config }: AppServices, request: FastifyRequest, reply: FastifyReply, failed?: SettingsView['failed']) {
  const { program, context, base } = currentProgram(request);
  const operator = await isOperator(db, currentUser(request).id);
  const integrations = await listIntegrations(db);
  const billing = await getBillingStatus(db, context, 10);
  const lastClick = await lastCountedClick(db, program.id);
  const body = settingsBody({ base, session: request.session!, siteUrl: config.siteUrl, clickRetentionDays: config.clickRetentionDays, program, operator, integrations, billing, lastClick, failed });
  return sendPage(db, request, reply, {
    title: 'Settings',
    active: 'settings',
    body,
    status: failed?.errors.status,
    flash: failed ? { kind: 'error', text: 'Nothing was saved: check the form below.' } : doneFlash(request, DONE),
  });
}

export const settingsRoutes: FastifyPluginAsync<AppServices> = async (app, services) => {
  const { db, clock } = services;
  app.get('/settings', (request, reply) => settingsPageOf(services, request, reply));

  app.post('/settings', async (request, reply) => {
    const { program, base } = currentProgram(request);
    const form = readForm(request);
    try {
      await updateProgram(db, currentUser(request).id, program.id, programInputOf(form), clock);
      return redirectDone(reply, `${base}/settings`, 'saved');
    } catch (error) {
      return settingsPageOf(services, request, reply, { section: 'program', values: form, errors: formErrorsOf(error) });
    }
  });

  app.post('/settings/plan', async (request, reply) => {
    const { program, base } = currentProgram(request);
    const form = readForm(request);
    try {
      await updateProgram(db, currentUser(request).id, program.id, planInputOf(form) as Omit<ProgramInput, 'ownerUserId'>, clock);
      return redirectDone(reply, `${base}/settings#commission-plan`, 'plan-saved');
    } catch (error) {
      return settingsPageOf(services, request, reply, { section: 'plan', values: form, errors: formErrorsOf(error, PLAN_FIELDS) });
    }
  });

  app.post('/settings/portal', async (request, reply) => {
    const { program, base } = currentProgram(request);
    const form = readForm(request);
    try {
      await updateProgram(db, currentUser(request).id, program.id, portalInputOf(form) as Omit<ProgramInput, 'ownerUserId'>, clock);
      return redirectDone(reply, `${base}/settings#affiliate-portal`, 'portal-saved');
    } catch (error) {
      return settingsPageOf(services, request, reply, { section: 'portal', values: form, errors: formErrorsOf(error, PORTAL_FIELDS) });
    }
  });

  /** A provider of the path, or a 404: the dashboard's forms only post the ones there are. */
  const providerOfPath = (request: FastifyRequest) => {
    const provider = billingProviderNamed((request.params as { provider: string }).provider);
    if (!provider) throw notFound('Billing provider');
    return provider;
  };

  app.post('/settings/billing/:provider', async (request, reply) => {
    const { program, base } = currentProgram(request);
    const provider = providerOfPath(request);
    const form = readForm(request);
    try {
      await connectBilling(db, program.id, provider, (form.secret ?? '').trim(), clock().toISOString());
      return redirectDone(reply, `${base}/settings#billing-${provider.name}`, 'billing-saved');
    } catch (error) {
      return settingsPageOf(services, request, reply, { section: 'billing', values: { provider: provider.name }, errors: formErrorsOf(error) });
    }
  });

  app.post('/settings/billing/:provider/disconnect', async (request, reply) => {
    const { program, base } = currentProgram(request);
    const provider = providerOfPath(request);
    await disconnectBilling(db, program.id, provider);
    return redirectDone(reply, `${base}/settings#billing`, 'billing-disconnected');
  });

  /** Instance-wide changes are the operator's: anyone else gets a 403 and nothing changes. */
  async function refuseUnlessOperator(request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    if (await isOperator(db, currentUser(request).id)) return false;
    await reply
      .code(403)
      .type('text/html; charset=utf-8')
      .send(renderPage({ title: 'Not allowed', session: request.session, body: html`<div class="card narrow"><h1>Not allowed</h1><p>Only the operator of this Tandem can change its integrations.</p></div>` }));
    return true;
  }

  app.post('/settings/integrations', async (request, reply) => {
    if (await refuseUnlessOperator(request, reply)) return reply;
    const { base } = currentProgram(request);
    const form = readForm(request);
    try {
      await addIntegration(db, {
        name: form.name?.trim() ?? '',
        displayName: optionalText(form.displayName),
        redirectUris: (form.redirectUris ?? '').split(/\r?\n/).map((line) => line.trim()).filter(Boolean),
        clientId: optionalText(form.clientId) ?? null,
        clientSecret: form.clientSecret ? form.clientSecret : null,
      }, clock);
      return redirectDone(reply, `${base}/settings#integrations`, 'integration-added');
    } catch (error) {
      return settingsPageOf(services, request, reply, { section: 'integration', values: form, errors: formErrorsOf(error) });
    }
  });

  app.post('/settings/integrations/:name/remove', async (request, reply) => {
    if (await refuseUnlessOperator(request, reply)) return reply;
    const { base } = currentProgram(request);
    const { name } = request.params as { name: string };
    await removeIntegration(db, name);
    return redirectDone(reply, `${base}/settings`, 'integration-removed');
  });
};
