import { millionthsToRate, rateToMillionths } from '../../domain/commission.ts';
import { isCurrencyCode } from '../../domain/money.ts';
import { nowIso, toIso } from '../../domain/clock.ts';
import { newId } from '../../domain/ids.ts';
import type { Db } from '../../db/transaction.ts';
import type { ProgramsTable } from '../../db/schema.ts';
import type { Selectable } from 'kysely';
import { invalidField, notFound } from '../../http/errors.ts';

/** What every API request knows about the token's program. */
export interface ProgramContext {
  readonly id: string;
  readonly name: string;
  readonly currency: string;
  /** Millionths (20 % = 200000). */
  readonly defaultCommissionRate: number;
  readonly baseUrls: readonly string[];
  readonly referralParam: string;
}

export interface Program {
  id: string;
  name: string;
  domain: string;
  logoUrl: string | null;
  currency: string;
  commissionRate: number;
  baseUrls: string[];
  referralParam: string;
  createdAt: string;
  updatedAt: string;
}

export type ProgramRow = Selectable<ProgramsTable>;

export function toProgramContext(row: Pick<ProgramRow, 'id' | 'name' | 'currency' | 'default_commission_rate' | 'base_urls' | 'referral_param'>): ProgramContext {
  return {
    id: row.id,
    name: row.name,
    currency: row.currency,
    defaultCommissionRate: Number(row.default_commission_rate),
    baseUrls: JSON.parse(row.base_urls) as string[],
    referralParam: row.referral_param,
  };
}

export function serializeProgram(row: ProgramRow): Program {
  return {
    id: row.id,
    name: row.name,
    domain: row.domain,
    logoUrl: row.logo_url,
    currency: row.currency,
    commissionRate: millionthsToRate(row.default_commission_rate),
    baseUrls: JSON.parse(row.base_urls) as string[],
    referralParam: row.referral_param,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

export interface ProgramInput {
  ownerUserId: string;
  name: string;
  domain: string;
  currency?: string;
  commissionRate?: number;
  logoUrl?: string | null;
  baseUrls?: string[];
  referralParam?: string;
}

const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$|^localhost$/i;

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

export function validateProgramInput(input: ProgramInput): Omit<ProgramRow, 'id' | 'owner_user_id' | 'created_at' | 'updated_at'> {
  const name = input.name.trim();
  if (name.length < 1 || name.length > 200) throw invalidField('#/name', 'must be 1 to 200 characters');
  const domain = input.domain.trim().toLowerCase();
  if (!DOMAIN.test(domain)) throw invalidField('#/domain', 'must be a domain name such as example.com');
  const currency = (input.currency ?? 'USD').toUpperCase();
  if (!isCurrencyCode(currency)) throw invalidField('#/currency', 'must be an ISO 4217 currency code such as USD');
  const rate = input.commissionRate ?? 20;
  if (!(rate >= 0 && rate <= 100)) throw invalidField('#/commissionRate', 'must be between 0 and 100');
  if (input.logoUrl && !isHttpUrl(input.logoUrl)) throw invalidField('#/logoUrl', 'must be an http(s) URL');
  const baseUrls = input.baseUrls ?? [`https://${domain}`];
  if (baseUrls.length < 1 || baseUrls.length > 20) throw invalidField('#/baseUrls', 'must hold 1 to 20 URLs');
  baseUrls.forEach((url, i) => {
    if (!isHttpUrl(url)) throw invalidField(`#/baseUrls/${i}`, 'must be an http(s) URL');
  });
  const referralParam = input.referralParam ?? 'via';
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(referralParam)) throw invalidField('#/referralParam', 'must be 1 to 32 letters, digits, - or _');
  return {
    name,
    domain,
    currency,
    default_commission_rate: rateToMillionths(rate, '#/commissionRate'),
    logo_url: input.logoUrl || null,
    base_urls: JSON.stringify(baseUrls),
    referral_param: referralParam,
  };
}

export async function createProgram(db: Db, input: ProgramInput): Promise<Program> {
  const now = nowIso();
  const row: ProgramRow = { id: newId(), owner_user_id: input.ownerUserId, ...validateProgramInput(input), created_at: now, updated_at: now };
  await db.insertInto('programs').values(row).execute();
  return serializeProgram(row);
}

export async function getProgram(db: Db, programId: string): Promise<ProgramRow> {
  const row = await db.selectFrom('programs').selectAll().where('id', '=', programId).executeTakeFirst();
  if (!row) throw notFound('Program');
  return row;
}
