// The one error type of the API. Domain code throws ApiError; the error handler
// (error-handler.ts) turns it into an RFC 9457 problem body with the mapped status.

export const errorStatus = {
  bad_request: 400,
  invalid_cursor: 400,
  unauthorized: 401,
  origin_not_allowed: 403,
  not_found: 404,
  conflict: 409,
  duplicate_sale: 409,
  duplicate_referral: 409,
  idempotency_conflict: 409,
  has_dependents: 409,
  idempotency_key_reused: 422,
  request_timeout: 408,
  payload_too_large: 413,
  validation_failed: 422,
  promo_code_inactive: 422,
  promo_code_expired: 422,
  promo_code_exhausted: 422,
  coupon_invalid: 422,
  promo_code_minimum_amount: 422,
  promo_code_first_time_only: 422,
  promo_code_customer_restricted: 422,
  promo_code_not_assigned: 422,
  affiliate_inactive: 422,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof errorStatus;

export const statusTitle: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Content Too Large',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export interface FieldError {
  /** JSON Pointer into the request body or query, as a URI fragment: `#/email`. */
  pointer: string;
  detail: string;
}

export class ApiError extends Error {
  readonly status: number;
  /** The resource a duplicate_* conflict (or a webhook URL subscribed twice) collided with, so the client can carry on with it. */
  existingId?: string | number;
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly errors?: FieldError[],
  ) {
    super(detail);
    this.status = errorStatus[code];
  }
}

export function notFound(what: string): ApiError {
  return new ApiError('not_found', `${what} was not found.`);
}

export function invalidField(pointer: string, detail: string): ApiError {
  return new ApiError('validation_failed', 'The request is invalid.', [{ pointer, detail }]);
}

export function conflict(detail: string): ApiError {
  return new ApiError('conflict', detail);
}

/** 409 for a second record of what the program already has; `existingId` names the first. */
export function duplicate(code: 'duplicate_sale' | 'duplicate_referral', detail: string, existingId: string | number): ApiError {
  return Object.assign(new ApiError(code, detail), { existingId });
}

/** 409 for a delete that would take other records with it, unless the client asks with force=true. */
export function hasDependents(detail: string): ApiError {
  return new ApiError('has_dependents', `${detail} Send force=true to delete it anyway (docs/api.md, "Deleting").`);
}
