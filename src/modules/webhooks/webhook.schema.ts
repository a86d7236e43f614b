import { Type, type Static } from '@sinclair/typebox';
import { DateTime, ListQuery, Nullable, Uuid } from '../../http/schemas.ts';
import { SUBSCRIBABLE_EVENT_TYPES } from '../events/outbox.ts';

export const EventTypeFilter = Type.Union([Type.Literal('*'), ...SUBSCRIBABLE_EVENT_TYPES.map((t) => Type.Literal(t))], {
  description: 'an event type, or * for every type',
});

const WebhookFields = {
  id: Uuid,
  url: Type.String(),
  events: Type.Array(Type.String()),
};

/** A subscription as GET lists it: never its secret. */
export const WebhookSchema = Type.Object(
  {
    ...WebhookFields,
    createdAt: DateTime,
    disabledAt: Nullable(DateTime),
  },
  { title: 'Webhook' },
);
export type Webhook = Static<typeof WebhookSchema>;

/** The answer to POST /webhooks: the only time the secret is shown. */
export const CreatedWebhookSchema = Type.Object(
  {
    ...WebhookFields,
    secret: Type.Union([Type.String(), Type.Null()], {
      description: 'whsec_…, shown once: verifies the webhook-signature header. null when the answer is an Idempotency-Key replay: the secret is never stored with it',
    }),
    createdAt: DateTime,
  },
  { title: 'CreatedWebhook' },
);
export type CreatedWebhook = Static<typeof CreatedWebhookSchema>;

export const CreateWebhookBody = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 2000, description: 'https URL that receives the events' }),
  events: Type.Array(EventTypeFilter, { minItems: 1, maxItems: 50, description: 'event types, or ["*"]' }),
});
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

export const WebhooksQuery = Type.Object({ ...ListQuery });

export const DeleteWebhookQuery = Type.Object({ id: Type.Optional(Uuid) });
