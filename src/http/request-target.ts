import { Type, type Static, type TObject, type TProperties } from '@sinclair/typebox';
import type { FastifyRequest, preValidationAsyncHookHandler } from 'fastify';
import { assertValidBody, assertValidQuery } from './validation.ts';
import { invalidField } from '../domain/errors.ts';

/** `force=true` deletes a resource together with what depends on it (docs/api.md, "Deleting"). */
export const Force = Type.Optional(Type.Boolean({ description: 'also delete (or detach) what depends on the resource; without it such a delete is refused with 409 has_dependents' }));

/**
 * The schema of a DELETE target: every field optional, because the SDKs send the id in the
 * query (`?id=…`) or in a JSON body (`{"id": …}`), and `force`.
 */
export function deleteTargetSchema<P extends TProperties>(properties: P) {
  return Type.Object({ ...properties, force: Force });
}

function isScalar(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/**
 * The query's fields merged with the body's. A field given in both must name the same thing
 * in both (ids, link and code strings ignore letter case), else a 422: a request that names two
 * targets must not act on either.
 */
function mergeTarget(query: Record<string, unknown>, body: Record<string, unknown>): Record<string, unknown> {
  const merged = { ...body };
  for (const [field, value] of Object.entries(query)) {
    if (value === undefined) continue;
    const other = body[field];
    // The body's own value stays, so that its schema still checks its type (an object there is
    // left to it: `{"id": {"toString": 1}}` must not reach String()).
    if (other === undefined) merged[field] = value;
    else if (isScalar(other) && String(other).toLowerCase() !== String(value).toLowerCase()) {
      throw invalidField(`#/${field}`, 'is in the query and in the body with different values; send it once');
    }
  }
  return merged;
}

/**
 * What a DELETE names: the query (validated by the route, coerced from text) with the JSON
 * body (validated here against the same schema, strictly, so `{"id": 5}` is a 422).
 */
export function deleteTarget<T extends TObject>(schema: T, request: FastifyRequest): Static<T> {
  const body = request.body ?? {};
  assertValidBody(schema, body);
  return mergeTarget(request.query as Record<string, unknown>, body as Record<string, unknown>) as Static<T>;
}

/**
 * A PUT names its target in the body or, as DELETE does, in the query (`PUT /sales?saleId=5`).
 * This route hook moves the query's target fields into the body before validation, with
 * mergeTarget's rule, so the body's schema, the Idempotency-Key's request hash and the service
 * all see one request, whichever way the client sent it. The route declares `schema` as its
 * querystring too, for the API reference.
 */
export function targetFromQuery(schema: TObject): preValidationAsyncHookHandler {
  return async (request) => {
    const query = request.query as Record<string, unknown>;
    const target = Object.fromEntries(Object.entries(query).filter(([field, value]) => field in schema.properties && value !== undefined));
    if (Object.keys(target).length === 0) return;
    assertValidQuery(schema, target);
    const body = request.body ?? {};
    // Anything but an object is left to the body's schema to refuse.
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
    request.body = mergeTarget(target, body as Record<string, unknown>);
  };
}

/**
 * The id a PUT or DELETE names under either of its two names (`saleId` or `id`, as different
 * SDKs send it): when both are given they must agree; when neither is, a 422 on the first name
 * (unless `optional`, for targets that can also be named another way).
 */
export function eitherId<T extends string | number>(target: object, first: string, second: string, options: { optional: true }): T | undefined;
export function eitherId<T extends string | number>(target: object, first: string, second: string): T;
export function eitherId<T extends string | number>(target: object, first: string, second: string, options?: { optional: true }): T | undefined {
  const values = target as Record<string, T | undefined>;
  const [a, b] = [values[first], values[second]];
  if (a !== undefined && b !== undefined && a !== b) throw invalidField(`#/${second}`, `names something else than ${first}; send one of them`);
  const id = a ?? b;
  if (id === undefined && !options?.optional) throw invalidField(`#/${first}`, `${first} or ${second} is required`);
  return id as T | undefined;
}
