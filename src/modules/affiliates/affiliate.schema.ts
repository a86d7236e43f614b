import { Type, type Static } from '@sinclair/typebox';
import { DateTime, Email, ExternalId, LinkString, ListQuery, Nullable, Percent, ShortText, Status, Uuid } from '../../http/schemas.ts';
import { deleteTargetSchema } from '../../http/request-target.ts';

export const AffiliateSchema = Type.Object(
  {
    id: Uuid,
    firstName: Type.String(),
    lastName: Type.String(),
    name: Nullable(Type.String()),
    email: Type.String({ format: 'email' }),
    password: Nullable(Type.String({ description: 'deprecated; always null — no hash leaves the service' })),
    emailVerified: Nullable(Type.Boolean()),
    image: Nullable(Type.String()),
    detailsComplete: Type.Boolean(),
    programId: Uuid,
    payoutEmail: Type.String({ format: 'email' }),
    paymentMethod: Type.String(),
    commissionRate: Type.Number(),
    link: Type.String(),
    status: Type.String({ enum: ['active', 'inactive'] }),
    approval: Type.String({ enum: ['pending', 'approved', 'rejected'], description: 'beyond the spec: a portal sign-up under the approval policy is pending (and inactive) until approved or rejected; affiliates made by the API are approved' }),
    createdAt: DateTime,
    updatedAt: DateTime,
    numberOfReferredUsers: Type.Integer(),
    numberOfClicks: Type.Integer(),
    totalCommissionEarned: Type.Number(),
  },
  { title: 'Affiliate' },
);
export type Affiliate = Static<typeof AffiliateSchema>;

export const CreateAffiliateBody = Type.Object({
  firstName: ShortText,
  lastName: ShortText,
  email: Email,
  commissionRate: Type.Optional(Percent),
  affiliateLink: Type.Optional(LinkString),
  payoutEmail: Type.Optional(Email),
  paymentMethod: Type.Optional(ExternalId({ minLength: 1 })),
  status: Type.Optional(Status),
});
export type CreateAffiliateBody = Static<typeof CreateAffiliateBody>;

/** What may change on an affiliate (dashboard form and PUT /affiliates); absent fields stay as they are. */
export const UpdateAffiliateBody = Type.Object({
  firstName: Type.Optional(ShortText),
  lastName: Type.Optional(ShortText),
  email: Type.Optional(Email),
  /** The affiliate's own link string (its `link`). */
  affiliateLink: Type.Optional(LinkString),
  /** null: follow the program's default rate. */
  commissionRate: Type.Optional(Nullable(Percent)),
  payoutEmail: Type.Optional(Email),
  paymentMethod: Type.Optional(ExternalId({ minLength: 1 })),
  status: Type.Optional(Status),
  /** Decide a portal sign-up: approved (and active) or rejected (and inactive). */
  approval: Type.Optional(Type.String({ enum: ['approved', 'rejected'] })),
});
export type UpdateAffiliateBody = Static<typeof UpdateAffiliateBody>;

/** PUT /affiliates as the SDKs send it: the affiliate by `id` or `affiliateId`; `affiliateStatus` is `status`. */
export const ApiUpdateAffiliateBody = Type.Object({
  id: Type.Optional(Uuid),
  affiliateId: Type.Optional(Uuid),
  ...UpdateAffiliateBody.properties,
  affiliateStatus: Type.Optional(Status),
});
export type ApiUpdateAffiliateBody = Static<typeof ApiUpdateAffiliateBody>;

/** PUT /affiliates names the affiliate by `id` (or `affiliateId`) in the body or the query. */
export const UpdateAffiliateTarget = Type.Object({ id: Type.Optional(Uuid), affiliateId: Type.Optional(Uuid) });

/** DELETE /affiliates: `id` or `affiliateId`, in the query or a JSON body; `force` takes what they earned with them. */
export const DeleteAffiliateTarget = deleteTargetSchema({ id: Type.Optional(Uuid), affiliateId: Type.Optional(Uuid) });

export const AffiliatesQuery = Type.Object({
  id: Type.Optional(Uuid),
  email: Type.Optional(Email),
  ...ListQuery,
});
export type AffiliatesQuery = Static<typeof AffiliatesQuery>;
