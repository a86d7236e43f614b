import { Type, type Static } from '@sinclair/typebox';
import { DateTime, Email, LinkString, ListQuery, Uuid } from '../../http/schemas.ts';
import { deleteTargetSchema } from '../../http/request-target.ts';

export const AffiliateLinkSchema = Type.Object(
  {
    id: Uuid,
    link: Type.String(),
    createdAt: DateTime,
    updatedAt: DateTime,
    affiliate: Type.Object({ id: Uuid, name: Type.String(), email: Type.String({ format: 'email' }) }),
    program: Type.Object({ id: Uuid, name: Type.String(), currency: Type.String() }),
    clicks: Type.Integer(),
    referrals: Type.Integer(),
    sales: Type.Integer(),
    totalRevenue: Type.Number(),
    fullURLs: Type.Array(Type.Object({ baseUrl: Type.String(), fullUrl: Type.String() })),
  },
  { title: 'AffiliateLink' },
);
export type AffiliateLink = Static<typeof AffiliateLinkSchema>;

export const CreateLinkBody = Type.Object({
  link: Type.Optional(LinkString),
  affiliateId: Type.Optional(Uuid),
  affiliateEmail: Type.Optional(Email),
});
export type CreateLinkBody = Static<typeof CreateLinkBody>;

export const UpdateLinkBody = Type.Object({
  newLink: LinkString,
  id: Type.Optional(Uuid),
  link: Type.Optional(LinkString),
});
export type UpdateLinkBody = Static<typeof UpdateLinkBody>;

export const LinksQuery = Type.Object({
  id: Type.Optional(Uuid),
  link: Type.Optional(LinkString),
  affiliateId: Type.Optional(Uuid),
  affiliateEmail: Type.Optional(Email),
  ...ListQuery,
});
export type LinksQuery = Static<typeof LinksQuery>;

/** PUT /links names the link by `id` or its current `link`, in the body or the query. */
export const UpdateLinkTarget = Type.Object({ id: Type.Optional(Uuid), link: Type.Optional(LinkString) });

/** DELETE /links names the link by `id` or `link`, in the query or a JSON body. */
export const DeleteLinkTarget = deleteTargetSchema({
  id: Type.Optional(Uuid),
  link: Type.Optional(LinkString),
});
export type DeleteLinkTarget = Static<typeof DeleteLinkTarget>;
