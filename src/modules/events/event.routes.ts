import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AppServices } from '../../app-services.ts';
import { invalidField } from '../../domain/errors.ts';
import { errorResponses } from '../../http/schemas.ts';
import { EventEnvelopeSchema, EventsQuery } from './event.schema.ts';
import { setNextLink } from '../../http/pagination.ts';
import { EVENT_TYPES, hasUnsequencedEvents, listEventsAfter, sequenceEvents } from './outbox.ts';

// Polling, for tools that prefer it to webhooks: events after a sequence, oldest first.
// The body is a bare array of envelopes; `Link: rel="next"` carries the cursor to call next
// (the last event's sequence, or the same `after` when nothing new happened). A page holds at
// most `limit` events and stops early at EVENTS_PAGE_BYTES of JSON, so one poll's answer (and
// the memory it takes) is bounded whatever the events hold.

/** The byte budget of one page of events (the first event always fits, whatever its size). */
export const EVENTS_PAGE_BYTES = 1024 * 1024;
export const eventRoutes: FastifyPluginAsyncTypebox<AppServices> = async (app, { db, config }) => {
  app.get(
    '/events',
    {
      schema: {
        tags: ['Events'],
        summary: 'Poll events',
        description: 'Events after `after` (a sequence number), oldest first; `type` (comma-separated) and `limit` (1 to 1000, default 100). The `Link: rel="next"` header always names the next poll.',
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
      // so polling works (and is fresh) even with the worker off. Numbering is one bounded
      // statement; deliveries to subscriptions are the worker's work, never a poll's.
      if (await hasUnsequencedEvents(db)) await sequenceEvents(db);
      const { envelopes, lastSequence } = await listEventsAfter(db, request.auth.program.id, { after, types, limit, maxBytes: EVENTS_PAGE_BYTES, livemode: request.auth.program.livemode });
      setNextLink(request, reply, config.siteUrl, 'after', String(lastSequence));
      reply.type('application/json; charset=utf-8');
      // The stored data is already the API's JSON: joined, not parsed and re-serialised.
      return reply.serializer((payload: string) => payload).send(`[${envelopes.join(',')}]` as never);
    },
  );
};
