import { Type, type TSchema } from '@sinclair/typebox';
import { DateTime, ExternalId, Nullable } from '../../../../http/schemas.ts';
import { Currency, ID_PATTERN, isObject, refusal, text } from '../../billing-input.ts';
import type { BillingCustomer, BillingEnvelope, Read } from '../../billing-provider.ts';

// What Tandem reads of a Paddle Billing event (developer.paddle.com/webhooks), by the rules
// billing-input.ts names: the envelope (event_id, event_type, occurred_at, data) and the
// customer, transaction and adjustment entities, each field by its Paddle name. Only this
// folder knows them.

/** A Paddle id (ctm_…, txn_…, adj_…, dsc_…) as the API takes an id from a client's systems. */
const PaddleId = ExternalId({ minLength: 1 });
/** Paddle's times: RFC 3339, as the API's date-times. */
const Time = DateTime;
/** An amount as Paddle sends it: a string of the currency's lowest denomination. */
const Amount = Type.String({ pattern: '^\\d{1,16}$', description: 'minor units as a digit string' });
const CustomData = Type.Optional(Nullable(Type.Object({ tandem_referral: Type.Optional(Nullable(ExternalId())) })));

const referralOf = (data: Record<string, unknown>) => text(isObject(data.custom_data) ? data.custom_data.tandem_referral : undefined);

const Envelope = Type.Object({ id: PaddleId, type: Type.String({ minLength: 1, maxLength: 200, pattern: ID_PATTERN }) });

/** The event's id and type (event_id, event_type), which the billing event is stored under; the refusal (a 400) in words. */
export function readEnvelope(event: unknown): Read<BillingEnvelope> {
  if (!isObject(event)) return { reason: 'The event must be a JSON object.' };
  const refused = refusal(Envelope, { id: event.event_id, type: event.event_type }, ['#/id', '#/type'], (pointer) => `The event's ${pointer === '#/id' ? 'event_id' : 'event_type'}`);
  return refused === null ? { value: { id: event.event_id as string, type: event.event_type as string, event } } : { reason: `${refused}.` };
}

/** `data` read against `schema`, its `strict` fields through the input guard; the refusal names the field as `data.…`. */
function readData(event: Record<string, unknown>, schema: TSchema, strict: string[]): Read<Record<string, unknown>> {
  const refused = refusal(Type.Object({ data: schema }), { data: event.data }, strict.map((path) => `#/data/${path}`));
  return refused === null ? { value: event.data as Record<string, unknown> } : { reason: refused };
}

export interface PaddleCustomer {
  customer: BillingCustomer;
  referral: string | undefined;
}

/** customer.created / customer.updated: the customer entity, with its e-mail and its custom_data. */
export function readCustomer(event: Record<string, unknown>): Read<PaddleCustomer> {
  const read = readData(event, Type.Object({ id: PaddleId, custom_data: CustomData, created_at: Type.Optional(Nullable(Time)) }), ['id', 'custom_data/tandem_referral']);
  if ('reason' in read) return read;
  const d = read.value;
  return { value: { customer: { id: d.id as string, email: d.email, name: d.name, since: text(d.created_at) ?? null }, referral: referralOf(d) } };
}

export interface PaddleTransaction {
  id: string;
  status: string;
  customerId: string | undefined;
  referral: string | undefined;
  discountId: string | undefined;
  currency: string;
  /** What the customer paid net of tax (details.totals: total − tax), in Paddle's minor units. */
  netOfTax: number;
  createdAt: string | null;
  paidAt: string | null;
}

const Totals = Type.Object({ total: Amount, tax: Amount });

/** transaction.completed: the transaction, its customer, custom_data, discount and totals. */
export function readTransaction(event: Record<string, unknown>): Read<PaddleTransaction> {
  const schema = Type.Object({
    id: PaddleId,
    status: Type.String({ maxLength: 64 }),
    customer_id: Type.Optional(Nullable(PaddleId)),
    discount_id: Type.Optional(Nullable(PaddleId)),
    custom_data: CustomData,
    currency_code: Currency,
    details: Type.Object({ totals: Totals }),
    created_at: Type.Optional(Nullable(Time)),
    billed_at: Type.Optional(Nullable(Time)),
    payments: Type.Optional(Nullable(Type.Array(Type.Object({ status: Type.Optional(Type.String({ maxLength: 64 })), captured_at: Type.Optional(Nullable(Time)) }), { maxItems: 1000 }))),
  });
  const read = readData(event, schema, ['id', 'customer_id', 'discount_id', 'custom_data/tandem_referral']);
  if ('reason' in read) return read;
  const d = read.value;
  const totals = (d.details as { totals: { total: string; tax: string } }).totals;
  const net = Number(totals.total) - Number(totals.tax);
  if (net < 0) return { reason: `data.details.totals.tax ${totals.tax} is more than data.details.totals.total ${totals.total}` };
  // Paid when its payment was captured; a transaction billed without one (an invoice) when billed.
  const captured = (Array.isArray(d.payments) ? d.payments : []).find((p: { status?: string; captured_at?: string | null }) => p.status === 'captured' && p.captured_at);
  return {
    value: {
      id: d.id as string,
      status: d.status as string,
      customerId: text(d.customer_id),
      referral: referralOf(d),
      discountId: text(d.discount_id),
      currency: d.currency_code as string,
      netOfTax: net,
      createdAt: text(d.created_at) ?? null,
      paidAt: text(captured?.captured_at) ?? text(d.billed_at) ?? text(event.occurred_at) ?? null,
    },
  };
}

export interface PaddleAdjustment {
  id: string;
  action: string;
  status: string;
  transactionId: string;
  currency: string;
  /** What the adjustment pays back net of tax (totals: total − tax), in Paddle's minor units. */
  netOfTax: number;
}

/** adjustment.created / adjustment.updated: a refund or chargeback of a transaction, by its own totals. */
export function readAdjustment(event: Record<string, unknown>): Read<PaddleAdjustment> {
  const schema = Type.Object({
    id: PaddleId,
    action: Type.String({ maxLength: 64 }),
    status: Type.String({ maxLength: 64 }),
    transaction_id: PaddleId,
    currency_code: Currency,
    totals: Totals,
  });
  const read = readData(event, schema, ['id', 'transaction_id', 'action', 'status']);
  if ('reason' in read) return read;
  const d = read.value;
  const totals = d.totals as { total: string; tax: string };
  const net = Number(totals.total) - Number(totals.tax);
  if (net < 0) return { reason: `data.totals.tax ${totals.tax} is more than data.totals.total ${totals.total}` };
  return { value: { id: d.id as string, action: d.action as string, status: d.status as string, transactionId: d.transaction_id as string, currency: d.currency_code as string, netOfTax: net } };
}

