// Row types of every table, as Kysely sees them.
// Conventions that hold on both dialects:
// - ids are uuid strings (sales use an integer id, as the spec says);
// - timestamps are ISO 8601 UTC strings when written; readers accept string or Date;
// - booleans are written as 0/1 and read with Boolean();
// - money is an integer count of minor units of the program's currency;
// - commission rates are integers in millionths of a whole (20 % = 200000), so sums stay exact;
// - `*_key` columns hold the case-folded form used for case-insensitive uniqueness and lookups.
import type { Generated } from 'kysely';

// Read types are wide because the drivers differ (pg returns Date, boolean and bigint-as-text);
// the code writes ISO strings, 0/1 and numbers, which both dialects accept.
export type Timestamp = string | Date;
export type DbBool = number | boolean;
export type Counter = number | string;

export interface UsersTable {
  id: string;
  email: string;
  email_key: string;
  password_hash: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ProgramsTable {
  id: string;
  owner_user_id: string;
  name: string;
  domain: string;
  logo_url: string | null;
  currency: string;
  default_commission_rate: number;
  /** JSON array of base URLs used to build a link's fullURLs. */
  base_urls: string;
  referral_param: string;
  /** How long the tracking script keeps a referral (days). */
  cookie_days: Generated<number>;
  /** Which click wins when a visitor arrives through several links: the first or the last. */
  attribution: Generated<'first' | 'last'>;
  /** The commission plan (docs/payouts.md): percentage (default_commission_rate) or flat (commission_amount, minor units). */
  commission_type: Generated<'percentage' | 'flat'>;
  commission_amount: Generated<Counter>;
  /** Only sales within N months of the customer's referral earn; null: forever. */
  commission_duration_months: number | null;
  /** Only a customer's first N sales earn; null: all. */
  max_sales_per_customer: number | null;
  /** Days a commission waits for refunds before it can be paid. */
  hold_days: Generated<number>;
  /** The smallest balance a payout run pays (minor units). */
  minimum_payout: Generated<Counter>;
  /** The affiliate portal: {SITE_URL}/portal/{portal_slug} (unique), who may sign up there, its colour, the terms accepted at sign-up, whether affiliates may add links. */
  portal_slug: string;
  portal_signup: Generated<'open' | 'approval' | 'invite'>;
  portal_color: Generated<string>;
  portal_terms: Generated<string>;
  portal_links_allowed: Generated<DbBool>;
  /** On a program's test side (test mode): the live program it belongs to; null on a live program. */
  live_program_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ApiTokensTable {
  id: string;
  program_id: string;
  name: string;
  /** The first characters of the token, safe to show in lists. */
  prefix: string;
  token_hash: string;
  kind: 'api_key' | 'connect';
  integration: string | null;
  created_by_user_id: string | null;
  created_at: Timestamp;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

export interface AffiliatesTable {
  id: string;
  program_id: string;
  first_name: string;
  last_name: string;
  email: string;
  email_key: string;
  email_verified: DbBool;
  image: string | null;
  payout_email: string;
  payment_method: string;
  /** null: the program's default rate applies. */
  commission_rate: number | null;
  status: 'active' | 'inactive';
  /** Sign-ups under the approval policy wait (pending, inactive) until approved or rejected; the API's and dashboard's are approved. */
  approval: Generated<'pending' | 'approved' | 'rejected'>;
  /** Raised by every deactivation or rejection: portal sessions and login links made in an earlier generation no longer work. */
  portal_generation: Generated<number>;
  number_of_referred_users: Counter;
  number_of_clicks: Counter;
  total_commission_earned: Counter;
  /** The sales credited to it, their totalEarned and what refunds took back of them (kept like the counters above). */
  number_of_sales: Generated<Counter>;
  total_sales_amount: Generated<Counter>;
  total_refunded_amount: Generated<Counter>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AffiliateLinksTable {
  id: string;
  program_id: string;
  affiliate_id: string;
  link: string;
  link_key: string;
  /** The affiliate's own link, returned as the affiliate's `link`. One per affiliate. */
  is_primary: DbBool;
  clicks: Counter;
  referrals: Counter;
  sales: Counter;
  total_revenue: Counter;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ReferralsTable {
  id: string;
  program_id: string;
  affiliate_id: string;
  link_id: string | null;
  promotional_code_id: string | null;
  name: string;
  email: string;
  email_key: string;
  referred_user_external_id: string;
  /** referred_user_external_id when set: unique in the program (null for none, and for duplicates recorded before the rule). */
  external_id_key: string | null;
  plan: string;
  status: 'active' | 'inactive';
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SalesTable {
  id: Generated<number | string>;
  program_id: string;
  affiliate_id: string;
  referral_id: string;
  link_id: string | null;
  promotional_code_id: string | null;
  external_id: string;
  external_invoice_id: string;
  /** external_invoice_id when set: unique in the program (null for none, and for duplicates recorded before the rule). */
  invoice_key: string | null;
  name: string;
  email: string;
  total_earned: number;
  commission_rate: number;
  commission: number;
  /** The plan's rule the sale was recorded under: a percentage (commission_rate), a flat amount (commission_flat), or none (outside the plan). */
  commission_rule: Generated<CommissionRule>;
  commission_flat: Generated<Counter>;
  /** Running totals of the sale's refunds (minor units): what was paid back and the commission taken back. */
  refunded_amount: Generated<Counter>;
  refunded_commission: Generated<Counter>;
  created_at: Timestamp;
  /** Last edit or refund; null only for rows recorded before edits existed. */
  updated_at: Timestamp | null;
}

export type CommissionRule = 'percentage' | 'flat' | 'none';

/** The ledger: one change of what an affiliate earns. Its amount never changes; a payout takes it, a paid payout pays it. */
export interface CommissionEntriesTable {
  id: Generated<number | string>;
  program_id: string;
  affiliate_id: string;
  sale_id: number | string | null;
  payout_id: string | null;
  kind: 'sale' | 'refund' | 'adjustment' | 'void';
  /** Signed minor units. */
  amount: Counter;
  currency: string;
  /** When it falls due (kept while held; released, it falls due at the time of release). */
  due_at: Timestamp;
  /** What holds it back, never due while set: a disputed sale, or (fraud review) a flag. */
  held_by: 'dispute' | 'flag' | null;
  paid_at: Timestamp | null;
  created_at: Timestamp;
}

/** A payment to one affiliate: its entries, amount and recipient frozen when it was made. */
export interface PayoutsTable {
  id: string;
  program_id: string;
  affiliate_id: string;
  first_name: string;
  last_name: string;
  email: string;
  payout_email: string;
  payment_method: string;
  amount: Counter;
  currency: string;
  status: 'pending' | 'paid' | 'failed';
  entry_count: number;
  created_at: Timestamp;
  paid_at: Timestamp | null;
  method: string | null;
  reference: string | null;
  updated_at: Timestamp;
}

/** A program's connection to a billing provider: its secret, sealed (AES-256-GCM under the instance's billing key). */
export interface BillingConnectionsTable {
  program_id: string;
  /** billing/providers/index.ts's name: stripe, … */
  provider: string;
  mode: 'live' | 'test';
  secret_sealed: string;
  connected_at: Timestamp;
  /** When the provider's newest verified event arrived; null: none yet. */
  last_event_at: Timestamp | null;
}

/** A verified event of a billing provider, stored once per program with what came of it. */
export interface BillingEventsTable {
  program_id: string;
  /** The provider's event id (evt_…). */
  id: string;
  provider: string;
  type: string;
  /** When Tandem received it (the API's receivedAt). */
  created_at: Timestamp;
  outcome: 'recorded' | 'waiting' | 'ignored';
  reason: string | null;
  referral_id: string | null;
  sale_id: number | string | null;
  /** A waiting invoice's details (JSON), until its customer is referred. */
  waiting: string | null;
  customer_id: string | null;
}

/** Which Stripe invoice a payment intent paid (from invoice.paid or invoice_payment.paid). */
/** A customer a provider named with their e-mail while nothing credited them (Paddle's transactions carry the referral, its customer events the e-mail). */
export interface BillingCustomersTable {
  program_id: string;
  provider: string;
  /** The provider's customer id (ctm_…). */
  id: string;
  email: string;
  name: string | null;
  /** When the customer came, as the provider dates them. */
  since: Timestamp | null;
  seen_at: Timestamp;
}

export interface BillingPaymentsTable {
  program_id: string;
  payment_intent: string;
  invoice_id: string;
  created_at: Timestamp;
}

/** A Stripe dispute's state: the latest of its events applied, and when it closed (then no event changes it). */
export interface BillingDisputesTable {
  program_id: string;
  /** Stripe's dispute id (dp_…). */
  id: string;
  sale_id: number | string | null;
  /** Stripe's status of the dispute in that event (needs_response, won, lost…). */
  status: string;
  /** The Stripe `created` time of that event: an older event of the dispute is ignored. */
  event_created_at: Timestamp;
  closed_at: Timestamp | null;
  updated_at: Timestamp;
}

/** A one-time portal login link: its hash, the one affiliate it signs in, until when, and whether it was used. */
export interface PortalLoginTokensTable {
  token_hash: string;
  program_id: string;
  affiliate_id: string;
  /** email: sent by Tandem (15 minutes); app: handed out by the merchant's app (5 minutes); signup: confirms a portal sign-up's address (24 hours). */
  purpose: 'email' | 'app' | 'signup';
  /** The affiliate's portal_generation when the link was made: it works only while that is current. */
  affiliate_generation: number;
  expires_at: Timestamp;
  used_at: Timestamp | null;
  created_at: Timestamp;
}

/** A one-time "forgot password" link: its hash, the user it resets, until when, and whether it was used. */
export interface PasswordResetTokensTable {
  token_hash: string;
  user_id: string;
  expires_at: Timestamp;
  used_at: Timestamp | null;
  created_at: Timestamp;
}

/** A signed-in affiliate in one program's portal (the cookie holds the id; only its hash is stored). */
export interface PortalSessionsTable {
  id_hash: string;
  program_id: string;
  affiliate_id: string;
  /** The affiliate's portal_generation at sign-in: the session works only while that is current. */
  affiliate_generation: number;
  created_at: Timestamp;
  expires_at: Timestamp;
}

/** An e-mail to send: written with the change that causes it, sent (and retried) by the worker. */
export interface MailOutboxTable {
  id: string;
  program_id: string | null;
  /** Which message (payout_paid, …): for the log and tests. */
  kind: string;
  to_address: string;
  subject: string;
  text_body: string;
  html_body: string;
  attempts: Generated<number>;
  next_attempt_at: Timestamp;
  /** A worker is sending it until then; another may take it over after. */
  lease_until: Timestamp | null;
  sent_at: Timestamp | null;
  /** Given up after the last retry. */
  failed_at: Timestamp | null;
  last_error: string | null;
  created_at: Timestamp;
}

/** One refund of a sale, as it happened; the sale carries the running totals. */
export interface SaleRefundsTable {
  id: string;
  program_id: string;
  sale_id: number | string;
  /** Minor units paid back, and commission taken back by this refund. */
  amount: number;
  commission: number;
  created_at: Timestamp;
}

export interface CouponsTable {
  id: string;
  program_id: string;
  name: string;
  external_id: string | null;
  coupon_type: 'PERCENTAGE' | 'FLAT';
  percent_off: number | null;
  /** Minor units of `currency`. */
  amount_off: number | null;
  currency: string | null;
  duration: 'once' | 'forever' | 'repeating';
  duration_in_months: number | null;
  max_redemptions: number | null;
  times_redeemed: Counter;
  limit_to_products: DbBool;
  /** JSON array of product id strings. */
  product_ids: string;
  valid: DbBool;
  redeem_by: Timestamp | null;
  integration_type: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface PromotionalCodesTable {
  id: string;
  program_id: string;
  coupon_id: string;
  affiliate_id: string | null;
  code: string;
  code_key: string;
  external_id: string | null;
  active: DbBool;
  expires_at: Timestamp | null;
  max_redemptions: number | null;
  times_redeemed: Counter;
  first_time_order: DbBool;
  /** Minor units of the program's currency. */
  minimum_amount: number | null;
  minimum_amount_currency: string | null;
  limit_to_customers: DbBool;
  customer_id: string | null;
  limit_to_affiliate: DbBool;
  is_auto_generated: DbBool;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/**
 * A program's sales of one UTC day credited to affiliates of one shard (the first hex digit of
 * the affiliate's id): kept by every write that changes what sales add up to, in its transaction
 * (ledger/counters.ts), so totals and charts sum days, not sales.
 */
/**
 * A program's unpaid commission by the UTC day its entries fall due (migration
 * 2026-12-03T1000): per shard (as sale_days), held or not, in a payout or not, the sum of the
 * unpaid entries' amounts; moved by every ledger write that adds an unpaid entry or changes one
 * (ledger.repository.ts), so a balance sums days, not entries.
 */
export interface UnpaidDaysTable {
  program_id: string;
  /** YYYY-MM-DD, the UTC day of the entries' due_at. */
  due_day: string;
  shard: string;
  /** 1: held (held_by set); 0: not. */
  held: number;
  /** 1: a payout holds them (payout_id set); 0: not. */
  in_payout: number;
  /** Minor units. */
  amount: Counter;
}

export interface SaleDaysTable {
  program_id: string;
  /** YYYY-MM-DD, the sale's own UTC day. */
  day: string;
  shard: string;
  sales: Counter;
  /** Minor units: the sales' totalEarned, and what refunds took back of it (revenue is their difference). */
  amount: Counter;
  refunded: Counter;
  /** Minor units, net of refunds. */
  commission: Counter;
}

/**
 * How many affiliates of a program have one status and an id starting with one hex digit (the
 * shard): kept by every write that adds, removes or changes the status of an affiliate, in its
 * transaction (affiliate.repository.ts addToAffiliateCounts), so the dashboard's counts sum a
 * few rows, not the affiliates.
 */
export interface AffiliateCountsTable {
  program_id: string;
  shard: string;
  status: 'active' | 'inactive';
  affiliates: Counter;
}

/**
 * What the referral and click counters of a program's affiliates with an id starting with one
 * hex digit (the shard) add up to: kept by triggers on affiliates (migration 2026-12-03T1100),
 * so the overview and the referrals list sum 16 rows, not the affiliates.
 */
export interface AffiliateCounterTotalsTable {
  program_id: string;
  shard: string;
  referrals: Counter;
  clicks: Counter;
}

/** The outbox: one row per event, written in the transaction of the change it reports. */
export interface EventsTable {
  id: string;
  program_id: string;
  type: string;
  /** JSON of the envelope's `data`. */
  data: string;
  created_at: Timestamp;
  /** Resume cursor: given in commit order by the sequencer after the event committed; null before. */
  sequence: Counter | null;
}

/** A counted click on an affiliate link: one per visitor, link and UTC day; purged after CLICK_RETENTION_DAYS. */
export interface ClicksTable {
  id: string;
  program_id: string;
  affiliate_id: string;
  link_id: string | null;
  /** HMAC-SHA256 (hex) of the program, client address (IPv6: its /64) and user agent, under a key of the UTC day. */
  visitor_key: string;
  /** UTC day, YYYY-MM-DD. */
  day: string;
  /** The landing page's URL, canonical (no fragment, no credentials), at most 2,000 characters. */
  landing_url: string;
  created_at: Timestamp;
}

/** Counted clicks of one link on one UTC day, written with each click: what every daily figure reads. */
export interface ClickDaysTable {
  id: string;
  program_id: string;
  affiliate_id: string;
  /** Null once the link is deleted (its days stay with the affiliate). */
  link_id: string | null;
  /** UTC day, YYYY-MM-DD. */
  day: string;
  clicks: Counter;
}

/** A single row (id 1): the last event sequence number given out. */
export interface OutboxStateTable {
  id: number;
  last_sequence: Counter;
}

/** A subscription (REST hook): events of the program POSTed to `url`, signed with `secret`. */
export interface WebhooksTable {
  id: string;
  program_id: string;
  url: string;
  /** JSON array of event types, or ["*"]. */
  events: string;
  /** `whsec_…`: kept readable because every delivery is signed with it. */
  secret: string;
  /** The API token that subscribed (REST hooks); revoking it deletes the subscription. */
  token_id: string | null;
  /** Start of the current run of failed attempts; null after a success. */
  failing_since: Timestamp | null;
  disabled_at: Timestamp | null;
  /** The last event number when it was made: it gets the events numbered after (never decided by an event's reported time). */
  after_sequence: Generated<Counter>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** held: waiting for its disabled endpoint to be re-enabled (kept out of the due index). */
export type DeliveryState = 'pending' | 'held' | 'delivered' | 'failed';

/** One event to one subscription: its retry state and, while a worker sends it, its lease. */
export interface WebhookDeliveriesTable {
  id: Generated<number | string>;
  webhook_id: string;
  /** The subscription's program, so the worker can share its turns between programs. */
  program_id: string;
  event_id: string;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: Timestamp;
  lease_id: string | null;
  lease_expires_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Per program with subscriptions: the last event sequence its deliveries were made for. */
export interface WebhookFanoutTable {
  program_id: string;
  last_sequence: Counter;
}

/** One HTTP attempt of a delivery, as the dashboard shows it. */
export interface WebhookAttemptsTable {
  id: Generated<number | string>;
  delivery_id: number | string;
  webhook_id: string;
  event_id: string;
  attempted_at: Timestamp;
  status_code: number | null;
  duration_ms: number;
  /** The first KB of the response body. */
  response_excerpt: string | null;
  /** Why no HTTP status came back (timeout, refused address, connection error). */
  error: string | null;
}

/** Stored outcomes of POST/PUT requests sent with an Idempotency-Key, kept 24 hours. */
export interface IdempotencyKeysTable {
  program_id: string;
  key: string;
  /** SHA-256 of method, path and body: a reused key with another request is refused. */
  request_hash: string;
  state: 'running' | 'done';
  response_status: number | null;
  response_type: string | null;
  response_body: string | null;
  created_at: Timestamp;
  /** When the running request claimed the key (null: at created_at); past the lease it may be taken over. */
  locked_at?: Timestamp | null;
}

/** A browser session. The cookie holds the id; only its SHA-256 is stored. user_id is null before login. */
export interface SessionsTable {
  id_hash: string;
  user_id: string | null;
  /** Secret the session's CSRF tokens are derived from. */
  csrf_secret: string;
  created_at: Timestamp;
  expires_at: Timestamp;
}

/** An automation tool the operator allows to use the connect flow. */
export interface IntegrationsTable {
  name: string;
  display_name: string;
  /** JSON array of exact redirect URIs. */
  redirect_uris: string;
  client_id: string | null;
  client_secret_hash: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** A single-use authorization code of the connect flow, stored hashed, valid 10 minutes. */
export interface AuthorizationCodesTable {
  code_hash: string;
  integration: string;
  redirect_uri: string;
  user_id: string;
  program_id: string;
  /** PKCE S256 challenge, when the tool sent one. */
  code_challenge: string | null;
  expires_at: Timestamp;
  used_at: Timestamp | null;
  token_id: string | null;
  created_at: Timestamp;
}

/** A fixed-window counter of attempts (login, sign-up, password change) for one key. */
export interface AttemptCountersTable {
  /** What is counted and for whom, e.g. `login:address:203.0.113.7` or `login:account:<sha-256 of the e-mail>`. */
  key: string;
  window_started_at: Timestamp;
  count: number;
}

/** A secret every process of the instance shares, such as the key that signs list cursors. */
export interface InstanceKeysTable {
  name: string;
  /** base64url of the key's bytes. */
  value: string;
}

export interface Database {
  users: UsersTable;
  programs: ProgramsTable;
  api_tokens: ApiTokensTable;
  affiliates: AffiliatesTable;
  affiliate_links: AffiliateLinksTable;
  referrals: ReferralsTable;
  sales: SalesTable;
  sale_refunds: SaleRefundsTable;
  commission_entries: CommissionEntriesTable;
  sale_days: SaleDaysTable;
  unpaid_days: UnpaidDaysTable;
  affiliate_counts: AffiliateCountsTable;
  affiliate_counter_totals: AffiliateCounterTotalsTable;
  payouts: PayoutsTable;
  mail_outbox: MailOutboxTable;
  portal_login_tokens: PortalLoginTokensTable;
  portal_sessions: PortalSessionsTable;
  password_reset_tokens: PasswordResetTokensTable;
  billing_connections: BillingConnectionsTable;
  billing_events: BillingEventsTable;
  billing_payments: BillingPaymentsTable;
  billing_customers: BillingCustomersTable;
  billing_disputes: BillingDisputesTable;
  clicks: ClicksTable;
  click_days: ClickDaysTable;
  coupons: CouponsTable;
  promotional_codes: PromotionalCodesTable;
  events: EventsTable;
  outbox_state: OutboxStateTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_fanout: WebhookFanoutTable;
  webhook_attempts: WebhookAttemptsTable;
  idempotency_keys: IdempotencyKeysTable;
  sessions: SessionsTable;
  integrations: IntegrationsTable;
  authorization_codes: AuthorizationCodesTable;
  attempt_counters: AttemptCountersTable;
  instance_keys: InstanceKeysTable;
}
