import { Type, type TSchema, type Static, type TUnsafe } from '@sinclair/typebox';
import { problemResponses, type ProblemCode } from './problem-responses.ts';

// Schema building blocks shared by every route. The same schemas validate input,
// serialise output and generate the OpenAPI document.

/** A nullable value as a JSON type array, which the serializer handles without anyOf. */
export function Nullable<T extends TSchema>(schema: T): TUnsafe<Static<T> | null> {
  const { type, ...rest } = schema as unknown as { type: string } & Record<string, unknown>;
  return Type.Unsafe<Static<T> | null>({ ...rest, type: [type, 'null'] });
}

export const Uuid = Type.String({ format: 'uuid', 'x-lowercase': true });
export const Email = Type.String({ format: 'email', maxLength: 254 });
export const DateTime = Type.String({ format: 'date-time' });
export const Status = Type.String({ format: 'status', description: 'active or inactive, any letter case; returned lowercase' });
export const LinkString = Type.String({ pattern: '^[A-Za-z0-9-]{1,64}$', description: 'letters, digits and hyphens, 1 to 64' });
/**
 * An id from the client's own systems (a customer, invoice, charge or payment-method name):
 * up to 200 characters of text without control characters — tab and line breaks included, which
 * only free text (names, plans) may hold.
 */
export function ExternalId(options: { minLength?: number; description?: string } = {}) {
  return Type.String({ maxLength: 200, pattern: '^[^\\u0000-\\u001f\\u007f]*$', ...options });
}

/** 1 to 200 characters, not all blank (names are stored trimmed). */
export const ShortText = Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' });
export const Money = Type.Number({ minimum: 0, maximum: 1e13, description: 'major units of the currency (49.99)' });
export const Percent = Type.Number({ minimum: 0, maximum: 100, description: 'percentage, 0 to 100, up to 4 decimals' });

export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String(),
    errors: Type.Optional(Type.Array(Type.Object({ pointer: Type.String(), detail: Type.String() }))),
    existingId: Type.Optional(Type.Union([Type.String(), Type.Integer()], { description: 'duplicate_sale / duplicate_referral: the id of the sale or referral already recorded; conflict on POST /webhooks: the id of the webhook that already has the URL' })),
    requestId: Type.String(),
  },
  { $id: 'Problem', description: 'RFC 9457 problem details' },
);

/**
 * The error responses particular to a route, by the codes it can raise: `errorResponses('not_found',
 * ['conflict', 'the link string is taken'])`. Those every API route can return (401, 422, 429, 500 …)
 * are added to the document by api-docs.ts.
 */
export function errorResponses(...codes: ProblemCode[]) {
  return problemResponses(codes);
}

export const ListQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 1000, description: 'page size, 1 to 1000' })),
  cursor: Type.Optional(Type.String({ maxLength: 300, description: 'opaque; taken from the Link rel="next" header' })),
  createdAfter: Type.Optional(Type.String({ format: 'date-time', description: 'only items created strictly after this instant' })),
};
