import type { Tx } from '../../db/transaction.ts';
import { ApiError } from '../../domain/errors.ts';
import { isUuid } from '../../domain/ids.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { findAffiliate, type AffiliateRow } from '../affiliates/affiliate.repository.ts';
import { findLink } from '../affiliates/link.repository.ts';
import type { RedeemableCode } from '../coupons/promo-code-redemption.ts';

// Who is credited: the affiliate a referral, sale or click earns for, and the link it came through.

/** The affiliate to credit, and the link the credit goes through. */
export interface Credit {
  affiliate: AffiliateRow;
  linkId: string | null;
}

export function creditThroughPrimaryLink(affiliate: AffiliateRow): Credit {
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
