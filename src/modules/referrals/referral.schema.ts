import { Type, type Static } from '@sinclair/typebox';
import { Email, ExternalId, ListQuery, ShortText, Status, Uuid } from '../../http/schemas.ts';
import { deleteTargetSchema } from '../../http/request-target.ts';

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

const ExternalUserId = ExternalId({ minLength: 1 });

export const CreateReferralBody = Type.Object({
  name: ShortText,
  email: Email,
  referredUserExternalId: ExternalUserId,
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
  affiliateEmail: Type.Optional(Email),
  externalId: Type.Optional(ExternalId({ description: "the referred user's referredUserExternalId" })),
  ...ListQuery,
});
export type ReferralsQuery = Static<typeof ReferralsQuery>;

/** PUT /referrals: the referral by `referralId` (or `id`); absent fields stay as they are. */
export const UpdateReferralBody = Type.Object({
  referralId: Type.Optional(Uuid),
  id: Type.Optional(Uuid),
  name: Type.Optional(ShortText),
  email: Type.Optional(Email),
  referredUserExternalId: Type.Optional(ExternalUserId),
  plan: Type.Optional(Type.String({ maxLength: 200 })),
  status: Type.Optional(Status),
});
export type UpdateReferralBody = Static<typeof UpdateReferralBody>;

/** PUT /referrals names the referral by `referralId` (or `id`) in the body or the query. */
export const UpdateReferralTarget = Type.Object({ referralId: Type.Optional(Uuid), id: Type.Optional(Uuid) });

/** DELETE /referrals: `id` or `referralId`, in the query or a JSON body; `force` takes its sales with it. */
export const DeleteReferralTarget = deleteTargetSchema({ id: Type.Optional(Uuid), referralId: Type.Optional(Uuid) });
