import { fromMinorUnits } from '../../domain/money.ts';
import { toIso } from '../../domain/clock.ts';
import type { MatchCount } from '../../db/text-search.ts';
import { html, type SafeHtml } from '../html.ts';

// How the dashboard shows values: amounts in the program's currency, times in UTC (the
// service stores and returns UTC, and a server-rendered page cannot know the reader's zone).

const currencyFormats = new Map<string, Intl.NumberFormat>();

/** 1234.5 → "$1,234.50" (major units, as the API returns amounts). */
export function formatAmount(amount: number, currency: string): string {
  let format = currencyFormats.get(currency);
  if (!format) {
    format = new Intl.NumberFormat('en-US', { style: 'currency', currency });
    currencyFormats.set(currency, format);
  }
  return format.format(amount);
}

/** An amount stored in minor units (123450 cents → "$1,234.50"). */
export function formatMinor(minor: number | string, currency: string): string {
  return formatAmount(fromMinorUnits(minor, currency), currency);
}

export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

/** "1 referral", "3 referrals", or "More than 10,000 referrals" for a count that stopped at its cap (db/text-search.ts). */
export function formatMatchCount(count: MatchCount, noun: string): string {
  if (typeof count !== 'number') return `More than ${formatCount(count.moreThan)} ${noun}s`;
  return `${formatCount(count)} ${noun}${count === 1 ? '' : 's'}`;
}

/** "redeemed 1 time", "redeemed 3 times", "redeemed 2 of 5 times": the noun agrees with the last number said. */
export function formatRedeemed(count: number, max: number | null = null): string {
  const last = max ?? count;
  return `redeemed ${formatCount(count)}${max === null ? '' : ` of ${formatCount(max)}`} ${last === 1 ? 'time' : 'times'}`;
}

/** A <time> element reading "2026-11-22 14:05 UTC". */
export function formatTime(value: string | Date | null, empty = '—'): SafeHtml | string {
  if (value === null) return empty;
  const iso = toIso(value);
  return html`<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC</time>`;
}

/** "20 %" for a commission rate in percent (a no-break space: the sign never wraps alone). */
export function formatRate(percent: number): string {
  return `${percent.toLocaleString('en-US', { maximumFractionDigits: 4 })}\u00a0%`;
}

/** Referrals per click as "4.2 %" (one decimal), or "—" before the first click. */
export function formatConversion(referrals: number, clicks: number): string {
  if (clicks <= 0) return '—';
  return `${((referrals / clicks) * 100).toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 })}\u00a0%`;
}

export function statusBadge(active: boolean, labels: [string, string] = ['Active', 'Inactive']): SafeHtml {
  return html`<span class="badge ${active ? 'ok' : 'bad'}">${active ? labels[0] : labels[1]}</span>`;
}
