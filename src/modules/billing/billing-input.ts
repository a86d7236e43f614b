import { Type, type TSchema } from '@sinclair/typebox';
import { ApiError, type FieldError } from '../../domain/errors.ts';
import { minorUnitDigits, rescaleMinorUnits, unitsToDecimalText } from '../../domain/money.ts';
import { assertCleanInput } from '../../http/input-guard.ts';
import { Email, ExternalId } from '../../http/schemas.ts';
import { assertValidBody } from '../../http/validation.ts';
import { CreateReferralBody } from '../referrals/referral.schema.ts';
import { CreateSaleBody } from '../sales/sale.schema.ts';
import type { BillingAction, BillingCustomer, Read } from './billing-provider.ts';

// What Tandem reads of a provider's event, by the API's own input rules (issue 29 item 15). A
// signed event is input like a request body, and every value of it that becomes a row goes
// through the checks a request would: the input guard (no NUL or other control character, no
// lone surrogate), the body schemas of POST /referrals and POST /sales, and each provider's
// schemas for what only it sends (its ids, currencies, times: providers/…). A value they refuse
// makes the event `ignored` with the reason in words, the same on both databases — except a
// customer's name, which is cleaned (cleanName) rather than losing the referral. This is the
// receiver's input side, as a route's validation is: the service takes what it returns.

/** A three-letter currency code, in any letter case (providers send `usd` or `USD`). */
export const Currency = Type.String({ pattern: '^[A-Za-z]{3}$' });

/** The pattern of an id the API takes (no control character): refusals of it are said in words. */
export const ID_PATTERN = (ExternalId() as { pattern: string }).pattern;
const PATTERN_WORDS: Record<string, string> = {
  [ID_PATTERN]: 'must not contain control characters, line breaks or tabs',
  [Currency.pattern!]: 'must be a three-letter currency code',
};

/** A JSON Pointer (#/data/object/id) as the field's path in the event (data.object.id). */
export const pathOf = (pointer: string) => pointer.replace(/^#\/?/, '').split('/').join('.') || 'the event';

function wordsOf(errors: FieldError[], names: (pointer: string) => string): string {
  return errors.map((e) => `${names(e.pointer)} ${e.detail.startsWith('must match pattern') ? (PATTERN_WORDS[/"(.*)"$/.exec(e.detail)?.[1] ?? ''] ?? e.detail) : e.detail}`).join('; ');
}

/** The API's checks of `value`: the input guard on the `strict` fields, then `schema`; the refusal in words, or null. */
export function refusal(schema: TSchema, value: unknown, strict: string[], names: (pointer: string) => string = pathOf): string | null {
  try {
    for (const pointer of strict) {
      const field = pointer.split('/').slice(1).reduce<unknown>((at, key) => (at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[key] : undefined), value);
      if (field !== undefined) assertCleanInput(field, pointer);
    }
    assertValidBody(schema, value);
    return null;
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return error.errors?.length ? wordsOf(error.errors, names) : error.detail;
  }
}

/** The API's limit of a name (ShortText), in characters (code points, as the schema counts them). */
export const MAX_NAME_LENGTH = 200;
// eslint-disable-next-line no-control-regex -- the input guard's refused characters: C0 but tab, line feed, carriage return; and DEL
const REFUSED_CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * A name from a billing provider, cleaned to what POST /referrals takes rather than refused (a
 * referral is not lost over how a card holder typed their name): each control character the
 * API refuses becomes a space, a lone surrogate U+FFFD, and the name is cut at 200 characters
 * and trimmed. '' when nothing is left (the caller names the customer by their e-mail).
 */
export function cleanName(name: unknown): string {
  if (typeof name !== 'string') return '';
  const cleaned = name.replace(REFUSED_CONTROL, ' ').replace(LONE_SURROGATE, '\ufffd').trim();
  return Array.from(cleaned).slice(0, MAX_NAME_LENGTH).join('').trim();
}

const REFERRAL_FIELDS: Record<string, string> = {
  '#/name': "the customer's name",
  '#/email': "the customer's e-mail",
  '#/referredUserExternalId': 'the customer id',
  '#/affiliateId': 'tandem_referral',
  '#/promoCode': 'the promotional code',
};

/**
 * A customer's e-mail and name as Tandem keeps them for a later payment (billing_customers): the
 * e-mail by the API's rules (else nothing is kept), the name cleaned; null when the e-mail fails.
 */
export function keptCustomer(customer: BillingCustomer): { email: string; name: string | null } | null {
  if (refusal(Email, customer.email, ['#']) !== null) return null;
  return { email: customer.email as string, name: cleanName(customer.name) || null };
}

/** Who credits the customer: a tandem_referral (an affiliate id or link string), or the program's code matching a discount code. */
export type Credit = { affiliateId: string } | { promoCode: string };

/** The POST /referrals body for a provider's customer, checked as the API checks it: the name cleaned, the rest refused with the reason. */
export function referralBody(customer: BillingCustomer, credit: Credit): Read<CreateReferralBody> {
  const email = customer.email;
  const body = { name: cleanName(customer.name) || cleanName(email), email, referredUserExternalId: customer.id, ...credit };
  const refused = refusal(CreateReferralBody, body, ['#/email', '#/referredUserExternalId', '#/affiliateId', '#/promoCode'], (pointer) => REFERRAL_FIELDS[pointer] ?? pathOf(pointer));
  return refused === null ? { value: body as CreateReferralBody } : { reason: refused };
}

const SALE_FIELDS: Record<string, string> = { '#/totalEarned': "the sale's totalEarned", '#/externalInvoiceId': 'the invoice id', '#/referralId': 'the referral' };

/** The POST /sales body of a paid invoice or session, checked as the API checks it. */
export function saleBody(body: CreateSaleBody): Read<CreateSaleBody> {
  const refused = refusal(CreateSaleBody, body, ['#/externalInvoiceId'], (pointer) => SALE_FIELDS[pointer] ?? pathOf(pointer));
  return refused === null ? { value: body } : { reason: refused };
}

/**
 * An amount a provider counts in `providerDigits` decimals of `currency` (its own table: Stripe
 * counts HUF in hundredths, Paddle JPY in yen), as the program's minor units by the program's
 * exponent (money.ts), or why it cannot be one: not a whole, non-negative number of the
 * provider's units (a digit string is read as Paddle sends them), beyond what Tandem holds, or a
 * fraction the program's currency does not keep.
 */
export function providerAmountToMinor(amount: unknown, currency: string, field: string, provider: { displayName: string; digits: number }): { minor: number } | { reason: string } {
  const code = currency.toUpperCase();
  const units = typeof amount === 'string' && /^\d{1,16}$/.test(amount) ? Number(amount) : amount;
  if (typeof units !== 'number' || !Number.isSafeInteger(units) || units < 0) {
    return { reason: `${field} must be a whole, non-negative number of ${provider.displayName}'s minor units (${JSON.stringify(amount) ?? 'nothing'} is not)` };
  }
  const digits = minorUnitDigits(code);
  const minor = rescaleMinorUnits(units, provider.digits, digits);
  if (minor === null && provider.digits <= digits) return { reason: `${field} ${units} is more than Tandem holds` };
  if (minor === null) {
    return { reason: `${field} ${units} is ${unitsToDecimalText(units, provider.digits)} ${code} by ${provider.displayName}'s count (${provider.digits} decimals), which ${code} in Tandem (${digits} decimals) cannot hold exactly` };
  }
  return { minor };
}

const SERVICE_FIELDS: Record<string, string> = { ...REFERRAL_FIELDS, ...SALE_FIELDS, '#/amount': 'the refund', '#/saleId': 'the sale' };

/**
 * An API refusal of an event's work (a service's 4xx) as the event's reason, in words: each
 * field's own error ("the refund is more than the 12.00 not yet refunded"), never the
 * summary "The request is invalid.".
 */
export function reasonOf(error: ApiError): string {
  return error.errors?.length ? wordsOf(error.errors, (pointer) => SERVICE_FIELDS[pointer] ?? pathOf(pointer)) : error.detail;
}

/**
 * The currencies most card processors count in whole units (ISO 4217 gives them no minor unit,
 * or none in use): Lemon Squeezy, Polar and Chargebee count these so, and every other currency
 * in hundredths. Stripe and Paddle keep their own tables (their folders).
 */
const ZERO_DECIMAL = new Set(['BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'UYI', 'VND', 'VUV', 'XAF', 'XOF', 'XPF']);
export const cardProcessorDigits = (currency: string) => (ZERO_DECIMAL.has(currency.toUpperCase()) ? 0 : 2);

/** A JSON object (not an array, not null): how every provider's objects are told apart from anything else. */
export const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
/** A non-empty string, or undefined. */
export const text = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

/** A verified delivery's body as a JSON object, or a 400 (nothing recorded) saying what it is not. */
export function parseEventBody(rawBody: Buffer): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawBody.toString('utf8'));
  } catch {
    throw new ApiError('bad_request', 'The event is not JSON.');
  }
  if (!isObject(parsed)) throw new ApiError('bad_request', 'The event must be a JSON object.');
  return parsed;
}

/** The event ignored with the reason (in words: it is the billing event's `reason`). */
export const ignore = (reason: string): BillingAction => ({ kind: 'ignore', reason });

/** The action of what `read` made of the event, or the event ignored with the reason it could not be read. */
export function withRead<T>(read: Read<T>, action: (value: T) => BillingAction): BillingAction {
  return 'reason' in read ? ignore(read.reason) : action(read.value);
}

/**
 * What a refund takes back of a sale kept net of tax, when the provider counts the refund with
 * its tax (Lemon Squeezy, Chargebee): the part of `net` that `refunded` is of `total`, rounded,
 * never more than `net`.
 */
export function netOfTaxPart(refunded: number, total: number, net: number): number {
  return total === 0 ? 0 : Math.min(net, Math.round((Math.min(refunded, total) * net) / total));
}
