import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { oneOrMany } from '../../http/one-or-many.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { deleteTarget, targetFromQuery } from '../../http/request-target.ts';
import { AffiliateLinkSchema, CreateLinkBody, DeleteLinkTarget, LinksQuery, UpdateLinkBody, UpdateLinkTarget } from './link.schema.ts';
import { createLink, deleteLink, findOneLink, getLinkPage, serializeLink, updateLink } from './link.service.ts';

const links = oneOrMany(AffiliateLinkSchema);

export const linkRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
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
        summary: 'Change the string of a link found by id or current link (in the body or the query)',
        querystring: UpdateLinkTarget,
        body: UpdateLinkBody,
        response: { 200: AffiliateLinkSchema, ...errorResponses(404, 409) },
      },
      preValidation: targetFromQuery(UpdateLinkTarget),
    },
    async (request) => updateLink(db, request.auth.program, request.body),
  );

  app.get(
    '/links',
    {
      schema: {
        tags: ['Links'],
        summary: 'List links (newest first), or fetch one by id or link',
        querystring: LinksQuery,
        response: { 200: links.schema, ...errorResponses(404) },
      },
    },
    async (request, reply) => {
      const { id, link, affiliateId, affiliateEmail } = request.query;
      const program = request.auth.program;
      const query = { id, link, affiliateId, affiliateEmail };
      if (id !== undefined || link !== undefined) return links.sendOne(reply, await findOneLink(db, program, query));
      const page = parsePageRequest(request);
      const rows = finishPage(request, reply, config.siteUrl, await getLinkPage(db, program, query, page), page);
      return links.sendMany(reply, rows.map((row) => serializeLink(row, program)));
    },
  );

  app.delete(
    '/links',
    {
      schema: {
        tags: ['Links'],
        summary: "Delete a link by id or link (query or JSON body); not the affiliate's own link; force=true when referrals or sales use it",
        querystring: DeleteLinkTarget,
        response: { 200: AffiliateLinkSchema, ...errorResponses(404, 409) },
      },
    },
    async (request) => deleteLink(db, request.auth.program, deleteTarget(DeleteLinkTarget, request)),
  );
};
