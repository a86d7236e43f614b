import type { Db } from '../../db/transaction.ts';
import { ApiError } from '../../domain/errors.ts';
import { isUuid } from '../../domain/ids.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import type { Affiliate } from '../../modules/affiliates/affiliate.schema.ts';
import { getAffiliate, getAffiliatePage } from '../../modules/affiliates/affiliate.service.ts';
import { getLink } from '../../modules/affiliates/link.service.ts';
import { html, type SafeHtml } from '../html.ts';
import { textField, type FormErrors, type FormValues } from './forms.ts';

// "Which affiliate?" on the dashboard's forms and list filters. A person names an affiliate by
// what they know: the e-mail, one of its links or its id, each found exactly. A name is not
// an identifier (two affiliates may share one), so the field suggests active affiliates as
// one types (a <datalist>: the newest 50, or — with dashboard.js — those matching the text),
// and a text that names nobody exactly is searched among names and e-mails: the matches come
// back as a list to choose from (a <select>, 50 at most), which works without script.

/** Affiliates a field offers at once: the datalist's suggestions, the picker's choices. */
export const AFFILIATE_CHOICES = 50;

/** The affiliate a text names exactly, and the value to hand the API for it. */
export interface NamedAffiliate {
  affiliate: Affiliate;
  /**
   * For the API's affiliateId (id or link): the link string when the text was one of the
   * affiliate's links (so that link is credited), else the affiliate's id (its primary link).
   */
  apiValue: string;
}

/**
 * The affiliate `text` names by id, e-mail or link string — what the API's affiliateId and
 * affiliateEmail accept, in the API's order (a UUID is an id first, then a link) — or null.
 */
export async function findNamedAffiliate(db: Db, program: ProgramContext, text: string): Promise<NamedAffiliate | null> {
  const value = text.trim();
  if (value === '') return null;
  const found = async (lookup: () => Promise<NamedAffiliate>) => {
    try {
      return await lookup();
    } catch (error) {
      if (error instanceof ApiError && error.status < 500) return null;
      throw error;
    }
  };
  if (value.includes('@')) {
    return found(async () => {
      const affiliate = await getAffiliate(db, program, { email: value });
      return { affiliate, apiValue: affiliate.id };
    });
  }
  if (isUuid(value)) {
    const byId = await found(async () => ({ affiliate: await getAffiliate(db, program, { id: value.toLowerCase() }), apiValue: value.toLowerCase() }));
    if (byId) return byId;
  }
  return found(async () => {
    const link = await getLink(db, program, { link: value });
    return { affiliate: await getAffiliate(db, program, { id: link.affiliate.id }), apiValue: link.link };
  });
}

export interface AffiliateChoices {
  rows: Affiliate[];
  /** More affiliates match than the rows hold. */
  more: boolean;
}

/** Up to AFFILIATE_CHOICES active affiliates (those who can be credited), newest first: all, or those whose name or e-mail contains `search`. */
export async function affiliateChoices(db: Db, program: ProgramContext, search?: string): Promise<AffiliateChoices> {
  const text = search?.trim() ?? '';
  const page = await getAffiliatePage(db, program, { limit: AFFILIATE_CHOICES }, { status: 'active', ...(text ? { search: text.slice(0, 200) } : {}) });
  return { rows: page.items, more: page.next !== undefined };
}

/** What the person chose in an affiliate field, read from a posted form. */
export interface AffiliateFieldValue {
  /** The text in the field, as typed. */
  text: string;
  named?: NamedAffiliate;
  /** Why the text names nobody, to show beside the field. */
  error?: string;
  /** Affiliates whose name or e-mail contains the text, to choose from. */
  picker?: AffiliateChoices;
}

/**
 * Reads affiliate field `name` of a posted form: its choice in the picker (`{name}Pick`, while
 * the text is still the one searched), else the text by id, e-mail or link, else — for a text
 * that names nobody exactly — the active affiliates whose name or e-mail contains it.
 */
export async function readAffiliateField(db: Db, program: ProgramContext, form: FormValues, name: string): Promise<AffiliateFieldValue> {
  const text = (form[name] ?? '').trim();
  const pick = form[`${name}Pick`] ?? '';
  if (pick !== '' && text === (form[`${name}Searched`] ?? '').trim() && isUuid(pick)) {
    const named = await findNamedAffiliate(db, program, pick);
    if (named) return { text: named.affiliate.email, named };
  }
  if (text === '') return { text };
  const named = await findNamedAffiliate(db, program, text);
  if (named) return { text, named };
  const picker = text.includes('@') ? { rows: [], more: false } : await affiliateChoices(db, program, text);
  if (picker.rows.length === 0) {
    return { text, error: `No affiliate of this program has the e-mail, link or id “${text}”${text.includes('@') ? '' : ', and no active affiliate’s name contains it'}.` };
  }
  const count = picker.more ? `More than ${AFFILIATE_CHOICES} active affiliates` : picker.rows.length === 1 ? 'One active affiliate' : `${picker.rows.length} active affiliates`;
  return {
    text,
    picker,
    error: `“${text}” is not an affiliate’s e-mail, link or id. ${count} ${picker.rows.length === 1 && !picker.more ? 'matches' : 'match'} it: choose below${picker.more ? ` (the newest ${AFFILIATE_CHOICES}), or type more of the name` : ''}.`,
  };
}

/** How an affiliate reads in the suggestions and the picker. */
export const choiceLabel = (a: Affiliate) => `${a.firstName} ${a.lastName} · ${a.email} · ${a.link}`;

/**
 * The field: a text input with suggestions (a datalist of `suggestions`, whose values are the
 * affiliates' e-mails) and, when the posted text named nobody exactly, the picker beneath it.
 * `searchUrl` lets dashboard.js replace the suggestions with affiliates matching the text.
 */
export function affiliateField(
  o: { label: string; name: string; help: string; value?: AffiliateFieldValue; suggestions: Affiliate[]; searchUrl: string },
  errors: FormErrors,
): SafeHtml {
  const listId = `${o.name}-choices`;
  const picker = o.value?.picker;
  const pickId = `f-${o.name}Pick`;
  return html`${textField(
    {
      label: o.label,
      name: o.name,
      value: o.value?.text,
      help: o.help,
      attrs: html`list="${listId}" autocomplete="off" data-affiliate-search="${o.searchUrl}"`,
    },
    errors,
  )}
    <datalist id="${listId}">${(picker?.rows ?? o.suggestions).map((a) => html`<option value="${a.email}">${choiceLabel(a)}</option>`)}</datalist>
    ${picker && picker.rows.length > 0
      ? html`<div class="field">
          <label for="${pickId}">Affiliates matching “${o.value!.text}”</label>
          <select id="${pickId}" name="${o.name}Pick" aria-describedby="${pickId}-help">
            <option value="">Choose one…</option>
            ${picker.rows.map((a) => html`<option value="${a.id}">${choiceLabel(a)}</option>`)}
          </select>
          <input type="hidden" name="${o.name}Searched" value="${o.value!.text}">
          <p class="help" id="${pickId}-help">Choose one and send the form again, or change the text above.</p>
        </div>`
      : ''}`;
}
