import { Type } from '@sinclair/typebox';
import { errorStatus, statusTitle, type ErrorCode, type FieldError } from '../domain/errors.ts';

// The error responses of the API reference. Each is an RFC 9457 problem body
// (application/problem+json, the shared `Problem` schema), described by the codes it can carry,
// with one example body per code. A route declares the codes particular to it
// (`errorResponses('not_found', 'conflict')` in http/schemas.ts); the ones every API route can
// return (401, 422, 429 …) are added to the document by api-docs.ts, so they are written once.
//
// The same objects are the routes' response schemas: Fastify serialises a reply by its content
// type, and sendProblem answers every problem as application/problem+json.

export const PROBLEM_TYPE = 'application/problem+json';

/** What each code means, generically; a route may say it more precisely where it declares the code. */
export const PROBLEM_MEANING: Record<ErrorCode, string> = {
  bad_request: 'the request cannot be read: a body that is not JSON or not sent as `application/json`, an empty or too deeply nested body, or a path or query string with a broken %-escape',
  invalid_cursor: 'a `cursor` this list did not issue (forged, altered, or taken from another list or program); start again without it',
  unauthorized: 'the bearer token is missing, unknown or revoked (the answer carries `WWW-Authenticate: Bearer`)',
  origin_not_allowed: "the page reporting (its `Origin`) is not on the program's domain or one of its subdomains; nothing is recorded",
  not_found: 'nothing with that id, e-mail, link or code in this program (a record of another program is not found either)',
  conflict: 'a value that must be unique in the program is taken (an e-mail, a link or code string, an `externalId`), or the change is not allowed (`detail` says which)',
  duplicate_sale: 'the program already recorded a sale with this `externalInvoiceId`; `existingId` is that sale, nothing is written',
  duplicate_referral: 'the program already has a referral with this `referredUserExternalId`; `existingId` is that referral, nothing is written',
  idempotency_conflict: 'a request with the same `Idempotency-Key` is still running; retry in a moment',
  has_dependents: 'other records depend on it; nothing is deleted — send `force=true` to delete (or detach) them too',
  idempotency_key_reused: 'the `Idempotency-Key` was used with a different request; use a new key',
  request_timeout: 'the request did not arrive within the server\'s time limit',
  payload_too_large: 'the body is larger than 1 MiB',
  validation_failed: 'the body or query fails validation; `errors` holds a JSON Pointer (`#/field`) and a reason per field',
  promo_code_inactive: "the promotional code's `active` is false",
  promo_code_expired: 'the promotional code is past its `expiresAt`',
  promo_code_exhausted: "the promotional code's `timesRedeemed` reached its `maxRedemptions`",
  coupon_invalid: "the code's coupon is not `valid`, is past its `redeemBy`, or reached its own `maxRedemptions`",
  promo_code_minimum_amount: "the sale's `totalEarned` is below the code's `minimumAmount`",
  promo_code_first_time_only: 'the code is for first orders (`firstTimeOrder`) and the customer already has a sale',
  promo_code_customer_restricted: "the code is limited to one customer (`limitToCustomers`) and this is another",
  promo_code_not_assigned: 'the code is assigned to no affiliate (nobody to credit), or is limited to its own affiliate and another would be credited',
  affiliate_inactive: 'the affiliate to credit is inactive (or not approved); nothing is written and no code is spent',
  rate_limited: "over the program's request limit per minute; `Retry-After` says when to retry",
  internal: 'something unexpected failed; quote the `requestId` when reporting it (never a stack trace)',
  unavailable: 'PostgreSQL only: every pooled database connection stayed busy (overload); nothing was written, retry after `Retry-After`',
};

/** A realistic `detail` (and the extra members) of each code's example body. */
const EXAMPLE: Record<ErrorCode, { detail: string; errors?: FieldError[]; existingId?: string | number }> = {
  bad_request: { detail: 'The request body is not valid JSON.' },
  invalid_cursor: { detail: 'The cursor is not one this list issued; start again without it.' },
  unauthorized: { detail: 'The bearer token is unknown or revoked.' },
  origin_not_allowed: { detail: "Pages at https://evil.example are not on this program's domain (acme.com)." },
  not_found: { detail: 'Affiliate was not found.' },
  conflict: { detail: 'An affiliate with e-mail jane.doe@example.com already exists in this program.' },
  duplicate_sale: { detail: 'A sale with externalInvoiceId "in_1QxLm2Ab3cD4eF5g" is already recorded in this program.', existingId: 3121 },
  duplicate_referral: { detail: 'A referral with referredUserExternalId "cus_RkT9wQ2mZ8aB1c" already exists in this program.', existingId: '0b8f4f5e-3c2a-4d7e-9b1a-6f2e8c4d1a90' },
  idempotency_conflict: { detail: 'A request with this Idempotency-Key is still being processed; retry later.' },
  has_dependents: { detail: 'The affiliate has 3 referral(s), 5 sale(s) and 1 promotional code(s); deleting them deletes their referrals and sales and unassigns their codes. Send force=true to delete it anyway (docs/api.md, "Deleting").' },
  idempotency_key_reused: { detail: 'This Idempotency-Key was used with a different request; use a new key.' },
  request_timeout: { detail: 'The request did not arrive in time.' },
  payload_too_large: { detail: 'The request body is larger than 1 MiB.' },
  validation_failed: { detail: 'The request body is invalid.', errors: [{ pointer: '#/email', detail: 'must match format "email"' }] },
  promo_code_inactive: { detail: 'The promotional code "SPRING25" is inactive.' },
  promo_code_expired: { detail: 'The promotional code "SPRING25" has expired.' },
  promo_code_exhausted: { detail: 'The promotional code "SPRING25" has reached its 100 redemptions.' },
  coupon_invalid: { detail: 'The coupon of "SPRING25" is not valid.' },
  promo_code_minimum_amount: { detail: 'The promotional code "SPRING25" needs a purchase of at least its minimum amount.' },
  promo_code_first_time_only: { detail: 'The promotional code "SPRING25" is for first orders only.' },
  promo_code_customer_restricted: { detail: 'The promotional code "SPRING25" is limited to another customer.' },
  promo_code_not_assigned: { detail: 'The promotional code "SPRING25" is not assigned to an affiliate, so nobody can be credited.' },
  affiliate_inactive: { detail: 'The affiliate Jane Doe (6f1c2b4a-8d3e-4f5a-9b7c-2e1d0a3b4c5d) is inactive and cannot be credited.' },
  rate_limited: { detail: 'Rate limit of 6000 requests per minute exceeded; retry in 12 seconds.' },
  internal: { detail: 'An unexpected error occurred. Quote the requestId when reporting it.' },
  unavailable: { detail: 'The server is busy; retry after the time in Retry-After.' },
};

/** Why a promotional code given as `promoCode` is not redeemed (422), in the order they are checked. */
export const PROMO_CODE_REFUSALS = [
  'promo_code_inactive',
  'promo_code_expired',
  'promo_code_exhausted',
  'coupon_invalid',
  'promo_code_minimum_amount',
  'promo_code_first_time_only',
  'promo_code_customer_restricted',
  'promo_code_not_assigned',
] as const satisfies readonly ErrorCode[];

/** A code, or a code with what it means on this route. */
export type ProblemCode = ErrorCode | readonly [ErrorCode, string];

interface ProblemExample {
  summary: string;
  /** What the code means on this route; the response's description lists these. */
  description: string;
  value: Record<string, unknown>;
}

export interface ProblemResponse {
  description: string;
  /** OpenAPI response headers (documentation only). */
  headers?: Record<string, { type: string; description: string }>;
  content: { [PROBLEM_TYPE]: { schema: { $ref: string }; examples: Record<string, ProblemExample> } };
}

const RETRY_AFTER = { 'Retry-After': { type: 'integer', description: 'seconds to wait before retrying' } };
const HEADERS: Partial<Record<number, ProblemResponse['headers']>> = {
  401: { 'WWW-Authenticate': { type: 'string', description: '`Bearer`' } },
  429: RETRY_AFTER,
  503: RETRY_AFTER,
};

function example(code: ErrorCode, meaning: string): ProblemExample {
  const status = errorStatus[code];
  const { detail, errors, existingId } = EXAMPLE[code];
  return {
    summary: code,
    description: meaning,
    value: {
      type: 'about:blank',
      title: statusTitle[status] ?? 'Error',
      status,
      detail,
      code,
      ...(errors ? { errors } : {}),
      ...(existingId !== undefined ? { existingId } : {}),
      requestId: '5d0c6b1e-2f4a-4c8e-9a3b-7e1f0d2c3b4a',
    },
  };
}

export function isProblemResponse(value: unknown): value is ProblemResponse {
  return typeof value === 'object' && value !== null && PROBLEM_TYPE in ((value as { content?: object }).content ?? {});
}

/**
 * The problem responses for `codes`, one per status: its description lists its codes and what
 * each means, and it has an example body of each. Added to `into` when given: a status `into`
 * already has as a problem response gains the codes it lacks, after its own (the first meaning
 * named for a code wins); a status `into` answers otherwise is left alone.
 */
export function problemResponses(codes: readonly ProblemCode[], into: Record<string, unknown> = {}): Record<string, unknown> {
  const out: Record<string, unknown> = { ...into };
  for (const entry of codes) {
    const [code, meaning]: readonly [ErrorCode, string] = typeof entry === 'string' ? [entry, PROBLEM_MEANING[entry]] : entry;
    const status = errorStatus[code];
    const existing = out[status];
    if (existing !== undefined && !isProblemResponse(existing)) continue;
    const examples = { ...existing?.content[PROBLEM_TYPE].examples };
    if (code in examples) continue;
    examples[code] = example(code, meaning);
    out[status] = {
      description: Object.entries(examples).map(([name, { description }]) => `- \`${name}\`: ${description}`).join('\n'),
      ...(HEADERS[status] ? { headers: HEADERS[status] } : {}),
      content: { [PROBLEM_TYPE]: { schema: Type.Ref('Problem'), examples } },
    } satisfies ProblemResponse;
  }
  return out;
}
