import type { CreatedWebhook } from '../../modules/webhooks/webhook.schema.ts';
import type { WebhookAttempt, WebhookWithCounts } from '../../modules/webhooks/webhook.service.ts';
import { SUBSCRIBABLE_EVENT_TYPES } from '../../modules/events/outbox.ts';
import { toIso } from '../../domain/clock.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField, postButton } from '../layout.ts';
import { pager, type DashboardSession, type ListPage } from './dashboard-page.ts';
import { formatCount, formatTime } from './format.ts';
import { textField, type FormErrors, type FormValues } from './forms.ts';

// The webhooks pages as pure functions of what they show: the endpoints (with a new one's
// signing secret, shown once, and the add form), an endpoint's page (its health, the resend
// form and its attempts) and the delete question without script. The URL, the event types and
// the receivers' answers are untrusted text: the html template escapes every one of them.

/** What "Delete" asks first, in the browser's dialog (dashboard.js); without script, the confirmation page asks. */
const deleteQuestion = (url: string) => `Delete the endpoint ${url}? It receives no more events.`;

/** 432000000 → "5 days": the disable threshold as the notice says it. */
export function formatDuration(ms: number): string {
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

export interface WebhookListView {
  base: string;
  session: DashboardSession;
  programName: string;
  /** How long failing deliveries are retried before an endpoint is disabled, in words ("5 days"). */
  disableAfter: string;
  allowPrivateUrls: boolean;
  /** The endpoint just added, with its signing secret. */
  created?: CreatedWebhook;
  /** The add form, as posted when it failed. */
  values: FormValues;
  events: string[];
  errors: FormErrors;
  list: ListPage<WebhookWithCounts>;
}

function createdCard(v: WebhookListView, created: CreatedWebhook): SafeHtml {
  const { base, session } = v;
  return html`<section class="card" aria-labelledby="new-webhook">
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
          </section>`;
}

function endpointRows(v: WebhookListView): SafeHtml {
  const { base, session, disableAfter } = v;
  return html`<div class="table-wrap" role="region" aria-label="Endpoints" tabindex="0"><table>
            <thead><tr><th scope="col">Endpoint</th><th scope="col">Status</th><th scope="col">Events</th><th scope="col" class="num">Pending</th><th scope="col" class="num">Failed</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
            <tbody>${v.list.items.map(
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
          </table></div>`;
}

function addForm(v: WebhookListView): SafeHtml {
  return html`<section class="card" aria-labelledby="add-webhook">
        <h2 id="add-webhook">Add an endpoint</h2>
        <form method="post" action="${v.base}/webhooks" novalidate>
          ${csrfField(v.session)}
          ${textField({ label: 'URL', name: 'url', type: 'url', value: v.values.url, required: true, autocomplete: 'off', help: v.allowPrivateUrls
            ? 'Where Tandem POSTs the events. This Tandem also allows http and private addresses (WEBHOOK_ALLOW_PRIVATE_URLS is on).'
            : 'Where Tandem POSTs the events: an https URL on a public host. A receiver on this machine or your network needs WEBHOOK_ALLOW_PRIVATE_URLS=1 on the Tandem server (development only).' }, v.errors)}
          ${eventCheckboxes(v.events, v.errors)}
          <button type="submit">Add endpoint</button>
        </form>
      </section>`;
}

export function webhookListBody(v: WebhookListView): SafeHtml {
  const { list, disableAfter } = v;
  const disabled = list.items.filter((w) => w.disabledAt !== null).length;
  return html`
      <div class="page-head"><h1>Webhooks</h1></div>
      <p class="lead">Tandem sends ${v.programName}'s events (new referrals, sales, affiliates …) to these URLs as signed HTTP POSTs, and retries for ${disableAfter} when an endpoint fails.</p>
      ${v.created ? createdCard(v, v.created) : ''}
      ${disabled > 0
        ? html`<div class="notice bad" role="note"><p><strong>${disabled === 1 ? 'One endpoint is disabled' : `${disabled} endpoints are disabled`}</strong>: every delivery attempt failed for ${disableAfter}. Its events are kept; open it, fix the endpoint and re-enable it to receive them.</p></div>`
        : ''}
      ${list.items.length === 0
        ? list.first
          ? ''
          : html`<div class="empty"><p><strong>No webhooks yet.</strong></p><p>Add an endpoint below to receive ${v.programName}'s events as they happen. Automation tools you connect add their own here too.</p></div>`
        : endpointRows(v)}
      ${pager(list)}
      ${addForm(v)}`;
}

export interface WebhookDetailView {
  base: string;
  session: DashboardSession;
  webhook: WebhookWithCounts;
  disableAfter: string;
  /** Attempts a delivery gets before it gives up (the first and the retry schedule's). */
  attemptsBeforeGivingUp: number;
  /** The resend form's time, as shown or posted. */
  since: string;
  errors: FormErrors;
  list: ListPage<WebhookAttempt>;
}

function attemptRows(v: WebhookDetailView, path: string): SafeHtml {
  const { session } = v;
  // Rows are newest first: an event's Resend button goes on its newest attempt only.
  const resendable = new Set<string>();
  return html`<div class="table-wrap" role="region" aria-label="Delivery attempts" tabindex="0"><table aria-labelledby="attempts">
            <thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Result</th><th scope="col" class="num">Duration</th><th scope="col">Response</th><th scope="col">Delivery now</th></tr></thead>
            <tbody>${v.list.items.map((a) => {
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
          </table></div>`;
}

export function webhookDetailBody(v: WebhookDetailView): SafeHtml {
  const { base, session, webhook, disableAfter, list } = v;
  const path = `${base}/webhooks/${webhook.id}`;
  const disabled = webhook.disabledAt !== null;
  return html`
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
          <dt>Failed deliveries</dt><dd data-count="failed">${formatCount(webhook.failed)} <span class="muted">(gave up after ${v.attemptsBeforeGivingUp} attempts)</span></dd>
          <dt>Added</dt><dd>${formatTime(webhook.createdAt)}${webhook.addedByApp ? ' by a connected app' : ''}</dd>
          <dt>Id</dt><dd><code>${webhook.id}</code></dd>
        </dl>
      </section>
      <section class="card" aria-labelledby="resend">
        <h2 id="resend">Resend failed deliveries</h2>
        <form class="filters" method="post" action="${path}/replay-failed" novalidate>
          ${csrfField(session)}
          ${textField({ label: 'Failed since (UTC)', name: 'since', type: 'datetime-local', value: v.since, required: true, help: 'Every delivery that gave up at or after this time is sent again, from its first attempt.' }, v.errors)}
          <button type="submit" class="secondary">Resend failed</button>
        </form>
      </section>
      <h2 id="attempts">Attempts</h2>
      ${list.items.length === 0
        ? html`<p class="empty">${list.first ? 'No older attempts.' : disabled ? 'No attempts yet.' : 'No attempts yet. Send a test event to try the endpoint.'}</p>`
        : attemptRows(v, path)}
      ${pager(list)}`;
}

/** "Delete endpoint" without JavaScript: the question as a page, whose button sends the answer. */
export function deleteWebhookBody(v: { base: string; session: DashboardSession; webhook: WebhookWithCounts }): SafeHtml {
  const { webhook } = v;
  const path = `${v.base}/webhooks/${webhook.id}`;
  return html`
      <p><a href="${path}">← Webhook endpoint</a></p>
      <section class="card narrow" aria-labelledby="delete-heading">
        <h1 id="delete-heading">Delete this webhook endpoint?</h1>
        <p><code class="url">${webhook.url}</code></p>
        <p>It receives no more events${webhook.pending > 0 ? html`: its ${formatCount(webhook.pending)} waiting ${webhook.pending === 1 ? 'delivery is' : 'deliveries are'} dropped` : ''}, and its delivery attempts are deleted with it. It cannot be undone: to receive events there again, add it again (with a new signing secret).</p>
        <form method="post" action="${path}/delete">
          ${csrfField(v.session)}
          <input type="hidden" name="confirmed" value="yes">
          <div class="actions"><button type="submit" class="danger">Delete endpoint</button> <a href="${path}">Cancel</a></div>
        </form>
      </section>`;
}
