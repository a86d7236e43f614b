import { newId } from '../../domain/ids.ts';
import { toIso } from '../../domain/clock.ts';
import { isUniqueViolationOn } from '../../db/errors.ts';
import { inTransaction, inTransactionOnce, type Db, type Tx } from '../../db/transaction.ts';
import type { MatchCount } from '../../db/text-search.ts';
import { ApiError, conflict, duplicate, hasDependents, notFound } from '../../domain/errors.ts';
import { emptyPage, mapPage, pageOf, type Page, type PageRequest } from '../../db/keyset.ts';
import { newEventId, recordEvent } from '../events/outbox.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { normaliseEmail } from '../../domain/email.ts';
import { findAffiliate } from '../affiliates/affiliate.repository.ts';
import { findRedeemableCode, redeemPromoCode } from '../coupons/promo-code-redemption.ts';
import { announceTotalsChangedByCascade, getAffiliateCounterTotals } from '../affiliates/affiliate.service.ts';
import { narrowsList } from '../../domain/list-filter.ts';
import { resolveAffiliateEmailFilter } from '../affiliates/affiliate-lookup.ts';
import { countSalesOf } from '../ledger/ledger.repository.ts';
import { countCustomer, voidSalesOf } from '../ledger/counters.ts';
import { assertCreditable, creditThroughPrimaryLink, findCreditByCode, findCreditByIdOrLink, type Credit } from '../ledger/credit.ts';
import {
  deleteReferralRow,
  findReferral,
  findReferralForDelete,
  findReferralIdByExternalId,
  insertReferralWithItsWrites,
  insertReferralUnlessEmailTaken,
  listReferrals,
  updateReferralRow,
  type ReferralFilter,
  type ReferralRow,
  countReferrals,
} from './referral.repository.ts';
import type { CreateReferralBody, Referral, UpdateReferralBody } from './referral.schema.ts';

export function serializeReferral(row: ReferralRow): Referral {
  return {
    id: row.id,
    affiliateId: row.affiliate_id,
    name: row.name,
    email: row.email,
    referredUserExternalId: row.referred_user_external_id,
    plan: row.plan,
    status: row.status,
  };
}

interface CustomerInput {
  name: string;
  email: string;
  externalId: string;
  plan?: string;
  status?: string;
  promotionalCodeId: string | null;
  /** When the customer came, if before now (a billing provider's customer created earlier): the referral's date, from which the plan's durationMonths counts. */
  referredAt?: string;
}

/**
 * The 409 of an e-mail another referral of the program holds. It keeps the unique violation as
 * its cause: when the other referral is this one's twin, made at the same moment for the same
 * customer, inTransactionOnce names it as the duplicate it is.
 */
function emailTaken(email: string, violation: unknown): ApiError {
  return Object.assign(conflict(`A referral with e-mail ${email} already exists in this program.`), { cause: violation });
}

function customerRow(program: ProgramContext, credit: Credit, input: CustomerInput): ReferralRow {
  const { email, key } = normaliseEmail(input.email);
  const now = program.clock().toISOString();
  return {
    id: newId(),
    program_id: program.id,
    affiliate_id: credit.affiliate.id,
    link_id: credit.linkId,
    promotional_code_id: input.promotionalCodeId,
    name: input.name.trim(),
    email,
    email_key: key,
    referred_user_external_id: input.externalId,
    external_id_key: input.externalId === '' ? null : input.externalId,
    plan: input.plan ?? '',
    status: (input.status?.toLowerCase() ?? 'active') as 'active' | 'inactive',
    created_at: input.referredAt !== undefined && input.referredAt < now ? input.referredAt : now,
    updated_at: now,
  };
}

/** Counts a new customer on the affiliate and link (the ledger's counters), and records referral.created. */
async function countNewCustomer(tx: Tx, program: ProgramContext, credit: Credit, row: ReferralRow): Promise<void> {
  await countCustomer(tx, { affiliateId: credit.affiliate.id, linkId: credit.linkId }, 1);
  await recordEvent(tx, program.id, 'referral.created', serializeReferral(row), toIso(row.created_at));
}

/** Inserts a referred customer (POST /referrals): a second one with the same e-mail is a 409. */
export async function insertCustomer(tx: Tx, program: ProgramContext, credit: Credit, input: CustomerInput): Promise<ReferralRow> {
  const row = customerRow(program, credit, input);
  try {
    await insertReferralWithItsWrites(tx, row, { eventId: newEventId(), eventData: JSON.stringify(serializeReferral(row)) });
  } catch (error) {
    if (isUniqueViolationOn(error, 'email')) throw emailTaken(row.email, error);
    throw error;
  }
  return row;
}

/**
 * The customer of a sale that found none: inserted, or — when a concurrent sale for the same
 * new customer inserted them first — that one. One statement decides (an insert that does
 * nothing on the e-mail's unique key waits for the other transaction), so a billing burst for
 * a new customer records every sale and exactly one referral.
 */
export async function insertOrGetCustomer(tx: Tx, program: ProgramContext, credit: Credit, input: CustomerInput): Promise<{ row: ReferralRow; created: boolean }> {
  const row = customerRow(program, credit, input);
  if (await insertReferralUnlessEmailTaken(tx, row)) {
    await countNewCustomer(tx, program, credit, row);
    return { row, created: true };
  }
  const existing = await findReferral(tx, program.id, { emailKey: row.email_key });
  if (!existing) throw conflict(`A referral with e-mail ${row.email} was being recorded at the same time; retry.`);
  return { row: existing, created: false };
}

/**
 * Work of a module above this one, done in the transaction that makes a referral or gives it a
 * referredUserExternalId: billing turns the customer's waiting Stripe invoices into sales
 * (billing/billing.service.ts). app.ts hands it to the routes (AppServices.referralMade), so
 * this module need not know billing.
 */
export type ReferralMade = (tx: Tx, program: ProgramContext, referral: Referral) => Promise<void>;

/** What else making a referral does: `referralMade` (the routes'), `referredAt` (billing's, below). */
export interface ReferralOptions {
  referralMade?: ReferralMade;
  /** When the customer came, for a referral made later from a provider's record of them (a time after now counts as now). */
  referredAt?: string;
}

/** POST /referrals, the dashboard's and billing's referrals. */
export async function createReferral(db: Db, program: ProgramContext, body: CreateReferralBody, { referralMade, referredAt }: ReferralOptions = {}): Promise<Referral> {
  if (body.affiliateId === undefined && body.affiliateEmail === undefined && body.promoCode === undefined) {
    throw new ApiError('validation_failed', 'Name who referred this user.', [
      { pointer: '#/affiliateId', detail: 'affiliateId, affiliateEmail or promoCode is required' },
    ]);
  }
  const externalId = body.referredUserExternalId;
  return inTransactionOnce(
    db,
    {
      column: 'external_id_key',
      findExisting: (q) => findReferralIdByExternalId(q, program.id, externalId),
      duplicateOf: (existingId) => duplicate('duplicate_referral', `A referral with referredUserExternalId "${externalId}" already exists in this program.`, existingId),
    },
    async (tx) => {
      const referral = await referInTransaction(tx, program, body, referredAt);
      if (referralMade && referral.referredUserExternalId) await referralMade(tx, program, referral);
      return referral;
    },
  );
}

async function referInTransaction(tx: Tx, program: ProgramContext, body: CreateReferralBody, referredAt?: string): Promise<Referral> {
  const code = body.promoCode === undefined ? undefined : await findRedeemableCode(tx, program, body.promoCode);
  let credit: Credit;
  if (body.affiliateId !== undefined) {
    const found = await findCreditByIdOrLink(tx, program, body.affiliateId);
    if (!found) throw notFound('An affiliate or link matching affiliateId');
    credit = found;
  } else if (body.affiliateEmail !== undefined) {
    const affiliate = await findAffiliate(tx, program.id, { emailKey: normaliseEmail(body.affiliateEmail).key });
    if (!affiliate) throw notFound('Affiliate');
    credit = creditThroughPrimaryLink(affiliate);
  } else {
    credit = await findCreditByCode(tx, program, code!);
  }
  assertCreditable(credit);
  const row = await insertCustomer(tx, program, credit, {
    name: body.name,
    email: body.email,
    externalId: body.referredUserExternalId,
    plan: body.plan,
    status: body.status,
    promotionalCodeId: code?.code.id ?? null,
    referredAt,
  });
  if (code) {
    await redeemPromoCode(tx, program, code, {
      affiliateId: credit.affiliate.id,
      customerExternalId: row.referred_user_external_id,
      customerHasOrdered: false,
    });
  }
  return serializeReferral(row);
}

export type ReferralQuery = ReferralFilter & { affiliateEmail?: string };

/** A referral as lists hold it: the API's Referral, and when it was recorded (the dashboard shows it; the API's answer leaves it out). */
export type ListedReferral = Referral & { createdAt: string };

export async function getReferral(db: Db, program: ProgramContext, query: ReferralQuery): Promise<Referral> {
  const filter = await resolveAffiliateEmailFilter(db, program, query);
  const row = filter && (await findReferral(db, program.id, filter));
  if (!row) throw notFound('Referral');
  return serializeReferral(row);
}

/** A page of referrals; an `affiliateEmail` no affiliate has gives an empty page. */
export async function getReferralPage(db: Db, program: ProgramContext, query: ReferralQuery, page: PageRequest): Promise<Page<ListedReferral>> {
  const filter = await resolveAffiliateEmailFilter(db, program, query);
  if (!filter) return emptyPage();
  return mapPage(pageOf(await listReferrals(db, program.id, filter, page), page), (row) => ({ ...serializeReferral(row), createdAt: toIso(row.created_at) }));
}

/**
 * How many referrals the dashboard's filter matches, counted no further than a cap
 * (db/text-search.ts). With no filter, the sum of the affiliates' kept counters (every referral
 * is counted on the affiliate it credits) rather than a count of every referral.
 */
export async function countMatchingReferrals(db: Db, program: ProgramContext, filter: ReferralFilter): Promise<MatchCount> {
  return narrowsList(filter) ? countReferrals(db, program.id, filter) : (await getAffiliateCounterTotals(db, program)).referrals;
}

/**
 * PUT /referrals: the referred user's name, e-mail, external id, plan or status. Who is
 * credited does not change (delete and record again for that); sales keep the name and e-mail
 * they were recorded with.
 */
export async function updateReferral(db: Db, program: ProgramContext, id: string, body: UpdateReferralBody, referralMade?: ReferralMade): Promise<Referral> {
  const externalId = body.referredUserExternalId;
  const work = async (tx: Tx) => {
    const current = await findReferral(tx, program.id, { id });
    if (!current) throw notFound('Referral');
    const now = program.clock().toISOString();
    const changes: Partial<ReferralRow> = { updated_at: now };
    if (body.name !== undefined) changes.name = body.name.trim();
    if (body.email !== undefined) {
      const { email, key } = normaliseEmail(body.email);
      Object.assign(changes, { email, email_key: key });
    }
    if (externalId !== undefined) Object.assign(changes, { referred_user_external_id: externalId, external_id_key: externalId });
    if (body.plan !== undefined) changes.plan = body.plan;
    if (body.status !== undefined) changes.status = body.status.toLowerCase() as ReferralRow['status'];
    try {
      await updateReferralRow(tx, id, changes);
    } catch (error) {
      if (isUniqueViolationOn(error, 'email')) throw emailTaken(changes.email!, error);
      throw error;
    }
    const updated = serializeReferral({ ...current, ...changes });
    await recordEvent(tx, program.id, 'referral.updated', updated, now);
    if (referralMade && externalId && externalId !== current.referred_user_external_id) await referralMade(tx, program, updated);
    return updated;
  };
  if (externalId === undefined) return inTransaction(db, work);
  // Like POST: an external id the program already holds for another referral is a duplicate.
  return inTransactionOnce(
    db,
    {
      column: 'external_id_key',
      findExisting: async (q) => {
        const holder = await findReferralIdByExternalId(q, program.id, externalId);
        return holder === id ? undefined : holder;
      },
      duplicateOf: (existingId) => duplicate('duplicate_referral', `A referral with referredUserExternalId "${externalId}" already exists in this program.`, existingId),
    },
    work,
  );
}

/**
 * DELETE /referrals: the referral leaves every list and counter. One with sales is refused
 * (409 has_dependents) unless `force`, which voids its sales too, taking each from the counters
 * of whoever it credited. A code it redeemed stays redeemed.
 */
export async function deleteReferral(db: Db, program: ProgramContext, id: string, target: { force?: boolean }): Promise<Referral> {
  return inTransaction(db, async (tx) => {
    const row = await findReferralForDelete(tx, program.id, id);
    if (!row) throw notFound('Referral');
    if (!target.force) {
      const sales = await countSalesOf(tx, program.id, { referralId: id });
      if (sales > 0) throw hasDependents(`The referral has ${sales} sale${sales === 1 ? '' : 's'}; deleting it voids them.`);
    }
    const now = program.clock().toISOString();
    const voided = await voidSalesOf(tx, program, { referralId: id }, now);
    await deleteReferralRow(tx, id);
    await countCustomer(tx, { affiliateId: row.affiliate_id, linkId: row.link_id }, -1);
    // referral.deleted names its own affiliate; a sale of it credited to another one is announced.
    await announceTotalsChangedByCascade(tx, program, voided.filter((credit) => credit.affiliate_id !== row.affiliate_id), now);
    const deleted = serializeReferral(row);
    await recordEvent(tx, program.id, 'referral.deleted', deleted, now);
    return deleted;
  });
}
