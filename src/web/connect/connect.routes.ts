import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../../app-services.ts';
import { ApiError } from '../../domain/errors.ts';
import { issueAuthorizationCode } from '../../modules/connect/authorization-code.service.ts';
import { createProgram, findUserProgram, listUserPrograms } from '../../modules/programs/program.service.ts';
import { isValidCsrf } from '../csrf.ts';
import type { WebSession } from '../session-store.ts';
import { connectUrl, readConnectRequest, redirectBack, type ConnectRequest } from './connect-request.ts';
import { renderChoosePage, renderConsentPage } from './connect.pages.ts';
import { tokenEndpoint } from './token.routes.ts';

// Spec 5.2 steps 1–3 in the browser: the tool sends the user to choose-affiliate-program; the
// user logs in (and comes back), picks a program, confirms; we redirect to the tool with a
// code. Every step re-reads and re-checks the tool's parameters. The framing, referrer and
// caching headers come from the web plugin's onSend hook (session.ts) for every page.

type Params = { integration: string };
type Form = Record<string, unknown>;
type UserSession = WebSession & { user: NonNullable<WebSession['user']> };

const formExpired = () => Object.assign(new Error('This form has expired. Go back, reload the page and try again.'), { statusCode: 403 });

export const connectRoutes: FastifyPluginAsync<AppServices> = async (app, services) => {
  const { db, clock } = services;

  /** The logged-in user, or a redirect to the login page that returns to `back`. */
  function sessionOrLogin(request: FastifyRequest, reply: FastifyReply, back: string): UserSession | null {
    const session = request.session;
    if (session?.user) return session as UserSession;
    void reply.redirect(`/login?next=${encodeURIComponent(back)}`, 303);
    return null;
  }

  const sendPage = (reply: FastifyReply, page: string, status = 200) => reply.code(status).type('text/html; charset=utf-8').send(page);

  app.get<{ Params: Params; Querystring: Form }>('/connect/:integration/choose-affiliate-program', async (request, reply) => {
    const connect = await readConnectRequest(db, request.params.integration, request.query);
    const session = sessionOrLogin(request, reply, request.url);
    if (!session) return reply;
    const programs = await listUserPrograms(db, session.user.id);
    const selected = typeof request.query.program === 'string' ? request.query.program : undefined;
    return sendPage(reply, renderChoosePage({ session, request: connect, programs, selectedProgramId: selected }));
  });

  // Without JavaScript, "Connect" loads the confirmation as a page instead of a dialog.
  app.get<{ Params: Params; Querystring: Form }>('/connect/:integration/confirm', async (request, reply) => {
    const connect = await readConnectRequest(db, request.params.integration, request.query);
    const session = sessionOrLogin(request, reply, connectUrl(connect, 'choose-affiliate-program'));
    if (!session) return reply;
    const program = typeof request.query.program === 'string' ? await findUserProgram(db, session.user.id, request.query.program) : undefined;
    if (!program) {
      const programs = await listUserPrograms(db, session.user.id);
      return sendPage(reply, renderChoosePage({ session, request: connect, programs, error: 'Choose one of your programs.' }), 422);
    }
    return sendPage(reply, renderConsentPage(session, connect, program));
  });

  // A user without a program creates one without leaving the flow.
  app.post<{ Params: Params; Body: Form }>('/connect/:integration/programs', { config: { csrf: 'in-handler' } }, async (request, reply) => {
    const body = request.body ?? {};
    const connect = await readConnectRequest(db, request.params.integration, body);
    const session = sessionOrLogin(request, reply, connectUrl(connect, 'choose-affiliate-program'));
    if (!session) return reply;
    if (!isValidCsrf(session, body._csrf)) throw formExpired();
    const values = { name: textOf(body.name), domain: textOf(body.domain), logoUrl: textOf(body.logoUrl) };
    try {
      const program = await createProgram(db, { ownerUserId: session.user.id, name: values.name, domain: values.domain, logoUrl: values.logoUrl || null }, clock);
      return reply.redirect(connectUrl(connect, 'choose-affiliate-program', { program: program.id }), 303);
    } catch (error) {
      if (!(error instanceof ApiError) || !error.errors) throw error;
      const errors = Object.fromEntries(error.errors.map((e) => [e.pointer.replace('#/', ''), capitalise(e.detail)]));
      const programs = await listUserPrograms(db, session.user.id);
      return sendPage(reply, renderChoosePage({ session, request: connect, programs, programForm: { values, errors } }), 422);
    }
  });

  // Confirm or Cancel. Only this POST, with the session's CSRF token, issues a code.
  app.post<{ Params: Params; Body: Form }>('/connect/:integration/authorize', { config: { csrf: 'in-handler' } }, async (request, reply) => {
    const body = request.body ?? {};
    const connect = await readConnectRequest(db, request.params.integration, body);
    const session = sessionOrLogin(request, reply, connectUrl(connect, 'choose-affiliate-program'));
    if (!session) return reply;
    if (!isValidCsrf(session, body._csrf)) throw formExpired();
    if (body.decision === 'deny') return reply.redirect(redirectBack(connect, { error: 'access_denied', state: connect.state }), 303);
    if (body.decision !== 'allow') throw new ApiError('bad_request', 'Press Confirm or Cancel.');
    const program = typeof body.program === 'string' ? await findUserProgram(db, session.user.id, body.program) : undefined;
    if (!program) throw new ApiError('bad_request', 'Choose one of your programs, then confirm again.');
    const code = await issueAuthorizationCode(db, grantFor(connect, session.user.id, program.id), clock());
    request.log.info({ integration: connect.integration.name, programId: program.id, userId: session.user.id }, 'connect: code issued');
    return reply.redirect(redirectBack(connect, { code, state: connect.state }), 303);
  });

  await app.register(tokenEndpoint, services);
};

function grantFor(connect: ConnectRequest, userId: string, programId: string) {
  return { integration: connect.integration.name, redirectUri: connect.redirectUri, userId, programId, codeChallenge: connect.codeChallenge };
}

/** A form field as text: a repeated field's first value, '' for anything else. */
function textOf(value: unknown): string {
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' ? first : '';
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1) + '.';
}
