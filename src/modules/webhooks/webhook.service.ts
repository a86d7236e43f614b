import { toIso, toIsoOrNull } from '../../domain/clock.ts';
import { isUuid, newId } from '../../domain/ids.ts';
import { inTransaction, type Db } from '../../db/transaction.ts';
import { ApiError, conflict, invalidField, notFound } from '../../domain/errors.ts';
import { mapPage, pageOf, type Page, type PageRequest } from '../../db/keyset.ts';
import { numberEventsCommittedBefore, recordEvent } from '../events/outbox.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { newSigningSecret } from './signature.ts';
import { startFanOut } from './fan-out.ts';
import { parseWebhookUrl, UnsafeUrlError, urlHost } from './url-guard.ts';
import { WebhookDnsError, type WebhookDns } from './webhook-dns.ts';
import {
  countWebhooks,
  deleteWebhookRow,
  findWebhook,
  findWebhookByUrl,
  findDeliveryOfEvent,
  insertDelivery,
  insertWebhook,
  lockProgram,
  tokenStillActive,
  listAttempts,
  listWebhooks,
  requeueDeliveries,
  setWebhookEnabled,
  webhookDeliveryStats,
  type WebhookRow,
} from './webhook.repository.ts';
import type { CreatedWebhook, CreateWebhookBody, Webhook } from './webhook.schema.ts';

/** Subscriptions per program: each event costs one delivery per subscription. */
export const MAX_WEBHOOKS_PER_PROGRAM = 100;

export function serializeWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    createdAt: toIso(row.created_at),
    disabledAt: toIsoOrNull(row.disabled_at),
  };
}

/** `why` completes "The webhook URL is refused: …"; `detail` is what the field shows. */
function refusedUrl(why: string, detail = why): ApiError {
  return new ApiError('validation_failed', `The webhook URL is refused: ${why}.`, [{ pointer: '#/url', detail }]);
}

/**
 * What a refusal the operator can lift adds: the setting that lifts it, so someone trying
 * Tandem out with a receiver on their own machine knows what to set (and that it is for
 * development only).
 */
export const ALLOW_PRIVATE_HINT = 'To reach a receiver on this machine or your network (plain http, a private address), start Tandem with WEBHOOK_ALLOW_PRIVATE_URLS=1 (for local development only)';

function refusedUnlessAllowed(why: string, detail = why): ApiError {
  return refusedUrl(`${why}. ${ALLOW_PRIVATE_HINT}`, `${detail}. ${ALLOW_PRIVATE_HINT}`);
}

/**
 * Checks a webhook URL as the contract asks: https and a host whose every address is public,
 * unless the operator allows private ones (then nothing is looked up). The lookup counts
 * against the program's DNS bound (webhook-dns.ts).
 */
export async function checkWebhookUrl(raw: string, options: { allowPrivate: boolean; dns: WebhookDns; programId: string }): Promise<string> {
  let url: URL;
  try {
    url = parseWebhookUrl(raw.trim(), options.allowPrivate);
  } catch (error) {
    if (error instanceof UnsafeUrlError) {
      // Plain http is what the operator's setting allows; the other form errors it does not lift.
      if (!options.allowPrivate && /^http:/i.test(raw.trim()) && error.message === 'must use https') throw refusedUnlessAllowed(`it ${error.message}`, error.message);
      throw refusedUrl(`it ${error.message}`, error.message);
    }
    throw error;
  }
  if (!options.allowPrivate) {
    try {
      await options.dns.resolve(urlHost(url), { programId: options.programId, allowPrivate: false });
    } catch (error) {
      if (!(error instanceof WebhookDnsError)) throw error;
      if (error.code === 'EBUSY') throw new ApiError('rate_limited', 'Too many webhook host lookups are waiting for this program; retry shortly.');
      if (error.code === 'EPRIVATE') throw refusedUnlessAllowed(error.message);
      throw refusedUrl(`its host could not be resolved: ${error.message}`);
    }
  }
  return url.toString();
}

/** Subscribes a URL to event types (REST hooks). `tokenId`: the API token that subscribed, if any. */
export async function createWebhook(
  db: Db,
  program: ProgramContext,
  body: CreateWebhookBody,
  options: { allowPrivate: boolean; dns: WebhookDns; tokenId: string | null },
): Promise<CreatedWebhook> {
  const types = [...new Set(body.events)];
  if (types.includes('*') && types.length > 1) throw invalidField('#/events', 'use ["*"] alone, or name the event types');
  const url = await checkWebhookUrl(body.url, { allowPrivate: options.allowPrivate, dns: options.dns, programId: program.id });
  const now = program.clock().toISOString();
  const row = {
    id: newId(),
    program_id: program.id,
    url,
    events: JSON.stringify(types),
    secret: newSigningSecret(),
    token_id: options.tokenId,
    failing_since: null,
    disabled_at: null,
    created_at: now,
    updated_at: now,
  };
  const created = { id: row.id, url, events: types, secret: row.secret, createdAt: now };
  // In a transaction, so that an Idempotency-Key's response commits with the subscription.
  return inTransaction(db, async (tx) => {
    // The program's row lock serialises its subscribes (PostgreSQL; SQLite has one writer), so
    // the count and the insert are one step and concurrent creates cannot pass the cap together.
    await lockProgram(tx, program.id);
    // Under the same lock, so two subscribes of one URL at once cannot both pass (no unique
    // index: subscriptions made twice before this check stay as they were, each with its secret).
    const existing = await findWebhookByUrl(tx, program.id, url);
    if (existing) {
      throw Object.assign(
        conflict(`This program already sends events to ${url} (webhook ${existing.id}). To change its event types, delete that webhook and subscribe again.`),
        { existingId: existing.id },
      );
    }
    if ((await countWebhooks(tx, program.id)) >= MAX_WEBHOOKS_PER_PROGRAM) {
      throw new ApiError('validation_failed', `A program has at most ${MAX_WEBHOOKS_PER_PROGRAM} webhooks; delete one first.`);
    }
    // What committed before this subscription is numbered now, so that it starts after it
    // (after_sequence) and gets none of it.
    await numberEventsCommittedBefore(tx);
    await insertWebhook(tx, row);
    // A token revoked while this request ran (its answer may have come from the cache) must not
    // leave a subscription behind: the check reads the token after the insert, under a lock
    // its revocation waits on, so either the revocation sees this row and deletes it, or this
    // sees the revocation and rolls back.
    if (options.tokenId !== null && !(await tokenStillActive(tx, options.tokenId))) throw new ApiError('unauthorized', 'The bearer token is unknown or revoked.');
    await startFanOut(tx, program.id);
    return created;
  });
}

export async function getWebhookPage(db: Db, program: ProgramContext, page: PageRequest): Promise<Page<Webhook>> {
  return mapPage(pageOf(await listWebhooks(db, program.id, page), page), serializeWebhook);
}

export async function getWebhook(db: Db, programId: string, id: string): Promise<WebhookRow> {
  const row = isUuid(id) ? await findWebhook(db, programId, id.toLowerCase()) : undefined;
  if (!row) throw notFound('Webhook');
  return row;
}

export async function deleteWebhook(db: Db, program: ProgramContext, id: string | undefined): Promise<Webhook> {
  if (id === undefined) throw invalidField('#/id', 'is required (in the query or the body)');
  if (typeof id !== 'string' || !isUuid(id)) throw invalidField('#/id', 'must be a webhook id (a UUID)');
  const row = await deleteWebhookRow(db, program.id, id.toLowerCase());
  if (!row) throw notFound('Webhook');
  return serializeWebhook(row);
}

export async function enableWebhook(db: Db, program: ProgramContext, id: string): Promise<void> {
  await getWebhook(db, program.id, id);
  await setWebhookEnabled(db, program.id, id.toLowerCase(), program.clock().toISOString());
}

/** Sends a `webhook.test` event to this one endpoint (not to the program's other subscriptions). */
export async function sendTestEvent(db: Db, program: ProgramContext, id: string): Promise<string> {
  const webhook = await getWebhook(db, program.id, id);
  return inTransaction(db, async (tx) => {
    const now = program.clock().toISOString();
    const eventId = await recordEvent(tx, program.id, 'webhook.test', { webhookId: webhook.id, url: webhook.url, message: 'A test event sent from the Tandem dashboard.', sentAt: now }, now);
    await insertDelivery(tx, webhook, eventId, now);
    return eventId;
  });
}

/** Where one event's delivery to one endpoint stands: what the dashboard's "Send test" shows. */
export interface DeliveryOfEvent {
  state: 'pending' | 'delivered' | 'failed' | 'held';
  attempts: number;
  /** When it is tried next, while pending. */
  nextAttemptAt: string | null;
  lastAttempt: { at: string; statusCode: number | null; durationMs: number; error: string | null; responseExcerpt: string | null } | null;
}

/** 404 when the program has no such webhook, or the webhook no delivery of the event. */
export async function getDeliveryOfEvent(db: Db, programId: string, webhookId: string, eventId: string): Promise<DeliveryOfEvent> {
  const webhook = await getWebhook(db, programId, webhookId);
  const found = /^evt_[A-Za-z0-9_-]{1,64}$/.test(eventId) ? await findDeliveryOfEvent(db, webhook.id, eventId) : undefined;
  if (!found) throw notFound('A delivery of this event to this webhook');
  const { delivery, attempt } = found;
  return {
    state: delivery.state,
    attempts: Number(delivery.attempts),
    nextAttemptAt: delivery.state === 'pending' ? toIso(delivery.next_attempt_at) : null,
    lastAttempt: attempt
      ? { at: toIso(attempt.attempted_at), statusCode: attempt.status_code, durationMs: Number(attempt.duration_ms), error: attempt.error, responseExcerpt: attempt.response_excerpt }
      : null,
  };
}

/** Sends one event to the endpoint again, whatever its state. */
export async function replayEvent(db: Db, program: ProgramContext, webhookId: string, eventId: string): Promise<void> {
  const webhook = await getWebhook(db, program.id, webhookId);
  if ((await requeueDeliveries(db, webhook.id, { eventId }, program.clock().toISOString())) === 0) throw notFound('A delivery of this event to this webhook');
}

/** Sends again every delivery that failed for good since an instant; returns how many. */
export async function replayFailedSince(db: Db, program: ProgramContext, webhookId: string, since: string): Promise<number> {
  const webhook = await getWebhook(db, program.id, webhookId);
  return requeueDeliveries(db, webhook.id, { failedSince: since }, program.clock().toISOString());
}

// ---- the dashboard's Webhooks page ---------------------------------------------------------

/**
 * A subscription as the dashboard shows it: the API's Webhook, since when its attempts fail,
 * whether a connected app made it, and how many of its deliveries wait (pending) and gave up (failed).
 */
export type WebhookWithCounts = Webhook & { failingSince: string | null; addedByApp: boolean; pending: number; failed: number };

function withCounts(row: WebhookRow, counts: { pending: number; failed: number } | undefined): WebhookWithCounts {
  return { ...serializeWebhook(row), failingSince: toIsoOrNull(row.failing_since), addedByApp: row.token_id !== null, ...(counts ?? { pending: 0, failed: 0 }) };
}

/** A page of the program's subscriptions, newest first, each with its delivery counts. */
export async function getWebhookPageWithCounts(db: Db, program: ProgramContext, page: PageRequest): Promise<Page<WebhookWithCounts>> {
  const rows = pageOf(await listWebhooks(db, program.id, page), page);
  const stats = await webhookDeliveryStats(db, rows.items.map((r) => r.id));
  return mapPage(rows, (row) => withCounts(row, stats.get(row.id)));
}

/** One subscription of the program with its delivery counts; 404 when the program has no such webhook. */
export async function getWebhookWithCounts(db: Db, programId: string, id: string): Promise<WebhookWithCounts> {
  const row = await getWebhook(db, programId, id);
  const stats = await webhookDeliveryStats(db, [row.id]);
  return withCounts(row, stats.get(row.id));
}

/** One delivery attempt, as the endpoint's page lists it. */
export interface WebhookAttempt {
  id: string;
  createdAt: string;
  eventId: string;
  eventType: string;
  /** The HTTP status the endpoint answered; null when none came back (then `error` says why). */
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** The first KB of the response body. */
  responseExcerpt: string | null;
  /** Where the attempt's delivery stands now. */
  deliveryState: string;
}

function serializeAttempt(row: Awaited<ReturnType<typeof listAttempts>>[number]): WebhookAttempt {
  return {
    id: String(row.id),
    createdAt: toIso(row.created_at),
    eventId: row.event_id,
    eventType: row.event_type,
    statusCode: row.status_code,
    error: row.error,
    durationMs: row.duration_ms,
    responseExcerpt: row.response_excerpt,
    deliveryState: row.delivery_state,
  };
}

/**
 * A page of one subscription's attempts, newest first, with each event's type; 404 when the
 * program has no such webhook. A cursor is checked as the columns it is compared with (an
 * integer id, a timestamp in stored form), so a forged one is a 422, never a database error.
 */
export async function getAttemptPage(db: Db, programId: string, webhookId: string, page: PageRequest): Promise<Page<WebhookAttempt>> {
  const webhook = await getWebhook(db, programId, webhookId);
  const { after } = page;
  let rows;
  if (after === undefined) {
    rows = await listAttempts(db, webhook.id, page);
  } else {
    const time = Date.parse(after.createdAt);
    if (!/^\d{1,18}$/.test(String(after.id)) || !(time >= 0 && time < Date.UTC(10_000, 0))) throw invalidField('#/cursor', 'is not a cursor this service issued');
    rows = await listAttempts(db, webhook.id, { ...page, after: { createdAt: new Date(time).toISOString(), id: after.id } });
  }
  return mapPage(pageOf(rows, page), serializeAttempt);
}
