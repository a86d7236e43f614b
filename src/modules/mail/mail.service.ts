import type { Tx } from '../../db/transaction.ts';
import { newId } from '../../domain/ids.ts';
import { insertMail } from './mail.repository.ts';
import type { OutgoingMail } from './messages.ts';

/**
 * Queues a message in the caller's transaction: it is sent (by the worker) only if the change
 * that causes it commits, and a slow or broken mail server never delays or fails the request.
 */
export async function queueMail(tx: Tx, programId: string | null, mail: OutgoingMail, now: string): Promise<void> {
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
