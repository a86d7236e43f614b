import type { Static, TSchema } from '@sinclair/typebox';
import { assertValidBody } from '../../http/validation.ts';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../domain/errors.ts';
import { html, type SafeHtml } from '../html.ts';
import { field, type FieldOptions } from '../layout.ts';
import { SEARCH_MIN_CHARACTERS } from '../../db/text-search.ts';

// Dashboard forms: reading posted fields, turning the services' errors into messages beside
// the fields they name, and the controls layout.ts's field() does not cover.

/** Posted form fields as text; a repeated field keeps its first value. */
export type FormValues = Record<string, string>;

/** Fields as text: a repeated field keeps its first value; values that are not text are dropped. */
export function firstValues(source: unknown): FormValues {
  const values: FormValues = {};
  for (const [key, value] of Object.entries((source ?? {}) as Record<string, unknown>)) {
    const first = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string') values[key] = first;
  }
  return values;
}

export function readForm(request: FastifyRequest): FormValues {
  return firstValues(request.body);
}

export function readQuery(request: FastifyRequest): FormValues {
  return firstValues(request.query);
}

/** '' → undefined; a number when it parses, else the text (so schema validation names the field). */
export function optionalNumber(value: string | undefined): number | string | undefined {
  const text = value?.trim() ?? '';
  if (text === '') return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n : text;
}

export function optionalText(value: string | undefined): string | undefined {
  const text = value?.trim() ?? '';
  return text === '' ? undefined : text;
}

/** A datetime-local or date input, read as UTC, to ISO 8601; the text itself when unreadable. */
export function optionalUtcDateTime(value: string | undefined): string | undefined {
  const text = optionalText(value);
  if (text === undefined) return undefined;
  const match = /^(\d{4}-\d{2}-\d{2})(?:T(\d{2}:\d{2})(:\d{2})?)?$/.exec(text);
  const parsed = match ? new Date(`${match[1]}T${match[2] ?? '00:00'}${match[3] ?? ':00'}.000Z`) : null;
  return parsed && !Number.isNaN(parsed.getTime()) ? parsed.toISOString() : text;
}

/** An ISO timestamp as a datetime-local input's value, in UTC. */
export function toDateTimeInput(iso: string | null): string {
  return iso === null ? '' : iso.slice(0, 16);
}

export interface FormErrors {
  /** Messages by form field name (the API's body field names). */
  fields: Record<string, string>;
  /** A message for the whole form. */
  message: string;
  status: number;
}

// Schema messages written for API clients, said the way a form says them.
const READABLE: [RegExp, (m: RegExpExecArray) => string][] = [
  [/^must NOT have fewer than 1 characters?$/, () => 'is required'],
  [/^must NOT have fewer than (\d+) characters$/, (m) => `must be at least ${m[1]} characters`],
  [/^must NOT have more than (\d+) characters$/, (m) => `must be at most ${m[1]} characters`],
  [/^must be <= (\S+)$/, (m) => `must be at most ${m[1]}`],
  [/^must be >= (\S+)$/, (m) => `must be at least ${m[1]}`],
  [/^must be > (\S+)$/, (m) => `must be more than ${m[1]}`],
  [/^must be (number|integer)$/, (m) => (m[1] === 'integer' ? 'must be a whole number' : 'must be a number')],
  [/^must match pattern /, () => 'has characters that are not allowed here'],
  [/^must be equal to one of the allowed values$/, () => 'must be one of the choices'],
];

function readable(detail: string): string {
  for (const [pattern, say] of READABLE) {
    const match = pattern.exec(detail);
    if (match) return say(match);
  }
  return detail;
}

function sentence(text: string): string {
  const trimmed = text.trim();
  return trimmed.charAt(0).toUpperCase() + trimmed.slice(1) + (/[.!?]$/.test(trimmed) ? '' : '.');
}

/**
 * The errors of a rejected form: a service's validation errors go beside the fields their
 * pointers name (`#/baseUrls/2` → `baseUrls`); conflicts and the like become the form's message.
 * Anything that is not an ApiError is a bug and is thrown again.
 */
export function formErrorsOf(error: unknown, fieldNames: Record<string, string> = {}): FormErrors {
  if (!(error instanceof ApiError) || error.status >= 500) throw error;
  const fields: Record<string, string> = {};
  const unplaced: string[] = [];
  for (const e of error.errors ?? []) {
    const path = e.pointer.replace(/^#\/?/, '');
    const name = path.split('/')[0] ?? '';
    const mapped = fieldNames[path] ?? fieldNames[name] ?? name;
    if (mapped && !(mapped in fields)) fields[mapped] = sentence(readable(e.detail));
    else if (!mapped) unplaced.push(sentence(readable(e.detail)));
  }
  const message = error.errors?.length ? ['Check the highlighted fields.', ...unplaced].join(' ') : sentence(error.detail);
  return { fields, message, status: error.status === 404 ? 422 : error.status };
}

/**
 * The errors with `message` beside `field`, unless that field has one already: a service's error
 * that names no field (a conflict, an inactive affiliate) put beside the field it is about, or a
 * check of the form's own. The form's message then says to check the fields.
 */
export function withFieldError(errors: FormErrors, field: string, message: string): FormErrors {
  if (errors.fields[field]) return errors;
  return { fields: { ...errors.fields, [field]: sentence(message) }, message: 'Check the highlighted fields.', status: errors.status >= 400 ? errors.status : 422 };
}

/** The flash message a form page shows for its errors, if any. */
export function errorFlash(errors: FormErrors): { kind: 'error'; text: string } | undefined {
  return errors.message ? { kind: 'error', text: errors.message } : undefined;
}

export const noErrors: FormErrors = { fields: {}, message: '', status: 200 };

export function textField(o: FieldOptions, errors: FormErrors): SafeHtml {
  return field({ ...o, error: o.error ?? errors.fields[o.name] });
}

interface ControlOptions {
  label: string;
  name: string;
  help?: string;
  required?: boolean;
}

function describedBy(id: string, help?: string, error?: string): SafeHtml | string {
  const ids = [help ? `${id}-help` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return ids ? html` aria-describedby="${ids}"` : '';
}

function notes(id: string, help?: string, error?: string): SafeHtml {
  return html`${help ? html`<p class="help" id="${id}-help">${help}</p>` : ''}${error ? html`<p class="error" id="${id}-error">${error}</p>` : ''}`;
}

function labelFor(id: string, o: ControlOptions): SafeHtml {
  return html`<label for="${id}">${o.label}${o.required ? html` <span class="req" aria-hidden="true">*</span>` : ''}</label>`;
}

export function textareaField(o: ControlOptions & { value?: string; rows?: number }, errors: FormErrors): SafeHtml {
  const id = `f-${o.name}`;
  const error = errors.fields[o.name];
  return html`<div class="field${error ? ' has-error' : ''}">
    ${labelFor(id, o)}
    <textarea id="${id}" name="${o.name}" rows="${o.rows ?? 3}"${o.required ? html` required` : ''}${describedBy(id, o.help, error)}${error ? html` aria-invalid="true" autofocus` : ''}>${o.value ?? ''}</textarea>
    ${notes(id, o.help, error)}
  </div>`;
}

export function selectField(o: ControlOptions & { value?: string; options: [value: string, label: string][] }, errors: FormErrors): SafeHtml {
  const id = `f-${o.name}`;
  const error = errors.fields[o.name];
  return html`<div class="field${error ? ' has-error' : ''}">
    ${labelFor(id, o)}
    <select id="${id}" name="${o.name}"${o.required ? html` required` : ''}${describedBy(id, o.help, error)}${error ? html` aria-invalid="true" autofocus` : ''}>
      ${o.options.map(([value, label]) => html`<option value="${value}"${value === o.value ? html` selected` : ''}>${label}</option>`)}
    </select>
    ${notes(id, o.help, error)}
  </div>`;
}

export function checkboxField(o: ControlOptions & { checked: boolean }, errors: FormErrors): SafeHtml {
  const id = `f-${o.name}`;
  const error = errors.fields[o.name];
  return html`<div class="field${error ? ' has-error' : ''}">
    <div class="check"><input type="checkbox" id="${id}" name="${o.name}" value="on"${o.checked ? html` checked` : ''}${describedBy(id, o.help, error)}${error ? html` aria-invalid="true" autofocus` : ''}> <label for="${id}">${o.label}</label></div>
    ${notes(id, o.help, error)}
  </div>`;
}

/**
 * A form's fields as an API body: fields the form left empty (undefined) are left out, then the
 * API's schema checks the rest, so the form gets the API's errors, beside its fields.
 */
export function apiBody<T extends TSchema>(schema: T, fields: Record<string, unknown>): Static<T> {
  const body = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
  assertValidBody(schema, body);
  return body;
}

/** The longest text a list's search takes. */
export const SEARCH_MAX_CHARACTERS = 200;

/**
 * Why a list's search text (trimmed) is not searched, if it is not: longer than the lists take,
 * or shorter than their trigram indexes find (a shorter text would read a whole program).
 */
export function searchTextError(q: string): string | undefined {
  if (q.length > SEARCH_MAX_CHARACTERS) return `Search for at most ${SEARCH_MAX_CHARACTERS} characters.`;
  if (q !== '' && [...q].length < SEARCH_MIN_CHARACTERS) return `Search for at least ${SEARCH_MIN_CHARACTERS} characters of a name or an e-mail.`;
  return undefined;
}
