import { Type, type Static } from '@sinclair/typebox';
import { DateTime, Email, ListQuery, Money, Percent, ShortText, Uuid } from '../../http/schemas.ts';

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
  externalId: Type.Optional(Type.String({ maxLength: 200 })),
  externalInvoiceId: Type.Optional(Type.String({ maxLength: 200 })),
  commissionRate: Type.Optional(Percent),
});
export type CreateSaleBody = Static<typeof CreateSaleBody>;

export const SalesQuery = Type.Object({
  id: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
  affiliateId: Type.Optional(Uuid),
  referralId: Type.Optional(Uuid),
  ...ListQuery,
});
export type SalesQuery = Static<typeof SalesQuery>;
