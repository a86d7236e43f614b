import type { Config } from '../../config.ts';
import type { Db } from '../../db/transaction.ts';
import { deleteInBatches } from '../../db/batched-delete.ts';
import { LONGEST_ATTEMPT_WINDOW_MS } from '../throttling/attempt-counter.ts';
import { purgeClicksBefore } from '../tracking/click.repository.ts';
import { IDEMPOTENCY_KEPT_MS } from '../../http/idempotency.ts';
import { purgeMailBefore } from '../mail/mail.repository.ts';
import { purgeBillingCustomersBefore, purgeBillingEventsBefore } from '../billing/billing.repository.ts';
import { expireWaitingInvoices } from '../billing/billing.service.ts';

/** Sent and given-up e-mail is kept this long (to see what went out), then purged. */
const MAIL_KEPT_MS = 30 * 86_400_000;


export interface PurgedCounts {
  sessions: number;
  authorizationCodes: number;
  idempotencyKeys: number;
  attemptCounters: number;
  clicks: number;
  mail: number;
  portalLogins: number;
  passwordResets: number;
  /** Stripe invoices that waited 24 hours for their customer's referral, now ignored (not deleted). */
  waitingInvoicesExpired: number;
  billingEvents: number;
  billingCustomers: number;
}

/** How long what the purge deletes is kept, where the operator decides. */
export type Retention = Pick<Config, 'clickRetentionDays'> & Partial<Pick<Config, 'eventRetentionDays'>>;

/** CLICK_RETENTION_DAYS' default, for a caller that passes no configuration. */
const DEFAULT_RETENTION: Retention = { clickRetentionDays: 30 };

/**
 * Deletes what has expired: browser sessions past their expiry, connect-flow authorization
 * codes past theirs (used or not: a used code is kept until then so a replay is still
 * recognised), Idempotency-Key records older than their 24 hours, attempt counters whose
 * window has ended, click rows of UTC days more than `clickRetentionDays` back (the
 * once-a-day dedupe needs only today's; the counters and daily counts keep every click), and
 * e-mail sent or given up more than 30 days ago. Stripe invoices that waited 24 hours for their
 * customer's referral are marked ignored, in batches (billing/billing.service.ts).
 * Run by the worker; each kind goes in batches with a turn of the event loop between them, and
 * once `deadline` (a `performance.now()` time) has passed each kind stops after its next batch (the next pass goes on).
 */
export async function purgeExpired(db: Db, now: Date, retention: Retention = DEFAULT_RETENTION, deadline = Infinity): Promise<PurgedCounts> {
  const nowIso = now.toISOString();
  const eventCutoff = new Date(now.getTime() - (retention.eventRetentionDays ?? 30) * 86_400_000).toISOString();
  const idempotencyCutoff = new Date(now.getTime() - IDEMPOTENCY_KEPT_MS).toISOString();
  return {
    sessions: await inBatches(db, 'sessions', 'id_hash', 'expires_at', nowIso, deadline),
    authorizationCodes: await inBatches(db, 'authorization_codes', 'code_hash', 'expires_at', nowIso, deadline),
    idempotencyKeys: await inBatches(db, 'idempotency_keys', 'key', 'created_at', idempotencyCutoff, deadline),
    attemptCounters: await inBatches(db, 'attempt_counters', 'key', 'window_started_at', new Date(now.getTime() - LONGEST_ATTEMPT_WINDOW_MS).toISOString(), deadline),
    clicks: await purgeClicksBefore(db, new Date(now.getTime() - retention.clickRetentionDays * 86_400_000).toISOString().slice(0, 10), deadline),
    mail: await purgeMailBefore(db, new Date(now.getTime() - MAIL_KEPT_MS).toISOString(), deadline),
    portalLogins: (await inBatches(db, 'portal_login_tokens', 'token_hash', 'expires_at', nowIso, deadline)) + (await inBatches(db, 'portal_sessions', 'id_hash', 'expires_at', nowIso, deadline)),
    passwordResets: await inBatches(db, 'password_reset_tokens', 'token_hash', 'expires_at', nowIso, deadline),
    waitingInvoicesExpired: (await expireWaitingInvoices(db, now)).expired,
    // Billing events go with the rest of the event history (EVENT_RETENTION_DAYS).
    billingEvents: await purgeBillingEventsBefore(db, eventCutoff, deadline),
    // A customer no billing event named within that time is forgotten with them.
    billingCustomers: await purgeBillingCustomersBefore(db, eventCutoff, deadline),
  };
}

function inBatches(
  db: Db,
  table: 'sessions' | 'authorization_codes' | 'idempotency_keys' | 'attempt_counters' | 'portal_login_tokens' | 'portal_sessions' | 'password_reset_tokens',
  key: 'id_hash' | 'code_hash' | 'key' | 'token_hash',
  column: 'expires_at' | 'created_at' | 'window_started_at',
  before: string,
  deadline: number,
): Promise<number> {
  // `key` alone may not be unique (idempotency keys are per program); the time bound keeps
  // the delete to expired rows either way.
  return deleteInBatches((limit) =>
    db
      .deleteFrom(table)
      .where(column, '<', before)
      .where(key, 'in', (eb) => eb.selectFrom(table).select(key).where(column, '<', before).limit(limit))
      .executeTakeFirst(),
    undefined,
    deadline,
  );
}
