import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { invalidField } from '../../domain/errors.ts';
import { errorResponses } from '../../http/schemas.ts';
import { EventEnvelopeSchema, EventsQuery } from '../webhooks/webhook.schema.ts';
import { EVENT_TYPES, envelopeJson, hasUnsequencedEvents, listEventsAfter, sequenceEvents } from './outbox.ts';

// Polling, for tools that prefer it to webhooks: events after a sequence, oldest first.
// The body is a bare array of envelopes; `Link: rel="next"` carries the cursor to call next
// (the last event's sequence, or the same `after` when nothing new happened).
export const eventRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config, clock }) => {
  app.get(
    '/events',
    {
      schema: {
        tags: ['Events'],
        summary: 'Events after a sequence number, oldest first (polling)',
        querystring: EventsQuery,
        response: { 200: Type.Array(EventEnvelopeSchema), ...errorResponses() },
      },
    },
    async (request, reply) => {
      const { after = 0, limit = 100 } = request.query;
      const types = request.query.type === undefined ? undefined : request.query.type.split(',').map((t) => t.trim()).filter((t) => t !== '');
      const unknown = types?.find((t) => !(EVENT_TYPES as readonly string[]).includes(t));
      if (unknown !== undefined) throw invalidField('#/type', `"${unknown.slice(0, 50)}" is not an event type`);
      // Events are visible once numbered; number any that committed since the worker last ran,
      // so polling works (and is fresh) even with the worker off.
      if (await hasUnsequencedEvents(db)) await sequenceEvents(db, clock);
      const rows = await listEventsAfter(db, request.auth.program.id, { after, types, limit });
      const next = rows.length > 0 ? Number(rows[rows.length - 1]!.sequence) : after;
      const url = new URL(request.url, config.siteUrl);
      url.searchParams.set('after', String(next));
      reply.header('link', `<${url.toString()}>; rel="next"`);
      reply.type('application/json; charset=utf-8');
      // The stored data is already the API's JSON: joined, not parsed and re-serialised.
      return reply.serializer((payload: string) => payload).send(`[${rows.map(envelopeJson).join(',')}]` as never);
    },
  );
};
