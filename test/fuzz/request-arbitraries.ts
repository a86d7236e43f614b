import fc from 'fast-check';

// Request generators for the fuzzer (api-fuzz.test.ts), built from the OpenAPI document: a
// valid-looking request per operation (so some succeed and reach deep code), then zero or more
// hostile mutations of its query, body and headers. Values that must name real rows (ids, link
// strings, codes, cursors) are generated as a `Pick` — a kind and a number — and resolved at
// send time against the tenants that exist then (fuzz-world.ts), so the generated plan depends
// on the seed only.

/** A JSON Schema as the OpenAPI document carries it (only what the generators read). */
export interface JsonSchema {
  type?: string | string[];
  format?: string;
  pattern?: string;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
}

/** An operation of the document: method, path, its query parameters and its JSON body schema. */
export interface Operation {
  method: string;
  path: string;
  query: { name: string; required: boolean; schema: JsonSchema }[];
  body?: JsonSchema;
}

/** A value to take from the world when the request is sent: `kind` names the pool, `n` the choice. */
export class Pick {
  constructor(
    readonly kind: PoolKind,
    readonly n: number,
  ) {}

  toJSON(): string {
    return `<${this.kind}#${this.n}>`;
  }
}

export type PoolKind =
  | 'affiliateId'
  | 'affiliateRef'
  | 'affiliateEmail'
  | 'customerEmail'
  | 'link'
  | 'linkId'
  | 'referralId'
  | 'saleReferral'
  | 'referralExternalId'
  | 'saleId'
  | 'invoice'
  | 'couponId'
  | 'couponExternalId'
  | 'codeId'
  | 'code'
  | 'webhookId'
  | 'webhookUrl'
  | 'cursor'
  | 'programId'
  | 'eventTypes'
  | 'clickUrl';

/** A raw JSON token put in place of a field's value when the body is serialised (`1e999`, `-0`). */
export class RawJson {
  constructor(readonly text: string) {}

  toJSON(): string {
    return `<raw ${this.text}>`;
  }
}

/** A query value sent exactly as written (no percent-encoding): `%00`, `%ff`, a lone `%`. */
export class RawQuery {
  constructor(readonly text: string) {}

  toJSON(): string {
    return `<raw ${this.text}>`;
  }
}

export type QueryValue = string | number | boolean | Pick | RawQuery | null;

/** Everything about one request except the world it is resolved against. */
export interface RequestPlan {
  operation: Operation;
  /** Whose token (and, for ids, whose rows) the request mostly uses. */
  actor: 'a' | 'b';
  auth: AuthVariant;
  pathSuffix: string;
  query: [string, QueryValue][];
  /** undefined: no body; RawBody: sent as text; anything else: serialised as JSON. */
  body?: unknown;
  contentType: string | null;
  idempotencyKey: IdempotencyVariant | null;
  origin: OriginVariant | null;
  /** What was done to the valid request, for the report of a failure. */
  mutations: string[];
}

/** A whole body sent as text, exactly. */
export class RawBody {
  constructor(readonly text: string) {}

  toJSON(): string {
    return `<raw body ${JSON.stringify(this.text.length > 300 ? `${this.text.slice(0, 300)}… (${this.text.length} chars)` : this.text)}>`;
  }
}

export type AuthVariant =
  | 'token'
  | 'none'
  | 'empty-bearer'
  | 'garbage-token'
  | 'lowercase-scheme'
  | 'double-space'
  | 'no-scheme'
  | 'token-suffix'
  | 'basic'
  | 'huge';
export type IdempotencyVariant = { kind: 'fresh' } | { kind: 'shared'; n: number } | { kind: 'odd'; value: string };
export type OriginVariant = 'own' | 'subdomain' | 'http' | 'suffix-trick' | 'prefix-trick' | 'other-program' | 'null' | 'empty';

// ---------------------------------------------------------------- hostile values

export const C0_AND_DEL = [...Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)), '\u007f'];

/** Date-times that are easy to get wrong: leap seconds, year 0, beyond Date's range, no offset, impossible days. */
export const ODD_DATE_TIMES = [
  '2016-12-31T23:59:60Z',
  '0000-01-01T00:00:00Z',
  '+275760-09-13T00:00:00Z',
  '+275760-09-13T00:00:00.001Z',
  '-000001-01-01T00:00:00Z',
  '1969-12-31T23:59:59.999Z',
  '1970-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999Z',
  '9999-12-31T23:59:59.999-01:00',
  '10000-01-01T00:00:00Z',
  '2025-02-29T00:00:00Z',
  '2024-02-29T24:00:00Z',
  '2026-01-01',
  '2026-01-01T00:00:00',
  '2026-01-01T00:00:00.1234567891Z',
  '2026-01-01t00:00:00z',
  '2026-01-01 00:00:00+00:00',
  '2026-13-01T00:00:00Z',
  '2026-01-01T00:00:00+24:00',
  '2026-01-01T00:00:00+05:30',
  '2026-06-15T12:00:00.000000001Z',
  '1700000000000',
  '2026-W01-1',
  'now',
];

const ODD_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\u007f',
  '\ud800',
  'x\udc00',
  '\ud83d',
  '\u202e\u0041',
  '\ufeff',
  '\u2028',
  '%00',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  '-Infinity',
  '-0',
  '1e308',
  '1e999',
  '9223372036854775808',
  '18446744073709551616',
  '0x1F',
  '1.5',
  ' 1 ',
  'true',
  '[]',
  '{}',
  "' OR 1=1 --",
  '"; drop table affiliates; --',
  '<script>alert(1)</script>',
  '../../etc/passwd',
  '\r\n',
  '\t',
  'é',
  '😀',
  'ǅ',
  'İ',
  'ß',
  '*',
  '%',
  '_',
  '\\',
  '00000000-0000-0000-0000-000000000000',
  'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
  'urn:uuid:00000000-0000-4000-8000-000000000000',
  ...ODD_DATE_TIMES,
];

export const ODD_NUMBERS = [
  1e308,
  -1e308,
  2 ** 63,
  -(2 ** 63),
  2 ** 53,
  Number.MAX_SAFE_INTEGER,
  Number.MAX_SAFE_INTEGER + 2,
  2 ** 31,
  2 ** 32,
  -0,
  0,
  -1,
  0.5,
  1.5,
  0.1 + 0.2,
  1e-7,
  5e-324,
  123.456789,
  99.99999,
  100.00001,
  1e13,
  1e13 + 0.01,
  10000000000001,
  0.005,
  0.015,
  1.005,
  1e-300,
  1e-22,
];

/** Numbers far below any minor unit or rate step: once stored as 0 (a tolerance with an absolute floor). */
export const TINY_NUMBERS = [1e-300, 5e-324, 1e-7, 1e-22, 0.001, 2.5e-5, 1e-5];

/** Raw JSON number tokens that JSON.stringify never writes. */
const RAW_NUMBER_TOKENS = ['1e999', '-1e999', '-0', '-0.0', '1E2', '1e+2', '00012', '1.0', '1.50', '100000000000000000000000000000', '0.30000000000000004', '4.9e-324', '1e-400', '1e-300', '1E-7', '0.000000000000000000001'];

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...ODD_STRINGS) },
  { weight: 3, arbitrary: fc.constantFrom(...C0_AND_DEL).map((c) => `abc${c}def`) },
  { weight: 1, arbitrary: fc.constantFrom(...C0_AND_DEL) },
  { weight: 2, arbitrary: fc.integer({ min: 190, max: 70_000 }).map((n) => 'x'.repeat(n)) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
);

/** Nested arrays or objects `depth` levels deep (the API allows 32). */
export function nested(depth: number, kind: 'array' | 'object'): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = kind === 'array' ? [value] : { a: value };
  return value;
}

export const hostileJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: hostileString },
  { weight: 4, arbitrary: fc.constantFrom(...ODD_NUMBERS) },
  { weight: 2, arbitrary: fc.constantFrom(...RAW_NUMBER_TOKENS).map((t) => new RawJson(t)) },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, [], {}) },
  { weight: 1, arbitrary: fc.array(fc.oneof(hostileString, fc.constantFrom(...ODD_NUMBERS)), { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.constantFrom('a', '$ne', '$gt', 'id', 'toString', 'valueOf', ''), fc.constantFrom(1, 'x', null), { maxKeys: 2 }) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(31, 32, 33, 200), fc.constantFrom('array' as const, 'object' as const)).map(([d, k]) => nested(d, k)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

/** Percent-encodings that decode to nothing valid: a % without two hex digits, an escape cut short, bytes that are no UTF-8, an encoded lone surrogate. */
export const BROKEN_ENCODINGS = ['%', '%zz', '%E0%A4%A', '%E0%A4', '%ff', '%ed%a0%80', '%c0%80', '%C0%AF', '100%', 'a%2'];

/** Query values as text: odd strings, numbers written out, odd date-times, raw escapes (some broken). */
export const hostileQueryValue: fc.Arbitrary<QueryValue> = fc.oneof(
  { weight: 5, arbitrary: hostileString.map((s) => (s.length > 3000 ? s.slice(0, 3000) : s)) },
  { weight: 3, arbitrary: fc.constantFrom(...ODD_NUMBERS).map((n) => (Object.is(n, -0) ? '-0' : String(n))) },
  { weight: 2, arbitrary: fc.constantFrom('%00', '%01', '%1F', '%7F', '+', '%2B', '%20x%20', 'a%26b%3Dc', '%E2%80%AE', ...BROKEN_ENCODINGS).map((t) => new RawQuery(t)) },
  { weight: 1, arbitrary: fc.constantFrom('', 'true', 'false', '1', '0', 'yes', 'null') },
);

/** Bodies that are not JSON objects at all, or JSON a parser might mishandle. */
const RAW_BODIES = [
  '',
  '{',
  '{"a":',
  'nul',
  '\ufeff{}',
  '{}garbage',
  '{"a":1}{"b":2}',
  '[',
  '"just a string"',
  '123',
  'null',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"a":1,"a":2}',
  '{\u0000}',
  '{"a":"\\ud800"}',
  '{"a":"\\u0000"}',
  '\u0000',
  'a=1&b=2',
  `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
  `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`,
];

// ---------------------------------------------------------------- valid-looking values from a schema

const RESOURCE_OF_PATH: Record<string, PoolKind> = {
  '/api/v1/affiliates': 'affiliateId',
  '/api/v1/links': 'linkId',
  '/api/v1/referrals': 'referralId',
  '/api/v1/sales': 'saleId',
  '/api/v1/coupons': 'couponId',
  '/api/v1/promotional-codes': 'codeId',
  '/api/v1/webhooks': 'webhookId',
};

/** Which pool a field takes real values from, judged by its name and operation. */
function poolOf(name: string, op: Operation): PoolKind | undefined {
  const path = op.path;
  switch (name) {
    case 'id':
      return RESOURCE_OF_PATH[path];
    case 'affiliateId':
      return path === '/api/v1/referrals' && op.method === 'POST' ? 'affiliateRef' : 'affiliateId';
    case 'referralId':
      return path.startsWith('/api/v1/sales') ? 'saleReferral' : 'referralId';
    case 'saleId':
      return 'saleId';
    case 'couponId':
      return 'couponId';
    case 'promotionalCodeId':
      return 'codeId';
    case 'email':
      return path === '/api/v1/affiliates' ? 'affiliateEmail' : 'customerEmail';
    case 'affiliateEmail':
    case 'payoutEmail':
      return 'affiliateEmail';
    case 'link':
    case 'affiliateLink':
    case 'newLink':
      return 'link';
    case 'code':
    case 'promoCode':
      return 'code';
    case 'referredUserExternalId':
    case 'customerId':
      return 'referralExternalId';
    case 'externalId':
      if (path === '/api/v1/referrals') return 'referralExternalId';
      if (path === '/api/v1/coupons') return 'couponExternalId';
      return undefined;
    case 'saleExternalId':
    case 'externalInvoiceId':
      return 'invoice';
    case 'cursor':
      return 'cursor';
    case 'programId':
      return 'programId';
    case 'type':
      return path === '/api/v1/events' ? 'eventTypes' : undefined;
    case 'url':
      return path === '/api/track/click' ? 'clickUrl' : 'webhookUrl';
    default:
      return undefined;
  }
}

const validDateTime: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()) },
  { weight: 1, arbitrary: fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2040-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().replace('Z', '+05:30').replace('T', ' ')) },
  { weight: 1, arbitrary: fc.constantFrom('2026-01-01T00:00:00Z', '2099-12-31T23:59:59.999999999Z', '1970-01-01T00:00:00.000Z', '2000-02-29T12:00:00-12:00') },
);

/** A value the schema accepts (mostly): the request should often succeed and reach the services. */
export function schemaValue(schema: JsonSchema, name = ''): fc.Arbitrary<unknown> {
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map((s) => schemaValue(s, name)));
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const types = Array.isArray(schema.type) ? schema.type : [schema.type ?? 'string'];
  if (types.length > 1) return fc.oneof(...types.map((type) => schemaValue({ ...schema, type }, name)));
  switch (types[0]) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer': {
      const lo = schema.minimum ?? -1000;
      const hi = schema.maximum ?? 1_000_000;
      // Bulk generation: a few codes, not thousands, so the tables the fuzzer compares stay small.
      if (name === 'count') return fc.integer({ min: lo, max: Math.min(hi, lo + 3) });
      return fc.oneof(
        { weight: 4, arbitrary: fc.integer({ min: lo, max: Math.min(hi, lo + 20) }) },
        { weight: 1, arbitrary: fc.constantFrom(lo, hi) },
        { weight: 1, arbitrary: fc.integer({ min: lo, max: Math.min(hi, 2 ** 31) }) },
      );
    }
    case 'number': {
      const lo = schema.minimum ?? -1_000_000;
      const hi = schema.maximum ?? 1_000_000;
      return fc.oneof(
        { weight: 4, arbitrary: fc.integer({ min: 0, max: 100_000 }).map((n) => Math.min(hi, Math.max(lo, n / 100))) },
        { weight: 1, arbitrary: fc.constantFrom(lo, hi, Math.min(hi, Math.max(lo, 20))) },
        { weight: 1, arbitrary: fc.double({ min: lo, max: hi, noNaN: true, noDefaultInfinity: true }) },
      );
    }
    case 'array': {
      const min = schema.minItems ?? 0;
      return fc.array(schemaValue(schema.items ?? {}, name), { minLength: min, maxLength: Math.max(min, Math.min(schema.maxItems ?? 3, 3)) });
    }
    case 'object': {
      const properties = Object.entries(schema.properties ?? {});
      return fc.record(Object.fromEntries(properties.map(([key, s]) => [key, schemaValue(s, key)])), { requiredKeys: schema.required ?? [] });
    }
    default:
      return stringValue(schema);
  }
}

function stringValue(schema: JsonSchema): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? 60;
  switch (schema.format) {
    case 'date-time':
      return validDateTime;
    case 'email':
      return fc.oneof(
        { weight: 4, arbitrary: fc.tuple(fc.stringMatching(/^[a-z0-9.+]{1,12}$/), fc.constantFrom('example.com', 'EXAMPLE.org', 'sub.example.net'), fc.constantFrom('', ' ')).map(([local, domain, pad]) => `${pad}${local}@${domain}${pad}`) },
        // Letters whose lower case is longer (İ) or that fold oddly (ǅ, ß, K as the Kelvin sign), at the length limit.
        { weight: 1, arbitrary: fc.constantFrom('İstanbul@example.com', 'ǅemo@example.com', 'STRAßE@example.com', '\u212Aelvin@example.com', `${'İ'.repeat(120)}@example.com`, `${'a'.repeat(64)}@${'b'.repeat(180)}.com`) },
      );
    case 'uuid':
      return fc.uuid();
    case 'status':
      return fc.constantFrom('active', 'inactive', 'ACTIVE', 'Inactive');
  }
  if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length >= min && s.length <= max);
  return fc.string({ minLength: min, maxLength: Math.max(min, Math.min(max, 40)) });
}

/** A field's value: mostly a real one from the world when the field names a row, else from its schema. */
function fieldValue(schema: JsonSchema, name: string, op: Operation): fc.Arbitrary<unknown> {
  const pool = poolOf(name, op);
  const fromSchema = schemaValue(schema, name);
  if (!pool) return fromSchema;
  return fc.oneof({ weight: 3, arbitrary: fc.nat().map((n) => new Pick(pool, n)) }, { weight: 1, arbitrary: fromSchema });
}

// ---------------------------------------------------------------- whole requests

const pick = (kind: PoolKind) => fc.nat().map((n) => new Pick(kind, n));
const freshLink = fc.stringMatching(/^[A-Za-z0-9-]{6,20}$/);
const freshEmail = fc.stringMatching(/^[a-z0-9]{6,12}$/).map((local) => `${local}@example.com`);
const amount = fc.oneof(fc.integer({ min: 1, max: 500 }), fc.integer({ min: 1, max: 50_000 }).map((n) => n / 100));

/**
 * Bodies known to be valid in shape (with real ids from the world), so that a good share of
 * requests succeed and reach the services; the schema alone rarely finds a valid combination
 * (a FLAT coupon needs amountOff and currency, a sale someone to credit).
 */
const VALID_BODIES: Record<string, Record<string, fc.Arbitrary<unknown>>[]> = {
  'POST /api/v1/affiliates': [{ firstName: fc.constant('Ada'), lastName: fc.constant('Lovelace'), email: freshEmail }],
  'PUT /api/v1/affiliates': [{ id: pick('affiliateId'), firstName: fc.constant('Grace') }, { affiliateId: pick('affiliateId'), status: fc.constantFrom('active', 'INACTIVE') }],
  'POST /api/v1/links': [{ link: freshLink, affiliateId: pick('affiliateId') }, { link: freshLink, affiliateEmail: pick('affiliateEmail') }],
  'PUT /api/v1/links': [{ link: pick('link'), newLink: freshLink }],
  'POST /api/v1/referrals': [{ name: fc.constant('Carla'), email: freshEmail, referredUserExternalId: freshLink, affiliateId: pick('affiliateRef') }, { name: fc.constant('Carla'), email: freshEmail, referredUserExternalId: freshLink, promoCode: pick('code') }],
  'PUT /api/v1/referrals': [{ id: pick('referralId'), name: fc.constant('Dora') }, { referralId: pick('referralId'), status: fc.constantFrom('active', 'inactive') }],
  'POST /api/v1/sales': [
    { totalEarned: amount, referralId: pick('saleReferral') },
    { totalEarned: amount, email: pick('customerEmail'), externalInvoiceId: freshLink },
    { totalEarned: amount, promoCode: pick('code'), email: freshEmail, name: fc.constant('Eve') },
  ],
  'PUT /api/v1/sales': [{ id: pick('saleId'), totalEarned: amount }, { saleId: pick('saleId'), commissionRate: fc.integer({ min: 0, max: 100 }) }],
  'POST /api/v1/sales/refund': [{ saleId: pick('saleId'), amount: fc.integer({ min: 1, max: 20 }) }, { externalInvoiceId: pick('invoice'), amount: fc.integer({ min: 1, max: 20 }) }],
  'POST /api/v1/coupons': [
    { name: fc.constant('Ten off'), couponType: fc.constant('PERCENTAGE'), percentOff: fc.integer({ min: 1, max: 100 }) },
    { name: fc.constant('Five off'), couponType: fc.constant('FLAT'), amountOff: fc.integer({ min: 1, max: 50 }), currency: fc.constantFrom('USD', 'JPY', 'eur'), duration: fc.constantFrom('once', 'forever') },
  ],
  'PUT /api/v1/coupons': [{ id: pick('couponId'), name: fc.constant('Renamed') }, { couponId: pick('couponId'), valid: fc.boolean(), maxRedemptions: fc.constantFrom(null, 5) }],
  'POST /api/v1/promotional-codes': [{ couponId: pick('couponId'), code: freshLink, affiliateId: pick('affiliateId') }],
  'PUT /api/v1/promotional-codes': [{ promotionalCodeId: pick('codeId'), active: fc.boolean() }, { promotionalCodeId: pick('codeId'), maxRedemptions: fc.constantFrom(null, 1, 100), expiresAt: fc.constantFrom(null, '2099-01-01T00:00:00Z') }],
  'POST /api/v1/promotional-codes/bulk': [{ couponId: pick('couponId'), count: fc.integer({ min: 1, max: 3 }), affiliateId: pick('affiliateId') }],
  // A program subscribes one URL once (409 after): a path of its own each time, mostly.
  'POST /api/v1/webhooks': [{ url: fc.nat({ max: 1_000_000 }).map((n) => `https://93.184.216.34/hook/${n}`), events: fc.subarray(['sale.created', 'referral.created', 'affiliate.updated'], { minLength: 1 }) }],
  'POST /api/track/click': [{ url: pick('clickUrl'), visitorId: fc.stringMatching(/^[A-Za-z0-9_-]{8,20}$/) }],
};

/** The required fields and a few optional ones, each valid for the schema on its own. */
function schemaBody(op: Operation): fc.Arbitrary<Record<string, unknown>> {
  const schema = op.body!;
  const properties = Object.entries(schema.properties ?? {});
  const required = schema.required ?? [];
  const optional = properties.map(([key]) => key).filter((key) => !required.includes(key));
  return fc
    .tuple(fc.record(Object.fromEntries(properties.map(([key, s]) => [key, fieldValue(s, key, op)]))), fc.subarray(optional, { maxLength: Math.min(3, optional.length) }))
    .map(([all, chosen]) => Object.fromEntries(Object.entries(all).filter(([key]) => required.includes(key) || chosen.includes(key))));
}

function validBody(op: Operation): fc.Arbitrary<Record<string, unknown>> {
  const known = VALID_BODIES[`${op.method} ${op.path}`] ?? [];
  if (known.length === 0) return schemaBody(op);
  // A known-valid body, sometimes with an optional field or two from the schema added.
  const extended = fc.tuple(fc.oneof(...known.map((fields) => fc.record(fields))), schemaBody(op), fc.nat()).map(([base, extra, n]) => {
    const keys = Object.keys(extra).filter((key) => !(key in base));
    const added = n % 3 === 0 && keys.length > 0 ? { [keys[n % keys.length]!]: extra[keys[n % keys.length]!] } : {};
    return { ...base, ...added };
  });
  return fc.oneof({ weight: 3, arbitrary: extended }, { weight: 1, arbitrary: schemaBody(op) });
}

function validQuery(op: Operation): fc.Arbitrary<[string, QueryValue][]> {
  if (op.query.length === 0) return fc.constant([]);
  return fc
    .tuple(...op.query.map((p) => (p.required ? fieldValue(p.schema, p.name, op).map((v) => [v]) : fc.option(fieldValue(p.schema, p.name, op), { freq: 2 }).map((v) => (v === null ? [] : [v])))))
    .map((values) => values.flatMap((vs, i) => vs.map((v) => [op.query[i]!.name, v as QueryValue] as [string, QueryValue])));
}

/** Appended to a valid text field: text that is unusual but plausible, so the request often still succeeds. */
export const ODD_SUFFIXES = ['\ud800', '\udfff', 'x\udc00', '\u0301', '\u202e', '😀', '\ufffd', '\u00a0', '\u200b', '\ufeff', '\t', '\n', '\r\n', ' ', 'é', 'İ', 'ß', '\u2028', '%00', "'", '"', '\\'];

type BodyMutation =
  | { op: 'tweak'; key: string; suffix: string; factor: number }
  | { op: 'tiny'; n: number; value: number }
  | { op: 'set'; key: string; value: unknown } | { op: 'drop'; key: string } | { op: 'unknown'; key: string; value: unknown } | { op: 'replace'; value: unknown } | { op: 'raw'; text: string } | { op: 'duplicate-key'; key: string; value: unknown };

function bodyMutation(keys: string[]): fc.Arbitrary<BodyMutation> {
  const key = fc.constantFrom(...(keys.length > 0 ? keys : ['id']));
  return fc.oneof(
    { weight: 6, arbitrary: fc.record({ op: fc.constant('tweak' as const), key, suffix: fc.constantFrom(...ODD_SUFFIXES), factor: fc.constantFrom(-1, 0, 0.001, 1.0000001, 10, 1000, 1e6) }) },
    // A money or rate field (any number the body holds) set to a value far below its smallest step.
    { weight: 3, arbitrary: fc.record({ op: fc.constant('tiny' as const), n: fc.nat(), value: fc.constantFrom(...TINY_NUMBERS) }) },
    { weight: 8, arbitrary: fc.record({ op: fc.constant('set' as const), key, value: hostileJson }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('drop' as const), key }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('unknown' as const), key: fc.constantFrom('extra', 'program_id', 'programId', 'createdAt', 'timesRedeemed', 'password'), value: hostileJson }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('replace' as const), value: hostileJson }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('raw' as const), text: fc.constantFrom(...RAW_BODIES) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('duplicate-key' as const), key, value: hostileJson }) },
  );
}

/** Applies mutations to an object body; returns the new body (an object, any JSON, or a RawBody). */
function mutateBody(body: unknown, mutations: readonly BodyMutation[], notes: string[]): unknown {
  let current: unknown = body;
  for (const m of mutations) {
    if (current instanceof RawBody) break;
    const object = current !== null && typeof current === 'object' && !Array.isArray(current) ? { ...(current as Record<string, unknown>) } : null;
    switch (m.op) {
      case 'tweak': {
        const value = object?.[m.key];
        if (object && typeof value === 'string') object[m.key] = `${value}${m.suffix}`;
        else if (object && typeof value === 'number') object[m.key] = value * m.factor;
        else break;
        current = object;
        notes.push(`tweak ${m.key}`);
        break;
      }
      case 'tiny': {
        const numeric = object ? Object.keys(object).filter((k) => typeof object[k] === 'number') : [];
        if (!object || numeric.length === 0) break;
        const field = numeric[m.n % numeric.length]!;
        object[field] = m.value;
        current = object;
        notes.push(`tiny ${field}`);
        break;
      }
      case 'set':
      case 'unknown':
        if (object) {
          object[m.key] = m.value;
          current = object;
          notes.push(`${m.op} ${m.key}`);
        }
        break;
      case 'drop':
        if (object) {
          delete object[m.key];
          current = object;
          notes.push(`drop ${m.key}`);
        }
        break;
      case 'replace':
        current = m.value;
        notes.push('replace body');
        break;
      case 'raw':
        current = new RawBody(m.text);
        notes.push('raw body');
        break;
      case 'duplicate-key':
        if (object && Object.keys(object).length > 0) {
          // The same key twice: which one wins must not matter for safety.
          const text = serialiseJson(object);
          current = new RawBody(`${text.slice(0, -1)},${JSON.stringify(m.key)}:${serialiseJson(m.value)}}`);
          notes.push(`duplicate ${m.key}`);
        }
        break;
    }
  }
  return current;
}

/** JSON.stringify, with RawJson values written as their raw token. */
export function serialiseJson(value: unknown): string {
  const raws: string[] = [];
  // The holder's own value, not `v`: JSON.stringify has called toJSON (`<raw …>`) by now.
  const text = JSON.stringify(value, function (this: Record<string, unknown>, key: string, v: unknown) {
    const own = this[key];
    if (own instanceof RawJson) {
      raws.push(own.text);
      return `\u0001raw${raws.length - 1}\u0001`;
    }
    return v;
  });
  return text === undefined ? '' : text.replace(/"\\u0001raw(\d+)\\u0001"/g, (_m, i: string) => raws[Number(i)]!);
}

type QueryMutation = { op: 'set'; index: number; value: QueryValue } | { op: 'repeat'; index: number; value: QueryValue } | { op: 'unknown'; value: QueryValue } | { op: 'drop'; index: number } | { op: 'bracket'; index: number } | { op: 'many' };

const queryMutation: fc.Arbitrary<QueryMutation> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant('set' as const), index: fc.nat(), value: hostileQueryValue }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('repeat' as const), index: fc.nat(), value: fc.oneof(hostileQueryValue, fc.nat().map((n) => new Pick('cursor', n))) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('unknown' as const), value: hostileQueryValue }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('drop' as const), index: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('bracket' as const), index: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ op: 'many' as const }) },
);

function mutateQuery(op: Operation, query: [string, QueryValue][], mutations: readonly QueryMutation[], notes: string[]): [string, QueryValue][] {
  const result = [...query];
  const names = op.query.map((p) => p.name);
  for (const m of mutations) {
    switch (m.op) {
      case 'set':
      case 'repeat': {
        if (names.length === 0) break;
        const name = names[m.index % names.length]!;
        const at = result.findIndex(([k]) => k === name);
        if (m.op === 'set' && at >= 0) result[at] = [name, m.value];
        else result.push([name, m.value]);
        notes.push(`query ${m.op} ${name}`);
        break;
      }
      case 'unknown':
        result.push(['unknownParam', m.value]);
        notes.push('query unknown');
        break;
      case 'drop':
        if (result.length > 0) {
          notes.push(`query drop ${result[m.index % result.length]![0]}`);
          result.splice(m.index % result.length, 1);
        }
        break;
      case 'bracket':
        if (names.length > 0) {
          const name = names[m.index % names.length]!;
          result.push([`${name}[]`, 'x'], [`${name}[a]`, '1']);
          notes.push(`query bracket ${name}`);
        }
        break;
      case 'many':
        for (let i = 0; i < 300; i++) result.push([`p${i}`, String(i)]);
        notes.push('query many');
        break;
    }
  }
  return result;
}

const CONTENT_TYPES = [
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json; charset=latin1',
  'application/json;charset=utf-16',
  'application/json, text/plain',
  'text/plain',
  'text/plain;charset=utf-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=----x',
  'application/problem+json',
  'application/vnd.api+json',
  'application/octet-stream',
  '*/*',
  '',
];

const authVariant: fc.Arbitrary<AuthVariant> = fc.oneof(
  { weight: 20, arbitrary: fc.constant('token' as const) },
  { weight: 1, arbitrary: fc.constantFrom<AuthVariant>('none', 'empty-bearer', 'garbage-token', 'lowercase-scheme', 'double-space', 'no-scheme', 'token-suffix', 'basic', 'huge') },
);

const idempotencyVariant: fc.Arbitrary<IdempotencyVariant | null> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.constant({ kind: 'fresh' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('shared' as const), n: fc.integer({ min: 0, max: 2 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('odd' as const), value: fc.constantFrom('', 'x'.repeat(300), 'x'.repeat(5000), '\u00e9\u00ff', 'a,b', '"quoted"', '*', ' padded ', '../../') }) },
);

const originVariant: fc.Arbitrary<OriginVariant | null> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('own' as const) },
  { weight: 1, arbitrary: fc.constantFrom<OriginVariant | null>(null, 'subdomain', 'http', 'suffix-trick', 'prefix-trick', 'other-program', 'null', 'empty') },
);

/** A request for `op`: valid-looking, then (most of the time) made hostile in one to three ways. */
export function requestPlan(op: Operation): fc.Arbitrary<RequestPlan> {
  const hasBody = op.body !== undefined;
  const keys = Object.keys(op.body?.properties ?? {});
  return fc
    .record({
      actor: fc.constantFrom<'a' | 'b'>('a', 'a', 'a', 'b'),
      auth: authVariant,
      pathSuffix: fc.oneof({ weight: 30, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('/', '%00', '/..', '/x', '.json', '%2F') }, { weight: 1, arbitrary: fc.constantFrom(...BROKEN_ENCODINGS, ...BROKEN_ENCODINGS.map((e) => `/${e}`)) }),
      query: validQuery(op),
      queryMutations: fc.oneof({ weight: 3, arbitrary: fc.constant<QueryMutation[]>([]) }, { weight: 2, arbitrary: fc.array(queryMutation, { minLength: 1, maxLength: 3 }) }),
      body: hasBody ? validBody(op) : fc.constant(undefined),
      bodyMutations: hasBody ? fc.oneof({ weight: 2, arbitrary: fc.constant<BodyMutation[]>([]) }, { weight: 3, arbitrary: fc.array(bodyMutation(keys), { minLength: 1, maxLength: 3 }) }) : fc.constant<BodyMutation[]>([]),
      // DELETE takes its target from the query or a JSON body (the spec's clients send a body).
      deleteInBody: fc.boolean(),
      // A body where none is expected, sometimes.
      strayBody: fc.oneof({ weight: 12, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: hostileJson }),
      contentType: fc.oneof({ weight: 12, arbitrary: fc.constant('application/json') }, { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) }, { weight: 1, arbitrary: fc.constant(null) }),
      idempotencyKey: op.method === 'POST' || op.method === 'PUT' ? idempotencyVariant : fc.constant(null),
      origin: op.path === '/api/track/click' ? originVariant : fc.constant(null),
    })
    .map((r) => {
      const mutations: string[] = [];
      let query = mutateQuery(op, r.query, r.queryMutations, mutations);
      let body: unknown = hasBody ? mutateBody(r.body, r.bodyMutations, mutations) : undefined;
      if (op.method === 'DELETE' && r.deleteInBody && query.length > 0) {
        body = Object.fromEntries(query);
        query = [];
        mutations.push('delete target in body');
      }
      if (body === undefined && r.strayBody !== undefined && op.method !== 'GET') {
        body = r.strayBody;
        mutations.push('stray body');
      }
      if (r.auth !== 'token') mutations.push(`auth ${r.auth}`);
      if (r.pathSuffix) mutations.push(`path suffix ${r.pathSuffix}`);
      if (body !== undefined && r.contentType !== 'application/json') mutations.push(`content-type ${JSON.stringify(r.contentType)}`);
      return {
        // How fast-check prints a counterexample: the request, not the operation's whole schema.
        [fc.toStringMethod]: () => `${op.method} ${op.path} as ${r.actor}, query ${JSON.stringify(query)}, body ${body instanceof RawBody ? JSON.stringify(body) : serialiseJson(body)}, mutations: ${mutations.join('; ') || 'none'}`,
        operation: op,
        actor: r.actor,
        auth: r.auth,
        pathSuffix: r.pathSuffix,
        query,
        body,
        contentType: body === undefined ? null : r.contentType,
        idempotencyKey: r.idempotencyKey,
        origin: r.origin,
        mutations,
      };
    });
}

/** The operations of an OpenAPI document under `prefixes`, with their query parameters and JSON body. */
export function operationsOf(doc: { paths: Record<string, Record<string, any>> }, prefixes: string[]): Operation[] {
  const operations: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    if (!prefixes.some((prefix) => path.startsWith(prefix))) continue;
    for (const [method, op] of Object.entries(methods)) {
      const query = ((op.parameters ?? []) as any[]).filter((p) => p.in === 'query').map((p) => ({ name: String(p.name), required: Boolean(p.required), schema: p.schema as JsonSchema }));
      const body = op.requestBody?.content?.['application/json']?.schema as JsonSchema | undefined;
      operations.push({ method: method.toUpperCase(), path, query, body });
    }
  }
  return operations;
}
