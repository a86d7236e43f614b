import { nowIso } from '../../domain/clock.ts';
import { randomToken } from '../../domain/ids.ts';
import type { Tx } from '../../db/transaction.ts';

export const EVENT_TYPES = [
  'affiliate.created',
  'referral.created',
  'sale.created',
  'link.created',
  'link.updated',
  'promotional_code.updated',
  'promotional_code.redeemed',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/**
 * Writes an event in the caller's transaction (the outbox pattern): it commits with the
 * change it reports or not at all. Delivery to subscribers reads this table later.
 * `data` is the resource exactly as the API returns it.
 */
export async function recordEvent(tx: Tx, programId: string, type: EventType, data: unknown): Promise<void> {
  await tx
    .insertInto('events')
    .values({ id: `evt_${randomToken(18)}`, program_id: programId, type, data: JSON.stringify(data), created_at: nowIso() })
    .execute();
}
