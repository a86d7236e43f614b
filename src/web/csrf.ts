import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { hmac, sameText } from './cookies.ts';

// CSRF: every form carries a token derived from a secret, its binding: a session's, or before
// login the anonymous cookie's (a random value and its HMAC under the instance's key, stateless),
// so a visitor who only looks at the login page costs no database write. A signed-in affiliate's
// portal forms are bound to the portal session. A form whose token does not match its binding is
// refused with a 403 page (FormExpired, rendered by web.ts) and changes nothing.

export const ANONYMOUS_COOKIE = 'tandem_anon';

/** What a form's CSRF token is derived from: a session's secret, or an anonymous visitor's. */
export interface CsrfBinding {
  csrfSecret: string;
}

declare module 'fastify' {
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

/** The anonymous cookie of `nonce` is `nonce.HMAC(key, nonce)`; its CSRF secret is another HMAC of the nonce. */
const anonymousCookieValue = (key: Buffer, nonce: string) => `${nonce}.${hmac(key, `anonymous-cookie:${nonce}`)}`;
const anonymousBinding = (key: Buffer, nonce: string): CsrfBinding => ({ csrfSecret: hmac(key, `anonymous-csrf:${nonce}`) });

/** The binding of an anonymous cookie; null when it is absent, malformed or not signed with our key (tampered). */
export function readAnonymousCookie(key: Buffer, value: string | undefined): CsrfBinding | null {
  if (!value || value.length > 100) return null;
  const nonce = value.split('.')[0]!;
  return nonce && sameText(value, anonymousCookieValue(key, nonce)) ? anonymousBinding(key, nonce) : null;
}

/** A new anonymous cookie signed with `key`: its value, and the binding of the forms shown with it. */
export function newAnonymousCookie(key: Buffer): { value: string; binding: CsrfBinding } {
  const nonce = randomBytes(32).toString('base64url');
  return { value: anonymousCookieValue(key, nonce), binding: anonymousBinding(key, nonce) };
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

/** A form without a valid CSRF token: nothing was changed. web.ts's error handler renders its 403 page. */
export class FormExpired extends Error {
  readonly statusCode = 403;
  constructor() {
    super('Nothing was changed. Go back, reload the page and try again.');
    this.name = 'FormExpired';
  }
}

/** Refuses the request: throws FormExpired (a 403 page). */
export function rejectForgery(): never {
  throw new FormExpired();
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * CSRF for every page route of `scope` registered after this call: a new form is protected
 * unless its route explicitly opts out (config.csrf). `bindingOf` is what a request's token is
 * checked against (session.ts: its session, else its anonymous cookie).
 */
export function requireCsrfOnUnsafeMethods(scope: FastifyInstance, bindingOf: (request: FastifyRequest) => CsrfBinding | null): void {
  scope.addHook('preHandler', async (request) => {
    if (SAFE_METHODS.has(request.method) || request.routeOptions.config.csrf !== undefined) return;
    if (!isValidCsrf(bindingOf(request), submittedCsrfToken(request))) rejectForgery();
  });
}
