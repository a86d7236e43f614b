import { Type } from '@sinclair/typebox';
import { DateTime, ExternalId, Nullable } from '../../../../http/schemas.ts';
import { Currency, ID_PATTERN, isObject, refusal, text } from '../../billing-input.ts';
import type { BillingCustomer, DiscountCode, Read } from '../../billing-provider.ts';

// What Tandem reads of a Polar event (polar.sh/docs/integrate/webhooks): `{ type, timestamp,
// data }` with an order or a customer as `data`, each field by its Polar name. Only this folder
// knows them.


const PolarId = ExternalId({ minLength: 1 });
const Cents = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const Metadata = Type.Optional(Nullable(Type.Object({ tandem_referral: Type.Optional(Nullable(ExternalId())) })));
const Customer = Type.Object({ id: PolarId, metadata: Metadata, created_at: Type.Optional(Nullable(DateTime)) });

export const EventType = Type.String({ minLength: 1, maxLength: 200, pattern: ID_PATTERN });

const referralIn = (metadata: unknown) => text(isObject(metadata) ? metadata.tandem_referral : undefined);
const customerOf = (c: Record<string, unknown>): BillingCustomer => ({ id: c.id as string, email: c.email, name: c.name, since: text(c.created_at) ?? null });

/** customer.created / customer.updated: the customer, their e-mail and metadata. */
export function readCustomer(event: Record<string, unknown>): Read<{ customer: BillingCustomer; referral: string | undefined }> {
  const refused = refusal(Type.Object({ data: Customer }), { data: event.data }, ['#/data/id', '#/data/metadata/tandem_referral']);
  if (refused !== null) return { reason: refused };
  const data = event.data as Record<string, unknown>;
  return { value: { customer: customerOf(data), referral: referralIn(data.metadata) } };
}

export interface PolarOrder {
  id: string;
  status: string;
  paid: boolean;
  customer: BillingCustomer;
  /** The order's metadata (its checkout's), else the customer's. */
  referral: string | undefined;
  discount: DiscountCode | null;
  currency: string;
  /** After discounts, before tax. */
  netAmount: number;
  /** What is refunded of it so far, before tax (cumulative). */
  refundedAmount: number;
  createdAt: string;
}

const Order = Type.Object({
  id: PolarId,
  status: Type.String({ maxLength: 64 }),
  paid: Type.Optional(Type.Boolean()),
  currency: Currency,
  net_amount: Cents,
  refunded_amount: Type.Optional(Nullable(Cents)),
  metadata: Metadata,
  created_at: DateTime,
  customer: Customer,
  discount: Type.Optional(Nullable(Type.Object({ id: Type.Optional(Nullable(PolarId)), code: Type.Optional(Nullable(PolarId)) }))),
});

/** order.paid / order.refunded: the order, its customer, metadata, discount and amounts. */
export function readOrder(event: Record<string, unknown>): Read<PolarOrder> {
  const refused = refusal(Type.Object({ data: Order }), { data: event.data }, ['#/data/id', '#/data/metadata/tandem_referral', '#/data/customer/id', '#/data/customer/metadata/tandem_referral', '#/data/discount/id', '#/data/discount/code']);
  if (refused !== null) return { reason: refused };
  const d = event.data as Record<string, unknown>;
  const customer = d.customer as Record<string, unknown>;
  const discount = isObject(d.discount) ? { id: text(d.discount.id), code: text(d.discount.code) } : null;
  return {
    value: {
      id: d.id as string,
      status: d.status as string,
      paid: d.paid !== false && (d.status === 'paid' || d.status === 'refunded' || d.status === 'partially_refunded'),
      customer: customerOf(customer),
      referral: referralIn(d.metadata) ?? referralIn(customer.metadata),
      discount,
      currency: d.currency as string,
      netAmount: d.net_amount as number,
      refundedAmount: (d.refunded_amount as number | null | undefined) ?? 0,
      createdAt: d.created_at as string,
    },
  };
}
