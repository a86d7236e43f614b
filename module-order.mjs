// The boundaries of src/modules/ as data, read by eslint.config.js (which makes one import rule
// per folder from them) and by test/docs/architecture-order.test.ts (which checks that
// ARCHITECTURE.md states the same order, and that every exception still names an import).

/**
 * The floors of src/modules/, bottom first. A module imports only modules on floors below its
 * own; the folders of one floor do not import each other. Every folder of src/modules/ is on
 * exactly one floor (eslint refuses to start otherwise).
 */
export const MODULE_ORDER = [
  ['events', 'integrations', 'programs', 'throttling'], // the outbox, the tools allowed to connect, the tenant, attempt counters
  ['mail', 'webhooks'], // sending what the mail queue and the outbox hold
  ['affiliates', 'tokens', 'users'],
  ['connect', 'coupons'],
  ['ledger'], // money: who is credited, the counters, the commission ledger
  ['payouts', 'referrals', 'tracking'], // payouts pay what the ledger owes
  ['portal', 'sales'],
  ['billing'], // Stripe: its events become referrals and sales
  ['maintenance', 'reports'], // the purge of every module's expired rows; read models over several modules
];

/**
 * Every import that the module order or a floor of eslint.config.js refuses and the code keeps,
 * each with its reason: `from` a file, `to` the files it may import (paths from the repository's
 * root); `typeOnly`: their types only. A reason starting with "pending:" names the work under
 * way that removes the import.
 */
export const IMPORT_EXCEPTIONS = [
  // Upward: the forced-delete cascade. Deleting an affiliate with force takes back what it credited.
  {
    from: 'src/modules/affiliates/affiliate.service.ts',
    to: ['src/modules/ledger/counters.ts'],
    reason: 'the forced-delete cascade: deleting an affiliate voids the sales credited to it (voidSalesOf)',
  },
  {
    from: 'src/modules/affiliates/affiliate.service.ts',
    to: ['src/modules/ledger/ledger.repository.ts'],
    typeOnly: true,
    reason: 'the forced-delete cascade: what a void takes back (SaleCredit)',
  },
  {
    from: 'src/modules/affiliates/affiliate.service.ts',
    to: ['src/modules/referrals/referral.repository.ts'],
    reason: "the forced-delete cascade: the affiliate's referrals are locked (lockReferralsOfAffiliate) before their sales are voided, in the lock order",
  },

  // Downward reads of another module's repository (a module's repository is otherwise imported
  // only from its own folder or ledger/): the reader needs the row itself, inside its own
  // transaction, and the owner has no service function for it.
  {
    from: 'src/modules/reports/overview.service.ts',
    to: ['src/modules/ledger/ledger.repository.ts', 'src/modules/tracking/click.repository.ts'],
    reason: "reports/ is a read model: the overview's figures are sums of what is kept (the program's sale_days, the click days)",
  },
  {
    from: 'src/modules/maintenance/purge-expired.ts',
    to: ['src/modules/billing/billing.repository.ts', 'src/modules/mail/mail.repository.ts', 'src/modules/tracking/click.repository.ts'],
    reason: "the purge deletes each module's expired rows in batches, one statement per table",
  },
  {
    from: 'src/modules/sales/sale.service.ts',
    to: ['src/modules/referrals/referral.repository.ts'],
    reason: 'a sale reads and locks the referral it is credited through (findReferralWithAffiliate, lockReferral) in its transaction',
  },
  {
    from: 'src/modules/referrals/referral.repository.ts',
    to: ['src/modules/affiliates/affiliate.repository.ts'],
    reason: "a referral is read joined with its affiliate's row (AFFILIATE_COLUMNS, AffiliateRow)",
  },
  {
    from: ['src/modules/referrals/referral.service.ts', 'src/modules/tracking/click.service.ts', 'src/modules/payouts/payout.service.ts', 'src/modules/portal/portal-login.service.ts'],
    to: ['src/modules/affiliates/affiliate.repository.ts'],
    reason: 'reads the affiliate row it acts on (findAffiliate; payouts: findPayees) in its own transaction',
  },
  {
    from: 'src/modules/tracking/click.service.ts',
    to: ['src/modules/affiliates/link.repository.ts'],
    reason: 'a click reads the link it counts for (findLink) in its own transaction',
  },
  {
    from: 'src/modules/tokens/token.service.ts',
    to: ['src/modules/webhooks/webhook.repository.ts'],
    reason: 'revoking a token deletes the REST-hook subscriptions made with it (deleteWebhooksOfToken) in the same transaction',
  },
];
