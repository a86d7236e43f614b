import type { Db } from '../../db/transaction.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { listProgramTokens } from '../tokens/token.service.ts';
import { getLinkPage } from '../affiliates/link.service.ts';
import { getBillingConnections } from '../billing/billing.service.ts';
import type { ProgramTotals } from './overview.service.ts';

// The overview's "Get started" checklist (issue 21 item 8): each step is ticked by what the
// program holds, never by a flag the user sets, so it ticks itself as each step happens.

export interface StartChecklist {
  /** The newest live API key's prefix, once there is one. */
  apiKeyPrefix: string | null;
  /** An affiliate link string to use in the test sale, once there is an affiliate. */
  affiliateLink: string | null;
  hasAffiliate: boolean;
  hasSale: boolean;
  hasClick: boolean;
  /** An automation tool connected (a connect token) or a billing provider's secret saved. */
  connected: boolean;
}

export async function getStartChecklist(db: Db, program: ProgramContext, totals: ProgramTotals): Promise<StartChecklist> {
  const [keys, apps, links, billing] = await Promise.all([
    // The newest 21 keys (as this checklist has always looked) are enough to find a live one.
    listProgramTokens(db, program.id, 'api_key', { limit: 21 }),
    listProgramTokens(db, program.id, 'connect', { limit: 1 }),
    getLinkPage(db, program, {}, { limit: 1 }),
    getBillingConnections(db, program.id),
  ]);
  const liveKey = keys.items.find((k) => k.revokedAt === null);
  return {
    apiKeyPrefix: liveKey?.prefix ?? null,
    affiliateLink: links.items[0]?.link ?? null,
    hasAffiliate: totals.affiliates > 0,
    hasSale: totals.sales.count > 0,
    hasClick: totals.clicks > 0,
    connected: apps.items.length > 0 || billing.length > 0,
  };
}
