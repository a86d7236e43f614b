import { Type, type Static, type TObject, type TProperties } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { assertValidBody } from './validation.ts';
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

/**
 * What a DELETE names: the query (validated by the route, coerced from text) merged over the
 * JSON body (validated here against the same schema, strictly, so `{"id": 5}` is a 422).
 */
export function deleteTarget<T extends TObject>(schema: T, request: FastifyRequest): Static<T> {
  const body = request.body ?? {};
  assertValidBody(schema, body);
  const query = Object.fromEntries(Object.entries(request.query as Record<string, unknown>).filter(([, value]) => value !== undefined));
  return { ...(body as object), ...query } as Static<T>;
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
