import { Type } from '@sinclair/typebox';
import { DateTime, Uuid } from '../../http/schemas.ts';

/** One event as polling returns it and webhooks deliver it. */
export const EventEnvelopeSchema = Type.Object(
  {
    id: Type.String({ description: 'evt_…; the webhook-id header of its deliveries' }),
    type: Type.String(),
    timestamp: DateTime,
    programId: Uuid,
    sequence: Type.Integer({ description: 'grows with every event; resume with ?after=' }),
    data: Type.Unknown({ description: 'the resource exactly as the API returns it' }),
  },
  { title: 'Event' },
);

export const EventsQuery = Type.Object({
  after: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0, description: 'the sequence of the last event seen' })),
  type: Type.Optional(Type.String({ maxLength: 1000, description: 'one event type, or several separated by commas' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'page size, 1 to 1000' })),
});
