import { createHash } from 'node:crypto';
import { inTransaction, type Db, type Tx } from '../../db/transaction.ts';
import { normaliseEmail } from '../../domain/email.ts';
import { ApiError, notFound } from '../../domain/errors.ts';
import { randomToken } from '../../domain/ids.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { findAffiliate, type AffiliateRow } from '../affiliates/affiliate.repository.ts';
import { queueMail } from '../mail/mail.service.ts';
import { loginLinkMail, signUpConfirmMail, signUpReceivedMail } from '../mail/messages.ts';
import { confirmAffiliateEmail, serializeAffiliate } from '../affiliates/affiliate.service.ts';
import type { Affiliate } from '../affiliates/affiliate.schema.ts';
import { fullUrlsFor } from '../affiliates/link.service.ts';
import { consumeToken, deletePortalSession, findPortalSession, findUsableToken, insertLoginToken, insertPortalSession, type PortalHolder } from './portal-login.repository.ts';

// Passwordless login to an affiliate portal (issue 19 item 2). A link is 256 random bits, kept
// only as its SHA-256 hash, bound to one affiliate of one program, valid 15 minutes (e-mail)
// or 5 (handed out by the merchant's app), used once. Opening the link uses nothing (mail
// scanners open every link): its page's button, a POST, signs in. Only an approved, active
// affiliate can sign in. Links and sessions carry the affiliate's portal generation from when
// they were made, which every deactivation or rejection raises: they end for good then, and
// reactivating or approving the affiliate again brings none back (issue 29 item 12).

export const EMAIL_LINK_MS = 15 * 60_000;
/** A portal sign-up's confirmation link: its first sign-in, which confirms the address. */
export const SIGNUP_LINK_MS = 24 * 60 * 60_000;
export const APP_LINK_MS = 5 * 60_000;
export const PORTAL_SESSION_MS = 14 * 86_400_000;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export interface PortalAddress {
  /** {SITE_URL}/portal/{slug} */
  portalUrl: string;
}

function canSignIn(affiliate: AffiliateRow | undefined): affiliate is AffiliateRow {
  return affiliate !== undefined && affiliate.status === 'active' && affiliate.approval === 'approved';
}

/** The affiliate a link or session is for, when it may sign in and has not been deactivated or rejected since the link or session was made. */
async function currentHolder(db: Db | Tx, programId: string, holder: PortalHolder | undefined): Promise<AffiliateRow | undefined> {
  if (holder === undefined) return undefined;
  const affiliate = await findAffiliate(db, programId, { id: holder.affiliate_id });
  return canSignIn(affiliate) && Number(affiliate.portal_generation) === Number(holder.affiliate_generation) ? affiliate : undefined;
}

/** How long a link of each purpose works, and the message that carries it (none: the caller hands it over). */
const LINKS = {
  email: { lifetimeMs: EMAIL_LINK_MS, mail: loginLinkMail },
  app: { lifetimeMs: APP_LINK_MS, mail: null },
  signup: { lifetimeMs: SIGNUP_LINK_MS, mail: signUpConfirmMail },
} as const;

/**
 * A new sign-in link of `purpose` for the affiliate, in the caller's transaction: stored as its
 * hash, and mailed when its purpose is to be mailed. The link and its expiry (a transaction of
 * POST /affiliates/portal-link answers with them: an Idempotency-Key stores the answer).
 */
async function issueLink(tx: Tx, program: ProgramContext, affiliate: AffiliateRow, purpose: keyof typeof LINKS, portal: PortalAddress) {
  const token = randomToken(32);
  const now = program.clock();
  const { lifetimeMs, mail } = LINKS[purpose];
  const expiresAt = new Date(now.getTime() + lifetimeMs).toISOString();
  const url = `${portal.portalUrl}/login/${token}`;
  await insertLoginToken(tx, { token_hash: sha256(token), program_id: program.id, affiliate_id: affiliate.id, affiliate_generation: affiliate.portal_generation, purpose, expires_at: expiresAt, created_at: now.toISOString() });
  if (mail) await queueMail(tx, program.id, mail(program, { firstName: affiliate.first_name, email: affiliate.email }, url), now.toISOString());
  return { url, expiresAt };
}

/**
 * A portal sign-up (open policy): mails the link that confirms the address and signs in, in
 * the sign-up's transaction. Nothing else goes to the address until it is used (then the
 * welcome, see signInWithLink): a sign-up made with a stranger's address sends them only this.
 */
export async function queueSignUpConfirmation(tx: Tx, program: ProgramContext, affiliateId: string, portal: PortalAddress): Promise<void> {
  const affiliate = await findAffiliate(tx, program.id, { id: affiliateId });
  if (canSignIn(affiliate)) await issueLink(tx, program, affiliate, 'signup', portal);
}

/**
 * The portal's "e-mail me a link": sends one when the address is an approved, active affiliate
 * of the program, and does nothing otherwise — the caller answers the same either way.
 */
export async function sendLoginLink(db: Db, program: ProgramContext, email: string, portal: PortalAddress): Promise<void> {
  const affiliate = await findAffiliate(db, program.id, { emailKey: normaliseEmail(email).key });
  if (canSignIn(affiliate)) await inTransaction(db, (tx) => issueLink(tx, program, affiliate, 'email', portal));
}

/** POST /affiliates/portal-link: a 5-minute link for the merchant's app to hand to a signed-in affiliate. */
export async function createPortalLink(db: Db, program: ProgramContext, by: { affiliateId?: string; email?: string }, portal: PortalAddress): Promise<{ url: string; expiresAt: string }> {
  if (by.affiliateId === undefined && by.email === undefined) {
    throw new ApiError('validation_failed', 'Name the affiliate.', [{ pointer: '#/affiliateId', detail: 'affiliateId or email is required' }]);
  }
  const affiliate = await findAffiliate(db, program.id, { id: by.affiliateId, emailKey: by.email === undefined ? undefined : normaliseEmail(by.email).key });
  if (!affiliate) throw notFound('Affiliate');
  if (!canSignIn(affiliate)) throw new ApiError('affiliate_inactive', 'The affiliate is not approved and active, so it cannot sign in to the portal.');
  return inTransaction(db, (tx) => issueLink(tx, program, affiliate, 'app', portal));
}

/** Whom a login link would sign in (for its page), without using it; undefined when unusable. */
export async function loginLinkHolder(db: Db, program: ProgramContext, token: string): Promise<Affiliate | undefined> {
  const row = await currentHolder(db, program.id, await findUsableToken(db, program.id, sha256(token), program.clock().toISOString()));
  return row && serializeAffiliate(row, program);
}

/** Uses a login link and opens a portal session; the session id (the cookie's value), or null when the link is unusable. */
export async function signInWithLink(db: Db, program: ProgramContext, token: string): Promise<string | null> {
  const now = program.clock();
  return inTransaction(db, async (tx) => {
    const holder = await consumeToken(tx, program.id, sha256(token), now.toISOString());
    const affiliate = await currentHolder(tx, program.id, holder);
    if (affiliate === undefined) return null;
    // A sign-up's confirmation: the address is the affiliate's, and now hears its welcome.
    if (holder!.purpose === 'signup' && !affiliate.email_verified) {
      const confirmed = await confirmAffiliateEmail(tx, program, affiliate);
      const shareUrl = fullUrlsFor(program, confirmed.link)[0]?.fullUrl ?? confirmed.link;
      await queueMail(tx, program.id, signUpReceivedMail(program, { firstName: affiliate.first_name, email: affiliate.email }, shareUrl), now.toISOString());
    }
    const sessionId = randomToken(32);
    await insertPortalSession(tx, { id_hash: sha256(sessionId), program_id: program.id, affiliate_id: affiliate.id, affiliate_generation: affiliate.portal_generation, created_at: now.toISOString(), expires_at: new Date(now.getTime() + PORTAL_SESSION_MS).toISOString() });
    return sessionId;
  });
}

/** The affiliate a portal session cookie stands for in this program (approved and active), or undefined. */
export async function portalSessionAffiliate(db: Db, program: ProgramContext, sessionId: string): Promise<Affiliate | undefined> {
  if (sessionId.length > 100) return undefined;
  const row = await currentHolder(db, program.id, await findPortalSession(db, program.id, sha256(sessionId), program.clock().toISOString()));
  return row && serializeAffiliate(row, program);
}

export async function signOut(db: Db, sessionId: string): Promise<void> {
  await deletePortalSession(db, sha256(sessionId));
}
