import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { DateTime, Email, errorResponses, Nullable, Uuid } from '../../http/schemas.ts';
import { getProgram } from '../programs/program.service.ts';
import { createPortalLink } from './portal-login.service.ts';

export const PortalLinkBody = Type.Object({ affiliateId: Type.Optional(Uuid), email: Type.Optional(Email) });

export const portalApiRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
  app.post(
    '/affiliates/portal-link',
    {
      schema: {
        tags: ['Affiliates'],
        summary: 'Make a one-time portal sign-in link',
        description: "A one-time link (5 minutes) that signs an approved, active affiliate in to the program's portal, for the merchant's own app to hand to a signed-in user.",
        body: PortalLinkBody,
        response: { 201: Type.Object({ url: Nullable(Type.String({ description: 'the link; null in a replayed Idempotency-Key answer (a credential is shown once)' })), expiresAt: DateTime }), ...errorResponses('not_found', ['affiliate_inactive', 'the affiliate is not approved and active, so it cannot sign in']) },
      },
      // The link is a credential: an Idempotency-Key's stored answer must not keep it.
      config: { idempotencyOmits: ['url'] },
    },
    async (request, reply) => {
      const program = request.auth.program;
      const { portal_slug: slug } = await getProgram(db, program.id);
      return reply.code(201).header('cache-control', 'no-store').send(await createPortalLink(db, program, request.body, { portalUrl: `${config.siteUrl}/portal/${slug}` }));
    },
  );
};
