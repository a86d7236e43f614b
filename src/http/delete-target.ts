import { Type, type Static, type TObject, type TProperties } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { assertValidBody } from './validation.ts';

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
