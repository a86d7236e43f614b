import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { isUuid } from '../../domain/ids.ts';
import { createProgram, DEFAULT_COOKIE_DAYS, DEFAULT_REFERRAL_PARAM, listUserPrograms, type Program, type ProgramInput } from '../../modules/programs/program.service.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField } from '../layout.ts';
import { currentUser, redirectDone, sendPage } from './dashboard-page.ts';
import { formErrorsOf, noErrors, optionalNumber, optionalText, readForm, readQuery, selectField, textareaField, textField, type FormErrors, type FormValues, errorFlash } from './forms.ts';

// The programs of the signed-in user: the list, the create form, and the switcher's target.
// The program form is shared with the Settings page.

/** The form's fields as ProgramInput: blanks take the service's defaults. */
export function programInputOf(form: FormValues): Omit<ProgramInput, 'ownerUserId'> {
  const rate = optionalText(form.commissionRate);
  const baseUrls = (form.baseUrls ?? '').split(/\r?\n/).map((line) => line.trim()).filter(Boolean);
  return {
    name: form.name ?? '',
    domain: form.domain ?? '',
    logoUrl: optionalText(form.logoUrl) ?? null,
    currency: optionalText(form.currency),
    commissionRate: rate === undefined ? undefined : Number(rate),
    baseUrls: baseUrls.length > 0 ? baseUrls : undefined,
    referralParam: optionalText(form.referralParam),
    // Text that is not a number is kept, so the service's check names the field.
    cookieDays: optionalNumber(form.cookieDays) as number | undefined,
    attribution: optionalText(form.attribution),
  };
}

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

export const programRoutes: FastifyPluginAsync<AppServices> = async (app, { db, clock }) => {
  async function homePage(request: FastifyRequest, reply: FastifyReply, values: FormValues = {}, errors: FormErrors = noErrors) {
    const programs = await listUserPrograms(db, currentUser(request).id);
    const body = html`
      <div class="page-head"><h1>Your programs</h1></div>
      ${programs.length === 0
        ? html`<div class="empty"><p><strong>You have no affiliate program yet.</strong></p>
            <p>Create one below: name it after your product and give the domain your customers buy on.
            Then add affiliates, create an API key for your site, or connect Zapier, n8n or Make.</p></div>`
        : html`<div class="program-cards">${programs.map(programCard)}</div>`}
      <section class="card" aria-labelledby="new-program">
        <h2 id="new-program">Create a program</h2>
        <form method="post" action="/dashboard/programs" novalidate>
          ${csrfField(request.session!)}
          ${programFields(values, errors)}
          <div class="actions"><button type="submit">Create program</button></div>
        </form>
      </section>`;
    return sendPage(db, request, reply, {
      title: 'Your programs',
      body,
      status: errors.status,
      flash: errorFlash(errors),
    });
  }

  app.get('/dashboard', (request, reply) => homePage(request, reply));

  app.post('/dashboard/programs', async (request, reply) => {
    const form = readForm(request);
    try {
      const program = await createProgram(db, { ...programInputOf(form), ownerUserId: currentUser(request).id }, clock);
      return redirectDone(reply, `/dashboard/programs/${program.id}`, 'program-created');
    } catch (error) {
      return homePage(request, reply, form, formErrorsOf(error));
    }
  });

  // The header's program switcher is a GET form (it works without script).
  app.get('/dashboard/switch', async (request, reply) => {
    const { program } = readQuery(request);
    return reply.redirect(program && isUuid(program) ? `/dashboard/programs/${program.toLowerCase()}` : '/dashboard');
  });
};
