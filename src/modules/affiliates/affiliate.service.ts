import { millionthsToRate, rateToMillionths } from '../../domain/commission.ts';
import { fromMinorUnits } from '../../domain/money.ts';
import { toIso } from '../../domain/clock.ts';
import { newId } from '../../domain/ids.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { inTransaction, type Db, type Tx } from '../../db/transaction.ts';
import type { MatchCount } from '../../db/text-search.ts';
import { conflict, hasDependents, notFound } from '../../domain/errors.ts';
import { mapPage, pageOf, type Page, type PageRequest } from '../../db/keyset.ts';
import { recordEvent } from '../events/outbox.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { normaliseEmail } from '../../domain/email.ts';
import { generateLinkString } from '../../domain/link-strings.ts';
import { findLink, insertLink, newLinkRow, renameLink } from './link.repository.ts';
import { fullUrlsFor, getLink, serializeLink } from './link.service.ts';
import { queueMail } from '../mail/mail.service.ts';
import { approvedMail, payoutEmailChangedMail } from '../mail/messages.ts';
import type { SaleCredit } from '../ledger/ledger.repository.ts';
import { lockReferralsOfAffiliate } from '../referrals/referral.repository.ts';
// The forced-delete cascade runs upward into the ledger and referrals: a deletion must take back what it credited.
import { voidSalesOf } from '../ledger/counters.ts';
import {
  addToAffiliateCounts,
  countAffiliateDependents,
  deleteAffiliateRow,
  findAffiliate,
  findAffiliateForDelete,
  findAffiliateNames,
  insertAffiliate,
  listAffiliates,
  lockAffiliate,
  pendingAffiliates,
  countFilteredAffiliates,
  type AffiliateListFilter,
  updateAffiliateRow,
  type AffiliateRow,
  sumAffiliateCounters,
} from './affiliate.repository.ts';
import { UpdateAffiliateBody, type Affiliate, type CreateAffiliateBody } from './affiliate.schema.ts';

export type { AffiliateListFilter } from './affiliate.repository.ts';

export const DEFAULT_PAYMENT_METHOD = 'none';

export function effectiveRate(row: Pick<AffiliateRow, 'commission_rate'>, program: ProgramContext): number {
  return row.commission_rate === null ? program.defaultCommissionRate : Number(row.commission_rate);
}

export function serializeAffiliate(row: Omit<AffiliateRow, 'primary_link_id'>, program: ProgramContext): Affiliate {
  return {
    id: row.id,
    firstName: row.first_name,
    lastName: row.last_name,
    name: `${row.first_name} ${row.last_name}`,
    email: row.email,
    password: null,
    emailVerified: Boolean(row.email_verified),
    image: row.image,
    detailsComplete: row.payment_method !== DEFAULT_PAYMENT_METHOD,
    programId: row.program_id,
    payoutEmail: row.payout_email,
    paymentMethod: row.payment_method,
    commissionRate: millionthsToRate(effectiveRate(row, program)),
    link: row.link ?? '',
    status: row.status,
    approval: row.approval,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    numberOfReferredUsers: Number(row.number_of_referred_users),
    numberOfClicks: Number(row.number_of_clicks),
    totalCommissionEarned: fromMinorUnits(row.total_commission_earned, program.currency),
  };
}

/**
 * Creates an affiliate with its own link. Made by the merchant (API, dashboard) it is approved;
 * a portal sign-up under the approval policy passes `pending` and waits, inactive.
 */
export async function createAffiliate(db: Db, program: ProgramContext, body: CreateAffiliateBody, options: { approval?: 'pending' | 'approved'; onCreated?: (tx: Tx, affiliate: Affiliate) => Promise<void> } = {}): Promise<Affiliate> {
  const pending = options.approval === 'pending';
  const { email, key } = normaliseEmail(body.email);
  const now = program.clock().toISOString();
  const row = {
    id: newId(),
    program_id: program.id,
    first_name: body.firstName.trim(),
    last_name: body.lastName.trim(),
    email,
    email_key: key,
    email_verified: 0,
    image: null,
    payout_email: body.payoutEmail ? normaliseEmail(body.payoutEmail).email : email,
    payment_method: body.paymentMethod ?? DEFAULT_PAYMENT_METHOD,
    commission_rate: body.commissionRate === undefined ? null : rateToMillionths(body.commissionRate, '#/commissionRate'),
    status: (pending ? 'inactive' : (body.status?.toLowerCase() ?? 'active')) as 'active' | 'inactive',
    approval: pending ? ('pending' as const) : ('approved' as const),
    portal_generation: 0,
    number_of_referred_users: 0,
    number_of_clicks: 0,
    total_commission_earned: 0,
    number_of_sales: 0,
    total_sales_amount: 0,
    total_refunded_amount: 0,
    created_at: now,
    updated_at: now,
  };
  const link = body.affiliateLink ?? generateLinkString(`${row.first_name}`);
  try {
    return await inTransaction(db, async (tx) => {
      await insertAffiliate(tx, row);
      await insertLink(tx, newLinkRow(program.id, row.id, link, true, now));
      const created = serializeAffiliate({ ...row, link }, program);
      await recordEvent(tx, program.id, 'affiliate.created', created, now);
      await options.onCreated?.(tx, created);
      // Counted last: the program's count row is the last this transaction locks (see addToAffiliateCounts).
      await addToAffiliateCounts(tx, program.id, [{ affiliateId: row.id, status: row.status, affiliates: 1 }]);
      return created;
    });
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    // The transaction rolled back; find out which unique value was taken to say so.
    if (await findAffiliate(db, program.id, { emailKey: key })) throw conflict(`An affiliate with e-mail ${email} already exists in this program.`);
    if (await findLink(db, program.id, { link })) throw conflict(`The link "${link}" is already used in this program.`);
    throw error;
  }
}

export async function getAffiliate(db: Db, program: ProgramContext, filter: { id?: string; email?: string }): Promise<Affiliate> {
  const row = await findAffiliate(db, program.id, { id: filter.id, emailKey: filter.email === undefined ? undefined : normaliseEmail(filter.email).key });
  if (!row) throw notFound('Affiliate');
  return serializeAffiliate(row, program);
}

export async function getAffiliatePage(db: Db, program: ProgramContext, page: PageRequest, filter: AffiliateListFilter = {}): Promise<Page<Affiliate>> {
  return mapPage(pageOf(await listAffiliates(db, program.id, page, filter), page), (row) => serializeAffiliate(row, program));
}

/** An affiliate with its own commission rate (null: it follows the program's default). */
export async function getAffiliateProfile(db: Db, program: ProgramContext, id: string): Promise<Affiliate & { ownCommissionRate: number | null }> {
  const row = await findAffiliate(db, program.id, { id });
  if (!row) throw notFound('Affiliate');
  return { ...serializeAffiliate(row, program), ownCommissionRate: row.commission_rate === null ? null : millionthsToRate(row.commission_rate) };
}

/** Names and e-mails by affiliate id, to label a page of referrals, sales or codes. */
export async function getAffiliateNames(db: Db, program: ProgramContext, ids: string[]): Promise<Map<string, { name: string; email: string }>> {
  const rows = await findAffiliateNames(db, program.id, ids);
  return new Map(rows.map((row) => [row.id, { name: `${row.first_name} ${row.last_name}`, email: row.email }]));
}

/** A portal sign-up waiting for the merchant's decision, as the approval queue shows it. */
export type PendingSignUp = Pick<Affiliate, 'id' | 'firstName' | 'lastName' | 'email' | 'createdAt'>;

/** The approval queue: the oldest `limit` portal sign-ups waiting, and how many wait. */
export async function getApprovalQueue(db: Db, program: ProgramContext, limit: number): Promise<{ signUps: PendingSignUp[]; count: number }> {
  const { rows, count } = await pendingAffiliates(db, program.id, limit);
  return { signUps: rows.map((row) => ({ id: row.id, firstName: row.first_name, lastName: row.last_name, email: row.email, createdAt: toIso(row.created_at) })), count };
}

/** A program's affiliates, and the referred customers and clicks their kept counters add up to. */
export function getAffiliateCounterTotals(db: Db, program: ProgramContext): Promise<{ affiliates: number; referrals: number; clicks: number }> {
  return sumAffiliateCounters(db, program.id);
}

/** How many affiliates the dashboard's filter matches (a search: up to a cap, db/text-search.ts). */
export function countAffiliatesMatching(db: Db, program: ProgramContext, filter: AffiliateListFilter): Promise<MatchCount> {
  return countFilteredAffiliates(db, program.id, filter);
}

/**
 * Changes an affiliate's names, e-mail, own link, rate, payout details or status (the
 * dashboard's edit form and PUT /affiliates; deactivating is status "inactive").
 */
export async function updateAffiliate(db: Db, program: ProgramContext, id: string, body: UpdateAffiliateBody): Promise<Affiliate> {
  const changes: Partial<Omit<AffiliateRow, 'link' | 'primary_link_id'>> = {};
  if (body.firstName !== undefined) changes.first_name = body.firstName.trim();
  if (body.lastName !== undefined) changes.last_name = body.lastName.trim();
  if (body.email !== undefined) {
    const { email, key } = normaliseEmail(body.email);
    Object.assign(changes, { email, email_key: key });
  }
  if (body.commissionRate !== undefined) {
    changes.commission_rate = body.commissionRate === null ? null : rateToMillionths(body.commissionRate, '#/commissionRate');
  }
  if (body.payoutEmail !== undefined) changes.payout_email = normaliseEmail(body.payoutEmail).email;
  if (body.paymentMethod !== undefined) changes.payment_method = body.paymentMethod;
  if (body.status !== undefined) changes.status = body.status.toLowerCase() as 'active' | 'inactive';
  // Deciding a sign-up also (de)activates it, unless the same request sets the status itself.
  if (body.approval !== undefined) {
    changes.approval = body.approval as 'approved' | 'rejected';
    changes.status ??= body.approval === 'approved' ? 'active' : 'inactive';
  }
  const now = program.clock().toISOString();
  changes.updated_at = now;
  // A deactivation or rejection ends the affiliate's portal sessions and login links for good:
  // reactivating or approving them again later brings none of them back.
  const endPortalAccess = changes.status === 'inactive' || changes.approval === 'rejected';
  let newLink: string | undefined;
  try {
    return await inTransaction(db, async (tx) => {
      // Read under the row's lock: what changes (the old payout e-mail told below, the event's
      // affiliate) is what this change replaced, whatever runs beside it.
      const current = await lockAffiliate(tx, program.id, id);
      if (!current) throw notFound('Affiliate');
      newLink = body.affiliateLink !== undefined && body.affiliateLink !== current.link ? body.affiliateLink : undefined;
      await updateAffiliateRow(tx, program.id, id, changes, { endPortalAccess });
      if (newLink !== undefined && current.primary_link_id !== null) {
        await renameLink(tx, current.primary_link_id, newLink, now);
        await recordEvent(tx, program.id, 'link.updated', await getLink(tx, program, { id: current.primary_link_id }), now);
      }
      const updated = serializeAffiliate({ ...current, ...changes, link: newLink ?? current.link }, program);
      await recordEvent(tx, program.id, 'affiliate.updated', updated, now);
      if (current.approval === 'pending' && changes.approval === 'approved' && updated.link) {
        await queueMail(tx, program.id, approvedMail(program, updated, fullUrlsFor(program, updated.link)[0]!.fullUrl), now);
      }
      // Told at the old address, in this transaction: sent only if the change commits.
      if (changes.payout_email !== undefined && changes.payout_email !== current.payout_email) {
        await queueMail(tx, program.id, payoutEmailChangedMail(program, updated, { from: current.payout_email, to: changes.payout_email }), now);
      }
      // The status it had under the lock moves to the new one, last (see addToAffiliateCounts).
      if (changes.status !== undefined && changes.status !== current.status) {
        await addToAffiliateCounts(tx, program.id, [
          { affiliateId: id, status: current.status, affiliates: -1 },
          { affiliateId: id, status: changes.status, affiliates: 1 },
        ]);
      }
      return updated;
    });
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    if (changes.email_key !== undefined) {
      const holder = await findAffiliate(db, program.id, { emailKey: changes.email_key });
      if (holder && holder.id !== id) throw conflict(`An affiliate with e-mail ${changes.email} already exists in this program.`);
    }
    if (newLink !== undefined) throw conflict(`The link "${newLink}" is already used in this program.`);
    throw error;
  }
}

/**
 * The affiliate's e-mail address is confirmed (a portal sign-up used the link mailed to it):
 * `emailVerified` becomes true, announced like any change. In the caller's transaction.
 */
export async function confirmAffiliateEmail(tx: Tx, program: ProgramContext, row: AffiliateRow): Promise<Affiliate> {
  const now = program.clock().toISOString();
  await updateAffiliateRow(tx, program.id, row.id, { email_verified: 1, updated_at: now });
  const updated = serializeAffiliate({ ...row, email_verified: 1, updated_at: now }, program);
  await recordEvent(tx, program.id, 'affiliate.updated', updated, now);
  return updated;
}

/**
 * DELETE /affiliates. An affiliate with referrals, sales or promotional codes is refused
 * (409 has_dependents) unless `force`: then their links, referrals and sales go with them, the
 * sales of their referrals credited to someone else are voided from that one's counters, and
 * their codes stay on their coupons, unassigned.
 */
export async function deleteAffiliate(db: Db, program: ProgramContext, id: string, target: { force?: boolean }): Promise<Affiliate> {
  return inTransaction(db, async (tx) => {
    const row = await findAffiliateForDelete(tx, program.id, id);
    if (!row) throw notFound('Affiliate');
    await lockReferralsOfAffiliate(tx, id);
    if (!target.force) {
      const { referrals, sales, codes } = await countAffiliateDependents(tx, id);
      if (referrals + sales + codes > 0) {
        throw hasDependents(`The affiliate has ${referrals} referral(s), ${sales} sale(s) and ${codes} promotional code(s); deleting them deletes their referrals and sales and unassigns their codes.`);
      }
    }
    const now = program.clock().toISOString();
    const voided = await voidSalesOf(tx, program, { referralsOfAffiliateCreditingOthers: id }, now);
    // Its own sales would go by the foreign key's cascade; voided here, they leave their entries in the ledger.
    await voidSalesOf(tx, program, { affiliateId: id }, now);
    await deleteAffiliateRow(tx, id);
    await announceTotalsChangedByCascade(tx, program, voided, now);
    const deleted = serializeAffiliate(row, program);
    await recordEvent(tx, program.id, 'affiliate.deleted', deleted, now);
    await addToAffiliateCounts(tx, program.id, [{ affiliateId: id, status: row.status, affiliates: -1 }]);
    return deleted;
  });
}

/**
 * Sales voided by a forced delete have no events of their own (the deleted record's event
 * stands for them), but the totals they leave may belong to affiliates and links the deleted
 * record does not name: each of those says so with its own `*.updated` event, in the delete's
 * transaction, so a subscriber that mirrors them never keeps a total that changed silently.
 */
export async function announceTotalsChangedByCascade(tx: Tx, program: ProgramContext, voided: SaleCredit[], now: string): Promise<void> {
  const affiliateIds = new Set(voided.filter((credit) => credit.commission !== 0).map((credit) => credit.affiliate_id));
  const linkIds = new Set(voided.flatMap((credit) => (credit.link_id === null ? [] : [credit.link_id])));
  for (const affiliateId of affiliateIds) {
    const affiliate = await findAffiliate(tx, program.id, { id: affiliateId });
    if (affiliate) await recordEvent(tx, program.id, 'affiliate.updated', serializeAffiliate(affiliate, program), now);
  }
  for (const linkId of linkIds) {
    const link = await findLink(tx, program.id, { id: linkId });
    if (link) await recordEvent(tx, program.id, 'link.updated', serializeLink(link, program), now);
  }
}
