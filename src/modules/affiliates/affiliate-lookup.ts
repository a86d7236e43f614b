import type { Db, Tx } from '../../db/transaction.ts';
import { normaliseEmail } from '../../domain/email.ts';
import { ApiError, notFound } from '../../domain/errors.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { findAffiliate, type AffiliateRow } from './affiliate.repository.ts';

// Finding an affiliate by what a request names (id, e-mail), for the resources that point at one.

/**
 * Finds the affiliate named by id and/or e-mail (both must agree when both are given).
 * Throws 422 when neither is given and 404 when none matches.
 */
export async function resolveAffiliate(db: Db | Tx, program: ProgramContext, by: { id?: string; email?: string }): Promise<AffiliateRow> {
  if (by.id === undefined && by.email === undefined) {
    throw new ApiError('validation_failed', 'Name the affiliate.', [{ pointer: '#/affiliateId', detail: 'affiliateId or affiliateEmail is required' }]);
  }
  const row = await findAffiliate(db, program.id, { id: by.id, emailKey: by.email === undefined ? undefined : normaliseEmail(by.email).key });
  if (!row) throw notFound('Affiliate');
  return row;
}

/**
 * Turns a list query's `affiliateEmail` into its `affiliateId` filter. Null when the filters can
 * match nothing: no affiliate has that e-mail, or `affiliateId` names another one.
 */
export async function resolveAffiliateEmailFilter<F extends { affiliateId?: string }>(
  db: Db,
  program: ProgramContext,
  query: F & { affiliateEmail?: string },
): Promise<F | null> {
  const { affiliateEmail, ...filter } = query;
  if (affiliateEmail === undefined) return filter as unknown as F;
  const affiliate = await findAffiliate(db, program.id, { emailKey: normaliseEmail(affiliateEmail).key });
  if (!affiliate || (filter.affiliateId !== undefined && filter.affiliateId !== affiliate.id)) return null;
  return { ...filter, affiliateId: affiliate.id } as unknown as F;
}
