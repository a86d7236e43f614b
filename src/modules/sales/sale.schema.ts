import { Type, type Static } from '@sinclair/typebox';
import { DateTime, Email, ExternalId, ListQuery, Money, Percent, ShortText, Uuid } from '../../http/schemas.ts';

export const SaleSchema = Type.Object(
  {
    id: Type.Integer({ format: 'int64' }),
    affiliateId: Uuid,
    referralId: Uuid,
    externalId: Type.String(),
    externalInvoiceId: Type.String(),
    name: Type.String(),
    email: Type.String({ format: 'email' }),
    totalEarned: Type.Number(),
    commissionRate: Type.Number(),
    createdAt: DateTime,
    refundedAmount: Type.Number({ description: 'beyond the spec: how much of totalEarned was refunded (POST /sales/refund)' }),
    status: Type.String({ enum: ['paid', 'partially_refunded', 'refunded'], description: 'beyond the spec: follows refundedAmount' }),
    commission: Type.Number({ description: "beyond the spec: what the sale earns its affiliate, net of refunds (0 for a sale outside the program's commission plan)" }),
  },
  { title: 'Sale' },
);
export type Sale = Static<typeof SaleSchema>;

export const CreateSaleBody = Type.Object({
  totalEarned: Money,
  referralId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'a referral id, an affiliate id or an affiliate link' })),
  email: Type.Optional(Email),
  promoCode: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  name: Type.Optional(ShortText),
  externalId: Type.Optional(ExternalId()),
  externalInvoiceId: Type.Optional(ExternalId()),
  commissionRate: Type.Optional(Percent),
});
export type CreateSaleBody = Static<typeof CreateSaleBody>;

const SaleId = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });

export const SalesQuery = Type.Object({
  id: Type.Optional(SaleId),
  affiliateId: Type.Optional(Uuid),
  affiliateEmail: Type.Optional(Email),
  referralId: Type.Optional(Uuid),
  saleExternalId: Type.Optional(ExternalId({ description: "the sale's externalId" })),
  ...ListQuery,
});
export type SalesQuery = Static<typeof SalesQuery>;

/** PUT /sales: the sale by `saleId` (or `id`); commission and every counter follow the new values. */
export const UpdateSaleBody = Type.Object({
  saleId: Type.Optional(SaleId),
  id: Type.Optional(SaleId),
  name: Type.Optional(ShortText),
  email: Type.Optional(Email),
  totalEarned: Type.Optional(Money),
  commissionRate: Type.Optional(Percent),
});
export type UpdateSaleBody = Static<typeof UpdateSaleBody>;

/** PUT /sales names the sale by `saleId` (or `id`) in the body or the query. */
export const UpdateSaleTarget = Type.Object({ saleId: Type.Optional(SaleId), id: Type.Optional(SaleId) });

/** DELETE /sales voids a sale: `id` or `saleId`, in the query or a JSON body. */
export const DeleteSaleTarget = Type.Object({ id: Type.Optional(SaleId), saleId: Type.Optional(SaleId) });

/** POST /sales/refund: the sale by `saleId` or `externalInvoiceId`; without `amount`, all that is left. */
export const RefundSaleBody = Type.Object({
  saleId: Type.Optional(SaleId),
  externalInvoiceId: Type.Optional(ExternalId({ minLength: 1 })),
  amount: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1e13, description: 'major units; at most what is not yet refunded' })),
});
export type RefundSaleBody = Static<typeof RefundSaleBody>;
