import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { errorResponses } from '../../http/schemas.ts';
import { finishPage, parsePageRequest } from '../../http/pagination.ts';
import { CreatedWebhookSchema, CreateWebhookBody, DeleteWebhookQuery, WebhookSchema, WebhooksQuery } from './webhook.schema.ts';
import { createWebhook, deleteWebhook, getWebhookPage } from './webhook.service.ts';
import { webhookDnsFor } from './webhook-dns.ts';

// Subscriptions as automation tools make them (REST hooks): subscribe when a Zap is turned on,
// unsubscribe when it is turned off. No verification handshake (CONTRACT.md).
export const webhookRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
  app.post(
    '/webhooks',
    {
      // The secret is shown once: a stored Idempotency-Key answer keeps everything but it.
      config: { idempotencyOmits: ['secret'] },
      schema: {
        tags: ['Webhooks'],
        summary: 'Subscribe a URL to events',
        description: 'Subscribes an `https` URL to event types (`["*"]` for all). The answer carries the `whsec_` signing secret, shown once. A URL the program already subscribed is a 409 conflict whose `existingId` is that webhook.',
        body: CreateWebhookBody,
        response: { 201: CreatedWebhookSchema, ...errorResponses(['rate_limited', "too many webhook host-name lookups are waiting for this program"], ['conflict', 'the program already subscribed this URL; existingId names that webhook']) },
      },
    },
    async (request, reply) =>
      reply.code(201).send(
        await createWebhook(db, request.auth.program, request.body, { allowPrivate: config.webhookAllowPrivateUrls, dns: webhookDnsFor(config), tokenId: request.auth.tokenId }),
      ),
  );

  app.get(
    '/webhooks',
    {
      schema: {
        tags: ['Webhooks'],
        summary: 'List webhook subscriptions',
        description: 'Newest first, without secrets (never shown again); `disabledAt` is set when delivery gave up.',
        querystring: WebhooksQuery,
        response: { 200: Type.Array(WebhookSchema), ...errorResponses() },
      },
    },
    async (request, reply) => {
      const page = parsePageRequest(request);
      return finishPage(request, reply, config.siteUrl, await getWebhookPage(db, request.auth.program, page));
    },
  );

  app.delete(
    '/webhooks',
    {
      schema: {
        tags: ['Webhooks'],
        summary: 'Unsubscribe',
        description: 'The subscription by `id`, in the query (`?id=`) or a JSON body (`{"id": …}`); 200 with the removed subscription.',
        querystring: DeleteWebhookQuery,
        response: { 200: WebhookSchema, ...errorResponses('not_found') },
      },
    },
    async (request) => {
      const body = request.body as { id?: unknown } | undefined;
      const id = request.query.id ?? (body && typeof body === 'object' ? (body.id as string | undefined) : undefined);
      return deleteWebhook(db, request.auth.program, id);
    },
  );
};
