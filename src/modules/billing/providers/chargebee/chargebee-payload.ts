import { Type } from '@sinclair/typebox';
import { ExternalId, Nullable } from '../../../../http/schemas.ts';
import { Currency, ID_PATTERN, isObject, pathOf, refusal, text } from '../../billing-input.ts';
import type { BillingCustomer, BillingEnvelope, DiscountCode, Read } from '../../billing-provider.ts';

// What Tandem reads of a Chargebee event (apidocs.chargebee.com/docs/api/events): `{ id,
// event_type, occurred_at, content }` with the customer, invoice, transaction and credit note the
// event is about in `content`, each field by its Chargebee name. Only this folder knows them.


const ChargebeeId = ExternalId({ minLength: 1 });
const Cents = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
/** Chargebee's times: seconds since 1970, within the API's date-times. */
const Seconds = Type.Integer({ minimum: 0, maximum: Date.UTC(9999, 11, 31, 23, 59, 59) / 1000 });
const seconds = (value: unknown) => (typeof value === 'number' ? new Date(value * 1000).toISOString() : null);

const Envelope = Type.Object({ id: ChargebeeId, type: Type.String({ minLength: 1, maxLength: 200, pattern: ID_PATTERN }) });

/** The event's id and event_type; the refusal (a 400) in words. */
export function readEnvelope(event: unknown): Read<BillingEnvelope> {
  if (!isObject(event)) return { reason: 'The event must be a JSON object.' };
  const refused = refusal(Envelope, { id: event.id, type: event.event_type }, ['#/id', '#/type'], (pointer) => `The event's ${pointer === '#/id' ? 'id' : 'event_type'}`);
  return refused === null ? { value: { id: event.id as string, type: event.event_type as string, event } } : { reason: `${refused}.` };
}

const Customer = Type.Object({
  id: ChargebeeId,
  cf_tandem_referral: Type.Optional(Nullable(ExternalId())),
  meta_data: Type.Optional(Nullable(Type.Object({ tandem_referral: Type.Optional(Nullable(ExternalId())) }))),
  created_at: Type.Optional(Nullable(Seconds)),
});
const CUSTOMER_STRICT = ['id', 'cf_tandem_referral', 'meta_data/tandem_referral'];

export interface ChargebeeCustomer {
  customer: BillingCustomer;
  /** The customer's custom field cf_tandem_referral, else meta_data.tandem_referral. */
  referral: string | undefined;
}

function customerOf(c: Record<string, unknown>): ChargebeeCustomer {
  const name = [c.first_name, c.last_name].filter((part) => typeof part === 'string' && part !== '').join(' ');
  return {
    customer: { id: c.id as string, email: c.email, name: name || c.company, since: seconds(c.created_at) },
    referral: text(c.cf_tandem_referral) ?? text(isObject(c.meta_data) ? c.meta_data.tandem_referral : undefined),
  };
}

/** `content` read against `schema`, the `strict` paths (in content) through the input guard; the refusal names content.… fields. */
function readContent<K extends string>(event: Record<string, unknown>, schema: Record<K, ReturnType<typeof Type.Object>>, strict: string[]): Read<Record<K, Record<string, unknown>>> {
  const refused = refusal(Type.Object({ content: Type.Object(schema) }), { content: event.content }, strict.map((path) => `#/content/${path}`), pathOf);
  return refused === null ? { value: event.content as Record<K, Record<string, unknown>> } : { reason: refused };
}

/** customer_created / customer_changed. */
export function readCustomerEvent(event: Record<string, unknown>): Read<ChargebeeCustomer> {
  const read = readContent(event, { customer: Customer }, CUSTOMER_STRICT.map((path) => `customer/${path}`));
  return 'reason' in read ? read : { value: customerOf(read.value.customer) };
}

const Invoice = Type.Object({
  id: ChargebeeId,
  currency_code: Currency,
  total: Cents,
  tax: Type.Optional(Nullable(Cents)),
  paid_at: Type.Optional(Nullable(Seconds)),
  discounts: Type.Optional(Nullable(Type.Array(Type.Object({ entity_type: Type.Optional(Type.String({ maxLength: 64 })), entity_id: Type.Optional(Nullable(ChargebeeId)), coupon_set_code: Type.Optional(Nullable(ChargebeeId)) }), { maxItems: 100 }))),
});
const Transaction = Type.Object({ id: ChargebeeId, amount: Cents, currency_code: Currency, date: Type.Optional(Nullable(Seconds)), status: Type.Optional(Type.String({ maxLength: 64 })) });

export interface ChargebeePayment {
  invoiceId: string;
  customer: ChargebeeCustomer;
  discount: DiscountCode | null;
  currency: string;
  /** The invoice's total net of tax. */
  netOfTax: number;
  total: number;
  transactionId: string;
  transactionAmount: number;
  transactionStatus: string | undefined;
  paidAt: string | null;
}

/** payment_succeeded / payment_refunded: the transaction, the invoice it pays or refunds, and the customer. */
export function readPayment(event: Record<string, unknown>): Read<ChargebeePayment> {
  const read = readContent(event, { transaction: Transaction, invoice: Invoice, customer: Customer }, [
    'transaction/id',
    'invoice/id',
    ...CUSTOMER_STRICT.map((path) => `customer/${path}`),
    'invoice/discounts',
  ]);
  if ('reason' in read) return read;
  const { transaction, invoice, customer } = read.value;
  const tax = (invoice.tax as number | null | undefined) ?? 0;
  if (tax > (invoice.total as number)) return { reason: `content.invoice.tax ${tax} is more than content.invoice.total ${String(invoice.total)}` };
  const coupon = (Array.isArray(invoice.discounts) ? invoice.discounts : []).find((d: { entity_type?: string }) => typeof d.entity_type === 'string' && d.entity_type.endsWith('_coupon'));
  return {
    value: {
      invoiceId: invoice.id as string,
      customer: customerOf(customer),
      discount: coupon ? { id: text(coupon.entity_id), code: text(coupon.coupon_set_code) } : null,
      currency: invoice.currency_code as string,
      netOfTax: (invoice.total as number) - tax,
      total: invoice.total as number,
      transactionId: transaction.id as string,
      transactionAmount: transaction.amount as number,
      transactionStatus: text(transaction.status),
      paidAt: seconds(transaction.date) ?? seconds(invoice.paid_at),
    },
  };
}
