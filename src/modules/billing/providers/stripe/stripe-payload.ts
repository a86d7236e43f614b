import { Type, type TSchema } from '@sinclair/typebox';
import { ExternalId, Nullable } from '../../../../http/schemas.ts';
import { Currency, ID_PATTERN, isObject, pathOf, refusal, text } from '../../billing-input.ts';
import type { BillingCustomer, BillingEnvelope, DiscountCode, Read } from '../../billing-provider.ts';

// What Tandem reads of a Stripe event (billing-input.ts says by which rules): Stripe's objects,
// their ids, currencies and times, each field by its Stripe name. Only this folder knows them.

/** A Stripe id (cus_…, in_…): an id from the client's systems, as the API takes one (1 to 200 characters, no control character). */
const StripeId = ExternalId({ minLength: 1 });
/** A Stripe time (seconds since 1970), within the API's date-times (up to 9999-12-31). */
const MAX_SECONDS = Date.UTC(9999, 11, 31, 23, 59, 59) / 1000;
const Seconds = Type.Integer({ minimum: 0, maximum: MAX_SECONDS });
/** tandem_referral as Stripe carries it (client_reference_id takes 200 characters); POST /referrals' affiliateId rule (64) applies when it is used. */
const ReferralText = ExternalId();
const Metadata = Type.Optional(Nullable(Type.Object({ tandem_referral: Type.Optional(Nullable(ReferralText)) })));

/** An expandable reference (an id, or the object with its id) as its id; anything else as it is, for the schema to refuse. */
const idOf = (value: unknown): unknown => (isObject(value) && 'id' in value ? value.id : value);

/** Strings the envelope must hold to be stored at all: the event's id and type. */
const Envelope = Type.Object({ id: StripeId, type: Type.String({ minLength: 1, maxLength: 200, pattern: ID_PATTERN }) });

/** The event's id and type, which the billing event is stored under; the refusal (a 400: nothing can be recorded) in words. */
export function readEnvelope(event: unknown): Read<BillingEnvelope> {
  if (!isObject(event)) return { reason: 'The event must be a JSON object.' };
  const refused = refusal(Envelope, { id: event.id, type: event.type }, ['#/id', '#/type'], (pointer) => `The event's ${pathOf(pointer)}`);
  return refused === null ? { value: { id: event.id as string, type: event.type as string, event } } : { reason: `${refused}.` };
}

/** Reads data.object (and the event's `created`) against `object`'s schema, its `strict` fields (paths in the object) through the input guard. */
function readObject(event: Record<string, unknown>, object: TSchema, strict: string[], expandable: string[] = [], created = false): Read<Record<string, unknown>> {
  const data = isObject(event.data) ? event.data.object : undefined;
  const copy = isObject(data) ? { ...data } : data;
  if (isObject(copy)) for (const key of expandable) if (key in copy) copy[key] = idOf(copy[key]);
  const shape = Type.Object({ ...(created ? { created: Seconds } : {}), data: Type.Object({ object }) });
  const refused = refusal(shape, { created: event.created, data: { object: copy } }, strict.map((path) => `#/data/object/${path}`));
  return refused === null ? { value: copy as Record<string, unknown> } : { reason: refused };
}

const seconds = (value: unknown) => (typeof value === 'number' ? new Date(value * 1000).toISOString() : null);

/**
 * The first promotion code of an invoice's or session's discounts: `discounts[]` (each a discount
 * object, or its id, which names no promotion code), or the single `discount` of API versions up
 * to 2024-06-20, which many accounts are still pinned to. One that no program's code could match
 * (control characters, over 200 characters) matches none, as an unknown code would.
 */
function promotionOf(object: Record<string, unknown>): DiscountCode | null {
  const discounts = [...(Array.isArray(object.discounts) ? object.discounts : []), object.discount];
  const usable = (value: unknown) => (typeof value === 'string' && refusal(StripeId, value, ['#']) === null ? value : undefined);
  for (const discount of discounts) {
    const promotion = isObject(discount) ? discount.promotion_code : undefined;
    if (typeof promotion === 'string') return { id: usable(promotion) };
    if (isObject(promotion)) return { id: usable(promotion.id), code: usable(promotion.code) };
  }
  return null;
}

export interface CustomerEvent {
  customer: BillingCustomer;
  referral: string | undefined;
}

export function readCustomer(event: Record<string, unknown>): Read<CustomerEvent> {
  const read = readObject(event, Type.Object({ id: StripeId, metadata: Metadata, created: Type.Optional(Nullable(Seconds)) }), ['id', 'metadata/tandem_referral']);
  if ('reason' in read) return read;
  const o = read.value;
  return { value: { customer: { id: o.id as string, email: o.email, name: o.name, since: seconds(o.created) }, referral: text(isObject(o.metadata) ? o.metadata.tandem_referral : undefined) } };
}

export interface CheckoutSession {
  id: string;
  customerId: string | undefined;
  customer: BillingCustomer | undefined;
  referral: string | undefined;
  promotion: DiscountCode | null;
  /** A paid one-time payment without an invoice: the session is the sale. */
  isPaidPayment: boolean;
  amountTotal: unknown;
  currency: string | undefined;
  paymentIntent: string | undefined;
  createdAt: string | null;
}

export function readCheckoutSession(event: Record<string, unknown>): Read<CheckoutSession> {
  const schema = Type.Object({
    id: StripeId,
    customer: Type.Optional(Nullable(StripeId)),
    client_reference_id: Type.Optional(Nullable(ReferralText)),
    metadata: Metadata,
    customer_details: Type.Optional(Nullable(Type.Object({}))),
    currency: Type.Optional(Nullable(Currency)),
    payment_intent: Type.Optional(Nullable(StripeId)),
    created: Type.Optional(Nullable(Seconds)),
  });
  const read = readObject(event, schema, ['id', 'customer', 'client_reference_id', 'metadata/tandem_referral', 'payment_intent'], ['customer', 'payment_intent', 'invoice']);
  if ('reason' in read) return read;
  const o = read.value;
  const customerId = text(o.customer);
  const details = isObject(o.customer_details) ? o.customer_details : {};
  return {
    value: {
      id: o.id as string,
      customerId,
      // The customer came with the session (a Checkout session is dated when it was opened).
      customer: customerId === undefined ? undefined : { id: customerId, email: details.email, name: details.name, since: seconds(o.created) },
      referral: text(o.client_reference_id) ?? text(isObject(o.metadata) ? o.metadata.tandem_referral : undefined),
      promotion: promotionOf(o),
      isPaidPayment: o.mode === 'payment' && o.payment_status === 'paid' && !o.invoice && Boolean(o.amount_total),
      amountTotal: o.amount_total,
      currency: text(o.currency),
      paymentIntent: text(o.payment_intent),
      createdAt: seconds(o.created),
    },
  };
}

export interface Invoice {
  id: string;
  customerId: string | undefined;
  customer: BillingCustomer | undefined;
  amountPaid: unknown;
  currency: string;
  /** API versions before 2025-03-31 name the payment intent on the invoice. */
  paymentIntent: string | undefined;
  paidAt: string | null;
  promotion: DiscountCode | null;
}

export function readInvoice(event: Record<string, unknown>): Read<Invoice> {
  const schema = Type.Object({
    id: StripeId,
    customer: Type.Optional(Nullable(StripeId)),
    currency: Currency,
    payment_intent: Type.Optional(Nullable(StripeId)),
    status_transitions: Type.Optional(Nullable(Type.Object({ paid_at: Type.Optional(Nullable(Seconds)) }))),
    created: Type.Optional(Nullable(Seconds)),
  });
  const read = readObject(event, schema, ['id', 'customer', 'payment_intent'], ['customer', 'payment_intent']);
  if ('reason' in read) return read;
  const o = read.value;
  const customerId = text(o.customer);
  return {
    value: {
      id: o.id as string,
      customerId,
      // A customer referred by the invoice's promotion code came with the invoice.
      customer: customerId === undefined ? undefined : { id: customerId, email: o.customer_email, name: o.customer_name, since: seconds(o.created) ?? seconds(isObject(o.status_transitions) ? o.status_transitions.paid_at : undefined) },
      amountPaid: o.amount_paid,
      currency: o.currency as string,
      paymentIntent: text(o.payment_intent),
      paidAt: seconds(isObject(o.status_transitions) ? o.status_transitions.paid_at : undefined),
      promotion: promotionOf(o),
    },
  };
}

export interface Charge {
  currency: string;
  amountRefunded: unknown;
  /** API versions before 2025-03-31 name the invoice on the charge. */
  invoiceId: string | undefined;
  paymentIntent: string | undefined;
}

export function readCharge(event: Record<string, unknown>): Read<Charge> {
  const schema = Type.Object({ currency: Currency, invoice: Type.Optional(Nullable(StripeId)), payment_intent: Type.Optional(Nullable(StripeId)) });
  const read = readObject(event, schema, ['invoice', 'payment_intent'], ['invoice', 'payment_intent']);
  if ('reason' in read) return read;
  const o = read.value;
  return { value: { currency: o.currency as string, amountRefunded: o.amount_refunded, invoiceId: text(o.invoice), paymentIntent: text(o.payment_intent) } };
}

export interface Dispute {
  id: string;
  paymentIntent: string | undefined;
  status: string;
  /** The event's `created`: how the dispute's events are ordered. */
  eventCreatedAt: string;
}

export function readDispute(event: Record<string, unknown>): Read<Dispute> {
  const schema = Type.Object({ id: StripeId, payment_intent: Type.Optional(Nullable(StripeId)), status: StripeId });
  const read = readObject(event, schema, ['id', 'payment_intent', 'status'], ['payment_intent'], true);
  if ('reason' in read) return read;
  const o = read.value;
  return { value: { id: o.id as string, paymentIntent: text(o.payment_intent), status: o.status as string, eventCreatedAt: seconds(event.created)! } };
}

export interface InvoicePayment {
  invoiceId: string | undefined;
  paymentIntent: string | undefined;
}

export function readInvoicePayment(event: Record<string, unknown>): Read<InvoicePayment> {
  const schema = Type.Object({ invoice: Type.Optional(Nullable(StripeId)), payment: Type.Optional(Nullable(Type.Object({ payment_intent: Type.Optional(Nullable(StripeId)) }))) });
  const read = readObject(event, schema, ['invoice', 'payment/payment_intent'], ['invoice']);
  if ('reason' in read) return read;
  const o = read.value;
  return { value: { invoiceId: text(o.invoice), paymentIntent: text(isObject(o.payment) ? o.payment.payment_intent : undefined) } };
}

