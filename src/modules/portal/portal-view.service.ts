import type { Db } from '../../db/transaction.ts';
import type { ProgramContext } from '../../domain/program-context.ts';
import { fromMinorUnits, toMinorUnits } from '../../domain/money.ts';
import type { Affiliate } from '../affiliates/affiliate.schema.ts';
import type { AffiliateLink } from '../affiliates/link.schema.ts';
import { getAffiliateLinks } from '../affiliates/link.service.ts';
import type { PromotionalCode } from '../coupons/promotional-code.schema.ts';
import { getPromotionalCodePage } from '../coupons/promotional-code.service.ts';
import { getLedgerBalance } from '../ledger/commission.service.ts';
import type { Payout } from '../payouts/payout.schema.ts';
import { getPayoutPage } from '../payouts/payout.service.ts';

/** What a signed-in affiliate sees: the portal page and me.json (CONTRACT "Affiliate portal"), the same figures as the API and the ledger. */
export interface PortalView {
  affiliate: Affiliate;
  stats: { clicks: number; referrals: number; sales: number; revenue: number };
  commission: { pending: number; due: number; paid: number };
  links: AffiliateLink[];
  promotionalCodes: PromotionalCode[];
  payouts: Payout[];
}

/** The newest codes and payouts a portal shows. */
const SHOWN = 100;

export async function getPortalView(db: Db, program: ProgramContext, affiliate: Affiliate): Promise<PortalView> {
  const [links, codes, balance, payouts] = await Promise.all([
    getAffiliateLinks(db, program, affiliate),
    getPromotionalCodePage(db, program, { affiliateId: affiliate.id }, { limit: SHOWN }),
    getLedgerBalance(db, program, affiliate.id),
    getPayoutPage(db, program, { affiliateId: affiliate.id }, { limit: SHOWN }),
  ]);
  // Revenue net of refunds through the affiliate's links, summed exactly in minor units.
  const revenueMinor = links.reduce((sum, link) => sum + toMinorUnits(link.totalRevenue, program.currency, '#/revenue'), 0);
  return {
    affiliate,
    stats: {
      clicks: affiliate.numberOfClicks,
      referrals: affiliate.numberOfReferredUsers,
      sales: links.reduce((sum, link) => sum + link.sales, 0),
      revenue: fromMinorUnits(revenueMinor, program.currency),
    },
    commission: { pending: balance.pending, due: balance.due, paid: balance.paid },
    links,
    promotionalCodes: codes.items,
    payouts: payouts.items,
  };
}
