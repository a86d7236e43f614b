import Stripe from 'stripe';
import type { Db } from '../../db/transaction.ts';
import { inTransaction } from '../../db/transaction.ts';
import { instanceKey } from '../../db/instance-keys.ts';
import type { PageRequest } from '../../db/keyset.ts';
import { toIso } from '../../domain/clock.ts';
import { ApiError, invalidField } from '../../domain/errors.ts';
import { fromMinorUnits } from '../../domain/money.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { createReferral, getReferral } from '../referrals/referral.service.ts';
import { createSale } from '../sales/sale.service.ts';
import { insertBillingEventOnce, listBillingEvents, setStripeSecret, stripeSecretOf, type BillingEventRow } from './billing.repository.ts';
import { open, seal } from './sealed-secret.ts';

// Stripe, connected by one signing secret (issue 20; CONTRACT "Billing providers (Stripe)").
// POST /api/billing/stripe/{programId} verifies each event with the official package (5-minute
// tolerance), turns what it understands into referrals and sales through the same services as
// the API, and stores the event once with its outcome. The work is idempotent by Stripe's own
// ids — a customer is a referral's referredUserExternalId, an invoice a sale's
// externalInvoiceId — so an event delivered twice, even to two processes at once, records
// once: the second finds the first's referral or sale (duplicate_* is a success here) and its
// event row (the insert does nothing).

const stripe = new Stripe('sk_unused_only_webhook_verification');
const TOLERANCE_SECONDS = 300;
const SECRET = /^whsec_[A-Za-z0-9+/=_-]{8,200}$/;

const billingKey = (db: Db) => instanceKey(db, 'billing-secrets');

/** Saves (or replaces) a program's Stripe webhook signing secret, sealed; it is never shown again. */
export async function connectStripe(db: Db, programId: string, secret: string, now: string): Promise<void> {
  if (!SECRET.test(secret)) throw invalidField('#/stripeWebhookSecret', 'must be a Stripe webhook signing secret (whsec_…)');
  await setStripeSecret(db, programId, seal(await billingKey(db), secret), now);
}

export interface BillingEvent {
  id: string;
  provider: 'stripe';
  type: string;
  receivedAt: string;
  outcome: BillingEventRow['outcome'];
  reason: string | null;
  referralId: string | null;
  saleId: number | null;
}

export function serializeBillingEvent(row: BillingEventRow): BillingEvent {
  return {
    id: row.id,
    provider: row.provider,
    type: row.type,
    receivedAt: toIso(row.created_at),
    outcome: row.outcome,
    reason: row.reason,
    referralId: row.referral_id,
    saleId: row.sale_id === null ? null : Number(row.sale_id),
  };
}

export function getBillingEventPage(db: Db, program: ProgramContext, page: PageRequest): Promise<BillingEventRow[]> {
  return listBillingEvents(db, program.id, page);
}

type Outcome = Pick<BillingEventRow, 'outcome' | 'reason' | 'referral_id' | 'sale_id'>;
const ignored = (reason: string): Outcome => ({ outcome: 'ignored', reason, referral_id: null, sale_id: null });

/** The id a 409 duplicate names: recording it again is the success the event asks for. */
function existingIdOf(error: unknown): string | number | undefined {
  return error instanceof ApiError && (error.code === 'duplicate_referral' || error.code === 'duplicate_sale') ? (error as ApiError & { existingId?: string | number }).existingId : undefined;
}

async function referCustomer(db: Db, program: ProgramContext, customer: { id: string; email?: string | null; name?: string | null }, ref: string | null | undefined): Promise<Outcome> {
  if (!ref) return ignored('no tandem_referral (client_reference_id or metadata) names an affiliate');
  if (!customer.email) return ignored('the customer has no e-mail');
  try {
    const referral = await createReferral(db, program, { name: customer.name || customer.email, email: customer.email, referredUserExternalId: customer.id, affiliateId: ref });
    return { outcome: 'recorded', reason: null, referral_id: referral.id, sale_id: null };
  } catch (error) {
    const existing = existingIdOf(error);
    if (existing !== undefined) return { outcome: 'recorded', reason: 'the customer was already referred', referral_id: String(existing), sale_id: null };
    if (error instanceof ApiError && error.status < 500) return ignored(error.detail);
    throw error;
  }
}

async function sellInvoice(db: Db, program: ProgramContext, invoice: Stripe.Invoice): Promise<Outcome> {
  if (!invoice.amount_paid || invoice.amount_paid <= 0) return ignored('nothing was paid');
  if (invoice.currency.toUpperCase() !== program.currency) return ignored(`paid in ${invoice.currency.toUpperCase()}, not the program's ${program.currency}`);
  const customerId = typeof invoice.customer === 'string' ? invoice.customer : invoice.customer?.id;
  if (!customerId) return ignored('the invoice names no customer');
  let referralId: string;
  try {
    referralId = (await getReferral(db, program, { externalId: customerId })).id;
  } catch {
    return ignored(`the customer ${customerId} is not a referred customer`);
  }
  try {
    const sale = await createSale(db, program, { referralId, totalEarned: fromMinorUnits(invoice.amount_paid, program.currency), externalInvoiceId: invoice.id! });
    return { outcome: 'recorded', reason: null, referral_id: referralId, sale_id: sale.id };
  } catch (error) {
    const existing = existingIdOf(error);
    if (existing !== undefined) return { outcome: 'recorded', reason: 'the invoice was already recorded', referral_id: referralId, sale_id: Number(existing) };
    if (error instanceof ApiError && error.status < 500) return ignored(error.detail);
    throw error;
  }
}

async function handle(db: Db, program: ProgramContext, event: Stripe.Event): Promise<Outcome> {
  switch (event.type) {
    case 'customer.created':
    case 'customer.updated': {
      const customer = event.data.object;
      return referCustomer(db, program, customer, customer.metadata?.tandem_referral);
    }
    case 'checkout.session.completed': {
      const session = event.data.object;
      const customerId = typeof session.customer === 'string' ? session.customer : session.customer?.id;
      if (!customerId) return ignored('the session has no customer');
      return referCustomer(db, program, { id: customerId, email: session.customer_details?.email, name: session.customer_details?.name }, session.client_reference_id ?? session.metadata?.tandem_referral);
    }
    case 'invoice.paid':
      return sellInvoice(db, program, event.data.object);
    default:
      return ignored(`${event.type} is not an event Tandem uses`);
  }
}

/**
 * One delivery from Stripe: verified, handled, stored once. Throws a 400 for a missing or bad
 * signature (nothing recorded); answers whether the event was new.
 */
export async function receiveStripeEvent(db: Db, program: ProgramContext, rawBody: Buffer, signature: string | undefined): Promise<{ received: true; duplicate: boolean }> {
  const sealed = await stripeSecretOf(db, program.id);
  if (!sealed) throw new ApiError('bad_request', 'Stripe is not connected to this program: save its webhook signing secret first.');
  let event: Stripe.Event;
  try {
    event = stripe.webhooks.constructEvent(rawBody, signature ?? '', open(await billingKey(db), sealed), TOLERANCE_SECONDS);
  } catch {
    throw new ApiError('bad_request', 'The Stripe-Signature header is missing, or does not match this program\'s signing secret within 5 minutes.');
  }
  const outcome = await handle(db, program, event);
  const stored = await inTransaction(db, (tx) =>
    insertBillingEventOnce(tx, { program_id: program.id, id: event.id, provider: 'stripe', type: event.type, created_at: program.clock().toISOString(), ...outcome }),
  );
  return { received: true, duplicate: !stored };
}

/** The Stripe section of the dashboard: whether a secret is saved, and the newest events. */
export async function getStripeStatus(db: Db, program: ProgramContext, shown: number): Promise<{ connected: boolean; events: BillingEvent[] }> {
  const [sealed, rows] = await Promise.all([stripeSecretOf(db, program.id), listBillingEvents(db, program.id, { limit: shown - 1 })]);
  return { connected: Boolean(sealed), events: rows.slice(0, shown).map(serializeBillingEvent) };
}
