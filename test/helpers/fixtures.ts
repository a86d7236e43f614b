import assert from 'node:assert/strict';
import type { ApiClient, ApiResponse } from './test-server.ts';

// The one set of test fixtures: unique names, the formats responses use, and resources made
// through the API the way a client makes them (each call asserts its 201 and returns the body).

let seq = 0;

/** A string no other call in this process returns, letters and digits only: `Code7x12345`. */
export function unique(prefix: string): string {
  return `${prefix}${++seq}x${process.pid}`;
}

/** A unique, lower-case e-mail address. */
export function uniqueEmail(prefix = 'user'): string {
  return `${unique(prefix).toLowerCase()}@example.com`;
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Timestamps as the API writes them: ISO 8601 UTC with milliseconds. */
export const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The body of a response that must have `status` (201 unless said otherwise). */
export async function created<T = any>(response: Promise<ApiResponse> | ApiResponse, status = 201): Promise<T> {
  const res = await response;
  assert.equal(res.status, status, JSON.stringify(res.body));
  return res.body as T;
}

type Fields = Record<string, unknown>;

export function newAffiliate<T = any>(client: ApiClient, fields: Fields = {}): Promise<T> {
  return created<T>(client.post('/affiliates', { firstName: 'Ada', lastName: unique('Last'), email: uniqueEmail('aff'), ...fields }));
}

export function newCoupon<T = any>(client: ApiClient, fields: Fields = {}): Promise<T> {
  return created<T>(client.post('/coupons', { name: unique('Coupon'), couponType: 'PERCENTAGE', percentOff: 10, ...fields }));
}

/** A promotional code; `fields` must name the coupon (couponId). */
export function newCode<T = any>(client: ApiClient, fields: Fields): Promise<T> {
  return created<T>(client.post('/promotional-codes', { code: unique('CODE').toUpperCase(), ...fields }));
}

/** A referral; `fields` must say whom to credit (affiliateId, or a promoCode). */
export function newReferral<T = any>(client: ApiClient, fields: Fields): Promise<T> {
  return created<T>(client.post('/referrals', { name: 'Carla Customer', email: uniqueEmail('customer'), referredUserExternalId: unique('cus'), ...fields }));
}

/** A sale; `fields` must say whom to credit (referralId, email of a referral, or promoCode). */
export function newSale<T = any>(client: ApiClient, fields: Fields): Promise<T> {
  return created<T>(client.post('/sales', { name: 'Customer', email: uniqueEmail('customer'), totalEarned: 100, ...fields }));
}
