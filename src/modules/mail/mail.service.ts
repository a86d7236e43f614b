import { createHash } from 'node:crypto';
import type { Tx } from '../../db/transaction.ts';
import { newId } from '../../domain/ids.ts';
import { countAttempt, type AttemptLimit } from '../throttling/attempt-counter.ts';
import { insertMail } from './mail.repository.ts';
import type { OutgoingMail } from './messages.ts';

/**
 * Mail a program's actions send to an address (a payout marked paid, an approval, a portal
 * sign-up's confirmation and welcome) is limited per address, so nobody can use Tandem to send mail with their
 * text to someone else's inbox (issue 29: 30 "payout paid" mails reached one address in two
 * seconds). Per program and address, and per address across every program, in a fixed window.
 * Left out: what the address's owner asks for themselves (login links and password resets,
 * limited where they are asked for) and the notice that an affiliate's payout e-mail changed
 * (a security notice must not be crowded out).
 */
export const MAIL_LIMIT_PER_PROGRAM: AttemptLimit = { max: 5, windowMs: 60 * 60_000 };
export const MAIL_LIMIT_PER_ADDRESS: AttemptLimit = { max: 20, windowMs: 60 * 60_000 };

const LIMITED_KINDS: ReadonlySet<OutgoingMail['kind']> = new Set(['payout_paid', 'signup_received', 'signup_confirm', 'affiliate_approved']);

/** Counts one message to `to` (in the caller's transaction); false when it is over a limit and must not be sent. */
async function withinMailLimits(tx: Tx, programId: string | null, to: string, now: Date): Promise<boolean> {
  // The address is kept hashed in the counters, as it needs no reading back.
  const address = createHash('sha256').update(to.trim().toLowerCase()).digest('hex');
  if (programId !== null && (await countAttempt(tx, `mail:${programId}:${address}`, MAIL_LIMIT_PER_PROGRAM, now)) !== null) return false;
  return (await countAttempt(tx, `mail:${address}`, MAIL_LIMIT_PER_ADDRESS, now)) === null;
}

/**
 * Queues a message in the caller's transaction: it is sent (by the worker) only if the change
 * that causes it commits, and a slow or broken mail server never delays or fails the request.
 * A message over its address's limits is not queued; the change itself goes ahead.
 */
export async function queueMail(tx: Tx, programId: string | null, mail: OutgoingMail, now: string): Promise<void> {
  if (LIMITED_KINDS.has(mail.kind) && !(await withinMailLimits(tx, programId, mail.to, new Date(now)))) return;
  await insertMail(tx, {
    id: newId(),
    program_id: programId,
    kind: mail.kind,
    to_address: mail.to,
    subject: mail.subject,
    text_body: mail.text,
    html_body: mail.html,
    next_attempt_at: now,
    created_at: now,
  });
}
