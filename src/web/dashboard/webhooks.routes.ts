import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { toIso } from '../../domain/clock.ts';
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
  type WebhookAttempt,
  type WebhookWithCounts,
} from '../../modules/webhooks/webhook.service.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField, postButton } from '../layout.ts';
import { currentProgram, doneFlash, pager, redirectDone, listPage, requestedPage, sendPage } from './dashboard-page.ts';
import { formatCount, formatTime } from './format.ts';
import { errorFlash, formErrorsOf, noErrors, optionalUtcDateTime, readForm, readQuery, textField, toDateTimeInput, type FormErrors, type FormValues } from './forms.ts';

// Webhooks: the program's endpoints (the same subscriptions automation tools make through
// POST /api/v1/webhooks), their health, and every attempt to deliver to them. Adding one goes
// through createWebhook, with the API's URL rules; its signing secret is shown once, in the
// response to the form post itself, as a new API key is. The URL, the event types and the
// receivers' answers are untrusted text: the html template escapes every one of them.


const LIST_DONE = { deleted: 'Endpoint deleted. It receives no more events.' };

/** What "Delete" asks first, in the browser's dialog (dashboard.js); without script, the confirmation page asks. */
const deleteQuestion = (url: string) => `Delete the endpoint ${url}? It receives no more events.`;

function detailDone(request: FastifyRequest): Record<string, string> {
  const count = Number.parseInt(readQuery(request).count ?? '', 10);
  return {
    'test-sent': 'Test event queued. Its attempt appears below as soon as it is sent: reload the page to see it.',
    enabled: 'Endpoint re-enabled. The events queued while it was disabled are being delivered now.',
    replayed: 'The event is queued to be sent again.',
    resent: !(count > 0) ? 'No delivery failed since then: nothing to resend.' : `${formatCount(count)} failed ${count === 1 ? 'delivery is' : 'deliveries are'} queued to be sent again.`,
  };
}

/** 432000000 → "5 days": the disable threshold as the notice says it. */
function formatDuration(ms: number): string {
  const units: [number, string][] = [
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1000, 'second'],
  ];
  for (const [size, name] of units) {
    if (ms >= size && ms % size === 0) return `${ms / size} ${name}${ms === size ? '' : 's'}`;
  }
  return `${ms} ms`;
}

/** Attempts happen seconds apart: their times show the seconds (the date above, to keep the table narrow). */
function formatSeconds(value: string | Date): SafeHtml {
  const iso = toIso(value);
  return html`<time datetime="${iso}">${iso.slice(0, 10)}<br>${iso.slice(11, 19)} UTC</time>`;
}

function eventList(types: string[]): SafeHtml {
  if (types.includes('*')) return html`All events`;
  return html`<ul class="event-types">${types.map((t) => html`<li><code>${t}</code></li>`)}</ul>`;
}

function statusOf(w: WebhookWithCounts, disableAfter: string): SafeHtml {
  if (w.disabledAt !== null) {
    return html`<span class="badge bad">Disabled</span> <span class="muted">at ${formatTime(w.disabledAt)}, after every attempt failed for ${disableAfter}</span>`;
  }
  if (w.failingSince !== null) return html`<span class="badge warn">Failing</span> <span class="muted">since ${formatTime(w.failingSince)}</span>`;
  return html`<span class="badge ok">Enabled</span>`;
}

/** The notice on a disabled endpoint: why, what was kept, and what to do. */
function disabledNotice(w: WebhookWithCounts, disableAfter: string): SafeHtml {
  return html`<div class="notice bad" role="note">
    <p><strong>This endpoint was disabled at ${formatTime(w.disabledAt)}</strong> because every delivery attempt to it failed for ${disableAfter}${w.failingSince === null ? '' : html` (failing since ${formatTime(w.failingSince)})`}.</p>
    <p>Tandem still queues its events (${formatCount(w.pending)} waiting) but sends nothing until you re-enable it. Fix the endpoint first, then re-enable it: the queued events are delivered at once.</p>
  </div>`;
}

function eventCheckboxes(checked: string[], errors: FormErrors): SafeHtml {
  const error = errors.fields.events;
  // "All events" carries data-events-all: dashboard.js disables the single types while it is
  // checked (without script, the server refuses both at once).
  const box = (value: string, id: string, label: SafeHtml | string) =>
    html`<div class="check"><input type="checkbox" id="${id}" name="events" value="${value}"${value === '*' ? html` data-events-all` : ''}${checked.includes(value) ? html` checked` : ''}> <label for="${id}">${label}</label></div>`;
  return html`<fieldset class="field event-choice${error ? ' has-error' : ''}" aria-describedby="f-events-help${error ? ' f-events-error' : ''}">
    <legend>Events <span class="req" aria-hidden="true">*</span></legend>
    ${box('*', 'f-events-all', 'All events, including types added later')}
    <p class="help" id="f-events-help">Or only these:</p>
    <div class="check-grid">${SUBSCRIBABLE_EVENT_TYPES.map((type) => box(type, `f-events-${type.replace(/[^a-z]/g, '-')}`, html`<code>${type}</code>`))}</div>
    ${error ? html`<p class="error" id="f-events-error">${error}</p>` : ''}
  </fieldset>`;
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

function attemptResult(a: WebhookAttempt): SafeHtml {
  if (a.statusCode !== null) {
    const ok = a.statusCode >= 200 && a.statusCode < 300;
    return html`<span class="badge ${ok ? 'ok' : 'bad'}">HTTP ${a.statusCode}</span>`;
  }
  return html`<span class="badge bad">No response</span><br><span class="attempt-error">${a.error ?? 'unknown error'}</span>`;
}

function deliveryState(state: string): SafeHtml {
  if (state === 'delivered') return html`<span class="badge ok">Delivered</span>`;
  if (state === 'failed') return html`<span class="badge bad">Failed</span>`;
  if (state === 'held') return html`<span class="badge">Held</span> <span class="muted">until re-enabled</span>`;
  return html`<span class="badge">Queued</span>`;
}

export const webhookDashboardRoutes: FastifyPluginAsync<AppServices> = async (app, { db, config, clock }) => {
  const disableAfter = formatDuration(config.webhookDisableAfterMs);

  async function endpointsPage(request: FastifyRequest, reply: FastifyReply, options: { created?: CreatedWebhook; values?: FormValues; events?: string[]; errors?: FormErrors } = {}) {
    const { context, base } = currentProgram(request);
    const session = request.session!;
    const errors = options.errors ?? noErrors;
    const page = requestedPage(request);
    const list = listPage(await getWebhookPageWithCounts(db, context, page), page, `${base}/webhooks`);
    const created = options.created;
    const disabled = list.items.filter((w) => w.disabledAt !== null).length;

    const body = html`
      <div class="page-head"><h1>Webhooks</h1></div>
      <p class="lead">Tandem sends ${context.name}'s events (new referrals, sales, affiliates …) to these URLs as signed HTTP POSTs, and retries for ${disableAfter} when an endpoint fails.</p>
      ${created
        ? html`<section class="card" aria-labelledby="new-webhook">
            <h2 id="new-webhook">Signing secret of your new endpoint</h2>
            <p><strong>Copy it now: it is shown only this once.</strong> Your endpoint checks with it that a request comes from Tandem: every delivery is signed in its <code>webhook-signature</code> header (the Standard Webhooks scheme, with <code>webhook-id</code> and <code>webhook-timestamp</code>).</p>
            <div class="secret-box">
              <p class="secret" id="new-secret">${created.secret}</p>
              <button type="button" class="secondary" data-copy="new-secret" hidden>Copy</button>
            </div>
            <p class="muted" id="new-secret-status" role="status"></p>
            <p>Endpoint: <code class="url">${created.url}</code></p>
            <div class="actions">
              ${postButton(session, `${base}/webhooks/${created.id}/test`, 'Send a test event', { className: 'small', formClass: 'send-test' })}
              <a href="${base}/webhooks/${created.id}">See its deliveries</a>
            </div>
          </section>`
        : ''}
      ${disabled > 0
        ? html`<div class="notice bad" role="note"><p><strong>${disabled === 1 ? 'One endpoint is disabled' : `${disabled} endpoints are disabled`}</strong>: every delivery attempt failed for ${disableAfter}. Its events are kept; open it, fix the endpoint and re-enable it to receive them.</p></div>`
        : ''}
      ${list.items.length === 0
        ? list.first
          ? ''
          : html`<div class="empty"><p><strong>No webhooks yet.</strong></p><p>Add an endpoint below to receive ${context.name}'s events as they happen. Automation tools you connect add their own here too.</p></div>`
        : html`<div class="table-wrap" role="region" aria-label="Endpoints" tabindex="0"><table>
            <thead><tr><th scope="col">Endpoint</th><th scope="col">Status</th><th scope="col">Events</th><th scope="col" class="num">Pending</th><th scope="col" class="num">Failed</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>${list.items.map(
              (w) => html`<tr data-webhook="${w.id}"${w.disabledAt !== null ? html` class="revoked"` : ''}>
                <td class="wrap"><a class="url" href="${base}/webhooks/${w.id}">${w.url}</a>${w.addedByApp ? html`<br><span class="muted">added by a connected app</span>` : ''}</td>
                <td class="wrap status">${statusOf(w, disableAfter)}</td>
                <td class="wrap">${eventList(w.events)}</td>
                <td class="num" data-count="pending">${formatCount(w.pending)}</td>
                <td class="num" data-count="failed">${formatCount(w.failed)}</td>
                <td><div class="row-actions">
                  ${w.disabledAt === null
                    ? postButton(session, `${base}/webhooks/${w.id}/test`, 'Send test', { ariaLabel: `Send test to ${w.url}`, formClass: 'send-test' })
                    : postButton(session, `${base}/webhooks/${w.id}/enable`, 'Re-enable', { className: 'small', ariaLabel: `Re-enable ${w.url}` })}
                  ${postButton(session, `${base}/webhooks/${w.id}/delete`, 'Delete', { className: 'danger small', ariaLabel: `Delete ${w.url}`, confirm: deleteQuestion(w.url) })}
                </div></td>
              </tr>`,
            )}</tbody>
          </table></div>`}
      ${pager(list)}
      <section class="card" aria-labelledby="add-webhook">
        <h2 id="add-webhook">Add an endpoint</h2>
        <form method="post" action="${base}/webhooks" novalidate>
          ${csrfField(session)}
          ${textField({ label: 'URL', name: 'url', type: 'url', value: options.values?.url, required: true, autocomplete: 'off', help: config.webhookAllowPrivateUrls
            ? 'Where Tandem POSTs the events. This Tandem also allows http and private addresses (WEBHOOK_ALLOW_PRIVATE_URLS is on).'
            : 'Where Tandem POSTs the events: an https URL on a public host. A receiver on this machine or your network needs WEBHOOK_ALLOW_PRIVATE_URLS=1 on the Tandem server (development only).' }, errors)}
          ${eventCheckboxes(options.events ?? ['*'], errors)}
          <button type="submit">Add endpoint</button>
        </form>
      </section>`;
    return sendPage(db, request, reply, {
      title: 'Webhooks',
      active: 'webhooks',
      body,
      status: errors.status,
      flash: errorFlash(errors) ?? (created ? { kind: 'ok', text: 'Endpoint added. It receives the events that happen from now on.' } : doneFlash(request, LIST_DONE)),
    });
  }

  app.get('/webhooks', (request, reply) => endpointsPage(request, reply));

  app.post('/webhooks', async (request, reply) => {
    const { context } = currentProgram(request);
    const form = readForm(request);
    const events = postedList(request, 'events');
    try {
      const created = await createWebhook(db, context, createBodyOf(form, events), { allowPrivate: config.webhookAllowPrivateUrls, dns: webhookDnsFor(config), tokenId: null });
      return endpointsPage(request, reply, { created });
    } catch (error) {
      const errors = formErrorsOf(error);
      // The URL is subscribed already: say so beside the field, as the form's other URL errors.
      if (error instanceof ApiError && error.code === 'conflict' && error.existingId !== undefined) {
        errors.fields.url = 'This program already sends events to this URL (see it in the list above). To change its event types, delete it and add it again.';
        errors.message = 'Check the highlighted fields.';
      }
      return endpointsPage(request, reply, { values: form, events, errors });
    }
  });

  async function detailPage(request: FastifyRequest, reply: FastifyReply, options: { since?: string; errors?: FormErrors } = {}) {
    const { context, base } = currentProgram(request);
    const session = request.session!;
    const errors = options.errors ?? noErrors;
    const { webhookId } = request.params as { webhookId: string };
    const webhook = await getWebhookWithCounts(db, context.id, webhookId);
    const path = `${base}/webhooks/${webhook.id}`;
    const page = requestedPage(request);
    const list = listPage(await getAttemptPage(db, context.id, webhook.id, page), page, path);
    const disabled = webhook.disabledAt !== null;
    const since = options.since ?? toDateTimeInput(new Date(clock().getTime() - 86_400_000).toISOString());
    // Rows are newest first: an event's Resend button goes on its newest attempt only.
    const resendable = new Set<string>();

    const body = html`
      <p><a href="${base}/webhooks">← Webhooks</a></p>
      <div class="page-head">
        <h1>Webhook endpoint</h1>
        <div class="actions">
          ${disabled
            ? postButton(session, `${path}/enable`, 'Re-enable', { className: 'small' })
            : postButton(session, `${path}/test`, 'Send a test event', { className: 'small', formClass: 'send-test' })}
          ${postButton(session, `${path}/delete`, 'Delete endpoint', { className: 'danger small', confirm: deleteQuestion(webhook.url) })}
        </div>
      </div>
      ${disabled ? disabledNotice(webhook, disableAfter) : ''}
      <section class="card" aria-labelledby="endpoint"><h2 id="endpoint" class="visually-hidden">Endpoint</h2>
        <dl class="details">
          <dt>URL</dt><dd><code class="url">${webhook.url}</code></dd>
          <dt>Status</dt><dd>${statusOf(webhook, disableAfter)}</dd>
          <dt>Events</dt><dd>${eventList(webhook.events)}</dd>
          <dt>Pending deliveries</dt><dd data-count="pending">${formatCount(webhook.pending)}</dd>
          <dt>Failed deliveries</dt><dd data-count="failed">${formatCount(webhook.failed)} <span class="muted">(gave up after ${config.webhookRetrySchedule.length + 1} attempts)</span></dd>
          <dt>Added</dt><dd>${formatTime(webhook.createdAt)}${webhook.addedByApp ? ' by a connected app' : ''}</dd>
          <dt>Id</dt><dd><code>${webhook.id}</code></dd>
        </dl>
      </section>
      <section class="card" aria-labelledby="resend">
        <h2 id="resend">Resend failed deliveries</h2>
        <form class="filters" method="post" action="${path}/replay-failed" novalidate>
          ${csrfField(session)}
          ${textField({ label: 'Failed since (UTC)', name: 'since', type: 'datetime-local', value: since, required: true, help: 'Every delivery that gave up at or after this time is sent again, from its first attempt.' }, errors)}
          <button type="submit" class="secondary">Resend failed</button>
        </form>
      </section>
      <h2 id="attempts">Attempts</h2>
      ${list.items.length === 0
        ? html`<p class="empty">${list.first ? 'No older attempts.' : disabled ? 'No attempts yet.' : 'No attempts yet. Send a test event to try the endpoint.'}</p>`
        : html`<div class="table-wrap" role="region" aria-label="Delivery attempts" tabindex="0"><table aria-labelledby="attempts">
            <thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Result</th><th scope="col" class="num">Duration</th><th scope="col">Response</th><th scope="col">Delivery now</th></tr></thead>
            <tbody>${list.items.map((a) => {
              const first = !resendable.has(a.eventId);
              resendable.add(a.eventId);
              return html`<tr data-attempt="${a.id}">
                <td>${formatSeconds(a.createdAt)}</td>
                <td><code>${a.eventType}</code><br><code class="muted">${a.eventId}</code></td>
                <td class="wrap">${attemptResult(a)}</td>
                <td class="num">${formatCount(a.durationMs)} ms</td>
                <td class="wrap">${a.responseExcerpt === null || a.responseExcerpt === '' ? html`<span class="muted">—</span>` : html`<pre class="excerpt">${a.responseExcerpt}</pre>`}</td>
                <td><div class="row-actions">${deliveryState(a.deliveryState)}${first
                  ? postButton(session, `${path}/replay`, 'Resend', { ariaLabel: `Resend ${a.eventType} ${a.eventId}`, fields: html`<input type="hidden" name="eventId" value="${a.eventId}">` })
                  : ''}</div></td>
              </tr>`;
            })}</tbody>
          </table></div>`}
      ${pager(list)}`;
    return sendPage(db, request, reply, {
      title: 'Webhook endpoint',
      active: 'webhooks',
      body,
      status: errors.status,
      flash: errorFlash(errors) ?? doneFlash(request, detailDone(request)),
    });
  }

  app.get('/webhooks/:webhookId', (request, reply) => detailPage(request, reply));

  /** "Delete endpoint" without JavaScript: the question as a page, whose button sends the answer. */
  async function deletePage(request: FastifyRequest, reply: FastifyReply) {
    const { context, base } = currentProgram(request);
    const { webhookId } = request.params as { webhookId: string };
    const webhook = await getWebhookWithCounts(db, context.id, webhookId);
    const path = `${base}/webhooks/${webhook.id}`;
    const body = html`
      <p><a href="${path}">← Webhook endpoint</a></p>
      <section class="card narrow" aria-labelledby="delete-heading">
        <h1 id="delete-heading">Delete this webhook endpoint?</h1>
        <p><code class="url">${webhook.url}</code></p>
        <p>It receives no more events${webhook.pending > 0 ? html`: its ${formatCount(webhook.pending)} waiting ${webhook.pending === 1 ? 'delivery is' : 'deliveries are'} dropped` : ''}, and its delivery attempts are deleted with it. It cannot be undone: to receive events there again, add it again (with a new signing secret).</p>
        <form method="post" action="${path}/delete">
          ${csrfField(request.session!)}
          <input type="hidden" name="confirmed" value="yes">
          <div class="actions"><button type="submit" class="danger">Delete endpoint</button> <a href="${path}">Cancel</a></div>
        </form>
      </section>`;
    return sendPage(db, request, reply, { title: 'Delete webhook endpoint', active: 'webhooks', body });
  }

  app.get('/webhooks/:webhookId/delete', (request, reply) => deletePage(request, reply));

  // Deletes only with the answer to the question (confirmed=yes: the confirmation page's button,
  // or dashboard.js once the browser's dialog was accepted); without it, asks on a page.
  app.post('/webhooks/:webhookId/delete', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const { webhookId } = request.params as { webhookId: string };
    if (readForm(request).confirmed !== 'yes') return deletePage(request, reply);
    await deleteWebhook(db, context, webhookId);
    return redirectDone(reply, `${base}/webhooks`, 'deleted');
  });

  app.post('/webhooks/:webhookId/test', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const { webhookId } = request.params as { webhookId: string };
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
    const { webhookId } = request.params as { webhookId: string };
    await enableWebhook(db, context, webhookId);
    return redirectDone(reply, `${base}/webhooks/${webhookId}`, 'enabled');
  });

  app.post('/webhooks/:webhookId/replay', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const { webhookId } = request.params as { webhookId: string };
    // An event this endpoint never had a delivery of is a 404, as another program's webhook is.
    await replayEvent(db, context, webhookId, readForm(request).eventId ?? '');
    return redirectDone(reply, `${base}/webhooks/${webhookId}`, 'replayed');
  });

  app.post('/webhooks/:webhookId/replay-failed', async (request, reply) => {
    const { context, base } = currentProgram(request);
    const { webhookId } = request.params as { webhookId: string };
    const form = readForm(request);
    await getWebhook(db, context.id, webhookId); // another program's webhook: 404 before any form error
    const since = optionalUtcDateTime(form.since);
    if (since === undefined || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(since)) {
      const errors: FormErrors = {
        fields: { since: since === undefined ? 'Is required.' : 'Use a date and time, such as 2026-03-01T09:00.' },
        message: 'Check the highlighted fields.',
        status: 422,
      };
      return detailPage(request, reply, { since: form.since, errors });
    }
    const count = await replayFailedSince(db, context, webhookId, since);
    return redirectDone(reply, `${base}/webhooks/${webhookId}?count=${count}`, 'resent');
  });
};
