import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppServices } from '../app-services.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/transaction.ts';
import type { Clock } from '../domain/clock.ts';
import { html } from './html.ts';
import { renderPage } from './layout.ts';

// Browser sessions: a random id in an HttpOnly, SameSite=Lax cookie (Secure on https sites);
// the database holds only its SHA-256, so logout and password changes end sessions for real.
// A session row is written only at login (and at a sign-up, which logs in). Every form carries
// a CSRF token derived from a secret: the session's, or before login the anonymous cookie's
// (a random value and its HMAC under the instance's key, stateless), so a visitor who only
// looks at the login page costs no database write.

export const SESSION_COOKIE = 'tandem_session';
export const ANONYMOUS_COOKIE = 'tandem_anon';
const SESSION_DAYS = 14;

/** What a form's CSRF token is derived from: a session's secret, or an anonymous visitor's. */
export interface CsrfBinding {
  csrfSecret: string;
}

export interface WebSession extends CsrfBinding {
  idHash: string;
  user: { id: string; email: string } | null;
}

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
  interface FastifyContextConfig {
    /**
     * Unsafe methods need the CSRF token, checked before the handler, unless the route says
     * otherwise: `in-handler` (it checks the token itself, after steps that must come first,
     * such as sending a logged-out user to log in) or `exempt` (not a browser form: the
     * connect flow's token endpoint).
     */
    csrf?: 'in-handler' | 'exempt';
  }
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
export const hmac = (key: Buffer | string, text: string) => createHmac('sha256', key).update(text).digest('base64url');

/** Compares two texts in constant time (for their length). */
export function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The anonymous cookie of `nonce` is `nonce.HMAC(key, nonce)`; its CSRF secret is another HMAC of the nonce. */
const anonymousCookieValue = (key: Buffer, nonce: string) => `${nonce}.${hmac(key, `anonymous-cookie:${nonce}`)}`;
const anonymousBinding = (key: Buffer, nonce: string): CsrfBinding => ({ csrfSecret: hmac(key, `anonymous-csrf:${nonce}`) });

/** The binding of an anonymous cookie; null when it is absent, malformed or not signed with our key (tampered). */
function readAnonymousCookie(key: Buffer, value: string | undefined): CsrfBinding | null {
  if (!value || value.length > 100) return null;
  const nonce = value.split('.')[0]!;
  return nonce && sameText(value, anonymousCookieValue(key, nonce)) ? anonymousBinding(key, nonce) : null;
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
    const row = id && id.length <= 100
      ? await db
          .selectFrom('sessions as s')
          .leftJoin('users as u', 'u.id', 's.user_id')
          .select(['s.id_hash', 's.csrf_secret', 's.user_id', 'u.email'])
          .where('s.id_hash', '=', sha256(id))
          .where('s.expires_at', '>', clock().toISOString())
          .executeTakeFirst()
      : undefined;
    if (!row) {
      request.anonymousCsrf = readAnonymousCookie(csrfKey, request.cookies[ANONYMOUS_COOKIE]);
      return;
    }
    request.session = {
      idHash: row.id_hash,
      csrfSecret: row.csrf_secret,
      user: row.user_id && row.email ? { id: row.user_id, email: row.email } : null,
    };
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

/** The attributes of every Tandem cookie: HttpOnly, SameSite=Lax, Secure when SITE_URL is https. */
export function cookieOptions(config: Config) {
  return { httpOnly: true, sameSite: 'lax' as const, secure: config.siteUrl.startsWith('https:'), path: '/' };
}

/** Starts a new session of a user (the only place a session row is written) and sets its cookie. */
async function startSession({ db, config, clock }: AppServices, reply: FastifyReply, user: NonNullable<WebSession['user']>): Promise<WebSession> {
  const id = randomBytes(32).toString('base64url');
  const session: WebSession = { idHash: sha256(id), csrfSecret: randomBytes(32).toString('base64url'), user };
  const now = clock();
  await db
    .insertInto('sessions')
    .values({
      id_hash: session.idHash,
      user_id: user.id,
      csrf_secret: session.csrfSecret,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + SESSION_DAYS * 86_400_000).toISOString(),
    })
    .execute();
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
  const key = request.server.csrfKey;
  const nonce = randomBytes(32).toString('base64url');
  reply.setCookie(ANONYMOUS_COOKIE, anonymousCookieValue(key, nonce), cookieOptions(config));
  request.anonymousCsrf = anonymousBinding(key, nonce);
  return request.anonymousCsrf;
}

/**
 * Logs a user in on a fresh session id (no session fixation): the old session ends, and the
 * anonymous cookie goes (its tokens are no longer accepted once there is a session).
 */
export async function logIn(services: AppServices, request: FastifyRequest, reply: FastifyReply, user: NonNullable<WebSession['user']>): Promise<WebSession> {
  if (request.session) await services.db.deleteFrom('sessions').where('id_hash', '=', request.session.idHash).execute();
  request.session = await startSession(services, reply, user);
  if (request.cookies[ANONYMOUS_COOKIE] !== undefined) reply.clearCookie(ANONYMOUS_COOKIE, cookieOptions(services.config));
  request.anonymousCsrf = null;
  return request.session;
}

export async function logOut({ db, config }: AppServices, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (request.session) await db.deleteFrom('sessions').where('id_hash', '=', request.session.idHash).execute();
  request.session = null;
  reply.clearCookie(SESSION_COOKIE, cookieOptions(config));
}

export function csrfToken(binding: CsrfBinding): string {
  return hmac(binding.csrfSecret, 'csrf');
}

/**
 * The binding of a signed-in affiliate's portal forms: derived from the portal session's id (the
 * cookie's secret value) under the instance key, so a token works only with the session it was
 * shown in — not in another affiliate's, nor once that session has ended.
 */
export function portalSessionBinding(key: Buffer, portalSessionId: string): CsrfBinding {
  return { csrfSecret: hmac(key, `portal-session-csrf:${portalSessionId}`) };
}

/** The token a form sent (`_csrf`; a repeated field's first value). */
export function submittedCsrfToken(request: FastifyRequest): unknown {
  const body = request.body as Record<string, unknown> | undefined;
  const token = body && typeof body === 'object' ? body._csrf : undefined;
  return Array.isArray(token) ? token[0] : token;
}

/** The one CSRF check, for sessions and anonymous visitors alike: constant time, nothing written. */
export function isValidCsrf(binding: CsrfBinding | null, token: unknown): boolean {
  return binding !== null && typeof token === 'string' && sameText(token, csrfToken(binding));
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The 403 page of a form without a valid CSRF token: nothing was changed. */
export function rejectForgery(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return reply
    .code(403)
    .type('text/html; charset=utf-8')
    .send(
      renderPage({
        title: 'Form expired',
        session: request.session,
        body: html`<div class="card narrow"><h1>This form has expired</h1><p>Nothing was changed. Go back, reload the page and try again.</p></div>`,
      }),
    );
}

/**
 * CSRF for every page route of `scope` registered after this call: a new form is protected
 * unless its route explicitly opts out (config.csrf).
 */
export function requireCsrfOnUnsafeMethods(scope: FastifyInstance): void {
  scope.addHook('preHandler', async (request, reply) => {
    if (SAFE_METHODS.has(request.method) || request.routeOptions.config.csrf !== undefined) return;
    if (!isValidCsrf(csrfBindingOf(request), submittedCsrfToken(request))) return rejectForgery(request, reply);
  });
}

const LOCAL = 'http://tandem.invalid';

function hasControlOrBackslash(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x7f || c === 0x5c) return true;
  }
  return false;
}

/**
 * A path on this site to return to after login; anything else becomes /dashboard. The value is
 * resolved the way a browser would and must stay on the same origin: control characters
 * (browsers drop tabs and newlines, so `/\t/evil.example` is `//evil.example`), backslashes
 * (read as slashes) and paths that normalise to `//host` (`/.//evil.example`) are refused.
 */
export function safeNextPath(next: unknown): string {
  if (typeof next !== 'string' || next.length > 2000 || !next.startsWith('/') || hasControlOrBackslash(next)) return '/dashboard';
  let url: URL;
  try {
    url = new URL(next, LOCAL);
  } catch {
    return '/dashboard';
  }
  const path = url.pathname + url.search + url.hash;
  return url.origin === LOCAL && !path.startsWith('//') ? path : '/dashboard';
}
