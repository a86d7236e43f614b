import type { Config } from './config.ts';
import type { Db } from './db/transaction.ts';
import type { Clock } from './domain/clock.ts';
import type { ReferralMade } from './modules/referrals/referral.service.ts';

// What the app hands to its route plugins, in a module of its own so that routes never import
// app.ts (which imports them).

/** What route plugins receive: the database, the frozen config and the clock. */
export interface AppServices {
  db: Db;
  config: Config;
  /** "Now" for rules that expire; the system clock except in tests. */
  clock: Clock;
  /**
   * Called in the transaction that makes a referral or gives it a referredUserExternalId (the
   * API, the dashboard): a customer's Stripe invoices waiting for that referral become its sales.
   */
  referralMade: ReferralMade;
}

/** Process-level choices that are not configuration: tests pass a clock they can move. */
export interface AppOptions {
  clock?: Clock;
}
