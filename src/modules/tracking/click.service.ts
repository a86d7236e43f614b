import { createHmac } from 'node:crypto';
import { toIso, type Clock } from '../../domain/clock.ts';
import { newId } from '../../domain/ids.ts';
import { ApiError, notFound } from '../../domain/errors.ts';
import { inTransaction, type Db } from '../../db/transaction.ts';
import { findAffiliate } from '../affiliates/affiliate.repository.ts';
import { findLink } from '../affiliates/link.repository.ts';
import type { ProgramRow } from '../programs/program.service.ts';
import { assertCreditable } from '../ledger/credit.ts';
import { addClickToCounters } from '../ledger/ledger.repository.ts';
import { countAttempt, type AttemptLimit } from '../throttling/attempt-counter.ts';
import { findLastClick, insertClickOnce, totalClicks } from './click.repository.ts';

// Clicks on affiliate links, as the tracking script (/tracker.js) reports them from a
// merchant's page: counted once per visitor, link and UTC day, for active affiliates only,
// and at most so many a minute per program. The visitor is the server's to name (the client
// address and user agent, hashed under a key of the day), never a value the client sends.

/** What the script needs to keep the referral: the link (or null), and the program's cookie rules. */
export interface ClickAnswer {
  /** The link string as stored (its canonical case), or null when the URL names no link of the program. */
  referral: string | null;
  /** Whether this click was counted (false: the visitor already clicked this link today, the program's ceiling was reached, or no link). */
  counted: boolean;
  cookieDays: number;
  attribution: 'first' | 'last';
  /** The program's domain: the script shares the cookie across its subdomains. */
  domain: string;
}

/**
 * Whether a page at `origin` belongs to the program's site: its domain or any subdomain, any
 * scheme and port (`http://shop.localhost:8080` for a program whose domain is `localhost`).
 */
export function originBelongsTo(origin: string, domain: string): boolean {
  let host: string;
  try {
    const url = new URL(origin);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
    host = url.hostname.toLowerCase().replace(/\.$/, '');
  } catch {
    return false;
  }
  const site = domain.toLowerCase();
  return host === site || host.endsWith(`.${site}`);
}

// Crawlers, link previewers, uptime checkers and scripted clients: their visits are not clicks.
const BOT = /bot\b|bot\/|crawl|spider|slurp|mediapartners|facebookexternalhit|embedly|preview|whatsapp|pingdom|uptime|lighthouse|curl\/|wget\/|python-requests|httpclient|go-http-client|java\/|okhttp|axios\/|node-fetch|^$/i;

function isBot(userAgent: string | undefined): boolean {
  return BOT.test(userAgent?.trim() ?? '');
}

/** The longest landing URL stored, in characters of its canonical form; a longer one is stored cut to it. */
export const LANDING_URL_MAX = 2000;

/**
 * The landing URL canonical: parsed, without its fragment or credentials, serialised (so
 * percent-encoded, and ASCII). It may be longer than LANDING_URL_MAX (encoding makes a URL
 * longer than sent): the referral parameter is read from it whole, and storedLandingUrl cuts
 * what is stored.
 */
export function canonicalLandingUrl(url: URL): string {
  const canonical = new URL(url.href);
  canonical.hash = '';
  canonical.username = '';
  canonical.password = '';
  return canonical.href;
}

/** How many characters at the end of text are part of a UTF-8 character written as escapes but missing some (`%C3` without its `%A9`: 3); 0 when none. */
function partialEscapedCharacterLength(text: string): number {
  const escapes = /(?:%[0-9A-Fa-f]{2})+$/.exec(text)?.[0] ?? '';
  const bytes = escapes.split('%').slice(1).map((hex) => Number.parseInt(hex, 16));
  let lead = bytes.length - 1;
  while (lead >= 0 && (bytes[lead]! & 0xc0) === 0x80) lead--;
  if (lead < 0) return 0;
  const byte = bytes[lead]!;
  const continuations = byte >= 0xf0 ? 3 : byte >= 0xe0 ? 2 : byte >= 0xc0 ? 1 : 0;
  // Escapes of the character begun at `lead` that are missing: drop what is there of it.
  return continuations > bytes.length - 1 - lead ? (bytes.length - lead) * 3 : 0;
}

/**
 * The landing URL as stored with a click: the canonical form, cut to LANDING_URL_MAX characters
 * when longer. The cut never splits a percent-escape, a character written as several escapes
 * or a surrogate pair, and what is kept is itself canonical (a cut that would end in a `/.`
 * segment, which parsing removes, is moved back), so the stored value reads back unchanged.
 */
export function storedLandingUrl(canonical: string): string {
  if (canonical.length <= LANDING_URL_MAX) return canonical;
  for (let end = LANDING_URL_MAX; end > 0; end--) {
    let cut = canonical.slice(0, end);
    if (/[\uD800-\uDBFF]$/.test(cut)) continue;
    if (/%[0-9A-Fa-f]?$/.test(cut)) continue;
    const partial = partialEscapedCharacterLength(cut);
    if (partial > 0) cut = cut.slice(0, -partial);
    try {
      if (new URL(cut).href === cut) return cut;
    } catch {
      // Not a URL once cut (never past the origin, which is far shorter): try a shorter cut.
    }
  }
  throw new Error('a landing URL has no canonical prefix within the limit');
}

/**
 * Who clicked: the program, client address and user agent under an HMAC key of the UTC day
 * (derived from the instance's secret), so the key tells visitors apart that day but cannot be
 * linked to the same visitor on another day, or in another program.
 */
function visitorKey(secret: Buffer, day: string, programId: string, address: string, userAgent: string): string {
  const dayKey = createHmac('sha256', secret).update(`click-visitor|${day}`).digest();
  return createHmac('sha256', dayKey).update(`${programId}|${address}|${userAgent}`).digest('hex');
}

/** What counting needs besides the click: the instance's visitor secret and the per-program ceiling (null: none). */
export interface ClickCounting {
  visitorSecret: Buffer;
  programLimit: AttemptLimit | null;
}

export interface ClickInput {
  program: ProgramRow;
  /** The landing page's URL, canonical (canonicalLandingUrl) and whole, with the referral parameter; stored cut (storedLandingUrl). */
  url: string;
  /** The client's address as limits count it (addressKey: an IPv6 address by its /64). */
  address: string;
  userAgent: string;
}

/** Thrown to roll a counted click back when its program is over its ceiling. */
class OverProgramCeiling extends Error {
  readonly referral: string;
  constructor(referral: string) {
    super('the program is over its click ceiling');
    this.referral = referral;
  }
}

/**
 * Records a click reported by the tracking script. A bot, a URL without the program's referral
 * parameter, or one naming no link of the program, answers `referral: null` and writes nothing;
 * a link of an inactive affiliate is a 422 affiliate_inactive (no click credit). Over the
 * program's ceiling the referral is still answered (the visitor keeps it) with
 * `counted: false`, and nothing is written.
 */
export async function recordClick(db: Db, clock: Clock, counting: ClickCounting, input: ClickInput): Promise<ClickAnswer> {
  const { program } = input;
  const answer = (referral: string | null, counted: boolean): ClickAnswer => ({
    referral,
    counted,
    cookieDays: Number(program.cookie_days),
    attribution: program.attribution,
    domain: program.domain,
  });
  if (isBot(input.userAgent)) return answer(null, false);
  const value = new URL(input.url).searchParams.get(program.referral_param)?.trim();
  if (!value || !/^[A-Za-z0-9-]{1,64}$/.test(value)) return answer(null, false);
  try {
    return await inTransaction(db, async (tx) => {
      const link = await findLink(tx, program.id, { link: value });
      if (!link) return answer(null, false);
      const affiliate = await findAffiliate(tx, program.id, { id: link.affiliate_id });
      if (!affiliate) throw notFound('Affiliate');
      assertCreditable({ affiliate, linkId: link.id });
      const now = clock();
      const day = now.toISOString().slice(0, 10);
      const click = { id: newId(), program_id: program.id, affiliate_id: affiliate.id, link_id: link.id, day };
      const visitor = visitorKey(counting.visitorSecret, day, program.id, input.address, input.userAgent);
      if (!(await insertClickOnce(tx, { ...click, visitor_key: visitor, landing_url: storedLandingUrl(input.url), created_at: now.toISOString() }))) return answer(link.link, false);
      await addClickToCounters(tx, click);
      // Counted last, so the program's counter row stays locked only until this commit; over
      // the ceiling, the whole click rolls back (the counter's increment with it).
      if (counting.programLimit && (await countAttempt(tx, `click:program:${program.id}`, counting.programLimit, now)) !== null) throw new OverProgramCeiling(link.link);
      return answer(link.link, true);
    });
  } catch (error) {
    if (error instanceof OverProgramCeiling) return answer(error.referral, false);
    throw error;
  }
}

/** 403 for a page outside the program's site: its clicks are not the program's to count. */
export function originRefused(origin: string | undefined, domain: string): ApiError {
  return new ApiError(
    'origin_not_allowed',
    origin
      ? `Pages at ${origin} are not on this program's domain (${domain}) or its subdomains: check the tag's data-program-id, or the program's domain on the dashboard's Settings. To try the tag on this machine, use a program whose domain is localhost (any port of localhost and *.localhost may report).`
      : 'The request has no Origin header: clicks come from the tracking script in a browser.',
  );
}

/** The newest counted click of a program, as the dashboard's Settings shows it (null: none stored). */
export interface LastClick {
  at: string;
  landingUrl: string;
  link: string | null;
  affiliateName: string;
}

/**
 * The newest click still stored, or — when there is none — whether the program ever counted
 * one (its rows were purged after CLICK_RETENTION_DAYS; the counters keep every click).
 */
export async function lastCountedClick(db: Db, programId: string): Promise<LastClick | { everCounted: boolean }> {
  const row = await findLastClick(db, programId);
  if (!row) return { everCounted: (await totalClicks(db, programId)) > 0 };
  return { at: toIso(row.created_at), landingUrl: row.landing_url, link: row.link, affiliateName: `${row.first_name} ${row.last_name}` };
}
