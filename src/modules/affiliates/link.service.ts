import { fromMinorUnits } from '../../domain/money.ts';
import { toIso } from '../../domain/clock.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { inTransaction, type Db, type Tx } from '../../db/transaction.ts';
import { ApiError, conflict, hasDependents, invalidField, notFound } from '../../domain/errors.ts';
import { emptyPage, mapPage, pageOf, type Page, type PageRequest } from '../../db/keyset.ts';
import { recordEvent } from '../events/outbox.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { resolveAffiliate, resolveAffiliateEmailFilter } from './affiliate-lookup.ts';
import { generateLinkString } from '../../domain/link-strings.ts';
import { lockAffiliate } from './affiliate.repository.ts';
import {
  countLinksOfAffiliate,
  deleteLinkRow,
  findLink,
  findLinkForDelete,
  insertLink,
  linkHasDependents,
  listLinks,
  listLinksOfAffiliate,
  newLinkRow,
  renameLink,
  type LinkFilter,
  type LinkWithAffiliateRow,
} from './link.repository.ts';
import type { AffiliateLink, CreateLinkBody, DeleteLinkTarget, UpdateLinkBody } from './link.schema.ts';

export function fullUrlsFor(program: ProgramContext, link: string): { baseUrl: string; fullUrl: string }[] {
  return program.baseUrls.map((baseUrl) => {
    const url = new URL(baseUrl);
    url.searchParams.set(program.referralParam, link);
    return { baseUrl, fullUrl: url.toString() };
  });
}

export function serializeLink(row: LinkWithAffiliateRow, program: ProgramContext): AffiliateLink {
  return {
    id: row.id,
    link: row.link,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    affiliate: { id: row.affiliate_id, name: `${row.affiliate_first_name} ${row.affiliate_last_name}`, email: row.affiliate_email },
    program: { id: program.id, name: program.name, currency: program.currency },
    clicks: Number(row.clicks),
    referrals: Number(row.referrals),
    sales: Number(row.sales),
    totalRevenue: fromMinorUnits(row.total_revenue, program.currency),
    fullURLs: fullUrlsFor(program, row.link),
  };
}

export async function getLink(db: Db | Tx, program: ProgramContext, filter: { id?: string; link?: string }): Promise<AffiliateLink> {
  const row = await findLink(db, program.id, filter);
  if (!row) throw notFound('Affiliate link');
  return serializeLink(row, program);
}

/** The links of one affiliate (found by the caller), its own link first. */
export async function getAffiliateLinks(
  db: Db,
  program: ProgramContext,
  affiliate: { id: string; firstName: string; lastName: string; email: string },
): Promise<AffiliateLink[]> {
  const rows = await listLinksOfAffiliate(db, program.id, affiliate.id);
  return rows.map((row) =>
    serializeLink({ ...row, affiliate_first_name: affiliate.firstName, affiliate_last_name: affiliate.lastName, affiliate_email: affiliate.email }, program),
  );
}

const linkTaken = (link: string) => conflict(`The link "${link}" is already used in this program.`);

/**
 * Adds a link to an affiliate. `maxLinksOfAffiliate` (the portal's cap, the affiliate's own link
 * included) is counted under the affiliate's row lock, in the insert's transaction: concurrent
 * adds take turns on the row, so each counts what the others committed and the cap holds.
 */
export async function createLink(db: Db, program: ProgramContext, body: CreateLinkBody, options: { maxLinksOfAffiliate?: number } = {}): Promise<AffiliateLink> {
  const affiliate = await resolveAffiliate(db, program, { id: body.affiliateId, email: body.affiliateEmail });
  const link = body.link ?? generateLinkString(affiliate.first_name);
  const max = options.maxLinksOfAffiliate;
  try {
    return await inTransaction(db, async (tx) => {
      if (max !== undefined) {
        if (!(await lockAffiliate(tx, program.id, affiliate.id))) throw notFound('Affiliate');
        if ((await countLinksOfAffiliate(tx, program.id, affiliate.id)) >= max) throw invalidField('#/link', `you have the most links an affiliate may add (${max})`);
      }
      const now = program.clock().toISOString();
      const row = newLinkRow(program.id, affiliate.id, link, false, now);
      await insertLink(tx, row);
      const created = await getLink(tx, program, { id: row.id });
      await recordEvent(tx, program.id, 'link.created', created, now);
      return created;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw linkTaken(link);
    throw error;
  }
}

export async function updateLink(db: Db, program: ProgramContext, body: UpdateLinkBody): Promise<AffiliateLink> {
  if (body.id === undefined && body.link === undefined) {
    throw new ApiError('validation_failed', 'Name the link to update.', [{ pointer: '#/id', detail: 'id or link is required' }]);
  }
  try {
    return await inTransaction(db, async (tx) => {
      const current = await findLink(tx, program.id, { id: body.id, link: body.link });
      if (!current) throw notFound('Affiliate link');
      const now = program.clock().toISOString();
      await renameLink(tx, current.id, body.newLink, now);
      const updated = await getLink(tx, program, { id: current.id });
      await recordEvent(tx, program.id, 'link.updated', updated, now);
      return updated;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw linkTaken(body.newLink);
    throw error;
  }
}

export type LinkQuery = LinkFilter & { affiliateEmail?: string };

/** GET /links with `id` or `link`: the one link, which must also match the other filters. */
export async function findOneLink(db: Db, program: ProgramContext, query: LinkQuery): Promise<AffiliateLink> {
  const filter = await resolveAffiliateEmailFilter(db, program, query);
  const row = filter && (await findLink(db, program.id, filter));
  if (!row) throw notFound('Affiliate link');
  return serializeLink(row, program);
}

/** A list page, newest first; filters naming nobody give an empty page. */
export async function getLinkPage(db: Db, program: ProgramContext, query: LinkQuery, page: PageRequest): Promise<Page<AffiliateLink>> {
  const filter = await resolveAffiliateEmailFilter(db, program, query);
  if (!filter) return emptyPage();
  return mapPage(pageOf(await listLinks(db, program.id, filter, page), page), (row) => serializeLink(row, program));
}

/**
 * Deletes a link that is not its affiliate's own. Referrals and sales credited through it
 * make it a 409 has_dependents unless `force`; then they stay credited to the affiliate, with
 * no link (FK SET NULL), and no counter changes. Answers the link as it was.
 */
export async function deleteLink(db: Db, program: ProgramContext, target: DeleteLinkTarget): Promise<AffiliateLink> {
  if (target.id === undefined && target.link === undefined) {
    throw new ApiError('validation_failed', 'Name the link to delete.', [{ pointer: '#/id', detail: 'id or link is required' }]);
  }
  return inTransaction(db, async (tx) => {
    const current = await findLinkForDelete(tx, program.id, { id: target.id, link: target.link });
    if (!current) throw notFound('Affiliate link');
    // The affiliate's `link` is this row: without it the affiliate would have no link at all.
    if (Number(current.is_primary) === 1) {
      throw conflict(`"${current.link}" is the affiliate's own link (its \`link\`): rename it with PUT /links, or delete the affiliate.`);
    }
    if (!target.force && (await linkHasDependents(tx, program.id, current.id))) {
      throw hasDependents(`Referrals or sales are credited through the link "${current.link}"; deleting it leaves them without a link.`);
    }
    const deleted = serializeLink(current, program);
    await deleteLinkRow(tx, program.id, current.id);
    await recordEvent(tx, program.id, 'link.deleted', deleted, program.clock().toISOString());
    return deleted;
  });
}
