import { millionthsToRate, rateToMillionths, type CommissionPlan } from '../../domain/commission.ts';
import { fromMinorUnits, isCurrencyCode, toMinorUnits } from '../../domain/money.ts';
import { systemClock, toIso, type Clock } from '../../domain/clock.ts';
import { isUuid, newId } from '../../domain/ids.ts';
import { inTransaction, type Db } from '../../db/transaction.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { conflict, invalidField, notFound } from '../../domain/errors.ts';
import { PORTAL_SLUG, slugCandidate, slugFrom } from '../../domain/portal-slug.ts';
import { isUniqueViolationOn } from '../../db/errors.ts';
import { announceChange, TOKEN_CHANGE_CHANNEL } from '../../db/change-watch.ts';
import {
  findProgramRow,
  findProgramRowBySlug,
  findSlugsLike,
  findTestSideRow,
  findUserProgramRow,
  hasAmountsInCurrency,
  insertProgram,
  listProgramRowsWithOwner,
  listUserProgramRows,
  updateUserProgramRow,
  type ProgramRow,
} from './program.repository.ts';

export type { ProgramRow } from './program.repository.ts';

/** What every API request knows about the token's program. */
export interface Program {
  id: string;
  name: string;
  domain: string;
  logoUrl: string | null;
  currency: string;
  commissionRate: number;
  baseUrls: string[];
  referralParam: string;
  /** Days the tracking script keeps a referral. */
  cookieDays: number;
  /** Which click wins when a visitor comes through several links. */
  attribution: 'first' | 'last';
  /** The commission plan (CONTRACT "Commission plans and the ledger"), amounts in major units. */
  commission: ProgramCommission;
  /** The affiliate portal's settings (its page is {SITE_URL}/portal/{slug}). */
  portal: ProgramPortal;
  /** False on a program's test side (test mode: its own id, its own data), true on the live program. */
  livemode: boolean;
  createdAt: string;
  updatedAt: string;
}

export type PortalSignup = 'open' | 'approval' | 'invite';

export interface ProgramPortal {
  slug: string;
  /** open: anyone joins at once; approval: sign-ups wait for the merchant; invite: no sign-up form. */
  signup: PortalSignup;
  /** The portal's accent colour, #rrggbb. */
  color: string;
  /** Terms an affiliate accepts at sign-up; empty: none. */
  terms: string;
  /** Whether affiliates may add links of their own in the portal. */
  linksAllowed: boolean;
}

export interface ProgramCommission {
  type: 'percentage' | 'flat';
  rate: number;
  amount: number;
  durationMonths: number | null;
  maxSalesPerCustomer: number | null;
  holdDays: number;
  minimumPayout: number;
}

/**
 * The host a merchant means, from what they typed or pasted: `shop.example.com`,
 * `https://Shop.Example.com/pricing?x=1` and `shop.example.com:8080/` all give
 * `shop.example.com`. Anything that is not a bare host or an http(s) URL is kept as typed and
 * refused by the domain check.
 */
export function domainOf(input: string): string {
  const text = input.trim();
  if (text.length > 2000) return text;
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  try {
    const url = new URL(withScheme);
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) return text.toLowerCase();
    return url.hostname.replace(/\.$/, '');
  } catch {
    return text.toLowerCase();
  }
}

/** The columns the tenant context is made of (a token's lookup reads just these). */
export const PROGRAM_CONTEXT_COLUMNS = [
  'id',
  'name',
  'currency',
  'default_commission_rate',
  'base_urls',
  'referral_param',
  'commission_type',
  'commission_amount',
  'commission_duration_months',
  'max_sales_per_customer',
  'hold_days',
  'minimum_payout',
  'live_program_id',
] as const;

export type ContextRow = Pick<ProgramRow, (typeof PROGRAM_CONTEXT_COLUMNS)[number]>;

function planOf(row: ContextRow): CommissionPlan {
  return {
    type: row.commission_type,
    flatAmount: Number(row.commission_amount),
    durationMonths: row.commission_duration_months === null ? null : Number(row.commission_duration_months),
    maxSalesPerCustomer: row.max_sales_per_customer === null ? null : Number(row.max_sales_per_customer),
    holdDays: Number(row.hold_days),
    minimumPayout: Number(row.minimum_payout),
  };
}

/** The one mapper from a program's row to the tenant context services take. */
export function toProgramContext(row: ContextRow, clock: Clock): ProgramContext {
  return {
    plan: planOf(row),
    clock,
    id: row.id,
    name: row.name,
    currency: row.currency,
    defaultCommissionRate: Number(row.default_commission_rate),
    baseUrls: JSON.parse(row.base_urls) as string[],
    referralParam: row.referral_param,
    livemode: row.live_program_id === null,
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
    cookieDays: Number(row.cookie_days),
    attribution: row.attribution,
    commission: serializePlan(row),
    portal: {
      slug: row.portal_slug,
      signup: row.portal_signup,
      color: row.portal_color,
      terms: row.portal_terms,
      linksAllowed: Boolean(row.portal_links_allowed),
    },
    livemode: row.live_program_id === null,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

function serializePlan(row: ContextRow): ProgramCommission {
  const plan = planOf(row);
  return {
    type: plan.type,
    rate: millionthsToRate(row.default_commission_rate),
    amount: fromMinorUnits(plan.flatAmount, row.currency),
    durationMonths: plan.durationMonths,
    maxSalesPerCustomer: plan.maxSalesPerCustomer,
    holdDays: plan.holdDays,
    minimumPayout: fromMinorUnits(plan.minimumPayout, row.currency),
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
  cookieDays?: number;
  attribution?: string;
  commissionType?: string;
  /** The flat amount per sale, major units. */
  commissionAmount?: number;
  durationMonths?: number | null;
  maxSalesPerCustomer?: number | null;
  holdDays?: number;
  minimumPayout?: number;
  /** Absent at creation: made from the name (acme, acme-2…). */
  portalSlug?: string;
  portalSignup?: string;
  portalColor?: string;
  portalTerms?: string;
  portalLinksAllowed?: boolean;
}

export const PORTAL_SIGNUPS: readonly PortalSignup[] = ['open', 'approval', 'invite'];
export const COMMISSION_TYPES: readonly ProgramCommission['type'][] = ['percentage', 'flat'];
/** What a new program gets when its creation names no currency or rate. */
export const DEFAULT_CURRENCY = 'USD';
export const DEFAULT_COMMISSION_RATE = 20;

/** Control characters other than tab and line breaks (free text may hold those). */
function hasControlCharacters(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) || c === 0x7f) return true;
  }
  return false;
}
export const MAX_PORTAL_TERMS = 10_000;

export const DEFAULT_HOLD_DAYS = 30;
export const MAX_HOLD_DAYS = 365;
/** Bounds of the plan's counts: ten years of monthly invoices, and a million sales. */
export const MAX_DURATION_MONTHS = 120;
export const MAX_SALES_PER_CUSTOMER = 1_000_000;

function wholeNumber(value: number, pointer: string, min: number, max: number, unit: string): number {
  if (!Number.isInteger(value) || value < min || value > max) throw invalidField(pointer, `must be a whole number of ${unit} from ${min} to ${max}`);
  return value;
}

function nonNegativeAmount(value: number, currency: string, pointer: string): number {
  if (!Number.isFinite(value) || value < 0) throw invalidField(pointer, 'must be an amount of 0 or more');
  return toMinorUnits(value, currency, pointer);
}

/** The referral parameter of a new program, as CONTRACT.md sets it (older programs keep theirs). */
export const DEFAULT_REFERRAL_PARAM = 'ref';
export const DEFAULT_COOKIE_DAYS = 60;
/** The longest cookie window: browsers cap cookie lifetimes at about 400 days. */
export const MAX_COOKIE_DAYS = 400;

const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$|^localhost$/i;

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

export function validateProgramInput(input: ProgramInput): Omit<ProgramRow, 'id' | 'owner_user_id' | 'created_at' | 'updated_at' | 'portal_slug' | 'live_program_id'> & { portal_slug?: string } {
  const name = input.name.trim();
  if (name.length < 1 || name.length > 200) throw invalidField('#/name', 'must be 1 to 200 characters');
  const domain = domainOf(input.domain);
  if (!DOMAIN.test(domain)) throw invalidField('#/domain', 'must be a domain name such as example.com');
  const currency = (input.currency ?? DEFAULT_CURRENCY).toUpperCase();
  if (!isCurrencyCode(currency)) throw invalidField('#/currency', 'must be an ISO 4217 currency code such as USD');
  const rate = input.commissionRate ?? DEFAULT_COMMISSION_RATE;
  if (!(rate >= 0 && rate <= 100)) throw invalidField('#/commissionRate', 'must be between 0 and 100');
  if (input.logoUrl && !isHttpUrl(input.logoUrl)) throw invalidField('#/logoUrl', 'must be an http(s) URL');
  const baseUrls = input.baseUrls ?? [`https://${domain}`];
  if (baseUrls.length < 1 || baseUrls.length > 20) throw invalidField('#/baseUrls', 'must hold 1 to 20 URLs');
  baseUrls.forEach((url, i) => {
    if (!isHttpUrl(url)) throw invalidField(`#/baseUrls/${i}`, 'must be an http(s) URL');
  });
  const referralParam = input.referralParam ?? DEFAULT_REFERRAL_PARAM;
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(referralParam)) throw invalidField('#/referralParam', 'must be 1 to 32 letters, digits, - or _');
  const cookieDays = input.cookieDays ?? DEFAULT_COOKIE_DAYS;
  if (!Number.isInteger(cookieDays) || cookieDays < 1 || cookieDays > MAX_COOKIE_DAYS) throw invalidField('#/cookieDays', `must be a whole number of days from 1 to ${MAX_COOKIE_DAYS}`);
  const attribution = input.attribution ?? 'last';
  if (attribution !== 'first' && attribution !== 'last') throw invalidField('#/attribution', 'must be "first" or "last"');
  const commissionType = input.commissionType ?? 'percentage';
  if (commissionType !== 'percentage' && commissionType !== 'flat') throw invalidField('#/commission/type', 'must be "percentage" or "flat"');
  const commissionAmount = nonNegativeAmount(input.commissionAmount ?? 0, currency, '#/commission/amount');
  if (commissionType === 'flat' && commissionAmount === 0) throw invalidField('#/commission/amount', 'must be more than 0 for a flat commission');
  const durationMonths = input.durationMonths ?? null;
  const maxSales = input.maxSalesPerCustomer ?? null;
  const slug = input.portalSlug?.trim().toLowerCase();
  if (slug !== undefined && !PORTAL_SLUG.test(slug)) throw invalidField('#/portal/slug', 'must be 1 to 64 lowercase letters, digits and single hyphens, such as acme-partners');
  const signup = input.portalSignup ?? 'approval';
  if (!(PORTAL_SIGNUPS as readonly string[]).includes(signup)) throw invalidField('#/portal/signup', 'must be "open", "approval" or "invite"');
  const color = (input.portalColor ?? '#3b5bdb').toLowerCase();
  if (!/^#[0-9a-f]{6}$/.test(color)) throw invalidField('#/portal/color', 'must be a colour such as #3b5bdb');
  const terms = (input.portalTerms ?? '').trim();
  if (terms.length > MAX_PORTAL_TERMS || hasControlCharacters(terms)) {
    throw invalidField('#/portal/terms', `must be at most ${MAX_PORTAL_TERMS} characters of text`);
  }
  return {
    ...(slug === undefined ? {} : { portal_slug: slug }),
    portal_signup: signup as PortalSignup,
    portal_color: color,
    portal_terms: terms,
    portal_links_allowed: input.portalLinksAllowed ? 1 : 0,
    name,
    domain,
    currency,
    default_commission_rate: rateToMillionths(rate, '#/commissionRate'),
    logo_url: input.logoUrl || null,
    base_urls: JSON.stringify(baseUrls),
    referral_param: referralParam,
    cookie_days: cookieDays,
    attribution,
    commission_type: commissionType,
    commission_amount: commissionAmount,
    commission_duration_months: durationMonths === null ? null : wholeNumber(durationMonths, '#/commission/durationMonths', 1, MAX_DURATION_MONTHS, 'months'),
    max_sales_per_customer: maxSales === null ? null : wholeNumber(maxSales, '#/commission/maxSalesPerCustomer', 1, MAX_SALES_PER_CUSTOMER, 'sales'),
    hold_days: wholeNumber(input.holdDays ?? DEFAULT_HOLD_DAYS, '#/commission/holdDays', 0, MAX_HOLD_DAYS, 'days'),
    minimum_payout: nonNegativeAmount(input.minimumPayout ?? 0, currency, '#/commission/minimumPayout'),
  };
}

/** What a program's settings are today, as input: the base a partial change (the CLI's flags) starts from. */
export function inputOf(program: Program): Omit<ProgramInput, 'ownerUserId'> {
  return {
    name: program.name,
    domain: program.domain,
    currency: program.currency,
    commissionRate: program.commissionRate,
    logoUrl: program.logoUrl,
    baseUrls: program.baseUrls,
    referralParam: program.referralParam,
    cookieDays: program.cookieDays,
    attribution: program.attribution,
    commissionType: program.commission.type,
    commissionAmount: program.commission.amount,
    durationMonths: program.commission.durationMonths,
    maxSalesPerCustomer: program.commission.maxSalesPerCustomer,
    holdDays: program.commission.holdDays,
    minimumPayout: program.commission.minimumPayout,
    portalSlug: program.portal.slug,
    portalSignup: program.portal.signup,
    portalColor: program.portal.color,
    portalTerms: program.portal.terms,
    portalLinksAllowed: program.portal.linksAllowed,
  };
}

const SLUG_ATTEMPTS = 20;

/**
 * Creates a program. Its portal slug is the one given, else the name's (acme, then acme-2…
 * when taken; a concurrent creation that takes the same one makes this one try the next).
 */
export async function createProgram(db: Db, input: ProgramInput, clock: Clock = systemClock): Promise<Program> {
  const now = clock().toISOString();
  const { portal_slug: given, ...fields } = validateProgramInput(input);
  const base = given ?? slugFrom(fields.name);
  for (let n = 1; n <= SLUG_ATTEMPTS; n++) {
    const slug = given ?? (await freeSlug(db, base, n));
    const row: ProgramRow = { id: newId(), owner_user_id: input.ownerUserId, ...fields, portal_slug: slug, live_program_id: null, created_at: now, updated_at: now };
    try {
      await insertProgram(db, row);
      return serializeProgram(row);
    } catch (error) {
      if (!isUniqueViolationOn(error, 'portal_slug')) throw error;
      if (given !== undefined) throw conflict(`The portal address "${given}" is taken by another program.`);
    }
  }
  throw conflict('No free portal address was found for this name; choose one.');
}

/** The first of base, base-2, base-3… (from the n-th on) that no program uses. */
async function freeSlug(db: Db, base: string, from: number): Promise<string> {
  const taken = new Set(await findSlugsLike(db, base));
  let n = from;
  while (taken.has(slugCandidate(base, n))) n++;
  return slugCandidate(base, n);
}

/**
 * A live program's test side (test mode, docs/test-mode.md), made on first use: a program of its
 * own, linked to the live one, with its settings and plan copied and its own portal address
 * ({slug}-test, or the next free one). Two first uses at once make one (the unique link): the
 * second reads the first's. A test side has none of its own.
 */
export async function openTestSide(db: Db, liveProgramId: string, clock: Clock = systemClock): Promise<ProgramRow> {
  const live = await getProgram(db, liveProgramId);
  if (live.live_program_id !== null) throw invalidField('#/program', 'is a test side already: its live program has the test side');
  const existing = await findTestSideRow(db, live.id);
  if (existing) return existing;
  const now = clock().toISOString();
  for (let n = 1; n <= SLUG_ATTEMPTS; n++) {
    const row: ProgramRow = { ...live, id: newId(), portal_slug: await freeSlug(db, `${live.portal_slug}-test`, n), live_program_id: live.id, created_at: now, updated_at: now };
    try {
      await insertProgram(db, row);
      return row;
    } catch (error) {
      if (isUniqueViolationOn(error, 'live_program')) return (await findTestSideRow(db, live.id))!;
      if (!isUniqueViolationOn(error, 'portal_slug')) throw error;
    }
  }
  throw conflict('No free portal address was found for the test side.');
}

export async function getProgram(db: Db, programId: string): Promise<ProgramRow> {
  const row = await findProgramRow(db, programId);
  if (!row) throw notFound('Program');
  return row;
}

/** A program as the operator's list shows it: with its owner's e-mail. */
export type ProgramListing = Program & { ownerEmail: string };

/** Every program of the instance, or the one owner's, oldest first (the order they were created in). */
export async function listPrograms(db: Db, filter: { ownerUserId?: string } = {}): Promise<ProgramListing[]> {
  const rows = await listProgramRowsWithOwner(db, filter);
  return rows.map(({ owner_email, ...row }) => ({ ...serializeProgram(row), ownerEmail: owner_email }));
}

/** The programs a user owns, oldest first (the order they were created in). */
export async function listUserPrograms(db: Db, userId: string): Promise<Program[]> {
  const rows = await listUserProgramRows(db, userId);
  return rows.map(serializeProgram);
}

/** One program of the user, or undefined when it does not exist or belongs to someone else. */
export async function findUserProgram(db: Db, userId: string, programId: string): Promise<Program | undefined> {
  const row = isUuid(programId) ? await findUserProgramRow(db, userId, programId) : undefined;
  return row && serializeProgram(row);
}

/** A program as its pages use it: the settings they show and the tenant context its services take. */
export interface OpenedProgram {
  program: Program;
  context: ProgramContext;
}

function opened(row: ProgramRow, clock: Clock): OpenedProgram {
  return { program: serializeProgram(row), context: toProgramContext(row, clock) };
}

/** The program whose portal lives at /portal/{slug}, or undefined. */
export async function findProgramBySlug(db: Db, slug: string, clock: Clock): Promise<OpenedProgram | undefined> {
  if (!PORTAL_SLUG.test(slug)) return undefined;
  const row = await findProgramRowBySlug(db, slug);
  return row && opened(row, clock);
}

/** The user's program with its tenant context (the dashboard's program pages), or undefined when it is not the user's. */
export async function openUserProgram(db: Db, userId: string, programId: string, clock: Clock): Promise<OpenedProgram | undefined> {
  const row = isUuid(programId) ? await findUserProgramRow(db, userId, programId) : undefined;
  return row && opened(row, clock);
}

/** Changes a user's program with the rules of creation; 404 when it is not the user's. */
export async function updateProgram(db: Db, userId: string, programId: string, input: Omit<ProgramInput, 'ownerUserId'>, clock: Clock = systemClock): Promise<Program> {
  const current = await findUserProgram(db, userId, programId);
  if (!current) throw notFound('Program');
  return changeProgram(db, current, userId, input, clock);
}

/**
 * `tandem program update`: changes the settings it names and keeps the others (the operator's
 * command, not a user's: no owner check).
 */
export async function updateProgramSettings(db: Db, programId: string, changes: Partial<Omit<ProgramInput, 'ownerUserId'>>, clock: Clock = systemClock): Promise<Program> {
  const row = await getProgram(db, programId);
  return changeProgram(db, serializeProgram(row), row.owner_user_id, changes, clock);
}

/** Applies the settings given; one not given (undefined) keeps its value. */
async function changeProgram(db: Db, current: Program, userId: string, input: Partial<Omit<ProgramInput, 'ownerUserId'>>, clock: Clock): Promise<Program> {
  const programId = current.id;
  const given = Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined));
  const changes = validateProgramInput({ ...inputOf(current), ...given, ownerUserId: userId });
  // Amounts are stored in minor units of the currency: switching it would change their value.
  if (changes.currency !== current.currency && (await hasAmountsInCurrency(db, programId))) {
    throw invalidField('#/currency', `cannot change once amounts are recorded in ${current.currency}`);
  }
  try {
    await inTransaction(db, async (tx) => {
      await updateUserProgramRow(tx, userId, programId, { ...changes, updated_at: clock().toISOString() });
      await announceChange(tx, TOKEN_CHANGE_CHANNEL); // a token's cached answer carries its program's settings
    });
  } catch (error) {
    if (isUniqueViolationOn(error, 'portal_slug')) throw conflict(`The portal address "${changes.portal_slug}" is taken by another program.`);
    throw error;
  }
  return (await findUserProgram(db, userId, programId))!;
}

