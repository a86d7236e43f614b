import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses, Nullable, Uuid, DateTime } from '../../http/schemas.ts';
import { getProgram, serializeProgram } from './program.service.ts';

export const ProgramSchema = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    domain: Type.String(),
    logoUrl: Nullable(Type.String()),
    currency: Type.String(),
    commissionRate: Type.Number(),
    baseUrls: Type.Array(Type.String()),
    referralParam: Type.String(),
    cookieDays: Type.Integer({ description: 'days the tracking script keeps a referral' }),
    attribution: Type.String({ enum: ['first', 'last'], description: 'which click wins when a visitor comes through several links' }),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { title: 'Program' },
);

export const programRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db }) => {
  app.get(
    '/me',
    {
      schema: {
        tags: ['Program'],
        summary: "The token's program (a connection test for automation tools)",
        response: { 200: ProgramSchema, ...errorResponses() },
      },
    },
    async (request) => serializeProgram(await getProgram(db, request.auth.program.id)),
  );
};
