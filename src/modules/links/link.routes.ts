import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { AffiliateLinkSchema, CreateLinkBody, UpdateLinkBody } from './link.schema.ts';
import { createLink, updateLink } from './link.service.ts';

export const linkRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db }) => {
  app.post(
    '/links',
    {
      schema: {
        tags: ['Links'],
        summary: 'Create an affiliate link (generated when `link` is absent)',
        body: CreateLinkBody,
        response: { 201: AffiliateLinkSchema, ...errorResponses(404, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await createLink(db, request.auth.program, request.body)),
  );

  app.put(
    '/links',
    {
      schema: {
        tags: ['Links'],
        summary: 'Change the string of a link found by id or current link',
        body: UpdateLinkBody,
        response: { 200: AffiliateLinkSchema, ...errorResponses(404, 409) },
      },
    },
    async (request) => updateLink(db, request.auth.program, request.body),
  );
};
