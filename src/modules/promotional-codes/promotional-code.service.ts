import { randomInt } from 'node:crypto';
import { toMinorUnits } from '../../domain/money.ts';
import { newId } from '../../domain/ids.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { inTransaction, type Db, type Tx } from '../../db/transaction.ts';
import { conflict, invalidField, notFound } from '../../domain/errors.ts';
import type { PageRequest } from '../../db/keyset.ts';
import { recordEvent } from '../events/outbox.ts';
import type { ProgramContext } from '../programs/program.service.ts';
import { resolveAffiliate } from '../affiliates/affiliate.service.ts';
import { findAffiliate } from '../affiliates/affiliate.repository.ts';
import { normaliseEmail } from '../users/user.service.ts';
import { findCoupon } from '../coupons/coupon.repository.ts';
import { codeKey, findCode, findCodeWithRelations, insertCode, listCodes, updateCode, type CodeFilter, type CodeRow } from './promotional-code.repository.ts';
import { serializeCodeWithRelations } from './promotional-code.serializer.ts';
import type { CreatePromotionalCodeBody, PromotionalCode, UpdatePromotionalCodeBody } from './promotional-code.schema.ts';

// Unambiguous characters only (no 0/O, 1/I/L), so customers can read generated codes aloud.
const CODE_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';

export function generateCode(length = 10): string {
  let code = '';
  for (let i = 0; i < length; i++) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return code;
}

type Restrictions = Omit<UpdatePromotionalCodeBody, 'promotionalCodeId' | 'code' | 'couponId'>;

/** Applies the optional restriction fields onto a code row and checks they make sense together. */
async function applyRestrictions(tx: Tx, program: ProgramContext, row: CodeRow, body: Restrictions): Promise<CodeRow> {
  const next: CodeRow = { ...row };
  if (body.affiliateId !== undefined) {
    next.affiliate_id = body.affiliateId === null ? null : (await resolveAffiliate(tx, program, { id: body.affiliateId })).id;
  }
  if (body.active !== undefined) next.active = body.active ? 1 : 0;
  if (body.expiresAt !== undefined) next.expires_at = body.expiresAt === null ? null : new Date(body.expiresAt).toISOString();
  if (body.maxRedemptions !== undefined) next.max_redemptions = body.maxRedemptions;
  if (body.firstTimeOrder !== undefined) next.first_time_order = body.firstTimeOrder ? 1 : 0;
  if (body.minimumAmountCurrency !== undefined) {
    const currency = body.minimumAmountCurrency?.toUpperCase() ?? null;
    if (currency !== null && currency !== program.currency) {
      throw invalidField('#/minimumAmountCurrency', `must be the program's currency, ${program.currency}: sales are recorded in it`);
    }
    next.minimum_amount_currency = currency;
  }
  if (body.minimumAmount !== undefined) {
    next.minimum_amount = body.minimumAmount === null ? null : toMinorUnits(body.minimumAmount, program.currency, '#/minimumAmount');
  }
  if (next.minimum_amount !== null && next.minimum_amount_currency === null) next.minimum_amount_currency = program.currency;
  if (body.limitToCustomers !== undefined) next.limit_to_customers = body.limitToCustomers ? 1 : 0;
  if (body.customerId !== undefined) next.customer_id = body.customerId;
  if (body.limitToAffiliate !== undefined) next.limit_to_affiliate = body.limitToAffiliate ? 1 : 0;
  if (body.externalId !== undefined) next.external_id = body.externalId;
  if (next.limit_to_customers && next.customer_id === null) throw invalidField('#/customerId', 'is required when limitToCustomers is true');
  if (next.limit_to_affiliate && next.affiliate_id === null) throw invalidField('#/limitToAffiliate', 'needs the code to be assigned to an affiliate');
  return next;
}

async function explainConflict(db: Db, program: ProgramContext, row: CodeRow): Promise<never> {
  // On an update the row itself holds its externalId: only another code's is a conflict.
  const sameExternalId = row.external_id === null ? undefined : await findCode(db, program.id, { externalId: row.external_id });
  if (sameExternalId && sameExternalId.id !== row.id) {
    throw conflict(`A promotional code with externalId "${row.external_id}" already exists in this program.`);
  }
  throw conflict(`The promotional code "${row.code}" already exists in this program.`);
}

/** A code as the API returns it, read back with its coupon and affiliate in one statement. */
async function serializeOne(db: Db | Tx, program: ProgramContext, row: CodeRow): Promise<PromotionalCode> {
  return serializeCodeWithRelations((await findCodeWithRelations(db, program.id, { id: row.id }))!, program);
}

export async function createPromotionalCode(db: Db, program: ProgramContext, body: CreatePromotionalCodeBody): Promise<PromotionalCode> {
  const code = body.code ?? generateCode();
  const now = program.clock().toISOString();
  const base: CodeRow = {
    id: newId(),
    program_id: program.id,
    coupon_id: body.couponId,
    affiliate_id: null,
    code,
    code_key: codeKey(code),
    external_id: null,
    active: 1,
    expires_at: null,
    max_redemptions: null,
    times_redeemed: 0,
    first_time_order: 0,
    minimum_amount: null,
    minimum_amount_currency: null,
    limit_to_customers: 0,
    customer_id: null,
    limit_to_affiliate: 0,
    is_auto_generated: body.code === undefined ? 1 : 0,
    created_at: now,
    updated_at: now,
  };
  let row = base;
  try {
    return await inTransaction(db, async (tx) => {
      if (!(await findCoupon(tx, program.id, { id: body.couponId }))) throw notFound('Coupon');
      // With both affiliateId and affiliateEmail, both must name the same affiliate (as for links).
      const affiliateId = body.affiliateEmail !== undefined
        ? (await resolveAffiliate(tx, program, { id: body.affiliateId ?? undefined, email: body.affiliateEmail })).id
        : body.affiliateId;
      row = await applyRestrictions(tx, program, base, { ...body, affiliateId });
      await insertCode(tx, row);
      const created = await serializeOne(tx, program, row);
      await recordEvent(tx, program.id, 'promotional_code.created', created, now);
      return created;
    });
  } catch (error) {
    if (isUniqueViolation(error)) return explainConflict(db, program, row);
    throw error;
  }
}

export async function updatePromotionalCode(db: Db, program: ProgramContext, body: UpdatePromotionalCodeBody): Promise<PromotionalCode> {
  let next: CodeRow | undefined;
  try {
    return await inTransaction(db, async (tx) => {
      const current = await findCode(tx, program.id, { id: body.promotionalCodeId });
      if (!current) throw notFound('Promotional code');
      if (body.couponId !== undefined && body.couponId !== current.coupon_id) {
        throw invalidField('#/couponId', 'cannot be changed; create a new promotional code on the other coupon');
      }
      next = await applyRestrictions(tx, program, current, body);
      if (body.code !== undefined && body.code !== current.code) {
        next.code = body.code;
        next.code_key = codeKey(body.code);
        next.is_auto_generated = 0;
      }
      next.updated_at = program.clock().toISOString();
      const { id: _id, program_id: _p, coupon_id: _c, times_redeemed: _t, created_at: _created, ...changes } = next;
      await updateCode(tx, current.id, changes);
      const updated = await serializeOne(tx, program, { ...next, times_redeemed: current.times_redeemed });
      await recordEvent(tx, program.id, 'promotional_code.updated', updated, next.updated_at);
      return updated;
    });
  } catch (error) {
    if (isUniqueViolation(error) && next) return explainConflict(db, program, next);
    throw error;
  }
}

export type CodeQuery = CodeFilter & { affiliateEmail?: string };

/** Turns `affiliateEmail` into an affiliate id; null when the filters can match nothing. */
async function resolveCodeQuery(db: Db, program: ProgramContext, query: CodeQuery): Promise<CodeFilter | null> {
  const { affiliateEmail, ...filter } = query;
  if (affiliateEmail === undefined) return filter;
  const affiliate = await findAffiliate(db, program.id, { emailKey: normaliseEmail(affiliateEmail).key });
  if (!affiliate || (filter.affiliateId !== undefined && filter.affiliateId !== affiliate.id)) return null;
  return { ...filter, affiliateId: affiliate.id };
}

export async function getPromotionalCode(db: Db, program: ProgramContext, query: CodeQuery): Promise<PromotionalCode> {
  const filter = await resolveCodeQuery(db, program, query);
  const found = filter && (await findCodeWithRelations(db, program.id, filter));
  if (!found) throw notFound('Promotional code');
  return serializeCodeWithRelations(found, program);
}

/** A list page; filters naming nobody give an empty page. */
export async function getPromotionalCodePage(db: Db, program: ProgramContext, query: CodeQuery, page: PageRequest): Promise<CodeRow[]> {
  const filter = await resolveCodeQuery(db, program, query);
  return filter ? listCodes(db, program.id, filter, page) : [];
}
