import type { Program } from '../../modules/programs/program.service.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField, field, renderPage } from '../layout.ts';
import type { WebSession } from '../session-store.ts';
import { connectParams, connectUrl, type ConnectRequest } from './connect-request.ts';

// The connect flow's pages: choose a program (or create the first one), then confirm.
// "Connect" opens the confirmation in a <dialog> (assets/connect.js); without JavaScript the
// same form loads as its own page.

export interface ProgramForm {
  values: Record<string, string | undefined>;
  errors: Record<string, string>;
}

function hiddenParams(request: ConnectRequest): SafeHtml {
  return html`${Object.entries(connectParams(request)).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}`;
}

/** The permissions spec 5.2 grants a connected tool, in the user's words. */
function permissionList(request: ConnectRequest): SafeHtml {
  return html`<p>${request.integration.displayName} will be able to:</p>
    <ul class="permissions">
      <li><strong>Trigger on program events</strong> — start its workflows when affiliates, referrals and sales are added.</li>
      <li><strong>Act within the program</strong> — create and update affiliates, links, referrals, sales, coupons and codes.</li>
      <li><strong>Read affiliate, sales and referral data</strong> of this program.</li>
    </ul>
    <p class="help">It cannot see your other programs or your account. Revoke it at any time in the dashboard under Connected apps.
    You will return to ${new URL(request.redirectUri).host}.</p>`;
}

function consentForm(session: WebSession, request: ConnectRequest, program: Program | null, inDialog: boolean): SafeHtml {
  return html`<form method="post" action="/connect/${request.integration.name}/authorize">
    ${csrfField(session)}
    ${hiddenParams(request)}
    <input type="hidden" name="program" value="${program?.id ?? ''}">
    <h2 id="consent-title">Allow ${request.integration.displayName} to use <span data-program-name>${program?.name ?? ''}</span>?</h2>
    ${permissionList(request)}
    <div class="actions">
      <button type="submit" name="decision" value="allow">Confirm</button>
      <button type="submit" name="decision" value="deny" class="secondary">Cancel</button>
      ${inDialog
        ? html`<button type="submit" formmethod="dialog" formnovalidate class="link">Choose another program</button>`
        : html`<a href="${connectUrl(request, 'choose-affiliate-program', program ? { program: program.id } : {})}">Choose another program</a>`}
    </div>
  </form>`;
}

function programLogo(program: Program): SafeHtml {
  return program.logoUrl
    ? html`<img src="${program.logoUrl}" alt="" width="48" height="48">`
    : html`<span class="logo-placeholder" aria-hidden="true">${program.name.charAt(0).toUpperCase()}</span>`;
}

function programForm(session: WebSession, request: ConnectRequest, form: ProgramForm | undefined): SafeHtml {
  const values = form?.values ?? {};
  const errors = form?.errors ?? {};
  return html`<form method="post" action="/connect/${request.integration.name}/programs">
    ${csrfField(session)}
    ${hiddenParams(request)}
    ${field({ label: 'Program name', name: 'name', value: values.name, required: true, error: errors.name })}
    ${field({ label: 'Website domain', name: 'domain', value: values.domain, required: true, error: errors.domain, help: 'Where your product lives, such as example.com.' })}
    ${field({ label: 'Logo URL', name: 'logoUrl', type: 'url', value: values.logoUrl, error: errors.logoUrl, help: 'Optional. An https:// image shown next to the program.' })}
    <div class="actions"><button type="submit">Create program</button></div>
  </form>`;
}

/** The deny form, submitted by Cancel buttons placed elsewhere on the page (form="connect-cancel"). */
function cancelForm(session: WebSession, request: ConnectRequest): SafeHtml {
  return html`<form id="connect-cancel" method="post" action="/connect/${request.integration.name}/authorize" hidden>
    ${csrfField(session)}${hiddenParams(request)}<input type="hidden" name="decision" value="deny">
  </form>`;
}

export function renderChoosePage(o: {
  session: WebSession;
  request: ConnectRequest;
  programs: Program[];
  selectedProgramId?: string;
  programForm?: ProgramForm;
  error?: string;
}): string {
  const { session, request, programs } = o;
  const tool = request.integration.displayName;
  const selected = o.selectedProgramId ?? (programs.length === 1 ? programs[0]!.id : undefined);
  const body = programs.length === 0
    ? html`<div class="card connect">
        <h1>Connect ${tool} to Tandem</h1>
        <p class="lead">${tool} connects to one affiliate program, and you do not have one yet.
        Create it now; you can change its details later in the dashboard.</p>
        ${programForm(session, request, o.programForm)}
        ${cancelForm(session, request)}
        <p><button type="submit" form="connect-cancel" class="link">Cancel and return to ${tool}</button></p>
      </div>`
    : html`<div class="card connect">
        <h1>Connect ${tool} to Tandem</h1>
        <p class="lead">Choose the affiliate program ${tool} may use.</p>
        <form id="connect-choose" method="get" action="/connect/${request.integration.name}/confirm">
          ${hiddenParams(request)}
          <fieldset class="program-list">
            <legend class="visually-hidden">Affiliate program</legend>
            ${programs.map(
              (program) => html`<label class="program-choice">
                <input type="radio" name="program" value="${program.id}" data-name="${program.name}" required${program.id === selected ? html` checked` : ''}>
                ${programLogo(program)}
                <span><strong>${program.name}</strong><br><span class="muted">${program.domain}</span></span>
              </label>`,
            )}
          </fieldset>
          <div class="actions">
            <button type="submit">Connect</button>
            <button type="submit" form="connect-cancel" class="secondary">Cancel</button>
          </div>
        </form>
        ${cancelForm(session, request)}
        <details${o.programForm ? html` open` : ''}>
          <summary>Create another program</summary>
          ${programForm(session, request, o.programForm)}
        </details>
      </div>
      <dialog id="consent-dialog" aria-labelledby="consent-title">${consentForm(session, request, null, true)}</dialog>
      <script src="/assets/connect.js" defer></script>`;
  return renderPage({ title: `Connect ${tool}`, session, body, flash: o.error ? { kind: 'error', text: o.error } : undefined });
}

/** The confirmation as its own page, for browsers without JavaScript. */
export function renderConsentPage(session: WebSession, request: ConnectRequest, program: Program): string {
  return renderPage({
    title: `Connect ${request.integration.displayName}`,
    session,
    body: html`<div class="card narrow connect">${consentForm(session, request, program, false)}</div>`,
  });
}
