import type { Db } from '../../db/transaction.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { findNamedAffiliate } from './affiliate-field.ts';

// Filters of the referral and sale lists, read from the query string. A filter that names
// nothing yields an error to show beside its field and an empty list, never a 500.

export interface AffiliateFilter {
  affiliateId?: string;
  /** "Jane Doe <jane@example.com>", to say whose rows are listed. */
  label?: string;
  error?: string;
}

/** `affiliate` is an affiliate id (links from the affiliate page), an e-mail or one of its link strings (typed). */
export async function readAffiliateFilter(db: Db, program: ProgramContext, value: string | undefined): Promise<AffiliateFilter> {
  const text = value?.trim() ?? '';
  if (text === '') return {};
  const named = await findNamedAffiliate(db, program, text);
  if (!named) return { error: `No affiliate in this program has the e-mail, id or link “${text}”.` };
  const affiliate = named.affiliate;
  return { affiliateId: affiliate.id, label: `${affiliate.firstName} ${affiliate.lastName} <${affiliate.email}>` };
}

export interface DateRange {
  /** ISO instant: 00:00 UTC of the first day. */
  createdFrom?: string;
  /** ISO instant: 00:00 UTC of the day after the last day (the last day is included). */
  createdBefore?: string;
  errors: Record<string, string>;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

function utcDay(text: string): Date | null {
  if (!DAY.test(text)) return null;
  const date = new Date(`${text}T00:00:00.000Z`);
  return Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== text ? null : date;
}

/** `from` and `to` as YYYY-MM-DD (what date inputs send), both days included, in UTC. */
export function readDateRange(from: string | undefined, to: string | undefined): DateRange {
  const range: DateRange = { errors: {} };
  if (from) {
    const day = utcDay(from);
    if (day) range.createdFrom = day.toISOString();
    else range.errors.from = 'Use a date such as 2026-01-31.';
  }
  if (to) {
    const day = utcDay(to);
    if (day) range.createdBefore = new Date(day.getTime() + 86_400_000).toISOString();
    else range.errors.to = 'Use a date such as 2026-01-31.';
  }
  if (range.createdFrom && range.createdBefore && range.createdFrom >= range.createdBefore) range.errors.to = 'Must be on or after the “from” date.';
  return range;
}
