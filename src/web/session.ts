import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../app-services.ts';
import type { Db } from '../db/transaction.ts';
import type { Clock } from '../domain/clock.ts';
import { cookieOptions } from './cookies.ts';
import { ANONYMOUS_COOKIE, newAnonymousCookie, readAnonymousCookie, type CsrfBinding } from './csrf.ts';
import { deleteSession, findSession, insertSession, sessionIdHash, type WebSession } from './session-store.ts';

// Browser sessions: a random id in an HttpOnly, SameSite=Lax cookie (Secure on https sites);
// the database holds only its SHA-256 (session-store.ts), so logout and password changes end
// sessions for real. A session row is written only at login (and at a sign-up, which logs in).
// Before login a visitor's forms are bound to the anonymous cookie instead (csrf.ts), so a
// visitor who only looks at the login page costs no database write.

export const SESSION_COOKIE = 'tandem_session';
const SESSION_DAYS = 14;

declare module 'fastify' {
  interface FastifyInstance {
    /** The key of anonymous CSRF cookies (instance key `csrf`): the same in every process. */
    csrfKey: Buffer;
  }
  interface FastifyRequest {
    session: WebSession | null;
    /** Before login: the binding of a valid anonymous cookie (null with a session, or without one). */
    anonymousCsrf: CsrfBinding | null;
  }
}

/**
 * Sessions and anonymous CSRF cookies for every route of `scope`: `csrfKey` is the instance's
 * key (`instanceKey(db, 'csrf')`), loaded once at startup.
 */
export function registerSessions(scope: FastifyInstance, db: Db, clock: Clock, csrfKey: Buffer): void {
  scope.decorate('csrfKey', csrfKey);
  scope.decorateRequest('session', null);
  scope.decorateRequest('anonymousCsrf', null);
  scope.addHook('onRequest', async (request) => {
    const id = request.cookies[SESSION_COOKIE];
    const session = id && id.length <= 100 ? await findSession(db, id, clock()) : null;
    if (session) request.session = session;
    else request.anonymousCsrf = readAnonymousCookie(csrfKey, request.cookies[ANONYMOUS_COOKIE]);
  });
  // Pages of a session are personal: never cached, never framed.
  scope.addHook('onSend', async (_request, reply, payload) => {
    reply.header('cache-control', 'no-store');
    reply.header('pragma', 'no-cache');
    reply.header('x-frame-options', 'DENY');
    reply.header('referrer-policy', 'no-referrer');
    if (String(reply.getHeader('content-type') ?? '').startsWith('text/html')) {
      reply.header('content-security-policy', "default-src 'self'; img-src 'self' https: data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'");
    }
    return payload;
  });
}

/** Starts a new session of a user (the only place a session row is written) and sets its cookie. */
async function startSession({ db, config, clock }: AppServices, reply: FastifyReply, user: NonNullable<WebSession['user']>): Promise<WebSession> {
  const id = randomBytes(32).toString('base64url');
  const session = { idHash: sessionIdHash(id), csrfSecret: randomBytes(32).toString('base64url'), user };
  const now = clock();
  await insertSession(db, session, now, new Date(now.getTime() + SESSION_DAYS * 86_400_000));
  reply.setCookie(SESSION_COOKIE, id, { ...cookieOptions(config), maxAge: SESSION_DAYS * 86_400 });
  return session;
}

/** What the request's CSRF tokens are bound to: its session, else its anonymous cookie (or nothing). */
export function csrfBindingOf(request: FastifyRequest): CsrfBinding | null {
  return request.session ?? request.anonymousCsrf;
}

/**
 * The binding for a form shown to this visitor: the session's, or an anonymous cookie's, set
 * now when the visitor has none (or a tampered one). Writes nothing to the database.
 */
export function ensureCsrfBinding({ config }: AppServices, request: FastifyRequest, reply: FastifyReply): CsrfBinding {
  const existing = csrfBindingOf(request);
  if (existing) return existing;
  const cookie = newAnonymousCookie(request.server.csrfKey);
  reply.setCookie(ANONYMOUS_COOKIE, cookie.value, cookieOptions(config));
  request.anonymousCsrf = cookie.binding;
  return request.anonymousCsrf;
}

/**
 * Logs a user in on a fresh session id (no session fixation): the old session ends, and the
 * anonymous cookie goes (its tokens are no longer accepted once there is a session).
 */
export async function logIn(services: AppServices, request: FastifyRequest, reply: FastifyReply, user: NonNullable<WebSession['user']>): Promise<WebSession> {
  if (request.session) await deleteSession(services.db, request.session);
  request.session = await startSession(services, reply, user);
  if (request.cookies[ANONYMOUS_COOKIE] !== undefined) reply.clearCookie(ANONYMOUS_COOKIE, cookieOptions(services.config));
  request.anonymousCsrf = null;
  return request.session;
}

export async function logOut({ db, config }: AppServices, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (request.session) await deleteSession(db, request.session);
  request.session = null;
  reply.clearCookie(SESSION_COOKIE, cookieOptions(config));
}
