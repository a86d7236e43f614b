import { Type } from '@sinclair/typebox';
import { DateTime, ExternalId, Nullable } from '../../../../http/schemas.ts';
import { Currency, ID_PATTERN, isObject, refusal, text } from '../../billing-input.ts';
import type { BillingEnvelope, Read } from '../../billing-provider.ts';

// What Tandem reads of a Lemon Squeezy event (docs.lemonsqueezy.com/help/webhooks): `meta`
// (event_name, custom_data) and `data`, a JSON:API resource (type, id, attributes) — an order or
// a subscription invoice — each field by its Lemon Squeezy name. Only this folder knows them.


/** A JSON:API id: Lemon Squeezy's are numbers written as strings. */
const ResourceId = Type.String({ pattern: '^[0-9]{1,20}$' });
const Cents = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const EventName = Type.String({ minLength: 1, maxLength: 100, pattern: ID_PATTERN });

const Payload = Type.Object({
  meta: Type.Object({ event_name: EventName, custom_data: Type.Optional(Nullable(Type.Object({ tandem_referral: Type.Optional(Nullable(ExternalId())) }))) }),
  data: Type.Object({ type: Type.String({ minLength: 1, maxLength: 64, pattern: ID_PATTERN }), id: ResourceId, attributes: Type.Object({}) }),
});

/** Events Lemon Squeezy sends once per resource: the resource alone keys them. */
const ONCE_PER_RESOURCE = new Set(['order_created', 'subscription_payment_success']);

/**
 * The event's type and the id it is stored under. Lemon Squeezy numbers no event, so the id is
 * made of its business keys: the event, the resource (orders/1234) and, for a refund, the
 * refunded total — a redelivery is the same id, a further refund of the same order a new one.
 */
export function readEnvelope(event: unknown): Read<BillingEnvelope> {
  if (!isObject(event)) return { reason: 'The event must be a JSON object.' };
  const refused = refusal(Payload, event, ['#/meta/event_name', '#/data/type', '#/meta/custom_data/tandem_referral']);
  if (refused !== null) return { reason: `${refused}.` };
  const meta = event.meta as { event_name: string };
  const data = event.data as { type: string; id: string; attributes: Record<string, unknown> };
  const a = data.attributes;
  const suffix = meta.event_name.endsWith('_refunded') ? `:${String(a.refunded_amount ?? a.refunded_at ?? '')}` : ONCE_PER_RESOURCE.has(meta.event_name) ? '' : `:${String(a.updated_at ?? '')}`;
  return { value: { id: `${meta.event_name}:${data.type}/${data.id}${suffix}`.slice(0, 200), type: meta.event_name, event } };
}

export interface LemonSqueezyPayment {
  /** The payment's id: its JSON:API resource (orders/1234, subscription-invoices/5678), each type numbered on its own. */
  id: string;
  customerId: string | undefined;
  email: unknown;
  name: unknown;
  referral: string | undefined;
  status: string;
  /** subscription-invoices: initial, renewal, updated. */
  billingReason: string | undefined;
  currency: string;
  total: number;
  tax: number;
  refundedAmount: number | undefined;
  createdAt: string | null;
}

const Attributes = Type.Object({
  customer_id: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
  status: Type.String({ maxLength: 64 }),
  billing_reason: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
  currency: Currency,
  total: Cents,
  tax: Type.Optional(Nullable(Cents)),
  refunded_amount: Type.Optional(Nullable(Cents)),
  created_at: Type.Optional(Nullable(DateTime)),
});

/** An order or a subscription invoice: who paid, what, net of tax, and what of it is refunded. */
export function readPayment(event: Record<string, unknown>): Read<LemonSqueezyPayment> {
  const data = event.data as { type: string; id: string; attributes: Record<string, unknown> };
  const refused = refusal(Type.Object({ attributes: Attributes }), { attributes: data.attributes }, [], (pointer) => `data.${pointer.replace(/^#\//, '').split('/').join('.')}`);
  if (refused !== null) return { reason: refused };
  const a = data.attributes;
  const tax = (a.tax as number | null | undefined) ?? 0;
  if (tax > (a.total as number)) return { reason: `data.attributes.tax ${tax} is more than data.attributes.total ${String(a.total)}` };
  const meta = event.meta as { custom_data?: { tandem_referral?: string | null } | null };
  return {
    value: {
      id: `${data.type}/${data.id}`,
      customerId: typeof a.customer_id === 'number' ? String(a.customer_id) : undefined,
      email: a.user_email,
      name: a.user_name,
      referral: text(meta.custom_data?.tandem_referral),
      status: a.status as string,
      billingReason: text(a.billing_reason),
      currency: a.currency as string,
      total: a.total as number,
      tax,
      refundedAmount: (a.refunded_amount as number | null | undefined) ?? undefined,
      createdAt: text(a.created_at) ?? null,
    },
  };
}
