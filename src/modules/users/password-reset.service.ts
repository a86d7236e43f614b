import { createHash } from 'node:crypto';
import type { Clock } from '../../domain/clock.ts';
import { randomToken } from '../../domain/ids.ts';
import { normaliseEmail } from '../../domain/email.ts';
import { inTransaction, type Db } from '../../db/transaction.ts';
import { queueMail } from '../mail/mail.service.ts';
import { passwordResetMail } from '../mail/messages.ts';
import { checkNewPassword, findUserByEmail, hashPassword, requireUser, storePassword } from './user.service.ts';
import { consumeResetToken, findUsableResetToken, insertResetToken } from './password-reset.repository.ts';

// "Forgot password?" (issue 21 item 2). A link is 256 random bits kept only as their SHA-256
// hash, bound to one user, valid 30 minutes, used once; using it sets the new password, voids
// the user's other links and ends every session (storePassword: so does any password change). Opening the link changes nothing (mail
// scanners open links): its page's form, a POST, resets.

export const RESET_LINK_MS = 30 * 60_000;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export interface ResetLink {
  url: string;
  expiresAt: string;
}

async function issueResetLink(db: Db, clock: Clock, user: { id: string; email: string }, siteUrl: string, mail: boolean): Promise<ResetLink> {
  const token = randomToken(32);
  const now = clock();
  const expiresAt = new Date(now.getTime() + RESET_LINK_MS).toISOString();
  const url = `${siteUrl}/reset-password/${token}`;
  await inTransaction(db, async (tx) => {
    await insertResetToken(tx, { token_hash: sha256(token), user_id: user.id, expires_at: expiresAt, created_at: now.toISOString() });
    if (mail) await queueMail(tx, null, passwordResetMail(user.email, url), now.toISOString());
  });
  return { url, expiresAt };
}

/**
 * The form's "e-mail me a link": queues one (sent by the mail worker, or written to the log
 * without SMTP) when the e-mail is an account's, and does nothing otherwise — the caller
 * answers the same either way, so the form never tells who has an account.
 */
export async function requestPasswordReset(db: Db, clock: Clock, email: string, siteUrl: string): Promise<void> {
  const user = await findUserByEmail(db, email);
  if (user) await issueResetLink(db, clock, user, siteUrl, true);
}

/** `tandem user reset-password`: a link for the operator to hand over (nothing is e-mailed). */
export async function createPasswordResetLink(db: Db, clock: Clock, email: string, siteUrl: string): Promise<ResetLink & { email: string }> {
  const user = requireUser(await findUserByEmail(db, email), normaliseEmail(email).email);
  return { ...(await issueResetLink(db, clock, user, siteUrl, false)), email: user.email };
}

/** The account a reset link would reset (for its page), without using it; undefined when unusable. */
export async function resetLinkHolder(db: Db, clock: Clock, token: string): Promise<{ id: string; email: string } | undefined> {
  const userId = await findUsableResetToken(db, sha256(token), clock().toISOString());
  if (userId === undefined) return undefined;
  return db.selectFrom('users').select(['id', 'email']).where('id', '=', userId).executeTakeFirst();
}

/**
 * Uses a reset link: the new password is checked first (a refused one leaves the link usable),
 * then link, password, other links and sessions change in one transaction. The account, or
 * null when the link is used, expired or unknown.
 */
export async function resetPassword(db: Db, clock: Clock, token: string, password: string): Promise<{ id: string; email: string } | null> {
  checkNewPassword(password);
  const now = clock().toISOString();
  // Hashed only for a link that works, and outside the transaction (scrypt takes a while).
  if ((await findUsableResetToken(db, sha256(token), now)) === undefined) return null;
  const passwordHash = await hashPassword(password);
  return inTransaction(db, async (tx) => {
    const userId = await consumeResetToken(tx, sha256(token), now);
    if (userId === undefined) return null;
    await storePassword(tx, userId, passwordHash, now);
    return (await tx.selectFrom('users').select(['id', 'email']).where('id', '=', userId).executeTakeFirst()) ?? null;
  });
}
