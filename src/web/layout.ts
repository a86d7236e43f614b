import { html, type SafeHtml } from './html.ts';
import { csrfToken, type CsrfBinding } from './csrf.ts';
import type { WebSession } from './session-store.ts';

// The one page layout: header with the program switcher and navigation, main content,
// and the forms' building blocks. Pages pass their body as SafeHtml.

export interface ProgramLink {
  id: string;
  name: string;
}

export interface PageOptions {
  title: string;
  session: WebSession | null;
  body: SafeHtml;
  /** The program being viewed, for the navigation and switcher. */
  program?: ProgramLink;
  programs?: ProgramLink[];
  /** Which navigation entry is current. */
  active?: string;
  flash?: { kind: 'ok' | 'error'; text: string };
}

const NAV = [
  ['overview', 'Overview', ''],
  ['affiliates', 'Affiliates', '/affiliates'],
  ['referrals', 'Referrals', '/referrals'],
  ['sales', 'Sales', '/sales'],
  ['payouts', 'Payouts', '/payouts'],
  ['coupons', 'Coupons & codes', '/coupons'],
  ['keys', 'API keys', '/keys'],
  ['apps', 'Connected apps', '/apps'],
  ['webhooks', 'Webhooks', '/webhooks'],
  ['settings', 'Settings', '/settings'],
] as const;

export function csrfField(binding: CsrfBinding): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${csrfToken(binding)}">`;
}

/**
 * A one-button form (revoke, delete, resend…) that posts `fields` with the CSRF token. With
 * `confirm`, the browser asks that question first (dashboard.js); `formClass` marks the form for
 * dashboard.js. An accessible name given as `ariaLabel` must contain the visible label (WCAG
 * 2.5.3), so it is the label plus context.
 */
export function postButton(session: WebSession, action: string, label: string, options: { className?: string; ariaLabel?: string; fields?: SafeHtml; confirm?: string; formClass?: string } = {}): SafeHtml {
  return html`<form method="post" action="${action}" class="inline${options.formClass ? ` ${options.formClass}` : ''}"${options.confirm ? html` data-confirm="${options.confirm}"` : ''}>${csrfField(session)}${options.fields ?? ''}<button type="submit" class="${options.className ?? 'secondary small'}"${options.ariaLabel ? html` aria-label="${options.ariaLabel}"` : ''}>${label}</button></form>`;
}

export interface FieldOptions {
  label: string;
  name: string;
  type?: string;
  value?: string | number | null;
  required?: boolean;
  error?: string;
  help?: string;
  autocomplete?: string;
  attrs?: SafeHtml;
  /** The input's id when two fields of one page share a name (ids are unique per page); f-{name} otherwise. */
  id?: string;
}

/** A labelled input; with an error, the error is tied to it and it takes the focus (the first invalid one wins: browsers honour the first autofocus). */
export function field(o: FieldOptions): SafeHtml {
  const id = o.id ?? `f-${o.name}`;
  const described = [o.help ? `${id}-help` : '', o.error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return html`<div class="field${o.error ? ' has-error' : ''}">
    <label for="${id}">${o.label}${o.required ? html` <span class="req" aria-hidden="true">*</span>` : ''}</label>
    <input id="${id}" name="${o.name}" type="${o.type ?? 'text'}" value="${o.value ?? ''}"${o.required ? html` required` : ''}${o.autocomplete ? html` autocomplete="${o.autocomplete}"` : ''}${described ? html` aria-describedby="${described}"` : ''}${o.error ? html` aria-invalid="true" autofocus` : ''} ${o.attrs ?? ''}>
    ${o.help ? html`<p class="help" id="${id}-help">${o.help}</p>` : ''}
    ${o.error ? html`<p class="error" id="${id}-error">${o.error}</p>` : ''}
  </div>`;
}

function header(o: PageOptions): SafeHtml {
  const user = o.session?.user;
  if (!user) {
    return html`<header class="top"><a class="brand" href="/">Tandem</a><nav class="account"><a href="/login">Log in</a> <a class="button small" href="/signup">Sign up</a></nav></header>`;
  }
  const base = o.program ? `/dashboard/programs/${o.program.id}` : '';
  return html`<header class="top">
    <a class="brand" href="/dashboard">Tandem</a>
    ${o.programs && o.programs.length > 0
      ? html`<form class="switcher" method="get" action="/dashboard/switch">
          <label for="program-switch" class="visually-hidden">Program</label>
          <select id="program-switch" name="program">${o.programs.map((p) => html`<option value="${p.id}"${p.id === o.program?.id ? html` selected` : ''}>${p.name}</option>`)}</select>
          <button type="submit" class="small">Switch</button>
        </form>`
      : ''}
    <nav class="account" aria-label="Account">
      <span class="who">${user.email}</span>
      <a href="/account/password">Password</a>
      <form method="post" action="/logout" class="inline">${csrfField(o.session!)}<button type="submit" class="link">Log out</button></form>
    </nav>
  </header>
  ${o.program
    ? html`<nav class="tabs" aria-label="${o.program.name}">${NAV.map(
        ([key, label, path]) => html`<a href="${base}${path}"${o.active === key ? html` aria-current="page"` : ''}>${label}</a>`,
      )}</nav>`
    : ''}`;
}

export function renderPage(o: PageOptions): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${o.title} · Tandem</title>
<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/app.css">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
${header(o)}
<main id="main">
${o.flash ? html`<p class="flash ${o.flash.kind}" role="${o.flash.kind === 'error' ? 'alert' : 'status'}">${o.flash.text}</p>` : ''}
${o.body}
</main>
<footer class="foot"><a href="/docs">API reference</a></footer>
</body>
</html>`.value;
}
