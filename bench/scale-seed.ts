import { randomBytes, randomUUID } from 'node:crypto';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { commissionFor, commissionTakenBack, endOfHold } from '../src/domain/commission.ts';
import { fromMinorUnits } from '../src/domain/money.ts';
import { createProgramsWithKeys, type SeedProgram } from './seed.ts';

// The data set of `npm run bench -- --scale` (bench/scale.ts): on a fresh database, a BIG and a
// SMALL program side by side, each scaled from its number of sales S. The schema comes from the
// real migrations, the owner, the programs and their API keys from the real services
// (seed.ts createProgramsWithKeys); the bulk rows are inserted directly, in the shapes the
// server writes, with every counter equal to what the API would have counted:
//   affiliates S/10, each with its primary link; one of them (the "heavy" one) has S/100 sales
//     (at least 100);
//   referrals S and sales S (one sale per customer, spread over the year before the seed);
//   a partial refund of every tenth sale older than three days (sale_refunds row, the sale's
//     running totals, a `refund` ledger entry, a sale.refunded event);
//   commission entries: one `sale` entry per sale (due after the program's hold) and the refund
//     entries; everything due before the last 36.5 days is paid, in one paid payout per
//     affiliate and third of that history, so the month end finds about one due sale per
//     affiliate; the program's minimum payout is set so that 40 % of the affiliates are owed;
//   events: referral.created, sale.created and sale.refunded of every row above, numbered in
//     the order of their time across both programs (as the purge walks them), ~92 % older
//     than the default 30-day retention;
//   billing events: one Stripe invoice.paid (recorded) per sale;
//   coupons S/1000 (at least 60), each with 50 promotional codes;
//   the kept aggregates of these rows where the schema has them (sale_days: the sales per UTC
//   day and shard; affiliate_counts: the affiliates per shard and status; unpaid_days: the
//   unpaid entries per due day and shard; as their migrations backfill them).
// Rows are generated as they are inserted (per-affiliate arrays only): memory stays bounded.

/** The owner seed.ts createProgramsWithKeys makes (its password logs the bench in to the dashboard). */
export const OWNER = { email: 'owner@bench.example.com', password: 'benchmark owner password' } as const;

const DAY_MS = 86_400_000;
const YEAR_MS = 365 * DAY_MS;
/** A refunded sale is refunded this long after it was made. */
const REFUND_AFTER_MS = 3 * DAY_MS;
/** The due entries not paid yet (the month end's work): those falling due in this last stretch. */
const UNPAID_WINDOW_MS = YEAR_MS / 10;
/** The paid history is paid in this many payouts per affiliate (one per stretch of it). */
const PAID_PERIODS = 3;
/** The share of affiliates whose due balance reaches the minimum payout. */
const OWED_SHARE = 0.4;
const CODES_PER_COUPON = 50;
/** Every HEAVY_EVERY-th customer is the heavy affiliate's (in a program of S ≥ 10,000 sales: S/100). */
const HEAVY_EVERY = 100;
/**
 * What a page shows, SMALL has too, so both sides of a comparison show full pages and the ratio
 * is of the work behind them, not of how many rows fit: the heavy affiliate has at least
 * HEAVY_AT_LEAST sales (a page of its sales, entries, portal rows), every program at least
 * COUPONS_AT_LEAST coupons (a dashboard page, and the API's default page of coupons).
 */
const HEAVY_AT_LEAST = 100;
const COUPONS_AT_LEAST = 60;

export interface ScaleProgram {
  id: string;
  token: string;
  name: string;
  sales: number;
  affiliates: number;
  heavyAffiliateId: string;
  /** Sales of the heavy affiliate. */
  heavySales: number;
  /** An old sale of the heavy affiliate (its page: refunds, entries, events). */
  heavySaleId: number;
  /** A sale in the middle of the program's history, for lookups by id. */
  middleSaleId: number;
  /** The program's minimum payout (minor units) and how many affiliates reach it. */
  minimumPayout: number;
  owedAffiliates: number;
  /** The id of customer `i` (0 ≤ i < sales): each has one sale. */
  referralId(i: number): string;
}

export interface SeedReport {
  big: ScaleProgram;
  small: ScaleProgram;
  /** Rows inserted per table, both programs together. */
  rows: Record<string, number>;
  seconds: number;
}

// ---------------------------------------------------------------- ids

/** A 32-bit mix (a bijection of uint32). */
function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}

const hex = (value: number, digits: number) => (value >>> 0).toString(16).padStart(8, '0').slice(8 - digits);

/**
 * A UUID (version 4 layout) that is a function of (salt, n): random-looking, so it lands in the
 * indexes as the server's random ids do, and unique for n < 2³² (n is in its last 32 bits,
 * XOR-masked). Lets a later pass (the events) name a row again without keeping its id.
 */
function pseudoUuid(salt: number, n: number): string {
  const a = mix32(n ^ Math.imul(salt, 0x9e3779b9));
  const b = mix32(a ^ salt ^ 0x5bd1e995);
  const mask = mix32(salt + 0x632be5ab);
  return `${hex(a, 8)}-${hex(b, 4)}-4${hex(b >>> 16, 3)}-${(8 + (a & 3)).toString(16)}${hex(mix32(salt), 3)}-${hex(mask >>> 16, 4)}${hex((n ^ mask) >>> 0, 8)}`;
}

/** `evt_` and 18 random bytes in base64url, as newEventId makes them (bytes drawn in blocks). */
function eventIds(): () => string {
  let pool = Buffer.alloc(0);
  let at = 0;
  return () => {
    if (at + 18 > pool.length) {
      pool = randomBytes(18 * 4096);
      at = 0;
    }
    at += 18;
    return `evt_${pool.subarray(at - 18, at).toString('base64url')}`;
  };
}

// ---------------------------------------------------------------- the plan

type Table =
  | 'affiliates'
  | 'affiliate_links'
  | 'coupons'
  | 'promotional_codes'
  | 'payouts'
  | 'referrals'
  | 'sales'
  | 'sale_refunds'
  | 'commission_entries'
  | 'billing_events'
  | 'events'
  | 'sale_days'
  | 'unpaid_days'
  | 'affiliate_counts';

/** Each table's columns, in the order a row's values are generated. */
const COLUMNS: Record<Table, readonly string[]> = {
  affiliates: [
    'id', 'program_id', 'first_name', 'last_name', 'email', 'email_key', 'email_verified', 'image', 'payout_email', 'payment_method',
    'commission_rate', 'status', 'number_of_referred_users', 'number_of_clicks', 'total_commission_earned',
    'number_of_sales', 'total_sales_amount', 'total_refunded_amount', 'created_at', 'updated_at',
  ],
  affiliate_links: ['id', 'program_id', 'affiliate_id', 'link', 'link_key', 'is_primary', 'clicks', 'referrals', 'sales', 'total_revenue', 'created_at', 'updated_at'],
  coupons: [
    'id', 'program_id', 'name', 'external_id', 'coupon_type', 'percent_off', 'amount_off', 'currency', 'duration', 'duration_in_months',
    'max_redemptions', 'times_redeemed', 'limit_to_products', 'product_ids', 'valid', 'redeem_by', 'integration_type', 'created_at', 'updated_at',
  ],
  promotional_codes: [
    'id', 'program_id', 'coupon_id', 'affiliate_id', 'code', 'code_key', 'external_id', 'active', 'expires_at', 'max_redemptions',
    'times_redeemed', 'first_time_order', 'minimum_amount', 'minimum_amount_currency', 'limit_to_customers', 'customer_id',
    'limit_to_affiliate', 'is_auto_generated', 'created_at', 'updated_at',
  ],
  payouts: [
    'id', 'program_id', 'affiliate_id', 'first_name', 'last_name', 'email', 'payout_email', 'payment_method', 'amount', 'currency', 'status',
    'entry_count', 'created_at', 'paid_at', 'method', 'reference', 'updated_at',
  ],
  referrals: [
    'id', 'program_id', 'affiliate_id', 'link_id', 'promotional_code_id', 'name', 'email', 'email_key', 'referred_user_external_id',
    'external_id_key', 'plan', 'status', 'created_at', 'updated_at',
  ],
  sales: [
    'id', 'program_id', 'affiliate_id', 'referral_id', 'link_id', 'promotional_code_id', 'external_id', 'external_invoice_id', 'invoice_key',
    'name', 'email', 'total_earned', 'commission_rate', 'commission', 'commission_rule', 'commission_flat', 'refunded_amount',
    'refunded_commission', 'created_at', 'updated_at',
  ],
  sale_refunds: ['id', 'program_id', 'sale_id', 'amount', 'commission', 'created_at'],
  commission_entries: ['id', 'program_id', 'affiliate_id', 'sale_id', 'payout_id', 'kind', 'amount', 'currency', 'due_at', 'held_by', 'paid_at', 'created_at'],
  billing_events: ['program_id', 'id', 'provider', 'type', 'created_at', 'outcome', 'reason', 'referral_id', 'sale_id', 'waiting', 'customer_id'],
  events: ['id', 'program_id', 'type', 'data', 'created_at', 'sequence'],
  sale_days: ['program_id', 'day', 'shard', 'sales', 'amount', 'refunded', 'commission'],
  unpaid_days: ['program_id', 'due_day', 'shard', 'held', 'in_payout', 'amount'],
  affiliate_counts: ['program_id', 'shard', 'status', 'affiliates'],
};

/** Tables the seed fills, or leaves empty on purpose; any other table in the database is reported (a new one may need rows). */
const KNOWN_TABLES = new Set<string>([
  ...Object.keys(COLUMNS),
  'users', 'programs', 'api_tokens', 'outbox_state', 'clicks', 'click_days', 'mail_outbox', 'portal_login_tokens', 'portal_sessions',
  'password_reset_tokens', 'billing_connections', 'billing_customers', 'billing_payments', 'billing_disputes', 'webhooks', 'webhook_deliveries', 'webhook_fanout', 'webhook_attempts',
  'idempotency_keys', 'sessions', 'integrations', 'authorization_codes', 'attempt_counters', 'instance_keys',
  'kysely_migration', 'kysely_migration_lock', 'tandem_migrations', 'tandem_migrations_lock', 'sqlite_sequence', 'sqlite_stat1', 'sqlite_stat4',
  // SQLite's searches (FTS5 and their shadow tables): their triggers index the rows as they are inserted.
  ...['sales_search', 'referrals_search', 'affiliates_search'].flatMap((index) => [index, ...['config', 'data', 'docsize', 'idx'].map((part) => `${index}_${part}`)]),
  // Kept by triggers on affiliates from the counters the seed writes (checked below).
  'affiliate_counter_totals',
]);

type Row = [Table, unknown[]];

interface Plan {
  program: SeedProgram;
  name: string;
  tag: string;
  /** Salt of this program's pseudo-random ids. */
  salt: number;
  currency: string;
  holdDays: number;
  sales: number;
  affiliates: number;
  coupons: number;
  /** Every heavyEvery-th customer is the heavy affiliate's. */
  heavyEvery: number;
  now: number;
  start: number;
  firstDue: number;
  paidThrough: number;
  periodMs: number;
  saleIdBase: number;
  affiliateIds: string[];
  linkIds: string[];
  referred: Uint32Array;
  salesOf: Uint32Array;
  revenue: Float64Array;
  /** What refunds took back of the affiliate's sales. */
  refundedOf: Float64Array;
  commission: Float64Array;
  /** Net due balance now (due, unpaid). */
  due: Float64Array;
  /** Per affiliate × paid period: the payout's amount and entry count. */
  payoutAmount: Float64Array;
  payoutEntries: Uint32Array;
  minimumPayout: number;
  owed: number;
  /** sale_days' rows (when the schema keeps them): per `day|shard`, sales, amount, refunded, net commission. */
  saleDays: Map<string, [number, number, number, number]> | null;
  /** Whether the schema keeps affiliate_counts (its rows come from affiliateIds). */
  keepsAffiliateCounts: boolean;
  /** Whether the schema keeps unpaid_days (its rows are summed as the entries are written). */
  keepsUnpaidDays: boolean;
}

/** Customer (and sale) i's affiliate: every heavyEvery-th is the heavy one (0), the rest go round the others. */
function affiliateOf(plan: Plan, i: number): number {
  if (i % plan.heavyEvery === 0) return 0;
  return 1 + ((i - Math.floor(i / plan.heavyEvery) - 1) % (plan.affiliates - 1));
}

interface SaleFacts {
  i: number;
  id: number;
  affiliate: number;
  at: number;
  total: number;
  commission: number;
  /** Refunded amount and the commission it took back (0 when not refunded). */
  refunded: number;
  taken: number;
  refundAt: number;
  dueAt: number;
  /** Paid period, or -1 when unpaid. */
  period: number;
}

function saleFacts(plan: Plan, i: number): SaleFacts {
  const at = plan.start + Math.floor(((i + 0.5) * YEAR_MS) / plan.sales);
  const total = 1_000 + ((i * 7_919) % 19_000); // 10.00 to 199.99
  const commission = commissionFor(total, plan.program.commissionRate);
  const refundAt = at + REFUND_AFTER_MS;
  const refunded = i % 10 === 3 && refundAt < plan.now - 60_000 ? Math.floor(total / 2) : 0;
  const taken = refunded ? commissionTakenBack(commission, refunded, total) : 0;
  const dueAt = endOfHold(new Date(at), plan.holdDays).getTime();
  const period = dueAt <= plan.paidThrough && plan.periodMs > 0 ? Math.min(PAID_PERIODS - 1, Math.floor((dueAt - plan.firstDue) / plan.periodMs)) : -1;
  return { i, id: plan.saleIdBase + i + 1, affiliate: affiliateOf(plan, i), at, total, commission, refunded, taken, refundAt, dueAt, period };
}

/** When the payouts of a paid period were made (after every entry in it fell due) and paid. */
function payoutTimes(plan: Plan, period: number): { madeAt: number; paidAt: number } {
  const end = period === PAID_PERIODS - 1 ? plan.paidThrough : plan.firstDue + (period + 1) * plan.periodMs;
  const madeAt = end + 3_600_000;
  return { madeAt, paidAt: madeAt + DAY_MS };
}

function makePlan(
  program: SeedProgram,
  settings: { currency: string; holdDays: number; keepsSaleDays: boolean; keepsAffiliateCounts: boolean; keepsUnpaidDays: boolean },
  name: string,
  tag: string,
  salt: number,
  sales: number,
  saleIdBase: number,
  now: number,
): Plan {
  const affiliates = Math.max(2, Math.floor(sales / 10));
  const start = now - YEAR_MS;
  const firstDue = endOfHold(new Date(start), settings.holdDays).getTime();
  const paidThrough = now - UNPAID_WINDOW_MS;
  const plan: Plan = {
    program,
    name,
    tag,
    salt,
    currency: settings.currency,
    holdDays: settings.holdDays,
    sales,
    affiliates,
    coupons: Math.max(COUPONS_AT_LEAST, Math.floor(sales / 1000)),
    heavyEvery: Math.max(2, Math.min(HEAVY_EVERY, Math.floor(sales / HEAVY_AT_LEAST))),
    now,
    start,
    firstDue,
    paidThrough,
    periodMs: Math.max(0, (paidThrough - firstDue) / PAID_PERIODS),
    saleIdBase,
    affiliateIds: Array.from({ length: affiliates }, () => randomUUID()),
    linkIds: Array.from({ length: affiliates }, () => randomUUID()),
    referred: new Uint32Array(affiliates),
    salesOf: new Uint32Array(affiliates),
    revenue: new Float64Array(affiliates),
    refundedOf: new Float64Array(affiliates),
    commission: new Float64Array(affiliates),
    due: new Float64Array(affiliates),
    payoutAmount: new Float64Array(affiliates * PAID_PERIODS),
    payoutEntries: new Uint32Array(affiliates * PAID_PERIODS),
    minimumPayout: 0,
    owed: 0,
    saleDays: settings.keepsSaleDays ? new Map() : null,
    keepsAffiliateCounts: settings.keepsAffiliateCounts,
    keepsUnpaidDays: settings.keepsUnpaidDays,
  };
  // Every counter and sum, before any row is written (affiliates and payouts come first).
  for (let i = 0; i < sales; i++) {
    const f = saleFacts(plan, i);
    const a = f.affiliate;
    const net = f.commission - f.taken;
    plan.referred[a]!++;
    plan.salesOf[a]!++;
    plan.revenue[a]! += f.total - f.refunded;
    plan.refundedOf[a]! += f.refunded;
    plan.commission[a]! += net;
    if (plan.saleDays) {
      // The day of the sale and the shard of its affiliate (the first hex digit of its id).
      const key = `${iso(f.at).slice(0, 10)}|${plan.affiliateIds[a]![0]}`;
      const day = plan.saleDays.get(key) ?? [0, 0, 0, 0];
      day[0] += 1;
      day[1] += f.total;
      day[2] += f.refunded;
      day[3] += net;
      plan.saleDays.set(key, day);
    }
    if (f.period >= 0) {
      plan.payoutAmount[a * PAID_PERIODS + f.period]! += net;
      plan.payoutEntries[a * PAID_PERIODS + f.period]! += f.refunded ? 2 : 1;
    } else if (f.dueAt <= now) {
      plan.due[a]! += net;
    }
  }
  // The minimum payout: the balance OWED_SHARE of the affiliates reach.
  const sorted = Float64Array.from(plan.due).sort();
  plan.minimumPayout = Math.max(1, sorted[Math.min(sorted.length - 1, Math.floor((1 - OWED_SHARE) * sorted.length))]!);
  plan.owed = plan.due.reduce((n, balance) => n + (balance > 0 && balance >= plan.minimumPayout ? 1 : 0), 0);
  return plan;
}

const iso = (ms: number) => new Date(ms).toISOString();

// ---------------------------------------------------------------- rows

function* programRows(plan: Plan): Generator<Row> {
  const { program, tag } = plan;
  const pid = program.id;
  const TAG = tag.toUpperCase();
  /** unpaid_days' sums (per `due day|shard`) of the unpaid entries written below. */
  const unpaid = new Map<string, number>();
  const affiliateEmail = (a: number) => `affiliate${a}.${tag}@partners.example.com`;
  const lastName = (a: number) => (a === 0 ? `Heavy ${TAG}` : `${TAG}${a}`);

  for (let a = 0; a < plan.affiliates; a++) {
    const createdAt = iso(plan.start - 30 * DAY_MS + Math.floor((a * 30 * DAY_MS) / plan.affiliates));
    const email = affiliateEmail(a);
    yield ['affiliates', [
      plan.affiliateIds[a], pid, 'Partner', lastName(a), email, email, 1, null, email, 'paypal', null, 'active',
      plan.referred[a], 0, plan.commission[a], plan.salesOf[a], plan.revenue[a]! + plan.refundedOf[a]!, plan.refundedOf[a], createdAt, createdAt,
    ]];
    const link = `partner-${tag}${a}`;
    yield ['affiliate_links', [plan.linkIds[a], pid, plan.affiliateIds[a], link, link, 1, 0, plan.referred[a], plan.salesOf[a], plan.revenue[a], createdAt, createdAt]];
  }
  if (plan.keepsAffiliateCounts) {
    // Every affiliate is active: one row per shard (the first hex digit of the affiliate's id).
    const shards = new Map<string, number>();
    for (const id of plan.affiliateIds) shards.set(id[0]!, (shards.get(id[0]!) ?? 0) + 1);
    for (const [shard, affiliates] of shards) yield ['affiliate_counts', [pid, shard, 'active', affiliates]];
  }

  for (let c = 0; c < plan.coupons; c++) {
    const couponId = pseudoUuid(plan.salt + 1, c);
    const createdAt = iso(plan.start - 20 * DAY_MS + c * 60_000);
    yield ['coupons', [
      couponId, pid, `Coupon ${c + 1}`, `coupon_${tag}${c + 1}`, 'PERCENTAGE', 10 + (c % 5) * 5, null, null, 'once', null, null, 0, 0, '[]', 1, null, null,
      createdAt, createdAt,
    ]];
    for (let k = 0; k < CODES_PER_COUPON; k++) {
      const code = `${TAG}C${c}SAVE${k}`;
      const n = c * CODES_PER_COUPON + k;
      yield ['promotional_codes', [
        pseudoUuid(plan.salt + 2, n), pid, couponId, plan.affiliateIds[(n * 7) % plan.affiliates], code, code.toLowerCase(), null, 1, null, null, 0, 0, null,
        null, 0, null, 0, 0, createdAt, createdAt,
      ]];
    }
  }

  // The paid history: one paid payout per affiliate and period with entries.
  for (let a = 0; a < plan.affiliates; a++) {
    for (let p = 0; p < PAID_PERIODS; p++) {
      const entries = plan.payoutEntries[a * PAID_PERIODS + p]!;
      if (entries === 0) continue;
      const { madeAt, paidAt } = payoutTimes(plan, p);
      const email = affiliateEmail(a);
      yield ['payouts', [
        pseudoUuid(plan.salt + 3, a * PAID_PERIODS + p), pid, plan.affiliateIds[a], 'Partner', lastName(a), email, email, 'paypal',
        plan.payoutAmount[a * PAID_PERIODS + p], plan.currency, 'paid', entries, iso(madeAt), iso(paidAt), 'paypal', null, iso(paidAt),
      ]];
    }
  }

  let entryId = plan.saleIdBase * 2;
  for (let i = 0; i < plan.sales; i++) {
    const f = saleFacts(plan, i);
    const a = f.affiliate;
    const affiliateId = plan.affiliateIds[a];
    const linkId = plan.linkIds[a];
    const referralId = pseudoUuid(plan.salt, i);
    const email = `customer${i}.${tag}@customers.example.net`;
    const at = iso(f.at);
    const referredAt = iso(f.at - 1_000);
    const customerId = `cus_${tag}${i}`;
    const invoice = `in_${tag}${i}`;
    yield ['referrals', [referralId, pid, affiliateId, linkId, null, `Customer ${i}`, email, email, customerId, customerId, 'pro', 'active', referredAt, referredAt]];
    const refundedAt = f.refunded ? iso(f.refundAt) : null;
    yield ['sales', [
      f.id, pid, affiliateId, referralId, linkId, null, `ch_${tag}${i}`, invoice, invoice, `Customer ${i}`, email, f.total,
      plan.program.commissionRate, f.commission, 'percentage', 0, f.refunded, f.taken, at, refundedAt ?? at,
    ]];
    const payoutId = f.period >= 0 ? pseudoUuid(plan.salt + 3, a * PAID_PERIODS + f.period) : null;
    const paidAt = f.period >= 0 ? iso(payoutTimes(plan, f.period).paidAt) : null;
    const dueAt = iso(f.dueAt);
    yield ['commission_entries', [++entryId, pid, affiliateId, f.id, payoutId, 'sale', f.commission, plan.currency, dueAt, null, paidAt, at]];
    // Unpaid entries are in no payout and not held: their day's row (as the migration sums them).
    const unpaidKey = `${dueAt.slice(0, 10)}|${affiliateId!.slice(0, 1)}`;
    if (paidAt === null) unpaid.set(unpaidKey, (unpaid.get(unpaidKey) ?? 0) + f.commission);
    if (f.refunded) {
      yield ['sale_refunds', [pseudoUuid(plan.salt + 4, i), pid, f.id, f.refunded, f.taken, refundedAt]];
      // The sale's entry was unpaid and in no payout when the refund came: the refund falls due with it.
      yield ['commission_entries', [++entryId, pid, affiliateId, f.id, payoutId, 'refund', -f.taken, plan.currency, dueAt, null, paidAt, refundedAt]];
      if (paidAt === null) unpaid.set(unpaidKey, (unpaid.get(unpaidKey) ?? 0) - f.taken);
    }
    yield ['billing_events', [pid, `evt_${tag}_invoice_${i}`, 'stripe', 'invoice.paid', at, 'recorded', null, referralId, f.id, null, customerId]];
  }
  for (const [key, [sales, amount, refunded, commission]] of plan.saleDays ?? []) {
    const [day, shard] = key.split('|');
    yield ['sale_days', [pid, day, shard, sales, amount, refunded, commission]];
  }
  if (plan.keepsUnpaidDays) {
    for (const [key, amount] of unpaid) {
      const [dueDay, shard] = key.split('|');
      if (amount !== 0) yield ['unpaid_days', [pid, dueDay, shard, 0, 0, amount]];
    }
  }
}

/** The sale as the API answers it (serializeSale's shape), before or after its refund. */
function saleJson(plan: Plan, f: SaleFacts, refunded: boolean): string {
  const money = (minor: number) => fromMinorUnits(minor, plan.currency);
  return JSON.stringify({
    id: f.id,
    affiliateId: plan.affiliateIds[f.affiliate],
    referralId: pseudoUuid(plan.salt, f.i),
    externalId: `ch_${plan.tag}${f.i}`,
    externalInvoiceId: `in_${plan.tag}${f.i}`,
    name: `Customer ${f.i}`,
    email: `customer${f.i}.${plan.tag}@customers.example.net`,
    totalEarned: money(f.total),
    commissionRate: plan.program.commissionRate / 10_000,
    createdAt: iso(f.at),
    refundedAmount: money(refunded ? f.refunded : 0),
    status: refunded ? 'partially_refunded' : 'paid',
    commission: money(refunded ? f.commission - f.taken : f.commission),
  });
}

type TimedEvent = [at: number, programId: string, type: string, data: string];

/** A program's events in the order of their time: each customer's referral.created, its sale.created, refunds three days later. */
function* programEvents(plan: Plan): Generator<TimedEvent> {
  const refunds: TimedEvent[] = [];
  let head = 0;
  const pid = plan.program.id;
  for (let i = 0; i < plan.sales; i++) {
    const f = saleFacts(plan, i);
    const referredAt = f.at - 1_000;
    while (head < refunds.length && refunds[head]![0] <= referredAt) yield refunds[head++]!;
    const referral = {
      id: pseudoUuid(plan.salt, i),
      affiliateId: plan.affiliateIds[f.affiliate],
      name: `Customer ${i}`,
      email: `customer${i}.${plan.tag}@customers.example.net`,
      referredUserExternalId: `cus_${plan.tag}${i}`,
      plan: 'pro',
      status: 'active',
    };
    yield [referredAt, pid, 'referral.created', JSON.stringify(referral)];
    while (head < refunds.length && refunds[head]![0] <= f.at) yield refunds[head++]!;
    yield [f.at, pid, 'sale.created', saleJson(plan, f, false)];
    // Every refund comes the same time after its sale, so they queue in order.
    if (f.refunded) refunds.push([f.refundAt, pid, 'sale.refunded', saleJson(plan, f, true)]);
    if (head > 4096) {
      refunds.splice(0, head);
      head = 0;
    }
  }
  while (head < refunds.length) yield refunds[head++]!;
}

/** Both programs' events merged by time and numbered in that order (the purge walks them by number). */
function* numberedEvents(plans: Plan[]): Generator<Row> {
  const streams = plans.map(programEvents);
  const heads = streams.map((s) => s.next());
  const id = eventIds();
  let sequence = 0;
  for (;;) {
    let pick = -1;
    for (let k = 0; k < heads.length; k++) {
      const h = heads[k]!;
      if (!h.done && (pick < 0 || h.value[0] < (heads[pick]!.value as TimedEvent)[0])) pick = k;
    }
    if (pick < 0) return;
    const [at, programId, type, data] = heads[pick]!.value as TimedEvent;
    heads[pick] = streams[pick]!.next();
    yield ['events', [id(), programId, type, data, iso(at), ++sequence]];
  }
}

// ---------------------------------------------------------------- the sinks

interface Sink {
  write(table: Table, values: unknown[]): void | Promise<void>;
  /** Sets the program's minimum payout and the outbox's last number; commits. */
  finish(plans: Plan[], lastSequence: number): Promise<void>;
}

function sqliteSink(file: string): Sink & { close(): void } {
  const connection = new SqliteDatabase(file);
  // Seeding only: a big page cache keeps the random-key index inserts in memory; one
  // transaction. The journal stays the server's (WAL), truncated at the end.
  connection.pragma('cache_size = -1048576');
  connection.pragma('foreign_keys = ON');
  connection.pragma('synchronous = OFF');
  // Prepared at a table's first row: a table of a later schema (sale_days) may not exist.
  const statements = new Map<Table, SqliteDatabase.Statement>();
  const statementOf = (table: Table) => {
    let statement = statements.get(table);
    if (!statement) {
      statement = connection.prepare(`insert into ${table} (${COLUMNS[table].join(', ')}) values (${COLUMNS[table].map(() => '?').join(', ')})`);
      statements.set(table, statement);
    }
    return statement;
  };
  connection.exec('begin');
  return {
    write(table, values) {
      statementOf(table).run(values);
    },
    async finish(plans, lastSequence) {
      for (const plan of plans) connection.prepare('update programs set minimum_payout = ? where id = ?').run(plan.minimumPayout, plan.program.id);
      connection.prepare('update outbox_state set last_sequence = ? where id = 1').run(lastSequence);
      connection.exec('commit');
      connection.pragma('wal_checkpoint(TRUNCATE)');
    },
    close: () => connection.close(),
  };
}

/** Rows per round of multi-row INSERTs on PostgreSQL (all tables together). */
const PG_BATCH = 5_000;

async function postgresSink(url: string): Promise<Sink & { close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('set synchronous_commit = off');
  await client.query('begin');
  // Seeding only: the trigram indexes take the rows into GIN's pending list, sorted in bulk each
  // 4 MB (a third of the seed's time otherwise), and are set back as migration 2026-12-04T0600
  // keeps them, their lists emptied, before the server starts.
  const { rows: withoutList } = await client.query<{ name: string }>(
    `select c.relname as name from pg_class c join pg_am am on am.oid = c.relam where am.amname = 'gin' and c.reloptions @> array['fastupdate=off']`,
  );
  for (const { name } of withoutList) await client.query(`alter index ${name} set (fastupdate = on)`);
  // Tables flush in the order they first got a row, which is the order of their foreign keys.
  const order: Table[] = [];
  const buffers = new Map<Table, Record<string, unknown>[]>();
  let buffered = 0;
  const flush = async () => {
    for (const table of order) {
      const rows = buffers.get(table)!;
      if (rows.length === 0) continue;
      const columns = COLUMNS[table].join(', ');
      await client.query(`insert into ${table} (${columns}) select ${columns} from json_populate_recordset(null::${table}, $1::json)`, [JSON.stringify(rows)]);
      buffers.set(table, []);
    }
    buffered = 0;
  };
  return {
    async write(table, values) {
      let rows = buffers.get(table);
      if (!rows) {
        order.push(table);
        buffers.set(table, (rows = []));
      }
      const columns = COLUMNS[table];
      const row: Record<string, unknown> = {};
      for (let k = 0; k < columns.length; k++) row[columns[k]!] = values[k];
      rows.push(row);
      if (++buffered >= PG_BATCH) await flush();
    },
    async finish(plans, lastSequence) {
      await flush();
      for (const plan of plans) await client.query('update programs set minimum_payout = $1 where id = $2', [plan.minimumPayout, plan.program.id]);
      await client.query('update outbox_state set last_sequence = $1 where id = 1', [lastSequence]);
      // Explicit ids: the identity columns go on after them.
      for (const table of ['sales', 'commission_entries']) {
        await client.query(`select setval(pg_get_serial_sequence('${table}', 'id'), greatest(1, (select coalesce(max(id), 0) from ${table})))`);
      }
      for (const { name } of withoutList) await client.query(`alter index ${name} set (fastupdate = off)`);
      await client.query('commit');
      for (const { name } of withoutList) await client.query(`select gin_clean_pending_list('${name}'::regclass)`);
      await client.query('analyze');
    },
    close: () => client.end(),
  };
}

// ---------------------------------------------------------------- seeding

/**
 * Seeds a fresh database (`sqlite:…` or `postgres://…`): the BIG program with `bigSales` sales,
 * the SMALL one with `smallSales`, and everything scaled from them.
 */
export async function seedScale(databaseUrl: string, bigSales: number, smallSales: number, log: (line: string) => void): Promise<SeedReport> {
  const started = Date.now();
  const postgres = /^postgres(ql)?:\/\//.test(databaseUrl);
  const names = ['Big program', 'Small program'] as const;
  const programs = await createProgramsWithKeys(databaseUrl, [
    [names[0], 'big.example.com'],
    [names[1], 'small.example.com'],
  ]);
  const now = Date.now();
  const sink = postgres ? await postgresSink(databaseUrl) : sqliteSink(databaseUrl.slice('sqlite:'.length));
  const rows: Record<string, number> = {};
  try {
    const settings = await programSettings(databaseUrl, programs.map((p) => p.id));
    const reader = await openReader(databaseUrl);
    const tables = await tablesOf(reader);
    const keepsSaleDays = tables.includes('sale_days');
    const keepsAffiliateCounts = tables.includes('affiliate_counts');
    const keepsUnpaidDays = tables.includes('unpaid_days');
    await reader.close();
    const big = makePlan(programs[0]!, { ...settings.get(programs[0]!.id)!, keepsSaleDays, keepsAffiliateCounts, keepsUnpaidDays }, names[0], 'b', 0x1000, bigSales, 0, now);
    const small = makePlan(programs[1]!, { ...settings.get(programs[1]!.id)!, keepsSaleDays, keepsAffiliateCounts, keepsUnpaidDays }, names[1], 's', 0x2000, smallSales, bigSales, now);
    log(`  planned in ${((Date.now() - started) / 1000).toFixed(1)} s: minimum payout ${big.minimumPayout} / ${small.minimumPayout} minor units, owed affiliates ${big.owed} / ${small.owed}`);
    let count = 0;
    let lastLog = Date.now();
    const write = async (source: Iterable<Row>) => {
      for (const [table, values] of source) {
        const pending = sink.write(table, values);
        if (pending) await pending;
        rows[table] = (rows[table] ?? 0) + 1;
        if (++count % 100_000 === 0 && Date.now() - lastLog > 15_000) {
          lastLog = Date.now();
          log(`  … ${count.toLocaleString('en-US')} rows (${table}) after ${((Date.now() - started) / 1000).toFixed(0)} s`);
        }
      }
    };
    await write(programRows(big));
    await write(programRows(small));
    await write(numberedEvents([big, small]));
    await sink.finish([big, small], rows.events ?? 0);
    const seconds = (Date.now() - started) / 1000;
    return { big: describe(big), small: describe(small), rows, seconds };
  } finally {
    await sink.close();
  }
}

async function programSettings(databaseUrl: string, ids: string[]): Promise<Map<string, { currency: string; holdDays: number }>> {
  const query = 'select id, currency, hold_days from programs';
  let rows: { id: string; currency: string; hold_days: number }[];
  if (databaseUrl.startsWith('sqlite:')) {
    const connection = new SqliteDatabase(databaseUrl.slice('sqlite:'.length), { readonly: true });
    try {
      rows = connection.prepare(query).all() as typeof rows;
    } finally {
      connection.close();
    }
  } else {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      rows = (await client.query(query)).rows;
    } finally {
      await client.end();
    }
  }
  const found = new Map(rows.map((r) => [r.id, { currency: r.currency, holdDays: Number(r.hold_days) }]));
  for (const id of ids) if (!found.has(id)) throw new Error(`program ${id} not found after creating it`);
  return found;
}

function describe(plan: Plan): ScaleProgram {
  // An old sale of the heavy affiliate: its customer index is a multiple of heavyEvery.
  const heavyIndex = plan.heavyEvery * Math.floor(plan.sales / plan.heavyEvery / 10);
  return {
    id: plan.program.id,
    token: plan.program.token,
    name: plan.name,
    sales: plan.sales,
    affiliates: plan.affiliates,
    heavyAffiliateId: plan.affiliateIds[0]!,
    heavySales: plan.salesOf[0]!,
    heavySaleId: plan.saleIdBase + heavyIndex + 1,
    middleSaleId: plan.saleIdBase + Math.floor(plan.sales / 2) + 1,
    minimumPayout: plan.minimumPayout,
    owedAffiliates: plan.owed,
    referralId: (i: number) => pseudoUuid(plan.salt, i),
  };
}

// ---------------------------------------------------------------- checks

/** Runs a read query with `?` placeholders on either database. */
export interface ReadQuery {
  (text: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
  dialect: 'sqlite' | 'postgres';
}

export async function openReader(databaseUrl: string): Promise<ReadQuery> {
  if (databaseUrl.startsWith('sqlite:')) {
    const connection = new SqliteDatabase(databaseUrl.slice('sqlite:'.length), { readonly: true });
    connection.pragma('busy_timeout = 5000');
    const query = (async (text: string, params: unknown[] = []) => connection.prepare(text).all(...params) as Record<string, unknown>[]) as ReadQuery;
    query.close = async () => {
      connection.close();
    };
    query.dialect = 'sqlite';
    return query;
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const query = (async (text: string, params: unknown[] = []) => {
    let n = 0;
    return (await client.query(text.replace(/\?/g, () => `$${++n}`), params)).rows as Record<string, unknown>[];
  }) as ReadQuery;
  query.close = () => client.end();
  query.dialect = 'postgres';
  return query;
}

/**
 * The invariants of the seeded program, counted in SQL (group-by joins, no per-row subqueries):
 * the affiliates' and links' counters, each sale's net commission against its ledger entries and
 * its refunds, each payout against its entries, the events' numbers. Returns the mismatches.
 */
export async function checkInvariants(query: ReadQuery, programId: string): Promise<{ checks: number; failures: string[] }> {
  const checks: [string, string, unknown[]][] = [
    [
      "affiliates whose referred users, commission total (against their ledger entries), commission (against their sales' net) or sales' count, amount or refunds differ",
      `select count(*) as n from affiliates a
        left join (select affiliate_id, count(*) as n from referrals where program_id = ? group by affiliate_id) r on r.affiliate_id = a.id
        left join (select affiliate_id, sum(amount) as s from commission_entries where program_id = ? group by affiliate_id) e on e.affiliate_id = a.id
        left join (select affiliate_id, sum(commission - refunded_commission) as s, count(*) as n, sum(total_earned) as amount, sum(refunded_amount) as refunded
          from sales where program_id = ? group by affiliate_id) s on s.affiliate_id = a.id
        where a.program_id = ? and (a.number_of_referred_users <> coalesce(r.n, 0) or a.total_commission_earned <> coalesce(e.s, 0) or a.total_commission_earned <> coalesce(s.s, 0)
          or a.number_of_sales <> coalesce(s.n, 0) or a.total_sales_amount <> coalesce(s.amount, 0) or a.total_refunded_amount <> coalesce(s.refunded, 0))`,
      [programId, programId, programId, programId],
    ],
    [
      "links whose referrals, sales or revenue (net of refunds) differ from their rows",
      `select count(*) as n from affiliate_links l
        left join (select link_id, count(*) as n from referrals where program_id = ? group by link_id) r on r.link_id = l.id
        left join (select link_id, count(*) as n, sum(total_earned - refunded_amount) as revenue from sales where program_id = ? group by link_id) s on s.link_id = l.id
        where l.program_id = ? and (l.referrals <> coalesce(r.n, 0) or l.sales <> coalesce(s.n, 0) or l.total_revenue <> coalesce(s.revenue, 0))`,
      [programId, programId, programId],
    ],
    [
      "sales whose net commission differs from their ledger entries, or whose refunded totals differ from their refunds",
      `select count(*) as n from sales s
        left join (select sale_id, sum(amount) as amount from commission_entries where program_id = ? group by sale_id) e on e.sale_id = s.id
        left join (select sale_id, sum(amount) as amount, sum(commission) as commission from sale_refunds where program_id = ? group by sale_id) f on f.sale_id = s.id
        where s.program_id = ? and (s.commission - s.refunded_commission <> coalesce(e.amount, 0) or s.refunded_amount <> coalesce(f.amount, 0) or s.refunded_commission <> coalesce(f.commission, 0))`,
      [programId, programId, programId],
    ],
    [
      'payouts whose amount or entry count differs from their entries, or that pay nothing',
      `select count(*) as n from payouts p
        left join (select payout_id, sum(amount) as amount, count(*) as n from commission_entries where program_id = ? and payout_id is not null group by payout_id) e on e.payout_id = p.id
        where p.program_id = ? and (p.amount <> coalesce(e.amount, 0) or p.entry_count <> coalesce(e.n, 0) or p.amount <= 0)`,
      [programId, programId],
    ],
    [
      'entries paid without being in a paid payout, or in a paid payout without being paid',
      `select count(*) as n from commission_entries e left join payouts p on p.id = e.payout_id
        where e.program_id = ? and ((e.paid_at is not null) <> (p.status is not null and p.status = 'paid'))`,
      [programId],
    ],
    [
      'events without a number, or numbered past the outbox state',
      `select count(*) as n from events where program_id = ? and (sequence is null or sequence > (select last_sequence from outbox_state where id = 1))`,
      [programId],
    ],
  ];
  if ((await tablesOf(query)).includes('sale_days')) {
    const day = query.dialect === 'postgres' ? "to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')" : 'substr(created_at, 1, 10)';
    const shard = query.dialect === 'postgres' ? 'left(affiliate_id::text, 1)' : 'substr(affiliate_id, 1, 1)';
    checks.push([
      'sale days (kept sums per day and shard) that differ from the sales',
      `select count(*) as n from (
          select ${day} as day, ${shard} as shard, count(*) as sales, sum(total_earned) as amount, sum(refunded_amount) as refunded,
            sum(commission - refunded_commission) as commission
          from sales where program_id = ? group by ${day}, ${shard}) s
        full outer join (select * from sale_days where program_id = ?) d on d.day = s.day and d.shard = s.shard
        where s.day is null or d.day is null or s.sales <> d.sales or s.amount <> d.amount or s.refunded <> d.refunded or s.commission <> d.commission`,
      [programId, programId],
    ]);
  }
  if ((await tablesOf(query)).includes('unpaid_days')) {
    const day = query.dialect === 'postgres' ? "to_char(due_at at time zone 'UTC', 'YYYY-MM-DD')" : 'substr(due_at, 1, 10)';
    const shard = query.dialect === 'postgres' ? 'left(affiliate_id::text, 1)' : 'substr(affiliate_id, 1, 1)';
    const held = 'case when held_by is null then 0 else 1 end';
    const inPayout = 'case when payout_id is null then 0 else 1 end';
    checks.push([
      'unpaid days (kept sums per due day, shard, hold and payout) that differ from the unpaid entries',
      `select count(*) as n from (
          select ${day} as due_day, ${shard} as shard, ${held} as held, ${inPayout} as in_payout, sum(amount) as amount
          from commission_entries where program_id = ? and paid_at is null group by ${day}, ${shard}, ${held}, ${inPayout}) e
        full outer join (select * from unpaid_days where program_id = ? and amount <> 0) d
          on d.due_day = e.due_day and d.shard = e.shard and d.held = e.held and d.in_payout = e.in_payout
        where (e.due_day is null or d.due_day is null or e.amount <> d.amount) and coalesce(e.amount, 0) <> coalesce(d.amount, 0)`,
      [programId, programId],
    ]);
  }
  if ((await tablesOf(query)).includes('affiliate_counter_totals')) {
    const shard = query.dialect === 'postgres' ? 'left(id::text, 1)' : 'substr(id, 1, 1)';
    checks.push([
      "affiliate counter totals (kept per shard by triggers) that differ from the affiliates' counters",
      `select count(*) as n from (
          select ${shard} as shard, sum(number_of_referred_users) as referrals, sum(number_of_clicks) as clicks from affiliates where program_id = ? group by ${shard}) a
        full outer join (select * from affiliate_counter_totals where program_id = ?) t on t.shard = a.shard
        where coalesce(a.referrals, 0) <> coalesce(t.referrals, 0) or coalesce(a.clicks, 0) <> coalesce(t.clicks, 0)`,
      [programId, programId],
    ]);
  }
  if ((await tablesOf(query)).includes('affiliate_counts')) {
    const shard = query.dialect === 'postgres' ? 'left(id::text, 1)' : 'substr(id, 1, 1)';
    checks.push([
      'affiliate counts (kept per shard and status) that differ from the affiliates',
      `select count(*) as n from (
          select ${shard} as shard, status, count(*) as affiliates from affiliates where program_id = ? group by ${shard}, status) a
        full outer join (select * from affiliate_counts where program_id = ? and affiliates <> 0) c on c.shard = a.shard and c.status = a.status
        where a.shard is null or c.shard is null or a.affiliates <> c.affiliates`,
      [programId, programId],
    ]);
  }
  const failures: string[] = [];
  for (const [what, text, params] of checks) {
    const n = Number((await query(text, params))[0]!.n);
    if (n !== 0) failures.push(`${n} ${what}`);
  }
  return { checks: checks.length, failures };
}

async function tablesOf(query: ReadQuery): Promise<string[]> {
  const rows =
    query.dialect === 'sqlite'
      ? await query("select name from sqlite_master where type = 'table'")
      : await query("select table_name as name from information_schema.tables where table_schema = 'public'");
  return rows.map((r) => String(r.name));
}

/** Tables in the database that the seed does not know (added since it was written): they may need rows to be realistic. */
export async function unknownTables(query: ReadQuery): Promise<string[]> {
  return (await tablesOf(query)).filter((name) => !KNOWN_TABLES.has(name) && !name.startsWith('sqlite_'));
}
