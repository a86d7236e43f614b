import { randomInt } from 'node:crypto';
import { toMinorUnits } from '../../domain/money.ts';
import { newId } from '../../domain/ids.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { inTransaction, type Db, type Tx } from '../../db/transaction.ts';
import { conflict, hasDependents, invalidField, notFound } from '../../domain/errors.ts';
import { emptyPage, pageOf, type Page, type PageRequest } from '../../db/keyset.ts';
import { recordEvent, recordEvents } from '../events/outbox.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { resolveAffiliate, resolveAffiliateEmailFilter } from '../affiliates/affiliate-lookup.ts';
import { findCoupon } from './coupon.repository.ts';
import {
  codeKey,
  deleteCodeRow,
  findCode,
  findCodeWithRelations,
  insertCode,
  insertCodesUnlessTaken,
  listCodes,
  updateCode,
  type CodeFilter,
  type CodeRow,
} from './promotional-code.repository.ts';
import { serializeCodes, serializeCodeWithRelations } from './promotional-code.serializer.ts';
import type {
  BulkCreatePromotionalCodesBody,
  CreatePromotionalCodeBody,
  PromotionalCode,
  UpdatePromotionalCodeBody,
} from './promotional-code.schema.ts';

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

/** Every field of a new code but its string: what POST /promotional-codes and bulk generation share. */
type NewCodeFields = Omit<CreatePromotionalCodeBody, 'code'>;

/**
 * The row of a new code: its coupon must be the program's (404), the affiliate (by id or
 * e-mail) is resolved and the restrictions are applied and checked. Bulk generation builds
 * one and copies it for every string.
 */
async function newCodeRow(tx: Tx, program: ProgramContext, body: NewCodeFields, code: string, isAutoGenerated: boolean, now: string): Promise<CodeRow> {
  if (!(await findCoupon(tx, program.id, { id: body.couponId }))) throw notFound('Coupon');
  // With both affiliateId and affiliateEmail, both must name the same affiliate (as for links).
  const affiliateId = body.affiliateEmail !== undefined
    ? (await resolveAffiliate(tx, program, { id: body.affiliateId ?? undefined, email: body.affiliateEmail })).id
    : body.affiliateId;
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
    is_auto_generated: isAutoGenerated ? 1 : 0,
    created_at: now,
    updated_at: now,
  };
  return applyRestrictions(tx, program, base, { ...body, affiliateId });
}

export async function createPromotionalCode(db: Db, program: ProgramContext, body: CreatePromotionalCodeBody): Promise<PromotionalCode> {
  const code = body.code ?? generateCode();
  const now = program.clock().toISOString();
  let row: CodeRow | undefined;
  try {
    return await inTransaction(db, async (tx) => {
      row = await newCodeRow(tx, program, body, code, body.code === undefined, now);
      await insertCode(tx, row);
      const created = await serializeOne(tx, program, row);
      await recordEvent(tx, program.id, 'promotional_code.created', created, now);
      return created;
    });
  } catch (error) {
    if (isUniqueViolation(error) && row) return explainConflict(db, program, row);
    throw error;
  }
}

/** Rows per INSERT: 500 × 20 columns stays far below the bind-parameter limits (SQLite 32,766, PostgreSQL 65,535). */
const INSERT_CHUNK = 500;
/** Rounds of new strings for those that collided with existing codes, before giving up. */
const COLLISION_ROUNDS = 5;
/** Fewer possible strings than this many per wanted code and most draws would collide. */
const MIN_STRINGS_PER_CODE = 100;

/**
 * POST /promotional-codes/bulk: `count` codes of `prefix` + a random part, in one transaction.
 * A string the program already has (or one drawn twice) is replaced by a new draw, a bounded
 * number of times. `randomPart` is replaceable so tests can force collisions.
 */
export async function bulkCreatePromotionalCodes(
  db: Db,
  program: ProgramContext,
  body: BulkCreatePromotionalCodesBody,
  randomPart: (length: number) => string = generateCode,
): Promise<PromotionalCode[]> {
  const length = body.length ?? 8;
  const prefix = body.prefix ?? '';
  if (CODE_ALPHABET.length ** length < body.count * MIN_STRINGS_PER_CODE) {
    throw invalidField('#/length', `is too short for ${body.count} codes: too few possible strings; use a longer random part`);
  }
  const draw = () => prefix + (body.lowercase ? randomPart(length).toLowerCase() : randomPart(length));
  const now = program.clock().toISOString();
  return inTransaction(db, async (tx) => {
    const template = await newCodeRow(tx, program, { ...body, externalId: undefined }, '', true, now);
    const created: CodeRow[] = [];
    const drawn = new Set<string>();
    for (let round = 0; created.length < body.count; round++) {
      if (round > COLLISION_ROUNDS) {
        throw invalidField('#/length', 'too few free codes with this prefix and length; use a longer random part or another prefix');
      }
      const wanted = body.count - created.length;
      const rows: CodeRow[] = [];
      for (let attempt = 0; rows.length < wanted && attempt < wanted * 10; attempt++) {
        const code = draw();
        const key = codeKey(code);
        if (drawn.has(key)) continue;
        drawn.add(key);
        rows.push({ ...template, id: newId(), code, code_key: key });
      }
      for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
        const chunk = rows.slice(i, i + INSERT_CHUNK);
        const inserted = await insertCodesUnlessTaken(tx, chunk);
        created.push(...chunk.filter((row) => inserted.has(row.id)));
      }
    }
    const codes = await serializeCodes(tx, program, created);
    await recordEvents(tx, program.id, 'promotional_code.created', codes, now);
    return codes;
  });
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

/**
 * Deletes a code. A redeemed one is a 409 has_dependents unless `force`; then the referrals
 * and sales that used it stay, without a code (FK SET NULL). Answers the code as it was.
 */
export async function deletePromotionalCode(db: Db, program: ProgramContext, target: { id?: string; code?: string; force?: boolean }): Promise<PromotionalCode> {
  const id = target.id;
  if (id === undefined && target.code === undefined) throw invalidField('#/id', 'id, promotionalCodeId or code is required');
  return inTransaction(db, async (tx) => {
    const found = await findCodeWithRelations(tx, program.id, { id, code: target.code });
    if (!found) throw notFound('Promotional code');
    const redeemed = () => hasDependents(`The promotional code "${found.code.code}" has been redeemed; deleting it leaves its referrals and sales without a code.`);
    if (!target.force && Number(found.code.times_redeemed) > 0) throw redeemed();
    const deleted = serializeCodeWithRelations(found, program);
    if (!(await deleteCodeRow(tx, program.id, found.code.id, { onlyUnredeemed: !target.force }))) {
      // Redeemed (or deleted) by a request that committed after our read.
      throw (await findCode(tx, program.id, { id: found.code.id })) ? redeemed() : notFound('Promotional code');
    }
    await recordEvent(tx, program.id, 'promotional_code.deleted', deleted, program.clock().toISOString());
    return deleted;
  });
}

export type CodeQuery = CodeFilter & { affiliateEmail?: string };

export async function getPromotionalCode(db: Db, program: ProgramContext, query: CodeQuery): Promise<PromotionalCode> {
  const filter = await resolveAffiliateEmailFilter(db, program, query);
  const found = filter && (await findCodeWithRelations(db, program.id, filter));
  if (!found) throw notFound('Promotional code');
  return serializeCodeWithRelations(found, program);
}

/** A list page; filters naming nobody give an empty page. */
export async function getPromotionalCodePage(db: Db, program: ProgramContext, query: CodeQuery, page: PageRequest): Promise<Page<PromotionalCode>> {
  const filter = await resolveAffiliateEmailFilter(db, program, query);
  if (!filter) return emptyPage();
  const rows = pageOf(await listCodes(db, program.id, filter, page), page);
  return { ...rows, items: await serializeCodes(db, program, rows.items) };
}
