import { newId, isUuid } from '../../domain/ids.ts';
import { isUniqueViolationOn } from '../../db/errors.ts';
import { inTransactionOnce, type Db, type Tx } from '../../db/transaction.ts';
import { ApiError, conflict, duplicate, notFound } from '../../domain/errors.ts';
import type { PageRequest } from '../../db/keyset.ts';
import { recordEvent } from '../events/outbox.ts';
import type { ProgramContext } from '../programs/program.service.ts';
import { normaliseEmail } from '../users/user.service.ts';
import { addToAffiliateCounters, findAffiliate, type AffiliateRow } from '../affiliates/affiliate.repository.ts';
import { addToLinkCounters, findLink } from '../links/link.repository.ts';
import { findRedeemableCode, redeemPromoCode, type RedeemableCode } from '../promotional-codes/promo-code-redemption.ts';
import { findReferral, findReferralIdByExternalId, insertReferral, listReferrals, type ReferralFilter, type ReferralRow } from './referral.repository.ts';
import type { CreateReferralBody, Referral } from './referral.schema.ts';

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

/** The affiliate to credit, and the link the credit goes through. */
export interface Credit {
  affiliate: AffiliateRow;
  linkId: string | null;
}

function creditThroughPrimaryLink(affiliate: AffiliateRow): Credit {
  return { affiliate, linkId: affiliate.primary_link_id };
}

/** A deactivated affiliate earns nothing new: no referral, sale or click is credited to them. */
export function assertCreditable(credit: Credit): void {
  const { affiliate } = credit;
  if (affiliate.status !== 'active') {
    throw new ApiError('affiliate_inactive', `The affiliate ${affiliate.first_name} ${affiliate.last_name} (${affiliate.id}) is inactive and cannot be credited.`);
  }
}

/** Resolves a value that is an affiliate id or one of an affiliate's link strings; null when neither. */
export async function findCreditByIdOrLink(tx: Tx, program: ProgramContext, value: string): Promise<Credit | null> {
  if (isUuid(value)) {
    const affiliate = await findAffiliate(tx, program.id, { id: value.toLowerCase() });
    if (affiliate) return creditThroughPrimaryLink(affiliate);
  }
  const link = await findLink(tx, program.id, { link: value });
  if (!link) return null;
  const affiliate = await findAffiliate(tx, program.id, { id: link.affiliate_id });
  return affiliate ? { affiliate, linkId: link.id } : null;
}

/** The affiliate a promotional code credits; a code without one cannot credit anybody. */
export async function findCreditByCode(tx: Tx, program: ProgramContext, found: RedeemableCode): Promise<Credit> {
  const affiliate = found.code.affiliate_id === null ? undefined : await findAffiliate(tx, program.id, { id: found.code.affiliate_id });
  if (!affiliate) {
    throw new ApiError('promo_code_not_assigned', `The promotional code "${found.code.code}" is not assigned to an affiliate, so nobody can be credited.`);
  }
  return creditThroughPrimaryLink(affiliate);
}

/** Inserts a referred customer and counts it on the affiliate and link; records referral.created. */
export async function insertCustomer(
  tx: Tx,
  program: ProgramContext,
  credit: Credit,
  input: { name: string; email: string; externalId: string; plan?: string; status?: string; promotionalCodeId: string | null },
): Promise<ReferralRow> {
  const { email, key } = normaliseEmail(input.email);
  const now = program.clock().toISOString();
  const row: ReferralRow = {
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
    created_at: now,
    updated_at: now,
  };
  try {
    await insertReferral(tx, row);
  } catch (error) {
    if (isUniqueViolationOn(error, 'email')) throw conflict(`A referral with e-mail ${email} already exists in this program.`);
    throw error;
  }
  await addToAffiliateCounters(tx, credit.affiliate.id, { referredUsers: 1, commission: 0 });
  if (credit.linkId !== null) await addToLinkCounters(tx, credit.linkId, { referrals: 1, sales: 0, revenue: 0 });
  await recordEvent(tx, program.id, 'referral.created', serializeReferral(row), now);
  return row;
}

export async function createReferral(db: Db, program: ProgramContext, body: CreateReferralBody): Promise<Referral> {
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
    (tx) => referInTransaction(tx, program, body),
  );
}

async function referInTransaction(tx: Tx, program: ProgramContext, body: CreateReferralBody): Promise<Referral> {
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

export async function getReferral(db: Db, program: ProgramContext, filter: ReferralFilter): Promise<Referral> {
  const row = await findReferral(db, program.id, filter);
  if (!row) throw notFound('Referral');
  return serializeReferral(row);
}

export function getReferralPage(db: Db, program: ProgramContext, filter: ReferralFilter, page: PageRequest) {
  return listReferrals(db, program.id, filter, page);
}
