import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../app-services.ts';
import { readForm } from './dashboard/forms.ts';
import { instanceKey } from '../db/instance-keys.ts';
import { ApiError } from '../domain/errors.ts';
import { createUser, findUserByEmail, hashPassword, MAX_EMAIL_LENGTH, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, overLongAccountField, verifyPassword } from '../modules/users/user.service.ts';
import { html } from './html.ts';
import { csrfField, field, renderPage } from './layout.ts';
import { forgiveAttempt, throttleLogin, throttlePasswordChange, throttleSignUp } from './attempt-throttle.ts';
import { issueDeviceCookie } from './device-cookie.ts';
import { endUserSessions, ensureCsrfBinding, logIn, logOut, safeNextPath, type WebSession } from './session.ts';

type Form = Record<string, string | undefined>;

// A password hash to verify against when the e-mail is unknown, so a login for an unknown
// account takes as long as one for a known account (no enumeration by timing).
const decoyHash = hashPassword('decoy password that never matches');

/** A refused field as the form says it: "Password must be at least 10 characters." */
function sentenceOf(error: ApiError): string {
  const text = `${error.errors?.[0]?.pointer.replace('#/', '') ?? ''} ${error.errors?.[0]?.detail ?? error.detail}`.trim();
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}.`;
}

export const accountRoutes: FastifyPluginAsync<AppServices> = async (app, services) => {
  const { db, clock, config } = services;
  // Device cookies are signed with a key every process shares, read once here.
  const deviceKey = await instanceKey(db, 'device');
  // A repeated field's first value; anything that is not text is left out.
  const form = (request: FastifyRequest): Form => readForm(request);

  // Shown before login: the form's token is bound to the anonymous cookie, so no session row is written.
  function authPage(request: FastifyRequest, reply: FastifyReply, kind: 'login' | 'signup', values: Form = {}, error?: string, status = 200) {
    const next = safeNextPath(values.next);
    const login = kind === 'login';
    const body = html`<div class="card narrow">
      <h1>${login ? 'Log in to Tandem' : 'Create your Tandem account'}</h1>
      <form method="post" action="/${kind}" novalidate>
        ${csrfField(ensureCsrfBinding(services, request, reply))}
        <input type="hidden" name="next" value="${next}">
        ${field({ label: 'E-mail', name: 'email', type: 'email', value: values.email, required: true, autocomplete: 'email', attrs: html`maxlength="${MAX_EMAIL_LENGTH}"` })}
        ${field({
          label: 'Password',
          name: 'password',
          type: 'password',
          required: true,
          autocomplete: login ? 'current-password' : 'new-password',
          attrs: html`maxlength="${MAX_PASSWORD_LENGTH}"`,
          help: login ? undefined : `At least ${MIN_PASSWORD_LENGTH} characters.`,
        })}
        <div class="actions"><button type="submit">${login ? 'Log in' : 'Create account'}</button></div>
      </form>
      <p>${login
        ? html`New here? <a href="/signup?next=${encodeURIComponent(next)}">Create an account</a>.`
        : html`Already have an account? <a href="/login?next=${encodeURIComponent(next)}">Log in</a>.`}</p>
    </div>`;
    return reply
      .code(status)
      .type('text/html; charset=utf-8')
      .send(renderPage({ title: login ? 'Log in' : 'Sign up', session: request.session, body, flash: error ? { kind: 'error', text: error } : undefined }));
  }

  app.get('/', async (request, reply) => reply.redirect(request.session?.user ? '/dashboard' : '/login'));

  app.get('/login', async (request, reply) => {
    if (request.session?.user) return reply.redirect(safeNextPath((request.query as Form).next));
    return authPage(request, reply, 'login', request.query as Form);
  });

  app.post('/login', async (request, reply) => {
    const values = form(request);
    // An over-long field is refused before it is counted or hashed: nothing is written.
    const overLong = overLongAccountField(values);
    if (overLong) return authPage(request, reply, 'login', { next: values.next }, sentenceOf(overLong), 422);
    const counter = await throttleLogin(db, clock, request, reply, deviceKey, values.email);
    const user = values.email ? await findUserByEmail(db, values.email) : undefined;
    const ok = await verifyPassword(values.password ?? '', user?.password_hash ?? (await decoyHash));
    if (!user || !ok) {
      return authPage(request, reply, 'login', { email: values.email, next: values.next }, 'E-mail or password is incorrect.', 401);
    }
    await forgiveAttempt(db, counter);
    await logIn(services, request, reply, { id: user.id, email: user.email });
    issueDeviceCookie(config, reply, deviceKey, user.email, clock());
    return reply.redirect(safeNextPath(values.next), 303);
  });

  app.get('/signup', async (request, reply) => {
    if (request.session?.user) return reply.redirect('/dashboard');
    return authPage(request, reply, 'signup', request.query as Form);
  });

  app.post('/signup', async (request, reply) => {
    const values = form(request);
    const overLong = overLongAccountField(values);
    if (overLong) return authPage(request, reply, 'signup', { next: values.next }, sentenceOf(overLong), 422);
    await throttleSignUp(db, clock, request, reply);
    try {
      const user = await createUser(db, { email: values.email ?? '', password: values.password ?? '' }, clock);
      await logIn(services, request, reply, { id: user.id, email: user.email });
      issueDeviceCookie(config, reply, deviceKey, user.email, clock());
      return reply.redirect(safeNextPath(values.next), 303);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      // The same message whether or not the e-mail is taken would hide typos from honest users;
      // sign-up necessarily reveals that an account exists, so say so plainly but generically.
      const message = error.code === 'conflict' ? 'That e-mail cannot be used. Log in instead, or use another e-mail.' : sentenceOf(error);
      return authPage(request, reply, 'signup', { email: values.email, next: values.next }, message, 422);
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
    await db.updateTable('users').set({ password_hash: await hashPassword(values.password!), updated_at: clock().toISOString() }).where('id', '=', user.id).execute();
    await endUserSessions(db, user.id);
    const fresh = await logIn(services, request, reply, session.user);
    return passwordPage(reply, fresh, { kind: 'ok', text: 'Password changed. Other sessions were logged out.' });
  });
};
