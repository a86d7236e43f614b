import Stripe from 'stripe';
import { unique } from './fixtures.ts';

// Stripe's side of a test: events shaped as Stripe sends them (trimmed to what Tandem reads),
// signed with the official package as Stripe signs them, posted to a real server.

const stripe = new Stripe('sk_test_unused');

/** A Stripe-style id (`cus_…`, `in_…`): letters and digits only, as Stripe's are. */
export const stripeId = (prefix: string) => `${prefix}_${unique('x').replace(/[^A-Za-z0-9]/g, '')}`;

/** A Stripe event of `type` around `object`, created now. */
export function stripeEvent(type: string, object: Record<string, unknown>) {
  return { id: stripeId('evt'), object: 'event', api_version: '2025-03-31.basil', created: Math.floor(Date.now() / 1000), type, data: { object } };
}

/**
 * Posts `body` to the program's Stripe receiver at `baseUrl`, signed with `secret` (none: no
 * Stripe-Signature header; `signature`: this header instead of a good one).
 */
export async function postStripeEvent(baseUrl: string, programId: string, body: object, secret: string | null, signature?: string) {
  const payload = JSON.stringify(body);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (secret !== null) headers['stripe-signature'] = signature ?? stripe.webhooks.generateTestHeaderString({ payload, secret });
  const res = await fetch(`${baseUrl}/api/billing/stripe/${programId}`, { method: 'POST', headers, body: payload });
  return { status: res.status, headers: res.headers, body: await res.json() };
}
