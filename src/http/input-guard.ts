import type { FastifyInstance } from 'fastify';
import { ApiError } from '../domain/errors.ts';

// One input discipline for both databases, applied to every API body and query before any
// other work: a bounded nesting depth, and no control characters that SQLite stores but
// PostgreSQL refuses (NUL) or that no field means to hold. Tab and line breaks stay allowed in
// text; fields that are identifiers refuse them through their own patterns.

/** Deepest nesting of arrays and objects a body may have (the API's own bodies use 3). */
export const MAX_BODY_DEPTH = 32;

/** C0 controls other than tab, line feed and carriage return, and DEL. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** JSON Pointer escaping of a key (RFC 6901). */
function pointerPart(key: string | number): string {
  return String(key).replace(/~/g, '~0').replace(/\//g, '~1');
}

function refuseControl(pointer: string): ApiError {
  return new ApiError('validation_failed', 'The request is invalid.', [{ pointer, detail: 'must not contain control characters (NUL and other C0 codes)' }]);
}

/**
 * Walks a parsed body or query without recursion (so no depth can overflow the stack) and
 * throws the first problem: nesting deeper than MAX_BODY_DEPTH, or a control character in a
 * string or a key.
 */
export function assertCleanInput(value: unknown, root = '#'): void {
  const stack: [unknown, string, number][] = [[value, root, 0]];
  while (stack.length > 0) {
    const [current, pointer, depth] = stack.pop()!;
    if (typeof current === 'string') {
      if (CONTROL.test(current)) throw refuseControl(pointer);
    } else if (current !== null && typeof current === 'object') {
      if (depth >= MAX_BODY_DEPTH) throw new ApiError('bad_request', `The request body is nested deeper than ${MAX_BODY_DEPTH} levels.`);
      for (const [key, child] of Object.entries(current)) {
        const at = `${pointer}/${pointerPart(key)}`;
        if (CONTROL.test(key)) throw refuseControl(at);
        stack.push([child, at, depth + 1]);
      }
    }
  }
}

/**
 * For every route of `scope`: the query is checked in the first hook, the parsed body before
 * validation (and so before the idempotency layer hashes it or a service reads it).
 */
export function guardApiInput(scope: FastifyInstance): void {
  scope.addHook('onRequest', async (request) => {
    assertCleanInput(request.query);
  });
  scope.addHook('preValidation', async (request) => {
    if (request.body !== undefined) assertCleanInput(request.body);
  });
}
