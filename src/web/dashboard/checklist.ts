import type { StartChecklist } from '../../modules/reports/getting-started.service.ts';
import { html, type SafeHtml } from '../html.ts';

// The "Get started" checklist on a program's overview (issue 21 item 8). Each step says what
// to do with a link to where it is done, and is ticked by what the program holds.

interface Step {
  done: boolean;
  title: string;
  body: SafeHtml | string;
}

/** The checklist, or nothing once every step is done. */
export function renderChecklist(state: StartChecklist, base: string, siteUrl: string): SafeHtml | string {
  const link = state.affiliateLink ?? 'jane';
  const key = state.apiKeyPrefix ? `${state.apiKeyPrefix}…` : 'tdm_…';
  const curl = `curl ${siteUrl}/api/v1/sales \\
  -H "Authorization: Bearer ${key}" \\
  -H "Content-Type: application/json" \\
  -d '{"referralId":"${link}","email":"test-customer@example.com","name":"Test customer","totalEarned":10}'`;
  const steps: Step[] = [
    { done: true, title: 'Create your program', body: 'Done: this is it. Its settings (domain, currency, commission plan) are under Settings.' },
    { done: state.apiKeyPrefix !== null, title: 'Create an API key', body: html`<a href="${base}/keys">Create a key</a> for your site or billing code; it is shown once, with a ready-to-run command.` },
    { done: state.hasAffiliate, title: 'Add an affiliate', body: html`<a href="${base}/affiliates/new">Add your first affiliate</a>; they get their own link to share.` },
    {
      done: state.hasSale,
      title: 'Record a test sale',
      body: html`Run this in a terminal, with your full key in place of <code>${key}</code> (or <a href="${base}/sales/new">record one by hand</a>):
        <pre class="secret" id="checklist-curl">${curl}</pre>
        <button type="button" class="secondary small" data-copy="checklist-curl" hidden>Copy command</button> <span id="checklist-curl-status" role="status"></span>`,
    },
    { done: state.hasClick, title: 'Add the tracking tag', body: html`<a href="${base}/settings#tracking">Put the tracking script on your site</a>; this ticks when the first click on an affiliate link arrives.` },
    { done: state.connected, title: 'Connect an automation tool or your billing', body: html`<a href="${base}/apps">Connect Zapier, n8n or Make</a>, or <a href="${base}/settings#billing">let Stripe, Paddle, Lemon Squeezy, Polar or Chargebee record sales and refunds</a>.` },
  ];
  const done = steps.filter((s) => s.done).length;
  if (done === steps.length) return '';
  return html`<section class="card checklist" aria-labelledby="checklist-heading">
    <h2 id="checklist-heading">Get started <span class="muted">${done} of ${steps.length} done</span></h2>
    <ol>${steps.map(
      (s) => html`<li class="${s.done ? 'done' : 'todo'}"><span class="tick" aria-hidden="true">${s.done ? '✓' : ''}</span><div><strong>${s.title}</strong><span class="visually-hidden">${s.done ? ' (done)' : ' (to do)'}</span>${s.done && s.title !== 'Create your program' ? '' : html`<div class="help">${s.body}</div>`}</div></li>`,
    )}</ol>
  </section>`;
}
