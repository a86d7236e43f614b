import { Migrator, type Kysely, type Migration, type MigrationResultSet } from 'kysely';
import { refreshPlannerStatistics } from './upkeep.ts';
import * as initial from './migrations/2026-11-22T0300-initial.ts';
import * as idempotencyKeys from './migrations/2026-11-22T0400-idempotency-keys.ts';
import * as webAccountsAndConnect from './migrations/2026-11-22T0500-web-accounts-and-connect.ts';
import * as webhooks from './migrations/2026-11-23T0100-webhooks.ts';
import * as idempotencyLease from './migrations/2026-11-23T0200-idempotency-lease.ts';
import * as attemptCounters from './migrations/2026-11-23T0300-attempt-counters.ts';
import * as duplicateKeys from './migrations/2026-11-23T0400-duplicate-keys.ts';
import * as refunds from './migrations/2026-11-23T0500-refunds.ts';
import * as clickTracking from './migrations/2026-11-23T0600-click-tracking.ts';
import * as instanceKeys from './migrations/2026-11-23T0700-instance-keys.ts';
import * as fairDelivery from './migrations/2026-11-25T0100-fair-delivery.ts';
import * as clickDays from './migrations/2026-11-25T0200-click-days.ts';
import * as commissionLedger from './migrations/2026-11-26T0100-commission-ledger.ts';
import * as mailOutbox from './migrations/2026-11-26T0200-mail-outbox.ts';
import * as portal from './migrations/2026-11-26T0300-portal.ts';
import * as portalLogin from './migrations/2026-11-26T0400-portal-login.ts';
import * as billingStripe from './migrations/2026-11-26T0500-billing-stripe.ts';
import * as passwordResets from './migrations/2026-11-27T0100-password-resets.ts';
import * as partialIndexes from './migrations/2026-11-28T0100-partial-indexes.ts';
import * as billingDisputes from './migrations/2026-11-29T0300-billing-disputes.ts';
import * as portalAccessGeneration from './migrations/2026-11-30T0100-portal-access-generation.ts';
import * as webhookAfterSequence from './migrations/2026-11-30T0150-webhook-after-sequence.ts';
import * as billingWaitingExpiry from './migrations/2026-12-01T0100-billing-waiting-expiry.ts';
import * as heldEntries from './migrations/2026-12-02T0100-held-entries.ts';
import * as commissionListIndexes from './migrations/2026-12-03T0100-commission-list-indexes.ts';
import * as affiliateListIndexes from './migrations/2026-12-03T0200-affiliate-list-indexes.ts';
import * as unpaidEntries from './migrations/2026-12-03T0300-unpaid-entries.ts';
import * as saleDays from './migrations/2026-12-03T0400-sale-days.ts';
import * as saleSortIndexes from './migrations/2026-12-03T0500-sale-sort-indexes.ts';
import * as saleSearch from './migrations/2026-12-03T0600-sale-search.ts';
import * as statusListIndexes from './migrations/2026-12-03T0700-status-list-indexes.ts';
import * as affiliateCounts from './migrations/2026-12-03T0800-affiliate-counts.ts';
import * as affiliateSaleTotals from './migrations/2026-12-03T0900-affiliate-sale-totals.ts';
import * as unpaidDays from './migrations/2026-12-03T1000-unpaid-days.ts';
import * as affiliateCounterTotals from './migrations/2026-12-03T1100-affiliate-counter-totals.ts';
import * as referralAffiliateSearch from './migrations/2026-12-03T1200-referral-affiliate-search.ts';
import * as trigramIndexesNoPendingList from './migrations/2026-12-04T0600-trigram-indexes-no-pending-list.ts';
import * as billingConnections from './migrations/2026-12-05T0600-billing-connections.ts';
import * as billingProviders from './migrations/2026-12-06T0600-billing-providers.ts';
import * as testSides from './migrations/2026-12-07T0600-test-sides.ts';

// Migrations are listed here rather than read from a folder, so they work the same
// whether the code runs from TypeScript sources or a bundle. Names sort by time.
const migrations: Record<string, Migration> = {
  '2026-11-22T0300-initial': initial,
  '2026-11-22T0400-idempotency-keys': idempotencyKeys,
  '2026-11-22T0500-web-accounts-and-connect': webAccountsAndConnect,
  '2026-11-23T0100-webhooks': webhooks,
  '2026-11-23T0200-idempotency-lease': idempotencyLease,
  '2026-11-23T0300-attempt-counters': attemptCounters,
  '2026-11-23T0400-duplicate-keys': duplicateKeys,
  '2026-11-23T0500-refunds': refunds,
  '2026-11-23T0600-click-tracking': clickTracking,
  '2026-11-23T0700-instance-keys': instanceKeys,
  '2026-11-25T0100-fair-delivery': fairDelivery,
  '2026-11-25T0200-click-days': clickDays,
  '2026-11-26T0100-commission-ledger': commissionLedger,
  '2026-11-26T0200-mail-outbox': mailOutbox,
  '2026-11-26T0300-portal': portal,
  '2026-11-26T0400-portal-login': portalLogin,
  '2026-11-26T0500-billing-stripe': billingStripe,
  '2026-11-27T0100-password-resets': passwordResets,
  '2026-11-28T0100-partial-indexes': partialIndexes,
  '2026-11-29T0300-billing-disputes': billingDisputes,
  '2026-11-30T0100-portal-access-generation': portalAccessGeneration,
  '2026-11-30T0150-webhook-after-sequence': webhookAfterSequence,
  '2026-12-01T0100-billing-waiting-expiry': billingWaitingExpiry,
  '2026-12-02T0100-held-entries': heldEntries,
  '2026-12-03T0100-commission-list-indexes': commissionListIndexes,
  '2026-12-03T0200-affiliate-list-indexes': affiliateListIndexes,
  '2026-12-03T0300-unpaid-entries': unpaidEntries,
  '2026-12-03T0400-sale-days': saleDays,
  '2026-12-03T0500-sale-sort-indexes': saleSortIndexes,
  '2026-12-03T0600-sale-search': saleSearch,
  '2026-12-03T0700-status-list-indexes': statusListIndexes,
  '2026-12-03T0800-affiliate-counts': affiliateCounts,
  '2026-12-03T0900-affiliate-sale-totals': affiliateSaleTotals,
  '2026-12-03T1000-unpaid-days': unpaidDays,
  '2026-12-03T1100-affiliate-counter-totals': affiliateCounterTotals,
  '2026-12-03T1200-referral-affiliate-search': referralAffiliateSearch,
  '2026-12-04T0600-trigram-indexes-no-pending-list': trigramIndexesNoPendingList,
  '2026-12-05T0600-billing-connections': billingConnections,
  '2026-12-06T0600-billing-providers': billingProviders,
  '2026-12-07T0600-test-sides': testSides,
};

export class MigrationError extends Error {}

function migratorFor(db: Kysely<unknown>): Migrator {
  return new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'tandem_migrations',
    migrationLockTableName: 'tandem_migrations_lock',
  });
}

/** Names of migrations not applied yet; reads without taking the migration lock. */
export async function pendingMigrations(db: Kysely<unknown>): Promise<string[]> {
  const known = await migratorFor(db).getMigrations();
  return known.filter((m) => m.executedAt === undefined).map((m) => m.name);
}

/**
 * Applies every pending migration under the migrator's lock (an advisory lock on PostgreSQL),
 * so processes starting together apply each migration once while the others wait.
 */
export async function migrateToLatest(db: Kysely<unknown>): Promise<string[]> {
  const migrator = migratorFor(db);
  const result: MigrationResultSet = await migrator.migrateToLatest();
  const failed = result.results?.find((r) => r.status === 'Error');
  if (result.error || failed) {
    const reason = result.error instanceof Error ? result.error.message : String(result.error ?? 'unknown error');
    throw new MigrationError(`migration ${failed?.migrationName ?? ''} failed: ${reason}`.replace('  ', ' '));
  }
  const applied = (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  // A new index has no statistics yet: without them SQLite may not use it (db/upkeep.ts).
  if (applied.length > 0) await refreshPlannerStatistics(db as never);
  return applied;
}
