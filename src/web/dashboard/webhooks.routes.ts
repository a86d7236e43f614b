import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import type { Db } from '../../db/transaction.ts';
import { ApiError, type FieldError } from '../../domain/errors.ts';
import { assertValidBody } from '../../http/validation.ts';
import { SUBSCRIBABLE_EVENT_TYPES } from '../../modules/events/outbox.ts';
import { CreateWebhookBody, type CreatedWebhook } from '../../modules/webhooks/webhook.schema.ts';
import { webhookDnsFor } from '../../modules/webhooks/webhook-dns.ts';
import {
  createWebhook,
  deleteWebhook,
  enableWebhook,
  getAttemptPage,
  getDeliveryOfEvent,
  getWebhook,
  getWebhookPageWithCounts,
  getWebhookWithCounts,
  replayEvent,
  replayFailedSince,
  sendTestEvent,
} from '../../modules/webhooks/webhook.service.ts';
import { currentProgram, doneFlash, listPage, redirectDone, requestedPage, sendPage } from './dashboard-page.ts';
import { formatCount } from './format.ts';
import { errorFlash, formErrorsOf, noErrors, optionalUtcDateTime, readForm, readQuery, toDateTimeInput, type FormErrors, type FormValues } from './forms.ts';
import { deleteWebhookBody, formatDuration, webhookDetailBody, webhookListBody } from './webhooks.view.ts';

// Webhooks: the program's endpoints (the same subscriptions automation tools make through
// POST /api/v1/webhooks), their health, and every attempt to deliver to them. Adding one goes
// through createWebhook, with the API's URL rules; its signing secret is shown once, in the
// response to the form post itself, as a new API key is. The pages are webhooks.view.ts.

const LIST_DONE = { deleted: 'Endpoint deleted. It receives no more events.' };

function detailDone(request: FastifyRequest): Record<string, string> {
  const count = Number.parseInt(readQuery(request).count ?? '', 10);
  return {
    'test-sent': 'Test event queued. Its attempt appears below as soon as it is sent: reload the page to see it.',
    enabled: 'Endpoint re-enabled. The events queued while it was disabled are being delivered now.',
    replayed: 'The event is queued to be sent again.',
    resent: !(count > 0) ? 'No delivery failed since then: nothing to resend.' : `${formatCount(count)} failed ${count === 1 ? 'delivery is' : 'deliveries are'} queued to be sent again.`,
  };
}

/** Every value of a repeated form field (checkboxes); readForm keeps only the first. */
function postedList(request: FastifyRequest, name: string): string[] {
  const raw = ((request.body ?? {}) as Record<string, unknown>)[name];
  const values = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
  return values.filter((v): v is string => typeof v === 'string');
}

/** The form as the API's body: the schema then checks it as POST /api/v1/webhooks does. */
function createBodyOf(form: FormValues, events: string[]): CreateWebhookBody {
  const url = form.url?.trim() ?? '';
  const errors: FieldError[] = [];
  if (url === '') errors.push({ pointer: '#/url', detail: 'is required' });
  if (events.length === 0) errors.push({ pointer: '#/events', detail: 'choose “All events” or at least one event type' });
  else if (events.includes('*') && events.length > 1) errors.push({ pointer: '#/events', detail: 'choose “All events” or some event types, not both' });
  else if (!events.includes('*')) {
    const unknown = events.filter((e) => !(SUBSCRIBABLE_EVENT_TYPES as readonly string[]).includes(e));
    if (unknown.length > 0) errors.push({ pointer: '#/events', detail: `${unknown.length === 1 ? 'not an event type' : 'not event types'}: ${unknown.join(', ')}` });
  }
  if (errors.length > 0) throw new ApiError('validation_failed', 'The request is invalid.', errors);
  const body = { url, events };
  assertValidBody(CreateWebhookBody, body);
  return body;
}

/** Whether the request is dashboard.js asking for a JSON answer instead of a page. */
function wantsJson(request: FastifyRequest): boolean {
  return /\bapplication\/json\b/.test(request.headers.accept ?? '');
}

interface EndpointsForm {
  created?: CreatedWebhook;
  values?: FormValues;
  events?: string[];
  errors?: FormErrors;
}

async function endpointsPageOf({ db, config }: AppServices, request: FastifyRequest, reply: FastifyReply, options: EndpointsForm = {}) {
  const { context, base } = currentProgram(request);
  const errors = options.errors ?? noErrors;
  const page = requestedPage(request);
  const list = listPage(await getWebhookPageWithCounts(db, context, page), page, `${base}/webhooks`);
  const body = webhookListBody({
    base,
    session: request.session!,
    programName: context.name,
    disableAfter: formatDuration(config.webhookDisableAfterMs),
    allowPrivateUrls: config.webhookAllowPrivateUrls,
    created: options.created,
    values: options.values ?? {},
    events: options.events ?? ['*'],
    errors,
    list,
  });
  const flash = errorFlash(errors) ?? (options.created ? { kind: 'ok' as const, text: 'Endpoint added. It receives the events that happen from now on.' } : doneFlash(request, LIST_DONE));
  return sendPage(db, request, reply, { title: 'Webhooks', active: 'webhooks', body, status: errors.status, flash });
}

async function detailPageOf({ db, config, clock }: AppServices, request: FastifyRequest, reply: FastifyReply, options: { since?: string; errors?: FormErrors } = {}) {
  const { context, base } = currentProgram(request);
  const errors = options.errors ?? noErrors;
  const webhook = await getWebhookWithCounts(db, context.id, webhookIdOf(request));
  const page = requestedPage(request);
  const list = listPage(await getAttemptPage(db, context.id, webhook.id, page), page, `${base}/webhooks/${webhook.id}`);
  const body = webhookDetailBody({
    base,
    session: request.session!,
    webhook,
    disableAfter: formatDuration(config.webhookDisableAfterMs),
    attemptsBeforeGivingUp: config.webhookRetrySchedule.length + 1,
    since: options.since ?? toDateTimeInput(new Date(clock().getTime() - 86_400_000).toISOString()),
    errors,
    list,
  });
  return sendPage(db, request, reply, { title: 'Webhook endpoint', active: 'webhooks', body, status: errors.status, flash: errorFlash(errors) ?? doneFlash(request, detailDone(request)) });
}

async function deletePageOf(db: Db, request: FastifyRequest, reply: FastifyReply) {
  const { context, base } = currentProgram(request);
  const webhook = await getWebhookWithCounts(db, context.id, webhookIdOf(request));
  const body = deleteWebhookBody({ base, session: request.session!, webhook });
  return sendPage(db, request, reply, { title: 'Delete webhook endpoint', active: 'webhooks', body });
}

/** The resend form's "failed since" as an instant, or the error to show beside it. */
function readSince(text: string | undefined): string | FormErrors {
  const since = optionalUtcDateTime(text);
  if (since !== undefined && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(since)) return since;
  return {
    fields: { since: since === undefined ? 'Is required.' : 'Use a date and time, such as 2026-03-01T09:00.' },
    message: 'Check the highlighted fields.',
    status: 422,
  };
}

const webhookIdOf = (request: FastifyRequest) => (request.params as { webhookId: string }).webhookId;

export const webhookDashboardRoutes: FastifyPluginAsync<AppServices> = async (app, services) => {
  const { db, config } = services;

  app.get('/webhooks', (request, reply) => endpointsPageOf(services, request, reply));

  app.post('/webhooks', async (request, reply) => {
    const { context } = currentProgram(request);
    const form = readForm(request);
    const events = postedList(request, 'events');
    try {
      const created = await createWebhook(db, context, createBodyOf(form, events), { allowPrivate: config.webhookAllowPrivateUrls, dns: webhookDnsFor(config), tokenId: null });
      return endpointsPageOf(services, request, reply, { created });
    } catch (error) {
      const errors = formErrorsOf(error);
      // The URL is subscribed already: say so beside the field, as the form's other URL errors.
      if (error instanceof ApiError && error.code === 'conflict' && error.existingId !== undefined) {
        errors.fields.url = 'This program already sends events to this URL (see it in the list above). To change its event types, delete it and add it again.';
        errors.message = 'Check the highlighted fields.';
      }
      return endpointsPageOf(services, request, reply, { values: form, events, errors });
    }
  });

  app.get('/webhooks/:webhookId', (request, reply) => detailPageOf(services, request, reply));

  app.get('/webhooks/:webhookId/delete', (request, reply) => deletePageOf(db, request, reply));

  // Deletes only with the answer to the question (confirmed=yes: the confirmation page's button,
  // or dashboard.js once the browser's dialog was accepted); without it, asks on a page.
  app.post('/webhooks/:webhookId/delete', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const webhookId = webhookIdOf(request);
    if (readForm(request).confirmed !== 'yes') return deletePageOf(db, request, reply);
    await deleteWebhook(db, context, webhookId);
    return redirectDone(reply, `${base}/webhooks`, 'deleted');
  });

  app.post('/webhooks/:webhookId/test', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const webhookId = webhookIdOf(request);
    const eventId = await sendTestEvent(db, context, webhookId);
    // dashboard.js posts the same form asking for JSON, then follows the result without a reload.
    if (wantsJson(request)) return reply.send({ eventId, result: `${base}/webhooks/${webhookId}/test/${eventId}` });
    return redirectDone(reply, `${base}/webhooks/${webhookId}`, 'test-sent');
  });

  // The outcome of one test event so far, for dashboard.js: its delivery's state and latest attempt.
  // (`:event`, not `:eventId`: dashboard.ts takes path parameters named …Id for UUIDs.)
  app.get('/webhooks/:webhookId/test/:event', async (request, reply) => {
    const { context } = currentProgram(request);
    const { webhookId, event } = request.params as { webhookId: string; event: string };
    const result = await getDeliveryOfEvent(db, context.id, webhookId, event);
    return reply.header('cache-control', 'no-store').send({ ...result, worker: config.worker });
  });

  app.post('/webhooks/:webhookId/enable', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const webhookId = webhookIdOf(request);
    await enableWebhook(db, context, webhookId);
    return redirectDone(reply, `${base}/webhooks/${webhookId}`, 'enabled');
  });

  app.post('/webhooks/:webhookId/replay', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const webhookId = webhookIdOf(request);
    // An event this endpoint never had a delivery of is a 404, as another program's webhook is.
    await replayEvent(db, context, webhookId, readForm(request).eventId ?? '');
    return redirectDone(reply, `${base}/webhooks/${webhookId}`, 'replayed');
  });

  app.post('/webhooks/:webhookId/replay-failed', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const webhookId = webhookIdOf(request);
    const form = readForm(request);
    await getWebhook(db, context.id, webhookId); // another program's webhook: 404 before any form error
    const since = readSince(form.since);
    if (typeof since !== 'string') return detailPageOf(services, request, reply, { since: form.since, errors: since });
    const count = await replayFailedSince(db, context, webhookId, since);
    return redirectDone(reply, `${base}/webhooks/${webhookId}?count=${count}`, 'resent');
  });
};
