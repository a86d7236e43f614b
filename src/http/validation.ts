import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import type { Static, TSchema } from '@sinclair/typebox';
import type { DataValidationCxt } from 'ajv/dist/types/index.js';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { ApiError, type FieldError } from '../domain/errors.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

// E-mails are trimmed before use (CONTRACT.md), so the format accepts surrounding spaces.
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const STATUS = /^(active|inactive)$/i;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// RFC 3339 date-times that both databases store the same way: years 1970 to 9999, no leap
// second (JavaScript dates have none), an offset or Z, and a real calendar day.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-](\d{2}):(\d{2}))$/;

export function isStrictDateTime(value: string): boolean {
  const m = DATE_TIME.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (year < 1970 || year > 9999 || month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return false;
  if (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return false;
  // The day exists in that month (no 2025-02-30), and the instant is one Date can hold.
  if (day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return false;
  const instant = Date.parse(value.replace(' ', 'T'));
  return Number.isFinite(instant) && instant >= 0 && instant <= Date.UTC(9999, 11, 31, 23, 59, 59, 999);
}

function makeAjv(options: Options): Ajv {
  const ajv = addFormats(new Ajv({ allErrors: true, strict: false, ...options }));
  ajv.addFormat('date-time', isStrictDateTime);
  ajv.addFormat('email', (value: string) => value.trim().length <= 254 && EMAIL.test(value.trim()));
  ajv.addFormat('status', (value: string) => STATUS.test(value));
  // Plain RFC 9562 text only: ajv-formats also takes a `urn:uuid:` prefix, which PostgreSQL's uuid rejects.
  ajv.addFormat('uuid', UUID);
  // UUIDs are case-insensitive and stored lowercase; fold them on input so that every dialect
  // finds the same row (PostgreSQL's uuid type ignores case, SQLite's text does not).
  ajv.addKeyword({
    keyword: 'x-lowercase',
    schemaType: 'boolean',
    modifying: true,
    validate: (enabled: boolean, data: unknown, _schema: unknown, cxt?: DataValidationCxt) => {
      if (enabled && typeof data === 'string' && cxt?.parentData) (cxt.parentData as Record<string | number, unknown>)[cxt.parentDataProperty] = data.toLowerCase();
      return true;
    },
  });
  return ajv;
}

// Bodies are validated strictly: a known field with the wrong type is a 422, never coerced.
// Query strings arrive as text, so there numbers and booleans are coerced.
const bodyAjv = makeAjv({ coerceTypes: false, removeAdditional: false });
const queryAjv = makeAjv({ coerceTypes: true, removeAdditional: false });

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : queryAjv;
  return ajv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
};

const FORMAT_TEXT: Record<string, string> = {
  email: 'must be an e-mail address',
  uuid: 'must be a UUID',
  'date-time': 'must be an ISO 8601 date-time with an offset, years 1970 to 9999 (no leap second)',
  uri: 'must be an absolute URL',
  status: 'must be "active" or "inactive"',
};

/** Turns Ajv errors into the problem body's `errors` list of JSON Pointers. */
export function toFieldErrors(errors: ErrorObject[]): FieldError[] {
  return errors.map((error) => {
    const params = error.params as Record<string, unknown>;
    let path = error.instancePath;
    let detail = error.message ?? 'is invalid';
    if (error.keyword === 'required') {
      path = `${path}/${String(params.missingProperty)}`;
      detail = 'is required';
    } else if (error.keyword === 'format') {
      detail = FORMAT_TEXT[String(params.format)] ?? detail;
    } else if (error.keyword === 'pattern' && params.pattern === '\\S') {
      detail = 'must not be blank';
    } else if (error.keyword === 'type') {
      detail = `must be ${String(params.type).replace(',', ' or ')}`;
    }
    return { pointer: `#${path}`, detail };
  });
}

const compiledBodySchemas = new WeakMap<TSchema, ValidateFunction>();
const compiledQuerySchemas = new WeakMap<TSchema, ValidateFunction>();

function assertValid(ajv: Ajv, cache: WeakMap<TSchema, ValidateFunction>, schema: TSchema, value: unknown): void {
  let validate = cache.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    cache.set(schema, validate);
  }
  if (!validate(value)) throw new ApiError('validation_failed', 'The request is invalid.', toFieldErrors(validate.errors ?? []));
}

/**
 * Checks a value built outside an HTTP body (a dashboard form, turned into the API's body
 * shape) against the API's own body schema, so both paths accept exactly the same input.
 * Throws the 422 a route would, with the same pointers.
 */
export function assertValidBody<T extends TSchema>(schema: T, value: unknown): asserts value is Static<T> {
  assertValid(bodyAjv, compiledBodySchemas, schema, value);
}

/** The same for a parsed query string, before the route's own validation: coerced from text as a route's is. */
export function assertValidQuery<T extends TSchema>(schema: T, value: unknown): asserts value is Static<T> {
  assertValid(queryAjv, compiledQuerySchemas, schema, value);
}
