import type { BillingConnection, BillingEvent } from '../../modules/billing/billing.service.ts';
import { BILLING_PROVIDERS } from '../../modules/billing/providers/index.ts';
import type { BillingProvider } from '../../modules/billing/billing-provider.ts';
import type { Integration } from '../../modules/integrations/integration.service.ts';
import { MAX_HOLD_DAYS, type Program } from '../../modules/programs/program.service.ts';
import type { lastCountedClick } from '../../modules/tracking/click.service.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField, postButton } from '../layout.ts';
import type { DashboardSession } from './dashboard-page.ts';
import { formatTime } from './format.ts';
import { checkboxField, noErrors, selectField, textareaField, textField, type FormErrors, type FormValues } from './forms.ts';
import { programFields, programFormValues } from './programs.view.ts';

// The settings page as a pure function of what it shows: the program's fields, its commission
// plan, its affiliate portal, its billing providers, the tracking script and the instance's integrations.
// Each section is a form of its own; the one that failed shows what was posted and its errors.

export type SettingsSection = 'program' | 'plan' | 'portal' | 'billing' | 'integration';

export interface SettingsView {
  base: string;
  session: DashboardSession;
  siteUrl: string;
  clickRetentionDays: number;
  program: Program;
  /** Whether the user is the instance's operator (who alone changes integrations). */
  operator: boolean;
  integrations: Integration[];
  billing: { connections: BillingConnection[]; events: BillingEvent[] };
  lastClick: Awaited<ReturnType<typeof lastCountedClick>>;
  /** The section whose form failed, with what was posted and its errors. */
  failed?: { section: SettingsSection; values: FormValues; errors: FormErrors };
}

/** The failed section's errors and posted values; another section's are none and its stored ones. */
function formOf(v: SettingsView, section: SettingsSection, stored: () => FormValues): { values: FormValues; errors: FormErrors } {
  return v.failed?.section === section ? v.failed : { values: stored(), errors: noErrors };
}

function portalFormValues(program: Program): FormValues {
  return {
    portalSlug: program.portal.slug,
    portalSignup: program.portal.signup,
    portalColor: program.portal.color,
    portalTerms: program.portal.terms,
    portalLinksAllowed: program.portal.linksAllowed ? 'on' : '',
  };
}

function planFormValues(program: Program): FormValues {
  const plan = program.commission;
  return {
    commissionType: plan.type,
    commissionRate: String(plan.rate),
    commissionAmount: String(plan.amount),
    durationMonths: plan.durationMonths === null ? '' : String(plan.durationMonths),
    maxSalesPerCustomer: plan.maxSalesPerCustomer === null ? '' : String(plan.maxSalesPerCustomer),
    holdDays: String(plan.holdDays),
    minimumPayout: String(plan.minimumPayout),
  };
}

function programSection(v: SettingsView): SafeHtml {
  const { base, program } = v;
  const { values, errors: programErrors } = formOf(v, 'program', () => programFormValues(program));
  return html`<section class="card" aria-labelledby="program-settings">
        <h2 id="program-settings">Program</h2>
        ${programErrors.message ? html`<p class="error" role="alert">${programErrors.message}</p>` : ''}
        <form method="post" action="${base}/settings" novalidate>
          ${csrfField(v.session)}
          ${programFields(values, programErrors, { withRate: false })}
          <div class="actions"><button type="submit">Save program</button></div>
        </form>
        <p class="muted">Program id: <code>${program.id}</code></p>
      </section>`;
}

function planSection(v: SettingsView): SafeHtml {
  const { base, program } = v;
  const { values: planValues, errors: planErrors } = formOf(v, 'plan', () => planFormValues(program));
  return html`<section class="card" aria-labelledby="commission-plan">
        <h2 id="commission-plan">Commission plan</h2>
        <p class="muted">What new sales earn. A sale keeps the rule it was recorded under: changing the plan rewrites no recorded commission.</p>
        ${planErrors.message ? html`<p class="error" role="alert">${planErrors.message}</p>` : ''}
        <form method="post" action="${base}/settings/plan" novalidate>
          ${csrfField(v.session)}
          <div class="form-grid">
            ${selectField({ label: 'Commission', name: 'commissionType', value: planValues.commissionType, options: [['percentage', 'A percentage of each sale'], ['flat', 'A flat amount per sale']] }, planErrors)}
            ${textField({ label: 'Percentage (%)', name: 'commissionRate', type: 'number', value: planValues.commissionRate, help: "For a percentage plan; an affiliate's own rate wins.", attrs: html`min="0" max="100" step="any" inputmode="decimal"` }, planErrors)}
            ${textField({ label: `Flat amount (${program.currency})`, name: 'commissionAmount', type: 'number', value: planValues.commissionAmount, help: 'For a flat plan: paid per sale, never more than the sale.', attrs: html`min="0" step="any" inputmode="decimal"` }, planErrors)}
            ${textField({ label: 'Months that earn', name: 'durationMonths', type: 'number', value: planValues.durationMonths, help: "Sales within this many months of the customer's referral earn. Empty: forever.", attrs: html`min="1" max="120" step="1" inputmode="numeric"` }, planErrors)}
            ${textField({ label: 'Sales per customer that earn', name: 'maxSalesPerCustomer', type: 'number', value: planValues.maxSalesPerCustomer, help: "A customer's first this-many sales earn. Empty: all.", attrs: html`min="1" step="1" inputmode="numeric"` }, planErrors)}
            ${textField({ label: 'Hold (days)', name: 'holdDays', type: 'number', value: planValues.holdDays, help: `How long a commission waits for refunds before it can be paid (0 to ${MAX_HOLD_DAYS}).`, attrs: html`min="0" max="${MAX_HOLD_DAYS}" step="1" inputmode="numeric"` }, planErrors)}
            ${textField({ label: `Minimum payout (${program.currency})`, name: 'minimumPayout', type: 'number', value: planValues.minimumPayout, help: 'A payout run pays balances of at least this much; smaller ones wait.', attrs: html`min="0" step="any" inputmode="decimal"` }, planErrors)}
          </div>
          <div class="actions"><button type="submit">Save plan</button></div>
        </form>
      </section>`;
}

function portalSection(v: SettingsView): SafeHtml {
  const { base, program } = v;
  const { values: portalValues, errors: portalErrors } = formOf(v, 'portal', () => portalFormValues(program));
  const portalUrl = `${v.siteUrl}/portal/${program.portal.slug}`;
  return html`<section class="card" aria-labelledby="affiliate-portal">
        <h2 id="affiliate-portal">Affiliate portal</h2>
        <p>Share <a href="${portalUrl}">${portalUrl}</a>: affiliates join ${program.name}'s program there, in its name, logo and colour.</p>
        ${portalErrors.message ? html`<p class="error" role="alert">${portalErrors.message}</p>` : ''}
        <form method="post" action="${base}/settings/portal" novalidate>
          ${csrfField(v.session)}
          <div class="form-grid">
            ${textField({ label: 'Portal address', name: 'portalSlug', value: portalValues.portalSlug, required: true, autocomplete: 'off', help: `${v.siteUrl}/portal/… — lowercase letters, digits and hyphens.`, attrs: html`maxlength="64"` }, portalErrors)}
            ${selectField({ label: 'Who may join', name: 'portalSignup', value: portalValues.portalSignup, options: [['approval', 'Anyone, after my approval'], ['open', 'Anyone, at once'], ['invite', 'Only affiliates I add']] }, portalErrors)}
            ${textField({ label: 'Colour', name: 'portalColor', type: 'color', value: portalValues.portalColor, help: 'Buttons and links of the portal; pick one white text reads well on.' }, portalErrors)}
            <div class="wide">${textareaField({ label: 'Program terms', name: 'portalTerms', value: portalValues.portalTerms, rows: 5, help: 'Optional. When set, affiliates must accept them to join.' }, portalErrors)}</div>
            ${checkboxField({ label: 'Affiliates may add links of their own', name: 'portalLinksAllowed', checked: portalValues.portalLinksAllowed === 'on' }, portalErrors)}
          </div>
          <div class="actions"><button type="submit">Save portal</button></div>
        </form>
      </section>`;
}

/** One provider's card: where to add the webhook, the URL, the events, the secret, its state; open when connected or when its form failed. */
function billingProviderCard(v: SettingsView, provider: BillingProvider): SafeHtml {
  const { base, program, billing } = v;
  const connection = billing.connections.find((c) => c.provider === provider.name && c.mode === 'live');
  const failed = v.failed?.section === 'billing' && v.failed.values.provider === provider.name;
  const errors = failed ? v.failed!.errors : noErrors;
  const url = `${v.siteUrl}/api/billing/${provider.name}/${program.id}`;
  const { setup } = provider;
  const state = connection
    ? html`Connected since ${formatTime(connection.connectedAt)} · ${connection.lastEventAt ? html`last event received ${formatTime(connection.lastEventAt)}` : 'no event received yet'}`
    : 'Not connected';
  return html`<details class="billing-provider" id="billing-${provider.name}"${connection || failed ? ' open' : ''}>
        <summary><strong>${provider.displayName}</strong> <span class="muted" data-stat="billing-${provider.name}">${state}</span></summary>
        <ol>
          <li>In ${provider.displayName}: <strong>${setup.where}</strong>. Paste <code>${url}</code></li>
          <li>Select the events ${setup.events.map((e, i) => html`${i ? ', ' : ''}<code>${e}</code>`)}.</li>
          <li>Copy its ${setup.secretName} here (${setup.secretHint}).</li>
          <li>${setup.carrier}</li>
        </ol>
        ${errors.message ? html`<p class="error" role="alert">${errors.message}</p>` : ''}
        <form method="post" action="${base}/settings/billing/${provider.name}" novalidate>
          ${csrfField(v.session)}
          ${textField({ label: connection ? `Replace the ${setup.secretName}` : `${provider.displayName} ${setup.secretName}`, id: `f-${provider.name}-secret`, name: 'secret', type: 'password', autocomplete: 'off', help: connection ? 'A secret is saved (encrypted; it is never shown again).' : setup.secretHint }, errors)}
          <div class="actions"><button type="submit">Save and connect</button></div>
        </form>
        <p class="muted">Send a test: ${setup.test}</p>
        ${connection ? postButton(v.session, `${base}/settings/billing/${provider.name}/disconnect`, `Disconnect ${provider.displayName}`, { confirm: `Disconnect ${provider.displayName}? Its events are refused from then on.` }) : ''}
      </details>`;
}

function billingSection(v: SettingsView): SafeHtml {
  const { events } = v.billing;
  return html`<section class="card" aria-labelledby="billing">
        <h2 id="billing">Billing</h2>
        <p>Let your billing provider record referrals, sales and refunds on its own: add a webhook there that posts to this program's address, and save its secret here. One step per provider; each event is checked, recorded once, and listed below with what came of it.</p>
        ${BILLING_PROVIDERS.map((provider) => billingProviderCard(v, provider))}
        ${events.length > 0
          ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Billing events"><table><thead><tr><th scope="col">Received</th><th scope="col">Provider</th><th scope="col">Event</th><th scope="col">Outcome</th><th scope="col">Why</th></tr></thead>
              <tbody>${events.map((e) => html`<tr><td>${formatTime(e.receivedAt)}</td><td>${BILLING_PROVIDERS.find((p) => p.name === e.provider)?.displayName ?? e.provider}</td><td><code>${e.type}</code><br><span class="muted">${e.id}</span></td><td>${e.outcome}</td><td>${e.reason ?? '—'}</td></tr>`)}</tbody></table></div>
            <p class="muted">Every event: <code>GET /api/v1/billing-events</code>.</p>`
          : html`<p class="muted" data-stat="billing-events">No billing event received yet.</p>`}
      </section>`;
}

function trackingSection(v: SettingsView): SafeHtml {
  const { program, lastClick } = v;
  return html`<section class="card" aria-labelledby="tracking">
        <h2 id="tracking">Tracking script</h2>
        <p>Add this tag to every page of <strong>${program.domain}</strong> (and its subdomains) where visitors may land from an affiliate link.
        It counts the click and remembers the referral for ${program.cookieDays} days; read it with <code>window.tandem.referral</code> at sign-up.
        Behind a cookie banner, add <code>data-consent="required"</code> and call <code>window.tandem.consent()</code> once the visitor agrees.</p>
        <div class="secret-box">
          <pre class="secret" id="tracker-tag">&lt;script src="${v.siteUrl}/tracker.js" data-program-id="${program.id}" async&gt;&lt;/script&gt;</pre>
          <button type="button" class="secondary" data-copy="tracker-tag" hidden>Copy</button>
        </div>
        <p class="muted" id="tracker-tag-status" role="status"></p>
        <h3 id="tracking-local">Trying it on this machine</h3>
        ${program.domain === 'localhost'
          ? html`<p>This program's domain is <code>localhost</code>: pages at <code>http://localhost</code> and <code>http://*.localhost</code>, on any port, may report clicks.
              Put the tag on such a page and open it with <code>?${program.referralParam}=</code> and an affiliate's link, such as <code>http://localhost:8080/?${program.referralParam}=jane</code>.</p>`
          : html`<p>Only pages of ${program.domain} and its subdomains may report clicks: a page at <code>http://localhost</code> is refused, and the browser's console says why.
              To try the tag on your machine, <a href="/dashboard#new-program">create a test program</a> whose domain is <code>localhost</code>, put that program's tag on a page served at
              <code>http://localhost:&lt;any port&gt;</code>, and open it with <code>?${program.referralParam}=</code> and one of its affiliates' links.
              An address such as 127.0.0.1 cannot be a program's domain; <code>localhost</code> is the one local name that works without further set-up.</p>`}
        <p data-stat="last-click">${'at' in lastClick
          ? html`Last click counted: ${formatTime(lastClick.at)}, on ${lastClick.link === null ? 'a deleted link' : html`the link <code>${lastClick.link}</code>`} of ${lastClick.affiliateName}, landing on <code class="url">${lastClick.landingUrl}</code>.`
          : lastClick.everCounted
            ? `No click in the last ${v.clickRetentionDays} ${v.clickRetentionDays === 1 ? 'day' : 'days'}.`
            : 'No click received yet.'}</p>
        <p class="muted">Only counted clicks appear here: not a visitor's repeat on the same link the same day, a bot, or a refused report. Click rows are kept ${v.clickRetentionDays} ${v.clickRetentionDays === 1 ? 'day' : 'days'}.</p>
      </section>`;
}

function integrationsSection(v: SettingsView): SafeHtml {
  const { base, integrations, operator } = v;
  const { values: integrationValues, errors: integrationErrors } = formOf(v, 'integration', () => ({}));
  return html`<section class="card" aria-labelledby="integrations">
        <h2 id="integrations">Integrations</h2>
        <p class="muted">The automation tools that may use the connect flow of this Tandem, for every account.
        A tool sends users to <code>${v.siteUrl}/connect/{name}/choose-affiliate-program</code> and trades the code at
        <code>${v.siteUrl}/api/{name}/token</code>; redirect URIs must match exactly.</p>
        ${integrations.length === 0
          ? html`<p class="empty">No integrations yet.${operator ? ' Add Zapier, n8n or Make below with the redirect URI each one documents.' : ''}</p>`
          : html`<div class="table-wrap" role="region" aria-label="Integrations" tabindex="0"><table>
              <thead><tr><th scope="col">Name</th><th scope="col">Display name</th><th scope="col">Redirect URIs</th><th scope="col">Client id</th>${operator ? html`<th scope="col"><span class="visually-hidden">Actions</span></th>` : ''}</tr></thead>
              <tbody>${integrations.map(
                (i) => html`<tr>
                  <td><code>${i.name}</code></td><td>${i.displayName}</td>
                  <td>${i.redirectUris.map((uri) => html`<code>${uri}</code><br>`)}</td>
                  <td>${i.clientId ?? '—'}${i.hasClientSecret ? html` <span class="badge">secret set</span>` : ''}</td>
                  ${operator
                    ? html`<td>${postButton(v.session, `${base}/settings/integrations/${i.name}/remove`, 'Remove', { className: 'danger small', ariaLabel: `Remove ${i.displayName}`, confirm: `Remove the integration ${i.displayName}? Nobody can connect it any more (tokens it issued keep working until revoked).` })}</td>`
                    : ''}
                </tr>`,
              )}</tbody>
            </table></div>`}
        ${operator
          ? html`<h3>Add an integration</h3>
              ${integrationErrors.message ? html`<p class="error" role="alert">${integrationErrors.message}</p>` : ''}
              <form method="post" action="${base}/settings/integrations" novalidate>
                ${csrfField(v.session)}
                <div class="form-grid">
                  ${textField({ label: 'Name', name: 'name', id: 'f-integration-name', value: integrationValues.name, required: true, autocomplete: 'off', help: 'Lowercase letters, digits and hyphens, used in the URLs: zapier, n8n, make.' }, integrationErrors)}
                  ${textField({ label: 'Display name', name: 'displayName', value: integrationValues.displayName, autocomplete: 'off', help: 'Shown to users when they connect, such as Zapier.' }, integrationErrors)}
                  <div class="wide">${textareaField({ label: 'Redirect URIs', name: 'redirectUris', value: integrationValues.redirectUris, required: true, help: 'One per line, exactly as the tool sends them.' }, integrationErrors)}</div>
                  ${textField({ label: 'Client id', name: 'clientId', value: integrationValues.clientId, autocomplete: 'off', help: 'Optional.' }, integrationErrors)}
                  ${textField({ label: 'Client secret', name: 'clientSecret', type: 'password', autocomplete: 'new-password', help: 'Optional; stored hashed.' }, integrationErrors)}
                </div>
                <div class="actions"><button type="submit">Add integration</button></div>
              </form>`
          : html`<p class="muted">Only the operator of this Tandem (its first account) can change integrations, here or with <code>tandem integration add</code>.</p>`}
      </section>`;
}

export function settingsBody(v: SettingsView): SafeHtml {
  return html`
      <div class="page-head"><h1>Settings</h1></div>
      ${programSection(v)}

      ${planSection(v)}

      ${portalSection(v)}

      ${billingSection(v)}

      ${trackingSection(v)}

      ${integrationsSection(v)}`;
}
