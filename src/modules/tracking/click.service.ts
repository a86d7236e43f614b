import { createHash } from 'node:crypto';
import type { Clock } from '../../domain/clock.ts';
import { newId } from '../../domain/ids.ts';
import { ApiError, notFound } from '../../domain/errors.ts';
import { inTransaction, type Db } from '../../db/transaction.ts';
import { findAffiliate } from '../affiliates/affiliate.repository.ts';
import { findLink } from '../links/link.repository.ts';
import type { ProgramRow } from '../programs/program.service.ts';
import { assertCreditable } from '../referrals/referral.service.ts';
import { addClickToCounters, insertClickOnce } from './click.repository.ts';

// Clicks on affiliate links, as the tracking script (/tracker.js) reports them from a
// merchant's page: counted once per visitor, link and UTC day, for active affiliates only.

/** What the script needs to keep the referral: the link (or null), and the program's cookie rules. */
export interface ClickAnswer {
  /** The link string as stored (its canonical case), or null when the URL names no link of the program. */
  referral: string | null;
  /** Whether this click was counted (false: the visitor already clicked this link today, or no link). */
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

/** Who clicked, as a hash: the script's random visitor id, else the address and user agent. */
function visitorKey(programId: string, visitorId: string | undefined, address: string, userAgent: string): string {
  const who = visitorId !== undefined ? `id:${visitorId}` : `addr:${address}|${userAgent}`;
  return createHash('sha256').update(`${programId}|${who}`).digest('hex');
}

export interface ClickInput {
  program: ProgramRow;
  /** The landing page's URL, with the referral parameter. */
  url: string;
  visitorId?: string;
  address: string;
  userAgent: string;
}

/**
 * Records a click reported by the tracking script. A bot, a URL without the program's referral
 * parameter, or one naming no link of the program, answers `referral: null` and writes nothing;
 * a link of an inactive affiliate is a 422 affiliate_inactive (no click credit).
 */
export async function recordClick(db: Db, clock: Clock, input: ClickInput): Promise<ClickAnswer> {
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
  return inTransaction(db, async (tx) => {
    const link = await findLink(tx, program.id, { link: value });
    if (!link) return answer(null, false);
    const affiliate = await findAffiliate(tx, program.id, { id: link.affiliate_id });
    if (!affiliate) throw notFound('Affiliate');
    assertCreditable({ affiliate, linkId: link.id });
    const now = clock();
    const counted = await insertClickOnce(tx, {
      id: newId(),
      program_id: program.id,
      affiliate_id: affiliate.id,
      link_id: link.id,
      visitor_key: visitorKey(program.id, input.visitorId, input.address, input.userAgent),
      day: now.toISOString().slice(0, 10),
      landing_url: input.url,
      created_at: now.toISOString(),
    });
    if (counted) await addClickToCounters(tx, affiliate.id, link.id);
    return answer(link.link, counted);
  });
}

/** 403 for a page outside the program's site: its clicks are not the program's to count. */
export function originRefused(origin: string | undefined, domain: string): ApiError {
  return new ApiError('origin_not_allowed', origin ? `Pages at ${origin} are not on this program's domain (${domain}).` : 'The request has no Origin header: clicks come from the tracking script in a browser.');
}
