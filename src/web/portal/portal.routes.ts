import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { ApiError, invalidField } from '../../domain/errors.ts';
import { assertValidBody } from '../../http/validation.ts';
import { createAffiliate } from '../../modules/affiliates/affiliate.service.ts';
import { CreateAffiliateBody } from '../../modules/affiliates/affiliate.schema.ts';
import { fullUrlsFor } from '../../modules/affiliates/link.service.ts';
import { queueMail } from '../../modules/mail/mail.service.ts';
import { signUpReceivedMail } from '../../modules/mail/messages.ts';
import { findProgramBySlug, toProgramContext, type ProgramRow } from '../../modules/programs/program.service.ts';
import { throttleSignUp } from '../attempt-throttle.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField } from '../layout.ts';
import { ensureCsrfBinding } from '../session.ts';
import { checkboxField, formErrorsOf, noErrors, readForm, readQuery, textField, type FormErrors, type FormValues } from '../dashboard/forms.ts';

// The affiliate portal (issue 19): one page per program at /portal/{slug}, in the program's
// name, logo and colour. This part is joining: the sign-up form under the program's policy —
// open (in at once), approval (pending until the merchant decides; the default) or invite (no
// form). A sign-up is an affiliate like any other (affiliate.created), made in one transaction
// with its e-mail. Sign-ups count against the same per-address limit as account sign-ups.

const JOINED: Record<string, string> = {
  open: 'Welcome aboard! We have e-mailed you your link to share.',
  pending: 'Thank you! Your application waits for review; we will e-mail you as soon as you are approved.',
};

function portalPage(program: ProgramRow, title: string, body: SafeHtml, flash?: { kind: 'ok' | 'error'; text: string }): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · ${program.name}</title>
<link rel="stylesheet" href="/assets/app.css">
<link rel="stylesheet" href="/portal/${program.portal_slug}/theme.css">
</head>
<body class="portal">
<a class="skip" href="#main">Skip to content</a>
<header class="top portal-head">
  ${program.logo_url ? html`<img src="${program.logo_url}" alt="" class="portal-logo">` : ''}
  <span class="brand">${program.name}</span>
</header>
<main id="main">
${flash ? html`<p class="flash ${flash.kind}" role="${flash.kind === 'error' ? 'alert' : 'status'}">${flash.text}</p>` : ''}
${body}
</main>
<footer class="foot">Affiliate program of ${program.name} · run on Tandem</footer>
</body>
</html>`.value;
}

export const portalRoutes: FastifyPluginAsync<AppServices> = async (app, services) => {
  const { db, clock } = services;

  async function programOf(request: FastifyRequest): Promise<ProgramRow | undefined> {
    const { slug } = request.params as { slug: string };
    return findProgramBySlug(db, slug.toLowerCase());
  }

  function joinPage(request: FastifyRequest, reply: FastifyReply, program: ProgramRow, values: FormValues = {}, errors: FormErrors = noErrors) {
    const joined = JOINED[readQuery(request).joined ?? ''];
    const invite = program.portal_signup === 'invite';
    const body = invite
      ? html`<div class="card narrow"><h1>Join ${program.name}'s affiliate program</h1>
          <p>This program takes affiliates by invitation. Ask ${program.name} to invite you.</p></div>`
      : html`<div class="card narrow">
          <h1>Join ${program.name}'s affiliate program</h1>
          <p class="lead">Earn a commission on every customer you send to ${program.domain}.${program.portal_signup === 'approval' ? ` ${program.name} reviews each application.` : ''}</p>
          ${errors.message ? html`<p class="error" role="alert">${errors.message}</p>` : ''}
          <form method="post" action="/portal/${program.portal_slug}/signup" novalidate>
            ${csrfField(ensureCsrfBinding(services, request, reply))}
            ${textField({ label: 'First name', name: 'firstName', value: values.firstName, required: true, autocomplete: 'given-name', attrs: html`maxlength="200"` }, errors)}
            ${textField({ label: 'Last name', name: 'lastName', value: values.lastName, required: true, autocomplete: 'family-name', attrs: html`maxlength="200"` }, errors)}
            ${textField({ label: 'E-mail', name: 'email', type: 'email', value: values.email, required: true, autocomplete: 'email', attrs: html`maxlength="254"` }, errors)}
            ${program.portal_terms
              ? html`<div class="terms" tabindex="0" role="region" aria-label="Program terms"><h2>Program terms</h2><p>${program.portal_terms}</p></div>
                  ${checkboxField({ label: 'I accept the program terms', name: 'acceptTerms', checked: values.acceptTerms === 'on', required: true }, errors)}`
              : ''}
            <div class="actions"><button type="submit">${program.portal_signup === 'approval' ? 'Apply' : 'Join'}</button></div>
          </form>
        </div>`;
    return reply
      .code(errors.status)
      .type('text/html; charset=utf-8')
      .send(portalPage(program, 'Join', body, joined ? { kind: 'ok', text: joined } : errors.message ? { kind: 'error', text: 'Nothing was sent: check the form below.' } : undefined));
  }

  // The program's colour as a stylesheet: pages allow no inline style (CSP style-src 'self').
  app.get('/portal/:slug/theme.css', async (request, reply) => {
    const program = await programOf(request);
    if (!program) return reply.callNotFound();
    // portal_color is validated as #rrggbb when saved, so it is safe inside CSS.
    return reply
      .type('text/css; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .send(`body.portal { --brand: ${program.portal_color}; --brand-dark: ${program.portal_color}; }\n`);
  });

  app.get('/portal/:slug', async (request, reply) => {
    const program = await programOf(request);
    if (!program) return reply.callNotFound();
    return joinPage(request, reply, program);
  });

  app.post('/portal/:slug/signup', async (request, reply) => {
    const program = await programOf(request);
    if (!program) return reply.callNotFound();
    if (program.portal_signup === 'invite') return joinPage(request, reply, program, {}, { fields: {}, message: 'This program takes affiliates by invitation only.', status: 403 });
    const form = readForm(request);
    await throttleSignUp(db, clock, request, reply);
    const pending = program.portal_signup === 'approval';
    try {
      const body = { firstName: form.firstName ?? '', lastName: form.lastName ?? '', email: (form.email ?? '').trim() };
      assertValidBody(CreateAffiliateBody, body);
      if (program.portal_terms && form.acceptTerms !== 'on') throw invalidField('#/acceptTerms', 'must be accepted to join');
      const context = toProgramContext(program, clock);
      await createAffiliate(db, context, body, {
        approval: pending ? 'pending' : 'approved',
        onCreated: (tx, affiliate) => queueMail(tx, program.id, signUpReceivedMail(context, affiliate, pending ? null : fullUrlsFor(context, affiliate.link)[0]!.fullUrl), clock().toISOString()),
      });
    } catch (error) {
      // An e-mail already in the program: answered as a success, so the form does not tell
      // strangers who is an affiliate (the affiliate already has their link).
      if (!(error instanceof ApiError && error.code === 'conflict')) return joinPage(request, reply, program, form, formErrorsOf(error));
    }
    return reply.redirect(`/portal/${program.portal_slug}?joined=${pending ? 'pending' : 'open'}`, 303);
  });
};
