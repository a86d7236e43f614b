import type { Insertable, Selectable } from 'kysely';
import type { MailOutboxTable } from '../../db/schema.ts';
import { dialectOf } from '../../db/dialect.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { deleteInBatches } from '../../db/batched-delete.ts';
import { announceLocalChange } from '../../db/change-watch.ts';

export type MailRow = Selectable<MailOutboxTable>;

/** The local channel that says mail was queued: this process's mail worker wakes for it (mail-worker.ts). */
export const MAIL_QUEUED_CHANNEL = 'tandem_mail_queued';

export async function insertMail(tx: Tx, row: Insertable<MailOutboxTable>): Promise<void> {
  await tx.insertInto('mail_outbox').values(row).execute();
  announceLocalChange(tx, MAIL_QUEUED_CHANNEL);
}

/**
 * Leases up to `limit` messages that are due (and not leased by a live worker) until
 * `leaseUntil`: any number of workers may claim at once, each message goes to one of them.
 */
export async function claimDueMail(db: Db, now: string, leaseUntil: string, limit: number): Promise<MailRow[]> {
  return db
    .updateTable('mail_outbox')
    .set({ lease_until: leaseUntil })
    .where('id', 'in', (eb) => {
      let due = eb
        .selectFrom('mail_outbox')
        .select('id')
        .where('sent_at', 'is', null)
        .where('failed_at', 'is', null)
        .where('next_attempt_at', '<=', now)
        .where((w) => w.or([w('lease_until', 'is', null), w('lease_until', '<', now)]))
        .orderBy('next_attempt_at')
        .limit(limit);
      if (dialectOf(db) === 'postgres') due = due.forUpdate().skipLocked();
      return due;
    })
    .returningAll()
    .execute();
}

export async function markMailSent(db: Db, id: string, now: string): Promise<void> {
  await db.updateTable('mail_outbox').set({ sent_at: now, lease_until: null, last_error: null }).where('id', '=', id).execute();
}

/** A failed attempt: retried at `retryAt`, or given up (failed_at) when there is none left. */
export async function markMailAttemptFailed(db: Db, id: string, attempts: number, retryAt: string | null, error: string, now: string): Promise<void> {
  await db
    .updateTable('mail_outbox')
    .set({ attempts, lease_until: null, last_error: error.slice(0, 500), ...(retryAt === null ? { failed_at: now } : { next_attempt_at: retryAt }) })
    .where('id', '=', id)
    .execute();
}

/** Sent and given-up messages older than `before` (the worker's purge). */
export function purgeMailBefore(db: Db, before: string, deadline = Infinity): Promise<number> {
  return deleteInBatches((limit) =>
    db
      .deleteFrom('mail_outbox')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('mail_outbox')
          .select('id')
          .where('created_at', '<', before)
          .where((w) => w.or([w('sent_at', 'is not', null), w('failed_at', 'is not', null)]))
          .limit(limit),
      )
      .executeTakeFirst(),
    undefined,
    deadline,
  );
}
