import type { Selectable } from 'kysely';
import type { CouponsTable, PromotionalCodesTable } from '../../db/schema.ts';
import type { Db, Tx } from '../../db/transaction.ts';
import { pageQuery, type PageRequest } from '../../db/keyset.ts';
import { prefixedColumns, splitPrefixed, type ColumnSet } from '../../db/joined-rows.ts';
import { dialectOf } from '../../db/dialect.ts';
import { compiledQuery, filterShape, placeholderFilter, type ParamOf } from '../../db/compiled-query.ts';

export type CodeRow = Selectable<PromotionalCodesTable>;
export type CouponRow = Selectable<CouponsTable>;
export interface CodeAffiliateRow {
  id: string;
  first_name: string;
  last_name: string;
  email: string;
}

export type RedemptionCount = Pick<CodeRow, 'times_redeemed'>;

export function codeKey(code: string): string {
  return code.toLowerCase();
}

export interface CodeFilter {
  id?: string;
  code?: string;
  externalId?: string;
  couponId?: string;
  affiliateId?: string;
}

function selectCodes(db: Db | Tx, programId: string, filter: CodeFilter) {
  let q = db.selectFrom('promotional_codes as pc').selectAll('pc').where('pc.program_id', '=', programId);
  if (filter.id !== undefined) q = q.where('pc.id', '=', filter.id);
  if (filter.code !== undefined) q = q.where('pc.code_key', '=', filter.code);
  if (filter.externalId !== undefined) q = q.where('pc.external_id', '=', filter.externalId);
  if (filter.couponId !== undefined) q = q.where('pc.coupon_id', '=', filter.couponId);
  if (filter.affiliateId !== undefined) q = q.where('pc.affiliate_id', '=', filter.affiliateId);
  return q;
}

const FILTER_FIELDS = ['id', 'code', 'externalId', 'couponId', 'affiliateId'] as const;

/** The filter as stored: a code is matched by its key (case folded). */
function keyed(filter: CodeFilter): CodeFilter {
  return filter.code === undefined ? filter : { ...filter, code: codeKey(filter.code) };
}

export function findCode(db: Db | Tx, programId: string, filter: CodeFilter) {
  return selectCodes(db, programId, keyed(filter)).executeTakeFirst();
}

const COUPON_COLUMNS: ColumnSet<CouponsTable> = {
  id: true, program_id: true, name: true, external_id: true, coupon_type: true, percent_off: true, amount_off: true, currency: true,
  duration: true, duration_in_months: true, max_redemptions: true, times_redeemed: true, limit_to_products: true, product_ids: true,
  valid: true, redeem_by: true, integration_type: true, created_at: true, updated_at: true,
};

export interface CodeWithAffiliate {
  code: CodeRow;
  affiliate: CodeAffiliateRow | undefined;
}

const AFFILIATE_COLUMNS = ['a.first_name as affiliate__first_name', 'a.last_name as affiliate__last_name', 'a.email as affiliate__email'] as const;

function splitCodeAndAffiliate(row: Record<string, unknown>): CodeWithAffiliate {
  const [affiliate, code] = splitPrefixed(row, 'affiliate__');
  return {
    code: code as CodeRow,
    affiliate: affiliate.email == null ? undefined : ({ id: code.affiliate_id, ...affiliate } as CodeAffiliateRow),
  };
}

export interface CodeWithRelations {
  code: CodeRow;
  coupon: CouponRow;
  /** The code's affiliate (first and last name, e-mail), when it has one. */
  affiliate: CodeAffiliateRow | undefined;
}

const codeWithRelationsQuery = compiledQuery<{ programId: string } & CodeFilter, Record<string, unknown>, string>(
  (db, param, shape) =>
    selectCodes(db, param('programId'), placeholderFilter(param as ParamOf<Required<CodeFilter>>, shape))
      .innerJoin('coupons as c', 'c.id', 'pc.coupon_id')
      .leftJoin('affiliates as a', 'a.id', 'pc.affiliate_id')
      .select(prefixedColumns('c', COUPON_COLUMNS, 'coupon__') as never)
      .select([...AFFILIATE_COLUMNS]) as never,
);

/** A code with its coupon and affiliate, in one statement. */
export async function findCodeWithRelations(db: Db | Tx, programId: string, filter: CodeFilter): Promise<CodeWithRelations | undefined> {
  const row = await codeWithRelationsQuery.first(db, { programId, ...keyed(filter) }, filterShape(filter, FILTER_FIELDS));
  if (!row) return undefined;
  const [coupon, rest] = splitPrefixed(row, 'coupon__');
  return { ...splitCodeAndAffiliate(rest), coupon: coupon as CouponRow };
}

export function listCodes(db: Db, programId: string, filter: CodeFilter, page: PageRequest) {
  return pageQuery(selectCodes(db, programId, keyed(filter)), 'pc', page).execute();
}

/**
 * The `limit` newest codes of each coupon (created_at, id descending), each with its affiliate,
 * in one statement whatever the number of codes or affiliates: the affiliates come through a
 * join, and the coupon ids are the only list bound (one page of coupons, at most 1000: the
 * lists' limit). Each coupon's codes are read from the promotional_codes_coupon index and
 * stop at `limit`: a LATERAL subquery on PostgreSQL; on SQLite (no LATERAL) an IN subquery
 * correlated to the coupon, which SQLite runs once per coupon over the same index. Nothing
 * else filters `pc` (the tenant is the coupon's): another condition on it could let SQLite
 * drive the join from another index and run the subquery once per code.
 */
export async function listNewestCodesOfCoupons(db: Db | Tx, programId: string, couponIds: string[], limit: number): Promise<CodeWithAffiliate[]> {
  if (couponIds.length === 0) return [];
  const coupons = db.selectFrom('coupons as c').where('c.program_id', '=', programId).where('c.id', 'in', couponIds);
  const joined =
    dialectOf(db) === 'postgres'
      ? coupons.innerJoinLateral(
          (eb) =>
            eb
              .selectFrom('promotional_codes as newest')
              .selectAll('newest')
              .whereRef('newest.coupon_id', '=', 'c.id')
              .orderBy('newest.created_at', 'desc')
              .orderBy('newest.id', 'desc')
              .limit(limit)
              .as('pc'),
          (join) => join.onTrue(),
        )
      : coupons.innerJoin('promotional_codes as pc', (join) =>
          join.on((eb) =>
            eb(
              'pc.id',
              'in',
              eb
                .selectFrom('promotional_codes as newest')
                .select('newest.id')
                .whereRef('newest.coupon_id', '=', 'c.id')
                .orderBy('newest.created_at', 'desc')
                .orderBy('newest.id', 'desc')
                .limit(limit),
            ),
          ),
        );
  const rows = (await joined
    .leftJoin('affiliates as a', (join) => join.onRef('a.id', '=', 'pc.affiliate_id').onRef('a.program_id', '=', 'pc.program_id'))
    .selectAll('pc')
    .select([...AFFILIATE_COLUMNS])
    .orderBy('pc.created_at', 'desc')
    .orderBy('pc.id', 'desc')
    .execute()) as Record<string, unknown>[];
  return rows.map(splitCodeAndAffiliate);
}

/**
 * How many codes each coupon has (coupons without codes are absent), in one grouped query. The
 * serializer asks it only for the coupons whose newest codes filled their share (at most 10 on
 * a page of coupons: COUPON_PAGE_CODES / COUPON_CODES_LIMIT).
 */
export async function countCodesOfCoupons(db: Db | Tx, programId: string, couponIds: string[]): Promise<Map<string, number>> {
  if (couponIds.length === 0) return new Map();
  // Scoped through the coupon, so the count reads the promotional_codes_coupon index alone.
  const rows = await db
    .selectFrom('coupons as c')
    .innerJoin('promotional_codes as pc', 'pc.coupon_id', 'c.id')
    .select((eb) => ['c.id', eb.fn.countAll<number | string>().as('n')])
    .where('c.program_id', '=', programId)
    .where('c.id', 'in', couponIds)
    .groupBy('c.id')
    .execute();
  return new Map(rows.map((row) => [row.id, Number(row.n)]));
}

// findCouponsByIds and findCodeAffiliates bind one id per row: they get the coupons and
// affiliates of the codes being serialized, at most 1000 (a list page or a bulk creation).
export function findCouponsByIds(db: Db | Tx, programId: string, ids: string[]) {
  if (ids.length === 0) return Promise.resolve([]);
  return db.selectFrom('coupons').selectAll().where('program_id', '=', programId).where('id', 'in', ids).execute();
}

export function findCodeAffiliates(db: Db | Tx, programId: string, ids: string[]): Promise<CodeAffiliateRow[]> {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('affiliates')
    .select(['id', 'first_name', 'last_name', 'email'])
    .where('program_id', '=', programId)
    .where('id', 'in', ids)
    .execute();
}

export async function insertCode(tx: Tx, row: CodeRow): Promise<void> {
  await tx.insertInto('promotional_codes').values(row).execute();
}

/**
 * Inserts codes, skipping those whose string the program already has (also one a concurrent
 * transaction is inserting): returns the ids inserted. No unique violation, so on PostgreSQL
 * the transaction stays usable and the caller can retry the others with new strings.
 */
export async function insertCodesUnlessTaken(tx: Tx, rows: CodeRow[]): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const inserted = await tx
    .insertInto('promotional_codes')
    .values(rows)
    .onConflict((oc) => oc.columns(['program_id', 'code_key']).doNothing())
    .returning('id')
    .execute();
  return new Set(inserted.map((row) => row.id));
}

/**
 * Deletes a code (referrals and sales that used it keep existing, without it: FK SET NULL).
 * `onlyUnredeemed` makes the check part of the statement, so a redemption that commits first
 * keeps the code. Returns whether a row was deleted.
 */
export async function deleteCodeRow(tx: Tx, programId: string, id: string, options: { onlyUnredeemed: boolean }): Promise<boolean> {
  let q = tx.deleteFrom('promotional_codes').where('program_id', '=', programId).where('id', '=', id);
  if (options.onlyUnredeemed) q = q.where('times_redeemed', '=', 0);
  const result = await q.executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function updateCode(tx: Tx, id: string, changes: Partial<Omit<CodeRow, 'id' | 'program_id' | 'coupon_id'>>): Promise<void> {
  await tx.updateTable('promotional_codes').set(changes).where('id', '=', id).execute();
}

/**
 * The atomic step of redemption: increments only while below the limit, in one statement,
 * so concurrent requests (in any number of processes) can never exceed it.
 * Returns the count after it (concurrent redemptions may have moved it further than our +1),
 * or undefined when the limit was already reached.
 */
export async function incrementCodeRedemptions(tx: Tx, codeId: string): Promise<RedemptionCount | undefined> {
  return tx
    .updateTable('promotional_codes')
    .set((eb) => ({ times_redeemed: eb('times_redeemed', '+', 1) }))
    .where('id', '=', codeId)
    .where((eb) => eb.or([eb('max_redemptions', 'is', null), eb('times_redeemed', '<', eb.ref('max_redemptions'))]))
    .returning('times_redeemed')
    .executeTakeFirst();
}

/** The same atomic step for the coupon-wide limit shared by all of its codes. */
export async function incrementCouponRedemptions(tx: Tx, couponId: string): Promise<RedemptionCount | undefined> {
  return tx
    .updateTable('coupons')
    .set((eb) => ({ times_redeemed: eb('times_redeemed', '+', 1) }))
    .where('id', '=', couponId)
    .where((eb) => eb.or([eb('max_redemptions', 'is', null), eb('times_redeemed', '<', eb.ref('max_redemptions'))]))
    .returning('times_redeemed')
    .executeTakeFirst();
}
