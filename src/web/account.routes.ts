import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../app-services.ts';
import { readForm } from './dashboard/forms.ts';
import { instanceKey } from '../db/instance-keys.ts';
import { ApiError } from '../domain/errors.ts';
import { anyUserExists, createFirstUser, createUser, findUserByEmail, hashPassword, setPassword, signUpIsOpen, MAX_EMAIL_LENGTH, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, overLongAccountField, verifyPassword } from '../modules/users/user.service.ts';
import { html, type SafeHtml } from './html.ts';
import { requestPasswordReset, resetLinkHolder, resetPassword } from '../modules/users/password-reset.service.ts';
import { csrfField, field, renderPage } from './layout.ts';
import { forgiveAttempt, throttleLogin, throttlePasswordChange, throttlePasswordReset, throttleSignUp } from './attempt-throttle.ts';
import { issueDeviceCookie } from './device-cookie.ts';
import { ensureCsrfBinding, logIn, logOut } from './session.ts';
import type { WebSession } from './session-store.ts';
import { safeNextPath } from './safe-next-path.ts';

type Form = Record<string, string | undefined>;

/** A reset link's token: 32 random bytes, base64url. */
const RESET_TOKEN = /^[A-Za-z0-9_-]{43}$/;

// A password hash to verify against when the e-mail is unknown, so a login for an unknown
// account takes as long as one for a known account (no enumeration by timing).
const decoyHash = hashPassword('decoy password that never matches');

/** A refused field as the form says it: "Password must be at least 10 characters." */
function sentenceOf(error: ApiError): string {
  const text = `${error.errors?.[0]?.pointer.replace('#/', '') ?? ''} ${error.errors?.[0]?.detail ?? error.detail}`.trim();
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`;
}

/** Which field a refusal is about (email or password), so the form shows it there and focuses it. */
type FieldErrors = { email?: string; password?: string; form?: string };
function fieldErrorsOf(error: ApiError): FieldErrors {
  const pointer = error.errors?.[0]?.pointer;
  if (pointer === '#/email') return { email: sentenceOf(error) };
  if (pointer === '#/password') return { password: sentenceOf(error) };
  return { form: sentenceOf(error) };
}

const SIGNUP_CLOSED = 'Sign-up is closed on this Tandem. Ask its operator for an account (tandem user create), or log in.';

export const accountRoutes: FastifyPluginAsync<AppServices> = async (app, services) => {
  const { db, clock, config } = services;
  // Device cookies are signed with a key every process shares, read once here.
  const deviceKey = await instanceKey(db, 'device');
  // A repeated field's first value; anything that is not text is left out.
  const form = (request: FastifyRequest): Form => readForm(request);
  const signUpOpen = () => signUpIsOpen(db, config.signup);

  const sendPage = (reply: FastifyReply, request: FastifyRequest, title: string, body: SafeHtml, status = 200, flash?: { kind: 'ok' | 'error'; text: string }) =>
    reply.code(status).type('text/html; charset=utf-8').send(renderPage({ title, session: request.session, body, flash }));

  // Shown before login: the form's token is bound to the anonymous cookie, so no session row is written.
  async function authPage(request: FastifyRequest, reply: FastifyReply, kind: 'login' | 'signup', values: Form = {}, errors: FieldErrors = {}, status = 200) {
    const next = safeNextPath(values.next);
    const login = kind === 'login';
    const open = await signUpOpen();
    const firstAccount = !login && !(await anyUserExists(db));
    const body = html`<div class="card narrow">
      <h1>${login ? 'Log in to Tandem' : 'Create your Tandem account'}</h1>
      ${firstAccount ? html`<p class="lead">This Tandem has no account yet: yours will be its operator's, the one that may change instance-wide settings. Sign-up closes after it (set <code>SIGNUP=open</code> to keep it open).</p>` : ''}
      <form method="post" action="/${kind}" novalidate>
        ${csrfField(ensureCsrfBinding(services, request, reply))}
        <input type="hidden" name="next" value="${next}">
        ${field({ label: 'E-mail', name: 'email', type: 'email', value: values.email, required: true, autocomplete: 'email', error: errors.email, attrs: html`maxlength="${MAX_EMAIL_LENGTH}"` })}
        ${field({
          label: 'Password',
          name: 'password',
          type: 'password',
          required: true,
          autocomplete: login ? 'current-password' : 'new-password',
          error: errors.password,
          attrs: html`maxlength="${MAX_PASSWORD_LENGTH}"`,
          help: login ? undefined : `At least ${MIN_PASSWORD_LENGTH} characters.`,
        })}
        <div class="actions"><button type="submit">${login ? 'Log in' : 'Create account'}</button>${login ? html` <a href="/forgot-password">Forgot password?</a>` : ''}</div>
      </form>
      <p>${login
        ? open
          ? html`New here? <a href="/signup?next=${encodeURIComponent(next)}">Create an account</a>.`
          : html`No account? Ask this Tandem's operator to create one for you.`
        : html`Already have an account? <a href="/login?next=${encodeURIComponent(next)}">Log in</a>.`}</p>
    </div>`;
    return sendPage(reply, request, login ? 'Log in' : 'Sign up', body, status, errors.form ? { kind: 'error', text: errors.form } : undefined);
  }

  const closedPage = (request: FastifyRequest, reply: FastifyReply) =>
    sendPage(reply, request, 'Sign-up closed', html`<div class="card narrow"><h1>Sign-up is closed</h1><p>${SIGNUP_CLOSED.replace(' or log in.', '')} <a href="/login">Log in</a> if you have an account.</p></div>`, 403);

  app.get('/', async (request, reply) => reply.redirect(request.session?.user ? '/dashboard' : (await anyUserExists(db)) ? '/login' : '/signup'));

  app.get('/login', async (request, reply) => {
    if (request.session?.user) return reply.redirect(safeNextPath((request.query as Form).next));
    return authPage(request, reply, 'login', request.query as Form);
  });

  app.post('/login', async (request, reply) => {
    const values = form(request);
    // An over-long field is refused before it is counted or hashed: nothing is written.
    const overLong = overLongAccountField(values);
    if (overLong) return authPage(request, reply, 'login', { next: values.next }, fieldErrorsOf(overLong), 422);
    const counter = await throttleLogin(db, clock, request, reply, deviceKey, values.email);
    const user = values.email ? await findUserByEmail(db, values.email) : undefined;
    const ok = await verifyPassword(values.password ?? '', user?.password_hash ?? (await decoyHash));
    if (!user || !ok) {
      return authPage(request, reply, 'login', { email: values.email, next: values.next }, { password: 'E-mail or password is incorrect.' }, 401);
    }
    await forgiveAttempt(db, counter);
    await logIn(services, request, reply, { id: user.id, email: user.email });
    issueDeviceCookie(config, reply, deviceKey, user.email, clock());
    return reply.redirect(safeNextPath(values.next), 303);
  });

  app.get('/signup', async (request, reply) => {
    if (request.session?.user) return reply.redirect('/dashboard');
    if (!(await signUpOpen())) return closedPage(request, reply);
    return authPage(request, reply, 'signup', request.query as Form);
  });

  app.post('/signup', async (request, reply) => {
    const values = form(request);
    const overLong = overLongAccountField(values);
    if (overLong) return authPage(request, reply, 'signup', { next: values.next }, fieldErrorsOf(overLong), 422);
    await throttleSignUp(db, clock, request, reply);
    if (!(await signUpOpen())) return closedPage(request, reply);
    try {
      const input = { email: values.email ?? '', password: values.password ?? '' };
      // Unset SIGNUP: only the first person gets in, even when two sign up at once.
      const user = config.signup === null ? await createFirstUser(db, input, clock) : await createUser(db, input, clock);
      if (!user) return closedPage(request, reply);
      await logIn(services, request, reply, { id: user.id, email: user.email });
      issueDeviceCookie(config, reply, deviceKey, user.email, clock());
      return reply.redirect(safeNextPath(values.next), 303);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      // The same message whether or not the e-mail is taken would hide typos from honest users;
      // sign-up necessarily reveals that an account exists, so say so plainly but generically.
      const errors = error.code === 'conflict' ? { email: 'That e-mail cannot be used. Log in instead, or use another e-mail.' } : fieldErrorsOf(error);
      return authPage(request, reply, 'signup', { email: values.email, next: values.next }, errors, 422);
    }
  });

  // "Forgot password?": the same answer whether or not the e-mail has an account.
  const forgotPage = (request: FastifyRequest, reply: FastifyReply, values: Form = {}, errors: FieldErrors = {}, status = 200, sent = false) =>
    sendPage(
      reply,
      request,
      'Forgot password',
      html`<div class="card narrow">
        <h1>Reset your password</h1>
        ${sent
          ? html`<p role="status">If an account uses <strong>${values.email ?? ''}</strong>, a link to choose a new password is on its way. It works once, for 30 minutes. (Without SMTP set up, Tandem writes the e-mail to its log.)</p><p><a href="/login">Back to log in</a></p>`
          : html`<p class="lead">Enter your account's e-mail; we send you a link to choose a new password.</p>
            <form method="post" action="/forgot-password" novalidate>
              ${csrfField(ensureCsrfBinding(services, request, reply))}
              ${field({ label: 'E-mail', name: 'email', type: 'email', value: values.email, required: true, autocomplete: 'email', error: errors.email, attrs: html`maxlength="${MAX_EMAIL_LENGTH}"` })}
              <div class="actions"><button type="submit">E-mail me a link</button> <a href="/login">Back to log in</a></div>
            </form>`}
      </div>`,
      status,
    );

  app.get('/forgot-password', async (request, reply) => forgotPage(request, reply));

  app.post('/forgot-password', async (request, reply) => {
    const values = form(request);
    const email = (values.email ?? '').trim();
    const overLong = overLongAccountField({ email });
    if (overLong) return forgotPage(request, reply, {}, fieldErrorsOf(overLong), 422);
    if (!/^[^\s@]+@[^\s@]+$/.test(email)) return forgotPage(request, reply, values, { email: 'Enter the e-mail address of your account.' }, 422);
    if (await throttlePasswordReset(db, clock, request, reply, email)) await requestPasswordReset(db, clock, email, config.siteUrl);
    return forgotPage(request, reply, { email }, {}, 200, true);
  });

  const resetPage = (request: FastifyRequest, reply: FastifyReply, token: string, user: { email: string } | undefined, errors: FieldErrors = {}, status = 200) =>
    sendPage(
      reply,
      request,
      'Choose a new password',
      user
        ? html`<div class="card narrow">
            <h1>Choose a new password</h1>
            <p class="lead">For <strong>${user.email}</strong>. Saving it logs out every session of this account.</p>
            <form method="post" action="/reset-password/${token}" novalidate>
              ${csrfField(ensureCsrfBinding(services, request, reply))}
              <input type="hidden" name="username" value="${user.email}" autocomplete="username">
              ${field({ label: 'New password', name: 'password', type: 'password', required: true, autocomplete: 'new-password', error: errors.password, help: `At least ${MIN_PASSWORD_LENGTH} characters.`, attrs: html`maxlength="${MAX_PASSWORD_LENGTH}"` })}
              <div class="actions"><button type="submit">Save password and log in</button></div>
            </form>
          </div>`
        : html`<div class="card narrow"><h1>This link no longer works</h1><p>It was used already or is more than 30 minutes old. <a href="/forgot-password">Ask for a new link</a>.</p></div>`,
      user ? status : 410,
    );

  // Opening the link changes nothing (mail scanners open links); the form's POST resets.
  app.get<{ Params: { token: string } }>('/reset-password/:token', async (request, reply) => {
    const token = request.params.token;
    return resetPage(request, reply, token, RESET_TOKEN.test(token) ? await resetLinkHolder(db, clock, token) : undefined);
  });

  app.post<{ Params: { token: string } }>('/reset-password/:token', async (request, reply) => {
    const token = request.params.token;
    if (!RESET_TOKEN.test(token)) return resetPage(request, reply, token, undefined);
    const password = form(request).password ?? '';
    try {
      const user = await resetPassword(db, clock, token, password);
      if (!user) return resetPage(request, reply, token, undefined);
      await logIn(services, request, reply, user);
      return reply.redirect('/dashboard', 303);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      return resetPage(request, reply, token, await resetLinkHolder(db, clock, token), fieldErrorsOf(error), 422);
    }
  });

  app.post('/logout', async (request, reply) => {
    await logOut(services, request, reply);
    return reply.redirect('/login', 303);
  });

  const passwordPage = (reply: FastifyReply, session: WebSession, flash?: { kind: 'ok' | 'error'; text: string }, status = 200) =>
    reply.code(status).type('text/html; charset=utf-8').send(
      renderPage({
        title: 'Change password',
        session,
        flash,
        body: html`<div class="card narrow">
          <h1>Change password</h1>
          <p class="lead">Changing it logs out every other session.</p>
          <form method="post" action="/account/password">
            ${csrfField(session)}
            ${field({ label: 'Current password', name: 'current', type: 'password', required: true, autocomplete: 'current-password', attrs: html`maxlength="${MAX_PASSWORD_LENGTH}"` })}
            ${field({ label: 'New password', name: 'password', type: 'password', required: true, autocomplete: 'new-password', help: `At least ${MIN_PASSWORD_LENGTH} characters.`, attrs: html`maxlength="${MAX_PASSWORD_LENGTH}"` })}
            <div class="actions"><button type="submit">Change password</button> <a href="/dashboard">Cancel</a></div>
          </form>
        </div>`,
      }),
    );

  app.get('/account/password', async (request, reply) => {
    if (!request.session?.user) return reply.redirect(`/login?next=${encodeURIComponent('/account/password')}`);
    return passwordPage(reply, request.session);
  });

  // Logged out: to the login page (before the CSRF check, which a logged-out form would fail).
  const requireLogin = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!request.session?.user) return reply.redirect('/login', 303);
  };

  app.post('/account/password', { onRequest: requireLogin }, async (request, reply) => {
    const values = form(request);
    const session = request.session as WebSession & { user: NonNullable<WebSession['user']> };
    if ((values.current ?? '').length > MAX_PASSWORD_LENGTH || (values.password ?? '').length > MAX_PASSWORD_LENGTH) {
      return passwordPage(reply, session, { kind: 'error', text: `A password is at most ${MAX_PASSWORD_LENGTH.toLocaleString('en-US')} characters.` }, 422);
    }
    const counter = await throttlePasswordChange(db, clock, request, reply, session.user.email);
    const user = await findUserByEmail(db, session.user.email);
    if (!user || !(await verifyPassword(values.current ?? '', user.password_hash))) {
      return passwordPage(reply, session, { kind: 'error', text: 'The current password is incorrect.' }, 401);
    }
    await forgiveAttempt(db, counter); // the current password was right: no guess
    if ((values.password ?? '').length < MIN_PASSWORD_LENGTH) {
      return passwordPage(reply, session, { kind: 'error', text: `The new password must be at least ${MIN_PASSWORD_LENGTH} characters.` }, 422);
    }
    // Ends every session and voids every outstanding reset link of the account, in one transaction.
    await setPassword(db, user.id, values.password!, clock().toISOString());
    const fresh = await logIn(services, request, reply, session.user);
    return passwordPage(reply, fresh, { kind: 'ok', text: 'Password changed. Other sessions were logged out.' });
  });
};
