import { Type, type TSchema } from '@sinclair/typebox';
import { ApiError, type FieldError } from '../../domain/errors.ts';
import { assertCleanInput } from '../../http/input-guard.ts';
import { ExternalId, Nullable } from '../../http/schemas.ts';
import { assertValidBody } from '../../http/validation.ts';
import { CreateReferralBody } from '../referrals/referral.schema.ts';
import { CreateSaleBody } from '../sales/sale.schema.ts';

// What Tandem reads of a Stripe event, by the API's own input rules (issue 29 item 15). A
// signed event is input like a request body, and every value of it that becomes a row goes
// through the checks a request would: the input guard (no NUL or other control character, no
// lone surrogate), the body schemas of POST /referrals and POST /sales, and schemas here for
// what only Stripe sends (its ids, currencies, times). A value they refuse makes the event
// `ignored` with the reason in words, the same on both databases — except a customer's name,
// which is cleaned (cleanName) rather than losing the referral. This is the receiver's input
// side, as a route's validation is: the service takes what it returns.

/** A value read, or why it could not be. */
export type Read<T> = { value: T } | { reason: string };

/** A Stripe id (cus_…, in_…): an id from the client's systems, as the API takes one (1 to 200 characters, no control character). */
const StripeId = ExternalId({ minLength: 1 });
/** A Stripe time (seconds since 1970), within the API's date-times (up to 9999-12-31). */
const MAX_SECONDS = Date.UTC(9999, 11, 31, 23, 59, 59) / 1000;
const Seconds = Type.Integer({ minimum: 0, maximum: MAX_SECONDS });
const Currency = Type.String({ pattern: '^[A-Za-z]{3}$' });
/** tandem_referral as Stripe carries it (client_reference_id takes 200 characters); POST /referrals' affiliateId rule (64) applies when it is used. */
const ReferralText = ExternalId();
const Metadata = Type.Optional(Nullable(Type.Object({ tandem_referral: Type.Optional(Nullable(ReferralText)) })));

const ID_PATTERN = (ExternalId() as { pattern: string }).pattern;
const PATTERN_WORDS: Record<string, string> = {
  [ID_PATTERN]: 'must not contain control characters, line breaks or tabs',
  [Currency.pattern!]: 'must be a three-letter currency code',
};

/** A JSON Pointer (#/data/object/id) as the field's path in the event (data.object.id). */
const pathOf = (pointer: string) => pointer.replace(/^#\/?/, '').split('/').join('.') || 'the event';

function wordsOf(errors: FieldError[], names: (pointer: string) => string): string {
  return errors.map((e) => `${names(e.pointer)} ${e.detail.startsWith('must match pattern') ? (PATTERN_WORDS[/"(.*)"$/.exec(e.detail)?.[1] ?? ''] ?? e.detail) : e.detail}`).join('; ');
}

/** The API's checks of `value`: the input guard on the `strict` fields, then `schema`; the refusal in words, or null. */
function refusal(schema: TSchema, value: unknown, strict: string[], names: (pointer: string) => string = pathOf): string | null {
  try {
    for (const pointer of strict) {
      const field = pointer.split('/').slice(1).reduce<unknown>((at, key) => (at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[key] : undefined), value);
      if (field !== undefined) assertCleanInput(field, pointer);
    }
    assertValidBody(schema, value);
    return null;
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return error.errors?.length ? wordsOf(error.errors, names) : error.detail;
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
/** An expandable reference (an id, or the object with its id) as its id; anything else as it is, for the schema to refuse. */
const idOf = (value: unknown): unknown => (isObject(value) && 'id' in value ? value.id : value);

/** Strings the envelope must hold to be stored at all: the event's id and type. */
const Envelope = Type.Object({ id: StripeId, type: Type.String({ minLength: 1, maxLength: 200, pattern: ID_PATTERN }) });

export interface StripeEnvelope {
  id: string;
  type: string;
  /** The event as Stripe sent it; read through the functions below. */
  event: Record<string, unknown>;
}

/** The event's id and type, which the billing event is stored under; the refusal (a 400: nothing can be recorded) in words. */
export function readEnvelope(event: unknown): Read<StripeEnvelope> {
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
const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

/** A Stripe promotion code (on a Checkout session's or an invoice's discounts): its id, and its code string when expanded. */
export interface Promotion {
  id?: string;
  code?: string;
}

/**
 * The first promotion code among `discounts`. One that no program's code could match (control
 * characters, over 200 characters) matches none, as an unknown code would.
 */
function promotionOf(discounts: unknown): Promotion | null {
  if (!Array.isArray(discounts)) return null;
  const usable = (value: unknown) => (typeof value === 'string' && refusal(StripeId, value, ['#']) === null ? value : undefined);
  for (const discount of discounts) {
    const promotion = isObject(discount) ? discount.promotion_code : undefined;
    if (typeof promotion === 'string') return { id: usable(promotion) };
    if (isObject(promotion)) return { id: usable(promotion.id), code: usable(promotion.code) };
  }
  return null;
}

/** Who a customer is, as Stripe names them: checked when they become a referral (referralBody). */
export interface StripeCustomer {
  id: string;
  email: unknown;
  name: unknown;
}

export interface CustomerEvent {
  customer: StripeCustomer;
  referral: string | undefined;
}

export function readCustomer(event: Record<string, unknown>): Read<CustomerEvent> {
  const read = readObject(event, Type.Object({ id: StripeId, metadata: Metadata }), ['id', 'metadata/tandem_referral']);
  if ('reason' in read) return read;
  const o = read.value;
  return { value: { customer: { id: o.id as string, email: o.email, name: o.name }, referral: text(isObject(o.metadata) ? o.metadata.tandem_referral : undefined) } };
}

export interface CheckoutSession {
  id: string;
  customerId: string | undefined;
  customer: StripeCustomer | undefined;
  referral: string | undefined;
  promotion: Promotion | null;
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
      customer: customerId === undefined ? undefined : { id: customerId, email: details.email, name: details.name },
      referral: text(o.client_reference_id) ?? text(isObject(o.metadata) ? o.metadata.tandem_referral : undefined),
      promotion: promotionOf(o.discounts),
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
  customer: StripeCustomer | undefined;
  amountPaid: unknown;
  currency: string;
  /** API versions before 2025-03-31 name the payment intent on the invoice. */
  paymentIntent: string | undefined;
  paidAt: string | null;
  promotion: Promotion | null;
}

export function readInvoice(event: Record<string, unknown>): Read<Invoice> {
  const schema = Type.Object({
    id: StripeId,
    customer: Type.Optional(Nullable(StripeId)),
    currency: Currency,
    payment_intent: Type.Optional(Nullable(StripeId)),
    status_transitions: Type.Optional(Nullable(Type.Object({ paid_at: Type.Optional(Nullable(Seconds)) }))),
  });
  const read = readObject(event, schema, ['id', 'customer', 'payment_intent'], ['customer', 'payment_intent']);
  if ('reason' in read) return read;
  const o = read.value;
  const customerId = text(o.customer);
  return {
    value: {
      id: o.id as string,
      customerId,
      customer: customerId === undefined ? undefined : { id: customerId, email: o.customer_email, name: o.customer_name },
      amountPaid: o.amount_paid,
      currency: o.currency as string,
      paymentIntent: text(o.payment_intent),
      paidAt: seconds(isObject(o.status_transitions) ? o.status_transitions.paid_at : undefined),
      promotion: promotionOf(o.discounts),
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

// ---------------------------------------------------------------- names, referrals, sales

/** The API's limit of a name (ShortText), in characters (code points, as the schema counts them). */
export const MAX_NAME_LENGTH = 200;
// eslint-disable-next-line no-control-regex -- the input guard's refused characters: C0 but tab, line feed, carriage return; and DEL
const REFUSED_CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * A name from a billing provider, cleaned to what POST /referrals takes rather than refused (a
 * referral is not lost over how a card holder typed their name): each control character the
 * API refuses becomes a space, a lone surrogate U+FFFD, and the name is cut at 200 characters
 * and trimmed. '' when nothing is left (the caller names the customer by their e-mail).
 */
export function cleanName(name: unknown): string {
  if (typeof name !== 'string') return '';
  const cleaned = name.replace(REFUSED_CONTROL, ' ').replace(LONE_SURROGATE, '\ufffd').trim();
  return Array.from(cleaned).slice(0, MAX_NAME_LENGTH).join('').trim();
}

const REFERRAL_FIELDS: Record<string, string> = {
  '#/name': "the customer's name",
  '#/email': "the customer's e-mail",
  '#/referredUserExternalId': 'the customer id',
  '#/affiliateId': 'tandem_referral',
  '#/promoCode': 'the promotional code',
};

/** Who credits the customer: a tandem_referral (an affiliate id or link string), or the program's code matching a promotion code. */
export type Credit = { affiliateId: string } | { promoCode: string };

/** The POST /referrals body for a Stripe customer, checked as the API checks it: the name cleaned, the rest refused with the reason. */
export function referralBody(customer: StripeCustomer, credit: Credit): Read<CreateReferralBody> {
  const email = customer.email;
  const body = { name: cleanName(customer.name) || cleanName(email), email, referredUserExternalId: customer.id, ...credit };
  const refused = refusal(CreateReferralBody, body, ['#/email', '#/referredUserExternalId', '#/affiliateId', '#/promoCode'], (pointer) => REFERRAL_FIELDS[pointer] ?? pathOf(pointer));
  return refused === null ? { value: body as CreateReferralBody } : { reason: refused };
}

const SALE_FIELDS: Record<string, string> = { '#/totalEarned': "the sale's totalEarned", '#/externalInvoiceId': 'the invoice id', '#/referralId': 'the referral' };

/** The POST /sales body of a paid invoice or session, checked as the API checks it. */
export function saleBody(body: CreateSaleBody): Read<CreateSaleBody> {
  const refused = refusal(CreateSaleBody, body, ['#/externalInvoiceId'], (pointer) => SALE_FIELDS[pointer] ?? pathOf(pointer));
  return refused === null ? { value: body } : { reason: refused };
}
