import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { oneOrMany } from '../../http/one-or-many.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { deleteTarget, targetFromQuery } from '../../http/request-target.ts';
import { AffiliateLinkSchema, CreateLinkBody, DeleteLinkTarget, LinksQuery, UpdateLinkBody, UpdateLinkTarget } from './link.schema.ts';
import { createLink, deleteLink, findOneLink, getLinkPage, updateLink } from './link.service.ts';

const links = oneOrMany(AffiliateLinkSchema);

export const linkRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
  app.post(
    '/links',
    {
      schema: {
        tags: ['Links'],
        summary: 'Create a link',
        description: 'A new link for an affiliate (by `affiliateId` or `affiliateEmail`); the string is generated when `link` is absent.',
        body: CreateLinkBody,
        response: { 201: AffiliateLinkSchema, ...errorResponses('not_found', ['conflict', 'the link string is already used in this program']) },
      },
    },
    async (request, reply) => reply.code(201).send(await createLink(db, request.auth.program, request.body)),
  );

  app.put(
    '/links',
    {
      schema: {
        tags: ['Links'],
        summary: 'Change a link\'s string',
        description: 'The link is found by `id` or its current `link`, in the body or the query.',
        querystring: UpdateLinkTarget,
        body: UpdateLinkBody,
        response: { 200: AffiliateLinkSchema, ...errorResponses('not_found', ['conflict', 'the new link string is already used in this program']) },
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
        summary: 'List links, or get one',
        description: 'With `id` or `link`: that one link, or 404. Otherwise a list, newest first, filtered by `affiliateId` or `affiliateEmail`.',
        querystring: LinksQuery,
        response: { 200: links.schema, ...errorResponses('not_found') },
      },
    },
    async (request, reply) => {
      const { id, link, affiliateId, affiliateEmail } = request.query;
      const program = request.auth.program;
      const query = { id, link, affiliateId, affiliateEmail };
      if (id !== undefined || link !== undefined) return links.sendOne(reply, await findOneLink(db, program, query));
      const page = parsePageRequest(request);
      return links.sendMany(reply, finishPage(request, reply, config.siteUrl, await getLinkPage(db, program, query, page)));
    },
  );

  app.delete(
    '/links',
    {
      schema: {
        tags: ['Links'],
        summary: 'Delete a link',
        description: "The link by `id` or `link`, in the query or a JSON body; never the affiliate's own link. One that referrals or sales came through needs `force=true`.",
        querystring: DeleteLinkTarget,
        response: { 200: AffiliateLinkSchema, ...errorResponses('not_found', ['conflict', "it is the affiliate's own link: rename it, or delete the affiliate"], 'has_dependents') },
      },
    },
    async (request) => deleteLink(db, request.auth.program, deleteTarget(DeleteLinkTarget, request)),
  );
};
