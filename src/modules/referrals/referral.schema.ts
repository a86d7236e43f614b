import { Type, type Static } from '@sinclair/typebox';
import { Email, ListQuery, ShortText, Status, Uuid } from '../../http/schemas.ts';

export const ReferralSchema = Type.Object(
  {
    id: Uuid,
    affiliateId: Uuid,
    name: Type.String(),
    email: Type.String({ format: 'email' }),
    referredUserExternalId: Type.String(),
    plan: Type.String(),
    status: Type.String({ enum: ['active', 'inactive'] }),
  },
  { title: 'Referral' },
);
export type Referral = Static<typeof ReferralSchema>;

export const CreateReferralBody = Type.Object({
  name: ShortText,
  email: Email,
  referredUserExternalId: Type.String({ minLength: 1, maxLength: 200 }),
  affiliateId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'an affiliate id or one of its link strings' })),
  affiliateEmail: Type.Optional(Email),
  promoCode: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  plan: Type.Optional(Type.String({ maxLength: 200 })),
  status: Type.Optional(Status),
});
export type CreateReferralBody = Static<typeof CreateReferralBody>;

export const ReferralsQuery = Type.Object({
  id: Type.Optional(Uuid),
  affiliateId: Type.Optional(Uuid),
  ...ListQuery,
});
export type ReferralsQuery = Static<typeof ReferralsQuery>;
