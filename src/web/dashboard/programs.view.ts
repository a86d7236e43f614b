import { DEFAULT_COOKIE_DAYS, DEFAULT_REFERRAL_PARAM, type Program } from '../../modules/programs/program.service.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField } from '../layout.ts';
import type { DashboardSession } from './dashboard-page.ts';
import { selectField, textareaField, textField, type FormErrors, type FormValues } from './forms.ts';

// The programs page as a pure function of what it shows (the user's programs and the create
// form), and the program form it shares with the Settings page.

export function programFormValues(program: Program): FormValues {
  return {
    name: program.name,
    domain: program.domain,
    logoUrl: program.logoUrl ?? '',
    currency: program.currency,
    commissionRate: String(program.commissionRate),
    baseUrls: program.baseUrls.join('\n'),
    referralParam: program.referralParam,
    cookieDays: String(program.cookieDays),
    attribution: program.attribution,
  };
}

/** The program's fields; the Settings page leaves out the rate, which its commission plan form edits. */
export function programFields(values: FormValues, errors: FormErrors, options: { withRate?: boolean } = {}): SafeHtml {
  return html`<div class="form-grid">
    ${textField({ label: 'Name', name: 'name', value: values.name, required: true, help: 'Your product or company, as affiliates see it.' }, errors)}
    ${textField({ label: 'Domain', name: 'domain', value: values.domain, required: true, help: 'The site customers buy on, such as example.com.', autocomplete: 'off' }, errors)}
    ${textField({ label: 'Logo URL', name: 'logoUrl', type: 'url', value: values.logoUrl, help: 'Optional. An https:// image shown next to the name.' }, errors)}
    ${textField({ label: 'Currency', name: 'currency', value: values.currency ?? 'USD', help: 'ISO 4217 code of your sales, such as USD or EUR.' }, errors)}
    ${options.withRate === false ? '' : textField({ label: 'Default commission rate (%)', name: 'commissionRate', type: 'number', value: values.commissionRate ?? '20', help: 'Affiliates without their own rate earn this share of each sale.', attrs: html`min="0" max="100" step="any" inputmode="decimal"` }, errors)}
    ${textField({ label: 'Referral query parameter', name: 'referralParam', value: values.referralParam ?? DEFAULT_REFERRAL_PARAM, help: `Links look like https://example.com/?${DEFAULT_REFERRAL_PARAM}=jane.` }, errors)}
    ${textField({ label: 'Cookie window (days)', name: 'cookieDays', type: 'number', value: values.cookieDays ?? String(DEFAULT_COOKIE_DAYS), help: 'How long a visitor who clicked a link stays credited to its affiliate (1 to 400).', attrs: html`min="1" max="400" step="1" inputmode="numeric"` }, errors)}
    ${selectField({ label: 'When a visitor clicks several links', name: 'attribution', value: values.attribution ?? 'last', options: [['last', 'The last click wins'], ['first', 'The first click wins']] }, errors)}
    <div class="wide">${textareaField({ label: 'Base URLs', name: 'baseUrls', value: values.baseUrls, help: 'One URL per line; each affiliate link is offered on each. Empty: https:// and your domain.' }, errors)}</div>
  </div>`;
}

function programCard(program: Program): SafeHtml {
  return html`<div class="card"><a class="program-choice" href="/dashboard/programs/${program.id}">
    ${program.logoUrl ? html`<img src="${program.logoUrl}" alt="">` : html`<span class="logo-placeholder" aria-hidden="true">${program.name.charAt(0).toUpperCase()}</span>`}
    <span><strong>${program.name}</strong><br><span class="muted">${program.domain} · ${program.currency}</span></span>
  </a></div>`;
}

export interface ProgramsView {
  session: DashboardSession;
  programs: Program[];
  /** The create form, as posted when it failed. */
  values: FormValues;
  errors: FormErrors;
}

export function programsBody(v: ProgramsView): SafeHtml {
  return html`
      <div class="page-head"><h1>Your programs</h1></div>
      ${v.programs.length === 0
        ? html`<div class="empty"><p><strong>You have no affiliate program yet.</strong></p>
            <p>Create one below: name it after your product and give the domain your customers buy on.
            Then add affiliates, create an API key for your site, or connect Zapier, n8n or Make.</p></div>`
        : html`<div class="program-cards">${v.programs.map(programCard)}</div>`}
      <section class="card" aria-labelledby="new-program">
        <h2 id="new-program">Create a program</h2>
        <form method="post" action="/dashboard/programs" novalidate>
          ${csrfField(v.session)}
          ${programFields(v.values, v.errors)}
          <div class="actions"><button type="submit">Create program</button></div>
        </form>
      </section>`;
}
