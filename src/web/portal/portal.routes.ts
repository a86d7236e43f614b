import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { ApiError, type FieldError } from '../../domain/errors.ts';
import { assertValidBody } from '../../http/validation.ts';
import { createAffiliate, updateAffiliate } from '../../modules/affiliates/affiliate.service.ts';
import { UpdateAffiliateBody } from '../../modules/affiliates/affiliate.schema.ts';
import { CreateLinkBody } from '../../modules/affiliates/link.schema.ts';
import { createLink } from '../../modules/affiliates/link.service.ts';
import { CreateAffiliateBody } from '../../modules/affiliates/affiliate.schema.ts';
import { findProgramBySlug, type Program } from '../../modules/programs/program.service.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { throttlePortalLogin, throttleSignUp } from '../attempt-throttle.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField } from '../layout.ts';
import { cookieOptions } from '../cookies.ts';
import { isValidCsrf, portalSessionBinding, rejectForgery, submittedCsrfToken, type CsrfBinding } from '../csrf.ts';
import { ensureCsrfBinding } from '../session.ts';
import { loginLinkHolder, portalSessionAffiliate, PORTAL_SESSION_MS, queueSignUpConfirmation, sendLoginLink, signInWithLink, signOut } from '../../modules/portal/portal-login.service.ts';
import { getPortalView, type PortalView } from '../../modules/portal/portal-view.service.ts';
import type { Affiliate } from '../../modules/affiliates/affiliate.schema.ts';
import { formatAmount, formatTime } from '../dashboard/format.ts';
import { apiBody, checkboxField, formErrorsOf, noErrors, readForm, readQuery, textField, type FormErrors, type FormValues } from '../dashboard/forms.ts';

// The affiliate portal (issue 19): one page per program at /portal/{slug}, in the program's
// name, logo and colour.
// - Joining: the sign-up form under the program's policy — open (in at once), approval
//   (pending until the merchant decides; the default) or invite (no form). A sign-up is an
//   affiliate like any other (affiliate.created), made in one transaction with its e-mail, and
//   counts against the same per-address limit as account sign-ups.
// - Signing in without a password: a one-time link by e-mail; opening it shows a button (a
//   POST) that signs in, so a mail scanner opening the link uses nothing. The portal session's
//   cookie is its own, scoped to /portal/{slug}: a merchant's session never opens it, and it
//   opens no other program's portal.
// - What a signed-in affiliate sees: its figures (the same as the API's and the ledger's), its
//   links, codes and payouts; me.json gives the same as JSON. Its forms' CSRF tokens are bound
//   to its portal session (portalSessionBinding): a token shown to one session works in no
//   other, and not after signing out.

const PORTAL_COOKIE = 'tandem_portal';
/** Links an affiliate may have when adding their own in the portal. */
const MAX_PORTAL_LINKS = 20;

/** The program of a portal address: its settings, and the tenant context its services take. */
type PortalProgram = Program & { context: ProgramContext };

const JOINED: Record<string, string> = {
  open: 'Almost there! We have e-mailed you a link: open it within 24 hours to confirm your address and see your link to share.',
  pending: 'Thank you! Your application waits for review; we will e-mail you as soon as you are approved.',
};

function portalPage(program: PortalProgram, title: string, body: SafeHtml, flash?: { kind: 'ok' | 'error'; text: string }): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · ${program.name}</title>
<link rel="icon" href="${program.logoUrl ?? '/assets/favicon.svg'}">
<link rel="stylesheet" href="/assets/app.css">
<link rel="stylesheet" href="/portal/${program.portal.slug}/theme.css">
</head>
<body class="portal">
<a class="skip" href="#main">Skip to content</a>
<header class="top portal-head">
  ${program.logoUrl ? html`<img src="${program.logoUrl}" alt="" class="portal-logo">` : ''}
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

/**
 * The sign-up form as POST /affiliates's body, checked by its schema. Every field's error comes
 * at once, the terms' with the others: an empty or blank field is missing ("is required").
 */
function signUpBody(program: PortalProgram, form: FormValues): CreateAffiliateBody {
  const filled = (value: string | undefined) => (value === undefined || value.trim() === '' ? undefined : value);
  const errors: FieldError[] = [];
  let body: CreateAffiliateBody | undefined;
  try {
    body = apiBody(CreateAffiliateBody, { firstName: filled(form.firstName), lastName: filled(form.lastName), email: filled(form.email)?.trim() });
  } catch (error) {
    if (!(error instanceof ApiError && error.code === 'validation_failed')) throw error;
    errors.push(...(error.errors ?? []));
  }
  if (program.portal.terms && form.acceptTerms !== 'on') errors.push({ pointer: '#/acceptTerms', detail: 'must be accepted to join' });
  if (errors.length > 0 || body === undefined) throw new ApiError('validation_failed', 'The request is invalid.', errors);
  return body;
}

export const portalRoutes: FastifyPluginAsync<AppServices> = async (app, services) => {
  const { db, clock } = services;

  async function programOf(request: FastifyRequest): Promise<PortalProgram | undefined> {
    const { slug } = request.params as { slug: string };
    const found = await findProgramBySlug(db, slug.toLowerCase(), clock);
    return found && { ...found.program, context: found.context };
  }

  function joinPage(request: FastifyRequest, reply: FastifyReply, program: PortalProgram, values: FormValues = {}, errors: FormErrors = noErrors) {
    const joined = JOINED[readQuery(request).joined ?? ''];
    const invite = program.portal.signup === 'invite';
    const body = invite
      ? html`<div class="card narrow"><h1>Join ${program.name}'s affiliate program</h1>
          <p>This program takes affiliates by invitation. Ask ${program.name} to invite you.</p></div>`
      : html`<div class="card narrow">
          <h1>Join ${program.name}'s affiliate program</h1>
          <p class="lead">Earn a commission on every customer you send to ${program.domain}.${program.portal.signup === 'approval' ? ` ${program.name} reviews each application.` : ''}</p>
          ${errors.message ? html`<p class="error" role="alert">${errors.message}</p>` : ''}
          <form method="post" action="/portal/${program.portal.slug}/signup" novalidate>
            ${csrfField(ensureCsrfBinding(services, request, reply))}
            ${textField({ label: 'First name', name: 'firstName', value: values.firstName, required: true, autocomplete: 'given-name', attrs: html`maxlength="200"` }, errors)}
            ${textField({ label: 'Last name', name: 'lastName', value: values.lastName, required: true, autocomplete: 'family-name', attrs: html`maxlength="200"` }, errors)}
            ${textField({ label: 'E-mail', name: 'email', type: 'email', value: values.email, required: true, autocomplete: 'email', attrs: html`maxlength="254"` }, errors)}
            ${program.portal.terms
              ? html`<div class="terms" tabindex="0" role="region" aria-label="Program terms"><h2>Program terms</h2><p>${program.portal.terms}</p></div>
                  ${checkboxField({ label: 'I accept the program terms', name: 'acceptTerms', checked: values.acceptTerms === 'on', required: true }, errors)}`
              : ''}
            <div class="actions"><button type="submit">${program.portal.signup === 'approval' ? 'Apply' : 'Join'}</button></div>
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
      .send(`body.portal { --brand: ${program.portal.color}; --brand-dark: ${program.portal.color}; }\n`);
  });

  app.get('/portal/:slug', async (request, reply) => {
    const program = await programOf(request);
    if (!program) return reply.callNotFound();
    if (await signedIn(request, program)) return reply.redirect(`/portal/${program.portal.slug}/home`);
    return joinPage(request, reply, program);
  });

  /** The affiliate this request's portal cookie signs in to this program, if any. */
  async function signedIn(request: FastifyRequest, program: PortalProgram): Promise<Affiliate | undefined> {
    const sessionId = request.cookies[PORTAL_COOKIE];
    return sessionId ? portalSessionAffiliate(db, program.context, sessionId) : undefined;
  }

  const portalCookie = (program: PortalProgram) => ({ ...cookieOptions(services.config), path: `/portal/${program.portal.slug}` });

  /** What a signed-in affiliate's form tokens are bound to: its portal session. */
  const portalFormBinding = (sessionId: string): CsrfBinding => portalSessionBinding(app.csrfKey, sessionId);

  function loginPage(request: FastifyRequest, reply: FastifyReply, program: PortalProgram, sentTo?: string, status = 200) {
    const body = html`<div class="card narrow">
      <h1>Sign in to ${program.name}'s affiliate portal</h1>
      ${sentTo
        ? html`<p role="status">If <strong>${sentTo}</strong> belongs to an approved affiliate of ${program.name}, a sign-in link is on its way. It works once, for 15 minutes.</p>`
        : html`<p class="lead">No password: we e-mail you a link that signs you in.</p>`}
      <form method="post" action="/portal/${program.portal.slug}/login" novalidate>
        ${csrfField(ensureCsrfBinding(services, request, reply))}
        ${textField({ label: 'E-mail', name: 'email', type: 'email', required: true, autocomplete: 'email', attrs: html`maxlength="254"` }, noErrors)}
        <div class="actions"><button type="submit">E-mail me a link</button></div>
      </form>
      ${program.portal.signup === 'invite' ? '' : html`<p>Not an affiliate yet? <a href="/portal/${program.portal.slug}">Join</a>.</p>`}
    </div>`;
    return reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(portalPage(program, 'Sign in', body));
  }

  app.get('/portal/:slug/login', async (request, reply) => {
    const program = await programOf(request);
    if (!program) return reply.callNotFound();
    return loginPage(request, reply, program);
  });

  app.post('/portal/:slug/login', async (request, reply) => {
    const program = await programOf(request);
    if (!program) return reply.callNotFound();
    const email = (readForm(request).email ?? '').trim();
    const plausible = email.length > 0 && email.length <= 254 && email.includes('@');
    if ((await throttlePortalLogin(db, clock, request, reply, program.id, email)) && plausible) {
      await sendLoginLink(db, program.context, email, { portalUrl: `${services.config.siteUrl}/portal/${program.portal.slug}` });
    }
    return loginPage(request, reply, program, email || 'that address');
  });

  /** The page a login link opens: nothing is used until its button is pressed. */
  app.get('/portal/:slug/login/:token', async (request, reply) => {
    const program = await programOf(request);
    if (!program) return reply.callNotFound();
    const { token } = request.params as { token: string };
    const holder = token.length <= 100 ? await loginLinkHolder(db, program.context, token) : undefined;
    const body = holder
      ? html`<div class="card narrow"><h1>Sign in as ${holder.firstName} ${holder.lastName}</h1>
          <p>To ${program.name}'s affiliate portal.</p>
          <form method="post" action="/portal/${program.portal.slug}/login/${token}">
            ${csrfField(ensureCsrfBinding(services, request, reply))}
            <div class="actions"><button type="submit">Sign in</button></div>
          </form></div>`
      : html`<div class="card narrow"><h1>This link no longer works</h1>
          <p>A sign-in link works once, for a short time. <a href="/portal/${program.portal.slug}/login">Ask for a new one</a>.</p></div>`;
    return reply
      .code(holder ? 200 : 410)
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('referrer-policy', 'no-referrer')
      .send(portalPage(program, 'Sign in', body));
  });

  app.post('/portal/:slug/login/:token', async (request, reply) => {
    const program = await programOf(request);
    if (!program) return reply.callNotFound();
    const { token } = request.params as { token: string };
    const sessionId = token.length <= 100 ? await signInWithLink(db, program.context, token) : null;
    if (!sessionId) return reply.redirect(`/portal/${program.portal.slug}/login/${encodeURIComponent(token)}`, 303);
    reply.setCookie(PORTAL_COOKIE, sessionId, { ...portalCookie(program), maxAge: PORTAL_SESSION_MS / 1000 });
    return reply.redirect(`/portal/${program.portal.slug}/home`, 303);
  });

  // A session that still works ends only with its own form's token; without one there is nothing to end.
  app.post('/portal/:slug/logout', { config: { csrf: 'in-handler' } }, async (request, reply) => {
    const program = await programOf(request);
    if (!program) return reply.callNotFound();
    const sessionId = request.cookies[PORTAL_COOKIE];
    if (sessionId && (await signedIn(request, program))) {
      if (!isValidCsrf(portalFormBinding(sessionId), submittedCsrfToken(request))) rejectForgery();
      await signOut(db, sessionId);
    }
    reply.clearCookie(PORTAL_COOKIE, portalCookie(program));
    return reply.redirect(`/portal/${program.portal.slug}/login`, 303);
  });

  app.get('/portal/:slug/me.json', async (request, reply) => {
    const program = await programOf(request);
    if (!program) return reply.callNotFound();
    const affiliate = await signedIn(request, program);
    if (!affiliate) return reply.code(401).header('cache-control', 'no-store').send({ error: 'Sign in to the portal first.' });
    return reply.header('cache-control', 'no-store').send(await getPortalView(db, program.context, affiliate));
  });

  const HOME_DONE: Record<string, string> = { 'payout-email': 'Payout e-mail saved.', 'link-created': 'Link added.' };

  async function homePage(request: FastifyRequest, reply: FastifyReply, { program, affiliate, csrf }: SignedIn, failed?: { form: 'payout' | 'link'; values: FormValues; errors: FormErrors }) {
    const view = await getPortalView(db, program.context, affiliate);
    const done = HOME_DONE[readQuery(request).done ?? ''];
    const flash = failed ? { kind: 'error' as const, text: 'Nothing was saved: check the form below.' } : done ? { kind: 'ok' as const, text: done } : undefined;
    return reply
      .code(failed?.errors.status ?? 200)
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(portalPage(program, 'Your figures', homeBody(program, view, csrf, failed), flash));
  }

  interface SignedIn {
    program: PortalProgram;
    affiliate: Affiliate;
    /** The binding of this session's form tokens. */
    csrf: CsrfBinding;
  }

  /**
   * The signed-in affiliate of this portal, or a redirect to its login (GET). A form (POST) must
   * carry the token of this very portal session: without a session, or with a token shown to
   * another session, it is refused (403) and nothing changes.
   */
  async function requireAffiliate(request: FastifyRequest, reply: FastifyReply): Promise<SignedIn | null> {
    const program = await programOf(request);
    if (!program) {
      await reply.callNotFound();
      return null;
    }
    const sessionId = request.cookies[PORTAL_COOKIE];
    const affiliate = sessionId ? await signedIn(request, program) : undefined;
    const csrf = affiliate && sessionId ? portalFormBinding(sessionId) : null;
    if (request.method !== 'GET' && !isValidCsrf(csrf, submittedCsrfToken(request))) rejectForgery();
    if (!affiliate || !csrf) {
      await reply.redirect(`/portal/${program.portal.slug}/login`, 302);
      return null;
    }
    return { program, affiliate, csrf };
  }

  app.get('/portal/:slug/home', async (request, reply) => {
    const found = await requireAffiliate(request, reply);
    return found ? homePage(request, reply, found) : reply;
  });

  app.post('/portal/:slug/payout-email', { config: { csrf: 'in-handler' } }, async (request, reply) => {
    const found = await requireAffiliate(request, reply);
    if (!found) return reply;
    const form = readForm(request);
    try {
      const body = { payoutEmail: (form.payoutEmail ?? '').trim() };
      assertValidBody(UpdateAffiliateBody, body);
      await updateAffiliate(db, found.program.context, found.affiliate.id, body);
      return reply.redirect(`/portal/${found.program.portal.slug}/home?done=payout-email`, 303);
    } catch (error) {
      return homePage(request, reply, found, { form: 'payout', values: form, errors: formErrorsOf(error) });
    }
  });

  app.post('/portal/:slug/links', { config: { csrf: 'in-handler' } }, async (request, reply) => {
    const found = await requireAffiliate(request, reply);
    if (!found) return reply;
    const { program, affiliate } = found;
    if (!program.portal.linksAllowed) return reply.code(403).type('text/html; charset=utf-8').send(portalPage(program, 'Not allowed', html`<div class="card narrow"><h1>Not allowed</h1><p>${program.name} does not let affiliates add links.</p></div>`));
    const form = readForm(request);
    try {
      const context = program.context;
      const link = (form.link ?? '').trim();
      const body = { affiliateId: affiliate.id, ...(link === '' ? {} : { link }) };
      assertValidBody(CreateLinkBody, body);
      // The cap is counted under the affiliate's row lock, in the insert's transaction (item 10 of issue 29).
      await createLink(db, context, body, { maxLinksOfAffiliate: MAX_PORTAL_LINKS });
      return reply.redirect(`/portal/${program.portal.slug}/home?done=link-created`, 303);
    } catch (error) {
      return homePage(request, reply, found, { form: 'link', values: form, errors: formErrorsOf(error) });
    }
  });

  function homeBody(program: PortalProgram, view: PortalView, binding: CsrfBinding, failed?: { form: 'payout' | 'link'; values: FormValues; errors: FormErrors }): SafeHtml {
    const csrf = csrfField(binding);
    const payoutErrors = failed?.form === 'payout' ? failed.errors : noErrors;
    const linkErrors = failed?.form === 'link' ? failed.errors : noErrors;
    const money = (amount: number) => formatAmount(amount, program.currency);
    return html`
      <div class="page-head"><h1>Hello ${view.affiliate.firstName}</h1>
        <form method="post" action="/portal/${program.portal.slug}/logout" class="inline">${csrf}<button type="submit" class="secondary small">Sign out</button></form>
      </div>
      <section class="card" aria-labelledby="figures"><h2 id="figures">Your figures</h2>
        <dl class="details">
          <dt>Clicks</dt><dd data-stat="clicks">${view.stats.clicks}</dd>
          <dt>Referred customers</dt><dd data-stat="referrals">${view.stats.referrals}</dd>
          <dt>Sales</dt><dd data-stat="sales">${view.stats.sales}</dd>
          <dt>Revenue</dt><dd data-stat="revenue">${money(view.stats.revenue)} <span class="muted">(net of refunds)</span></dd>
          <dt>Commission waiting for refunds</dt><dd data-stat="pending">${money(view.commission.pending)}</dd>
          <dt>Commission due</dt><dd data-stat="due">${money(view.commission.due)}</dd>
          <dt>Commission paid</dt><dd data-stat="paid">${money(view.commission.paid)}</dd>
        </dl>
      </section>
      <h2 id="links">Your links</h2>
      ${view.links.map(
        (l, i) => html`<div class="secret-box"><pre class="secret" id="link-${i}">${l.fullURLs[0]?.fullUrl ?? l.link}</pre><button type="button" class="secondary" data-copy="link-${i}" hidden>Copy</button></div>`,
      )}
      ${program.portal.linksAllowed
        ? html`${linkErrors.message ? html`<p class="error" role="alert">${linkErrors.message}</p>` : ''}
          <form class="filters" method="post" action="/portal/${program.portal.slug}/links" novalidate>
            ${csrf}
            ${textField({ label: 'Another link', name: 'link', value: failed?.form === 'link' ? failed.values.link : '', help: 'Letters, digits and hyphens. Empty: one is made for you.', autocomplete: 'off', attrs: html`maxlength="64"` }, linkErrors)}
            <button type="submit" class="secondary">Add link</button>
          </form>`
        : ''}
      <h2>Your promotional codes</h2>
      ${view.promotionalCodes.length === 0
        ? html`<p class="empty">No codes yet.</p>`
        : html`<ul>${view.promotionalCodes.map((c) => html`<li><code>${c.code}</code> — ${c.coupon.name}</li>`)}</ul>`}
      <h2>Your payouts</h2>
      ${view.payouts.length === 0
        ? html`<p class="empty">No payouts yet.</p>`
        : html`<div class="table-wrap" tabindex="0" role="region" aria-label="Your payouts"><table><thead><tr><th scope="col" class="num">Amount</th><th scope="col">Status</th><th scope="col">Made</th><th scope="col">Paid</th></tr></thead>
            <tbody>${view.payouts.map((p) => html`<tr><td class="num">${money(p.amount)}</td><td>${p.status}</td><td>${formatTime(p.createdAt)}</td><td>${formatTime(p.paidAt)}</td></tr>`)}</tbody></table></div>`}
      <section class="card" aria-labelledby="payout-email"><h2 id="payout-email">Where we pay you</h2>
        ${payoutErrors.message ? html`<p class="error" role="alert">${payoutErrors.message}</p>` : ''}
        <form method="post" action="/portal/${program.portal.slug}/payout-email" novalidate>
          ${csrf}
          ${textField({ label: 'Payout e-mail', name: 'payoutEmail', type: 'email', value: failed?.form === 'payout' ? failed.values.payoutEmail : view.affiliate.payoutEmail, required: true, autocomplete: 'email', help: 'Your PayPal or Wise e-mail: payouts are sent there.', attrs: html`maxlength="254"` }, payoutErrors)}
          <div class="actions"><button type="submit">Save</button></div>
        </form>
      </section>
      <script src="/assets/dashboard.js" defer></script>`;
  }

  app.post('/portal/:slug/signup', async (request, reply) => {
    const program = await programOf(request);
    if (!program) return reply.callNotFound();
    if (program.portal.signup === 'invite') return joinPage(request, reply, program, {}, { fields: {}, message: 'This program takes affiliates by invitation only.', status: 403 });
    const form = readForm(request);
    await throttleSignUp(db, clock, request, reply);
    const pending = program.portal.signup === 'approval';
    try {
      const body = signUpBody(program, form);
      const context = program.context;
      await createAffiliate(db, context, body, {
        approval: pending ? 'pending' : 'approved',
        // Open: the link that confirms the address (and then welcomes). Approval: nothing until
        // the merchant approves; the page says the application arrived.
        onCreated: async (tx, affiliate) => {
          if (!pending) await queueSignUpConfirmation(tx, context, affiliate.id, { portalUrl: `${services.config.siteUrl}/portal/${program.portal.slug}` });
        },
      });
    } catch (error) {
      // An e-mail already in the program: answered as a success, so the form does not tell
      // strangers who is an affiliate (the affiliate already has their link).
      if (!(error instanceof ApiError && error.code === 'conflict')) return joinPage(request, reply, program, form, formErrorsOf(error));
    }
    return reply.redirect(`/portal/${program.portal.slug}?joined=${pending ? 'pending' : 'open'}`, 303);
  });
};
