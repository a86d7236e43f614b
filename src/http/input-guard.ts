import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { addRouteHook, BODY_METHODS } from './route-hooks.ts';
import { ApiError } from '../domain/errors.ts';
import { malformedEncoding } from './error-handler.ts';

// One input discipline for both databases, applied to every API body and query before any
// other work: a bounded nesting depth, and no control characters that SQLite stores but
// PostgreSQL refuses (NUL) or that no field means to hold. Tab and line breaks stay allowed in
// text; fields that are identifiers refuse them through their own patterns.

/** Deepest nesting of arrays and objects a body may have (the API's own bodies use 3). */
export const MAX_BODY_DEPTH = 32;

/** C0 controls other than tab, line feed and carriage return, and DEL. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/**
 * Half of a UTF-16 surrogate pair without its other half (JSON can write one: "\ud800"). It is
 * no character, has no UTF-8 form, and each database stored something else in its place
 * (SQLite three U+FFFD, PostgreSQL one) while the 201 echoed it: found by the fuzzer.
 */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** JSON Pointer escaping of a key (RFC 6901). */
function pointerPart(key: string | number): string {
  return String(key).replace(/~/g, '~0').replace(/\//g, '~1');
}

function refuseText(pointer: string, text: string): ApiError | null {
  if (CONTROL.test(text)) return new ApiError('validation_failed', 'The request is invalid.', [{ pointer, detail: 'must not contain control characters (NUL and other C0 codes)' }]);
  if (LONE_SURROGATE.test(text)) return new ApiError('validation_failed', 'The request is invalid.', [{ pointer, detail: 'must be valid Unicode (no lone surrogate such as \\ud800)' }]);
  return null;
}

/**
 * Walks a parsed body or query without recursion (so no depth can overflow the stack) and
 * throws the first problem: nesting deeper than MAX_BODY_DEPTH, or a control character or a
 * lone surrogate in a string or a key.
 */
export function assertCleanInput(value: unknown, root = '#'): void {
  const stack: [unknown, string, number][] = [[value, root, 0]];
  while (stack.length > 0) {
    const [current, pointer, depth] = stack.pop()!;
    if (typeof current === 'string') {
      const refused = refuseText(pointer, current);
      if (refused) throw refused;
    } else if (current !== null && typeof current === 'object') {
      if (depth >= MAX_BODY_DEPTH) throw new ApiError('bad_request', `The request body is nested deeper than ${MAX_BODY_DEPTH} levels.`);
      for (const [key, child] of Object.entries(current)) {
        const at = `${pointer}/${pointerPart(key)}`;
        const refused = refuseText(at, key);
        if (refused) throw refused;
        stack.push([child, at, depth + 1]);
      }
    }
  }
}

/**
 * Refuses a query string with a broken %-escape (`%zz`, a lone `%`, `%E0%A4%A`, or escapes that
 * are no UTF-8 such as an encoded lone surrogate): the parser would keep such text as it came,
 * so a filter would silently match something else than what the client meant.
 */
export function assertWellEncodedQuery(url: string): void {
  const start = url.indexOf('?');
  if (start === -1) return;
  try {
    decodeURIComponent(url.slice(start + 1));
  } catch {
    throw new ApiError('bad_request', malformedEncoding('query string'));
  }
}

/**
 * The query's checks (assertWellEncodedQuery, then assertCleanInput on the parsed query), skipped
 * when they cannot find anything: without a %-escape and without a control character in the
 * URL, the parsed query holds only the URL's own characters (no control character, and no lone
 * surrogate, which only an escape can spell), in the flat shape the query parser makes. Most
 * requests take that path: their query is an id or a page size.
 */
export function assertCleanQuery(url: string, query: unknown): void {
  const start = url.indexOf('?');
  if (start === -1 || (url.indexOf('%', start) === -1 && !CONTROL.test(url))) return;
  assertWellEncodedQuery(url);
  assertCleanInput(query);
}

/**
 * For every route of `scope`: the query is checked in the first hook, the parsed body before
 * validation (and so before the idempotency layer hashes it or a service reads it).
 */
export function guardApiInput(scope: FastifyInstance): void {
  // Synchronous: no promise per request for a check that never waits.
  scope.addHook('onRequest', (request, _reply, done) => {
    try {
      assertCleanQuery(request.url, request.query);
    } catch (error) {
      return done(error as Error);
    }
    done();
  });
  // Only routes whose method carries a body (route-hooks.ts).
  addRouteHook(scope, BODY_METHODS, 'preValidation', (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
    try {
      if (request.body !== undefined) assertCleanInput(request.body);
    } catch (error) {
      return done(error as Error);
    }
    done();
  });
}
