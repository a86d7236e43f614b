import { cleanUpAfterPurge } from '../../db/upkeep.ts';
import { hasUnsequencedEvents, purgeEventsBefore, sequenceEvents } from '../events/outbox.ts';
import type { PeriodicJob } from './periodic-worker.ts';
import { purgeExpired } from './purge-expired.ts';

/**
 * How long one purge pass works at most (real time, whatever the app's clock says). Each batch
 * gives the event loop a turn already; the budget also bounds how long the pass holds the
 * database's attention, and a backlog (the first purge of millions of events) is finished by
 * the passes that follow at once (PeriodicJob's `more`).
 */
export const PURGE_PASS_MS = 10_000;

/** Events deleted in one pass beyond which PostgreSQL vacuums their tables at once (db/upkeep.ts). */
const VACUUM_AFTER_EVENTS = 10_000;

/**
 * The instance's purge, every 10 minutes: events older than EVENT_RETENTION_DAYS (their
 * deliveries and attempts cascade), then whatever purgeExpired deletes or expires (sessions,
 * codes, idempotency keys, attempt counters, old clicks and mail, billing events, Stripe
 * invoices that waited 24 hours for their referral).
 */
export const purgeJob: PeriodicJob = {
  name: 'purge',
  everyMs: 10 * 60_000,
  async run({ db, config, log }, now) {
    const deadline = performance.now() + PURGE_PASS_MS;
    // The purge walks events in number order and leaves unnumbered ones (PostgreSQL numbers them
    // after commit): number what has committed first, as the delivery worker's pass did when the
    // purge was its last step. A read-only probe first, so an idle instance writes nothing.
    if (await hasUnsequencedEvents(db)) await sequenceEvents(db);
    const cutoff = new Date(now.getTime() - config.eventRetentionDays * 86_400_000).toISOString();
    const purged = await purgeEventsBefore(db, cutoff, deadline);
    if (purged > 0) log.debug({ purged, cutoff }, 'purged old events');
    const expired = await purgeExpired(db, now, config, deadline);
    if (Object.values(expired).some((n) => n > 0)) log.debug(expired, 'purged expired sessions, connect codes, idempotency keys, attempt counters and old click rows');
    if (purged + expired.billingEvents >= VACUUM_AFTER_EVENTS) await cleanUpAfterPurge(db, ['events', 'webhook_deliveries', 'webhook_attempts', 'billing_events']);
    return { more: performance.now() >= deadline };
  },
};
