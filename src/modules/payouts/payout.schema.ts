import { Type, type Static } from '@sinclair/typebox';
import { DateTime, ExternalId, ListQuery, Nullable, Uuid } from '../../http/schemas.ts';

export const PAYOUT_STATUSES = ['pending', 'paid', 'failed'] as const;

/** A payout (CONTRACT "Payouts"): its amount and recipient are frozen when it is made. */
export const PayoutSchema = Type.Object(
  {
    id: Uuid,
    affiliateId: Uuid,
    affiliate: Type.Object({
      id: Uuid,
      firstName: Type.String(),
      lastName: Type.String(),
      email: Type.String(),
      payoutEmail: Type.String(),
      paymentMethod: Type.String(),
    }),
    amount: Type.Number({ description: 'major units; the sum of its entries' }),
    currency: Type.String(),
    status: Type.String({ enum: [...PAYOUT_STATUSES] }),
    entryCount: Type.Integer(),
    createdAt: DateTime,
    paidAt: Nullable(DateTime),
    method: Nullable(Type.String()),
    reference: Nullable(Type.String()),
  },
  { title: 'Payout' },
);
export type Payout = Static<typeof PayoutSchema>;

export const RunPayoutsBody = Type.Object({ affiliateId: Type.Optional(Uuid) });
export type RunPayoutsBody = Static<typeof RunPayoutsBody>;

export const PayoutsQuery = Type.Object({
  affiliateId: Type.Optional(Uuid),
  status: Type.Optional(Type.String({ enum: [...PAYOUT_STATUSES] })),
  ...ListQuery,
});
export type PayoutsQuery = Static<typeof PayoutsQuery>;

export const UpdatePayoutBody = Type.Object({
  payoutId: Uuid,
  status: Type.String({ enum: ['paid', 'failed'] }),
  paidAt: Type.Optional(Type.String({ format: 'date-time', description: 'when it was paid (status paid); defaults to now, never in the future' })),
  method: Type.Optional(ExternalId({ minLength: 1, description: 'how it was paid: paypal, wise, bank transfer…' })),
  reference: Type.Optional(ExternalId({ minLength: 1, description: "the payment's reference in that system" })),
});
export type UpdatePayoutBody = Static<typeof UpdatePayoutBody>;

export const EXPORT_FORMATS = ['csv', 'paypal', 'wise'] as const;

export const PayoutExportQuery = Type.Object({
  format: Type.String({ enum: [...EXPORT_FORMATS] }),
  status: Type.Optional(Type.String({ enum: [...PAYOUT_STATUSES], default: 'pending' })),
  affiliateId: Type.Optional(Uuid),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 5000, description: "rows per file; at most the provider's (PayPal 5,000, Wise 1,000, csv 5,000)" })),
  cursor: ListQuery.cursor,
});
export type PayoutExportQuery = Static<typeof PayoutExportQuery>;
