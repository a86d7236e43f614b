import { randomUUID } from 'node:crypto';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { commissionFor } from '../src/domain/commission.ts';
import { createUser } from '../src/modules/users/user.service.ts';
import { createProgram } from '../src/modules/programs/program.service.ts';
import { issueToken } from '../src/modules/tokens/token.service.ts';

// Loads a realistic data set straight into a fresh SQLite file: the schema comes from the
// real migrations and the program, user and API key from the real services; the bulk rows
// are inserted with prepared statements in one transaction, with every counter equal to
// what the API would have counted (referrals and sales per affiliate and per link).
// Seeding is not what is measured, so it may bypass the API; it writes no event rows.

export interface ProgramSize {
  affiliates: number;
  referrals: number;
  sales: number;
  coupons: number;
  promotionalCodes: number;
}

export interface SeededProgram {
  id: string;
  token: string;
  /** The program's default rate in millionths (every seeded affiliate uses it). */
  commissionRate: number;
  affiliateIds: string[];
  referralIds: string[];
  /** Index into affiliateIds of each referral's affiliate. */
  referralAffiliate: Uint32Array;
  codes: string[];
}

export const BIG: ProgramSize = { affiliates: 10_000, referrals: 200_000, sales: 500_000, coupons: 4, promotionalCodes: 1_000 };
export const SMALL: ProgramSize = { affiliates: 100, referrals: 2_000, sales: 5_000, coupons: 1, promotionalCodes: 10 };

const DAY_MS = 86_400_000;
/** Referrals and sales are spread over the year before the seed; affiliates join a month earlier. */
const HISTORY_MS = 365 * DAY_MS;

/** A program of the seed: its id, an API key for it, and its default rate in millionths. */
export type SeedProgram = { id: string; token: string; commissionRate: number };

/**
 * Migrates a fresh database (`sqlite:…` or `postgres://…`) and creates, through the real
 * services, one owner and the named programs (20 % commission), each with an API key.
 */
export async function createProgramsWithKeys(databaseUrl: string, programs: readonly (readonly [name: string, domain: string])[]): Promise<SeedProgram[]> {
  const database = openDatabase({ databaseUrl });
  try {
    await migrateToLatest(database.db as never);
    const owner = await createUser(database.db, { email: 'owner@bench.example.com', password: 'benchmark owner password' });
    const created: SeedProgram[] = [];
    for (const [name, domain] of programs) {
      const program = await createProgram(database.db, { ownerUserId: owner.id, name, domain, commissionRate: 20 });
      const { token } = await issueToken(database.db, { programId: program.id, name: 'bench', kind: 'api_key' });
      created.push({ id: program.id, token, commissionRate: program.commissionRate * 10_000 });
    }
    return created;
  } finally {
    await database.close();
  }
}

/** Seeds a fresh database: `file` is a SQLite path, or a `postgres://` URL of an empty database. */
export async function seedDatabase(file: string): Promise<{ big: SeededProgram; small: SeededProgram }> {
  const postgres = /^postgres(ql)?:\/\//.test(file);
  const programs = await createProgramsWithKeys(postgres ? file : `sqlite:${file}`, [
    ['Big program', 'big.example.com'],
    ['Small program', 'small.example.com'],
  ]);

  const [bigProgram, smallProgram] = programs as [(typeof programs)[0], (typeof programs)[0]];
  if (postgres) return seedPostgres(file, bigProgram, smallProgram);

  const connection = new SqliteDatabase(file);
  try {
    // Seeding only: a big page cache keeps the random-key index inserts in memory.
    connection.pragma('cache_size = -524288');
    connection.pragma('foreign_keys = ON');
    const insert = bulkInserter(connection);
    const now = Date.now();
    const seeded = connection.transaction(() => ({
      big: insert(bigProgram, BIG, now, 'b'),
      small: insert(smallProgram, SMALL, now, 's'),
    }))();
    connection.pragma('wal_checkpoint(TRUNCATE)');
    return seeded;
  } finally {
    connection.close();
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

function bulkInserter(connection: SqliteDatabase.Database) {
  const statement = (table: string, columns: string[]) =>
    connection.prepare(`insert into ${table} (${columns.join(', ')}) values (${columns.map((c) => `@${c}`).join(', ')})`);
  const statements: Record<Table, SqliteDatabase.Statement> = {
    affiliates: statement('affiliates', [
      'id', 'program_id', 'first_name', 'last_name', 'email', 'email_key', 'email_verified', 'image', 'payout_email', 'payment_method',
      'commission_rate', 'status', 'number_of_referred_users', 'number_of_clicks', 'total_commission_earned', 'created_at', 'updated_at',
    ]),
    affiliate_links: statement('affiliate_links', [
      'id', 'program_id', 'affiliate_id', 'link', 'link_key', 'is_primary', 'clicks', 'referrals', 'sales', 'total_revenue', 'created_at', 'updated_at',
    ]),
    coupons: statement('coupons', [
      'id', 'program_id', 'name', 'external_id', 'coupon_type', 'percent_off', 'amount_off', 'currency', 'duration', 'duration_in_months',
      'max_redemptions', 'times_redeemed', 'limit_to_products', 'product_ids', 'valid', 'redeem_by', 'integration_type', 'created_at', 'updated_at',
    ]),
    promotional_codes: statement('promotional_codes', [
      'id', 'program_id', 'coupon_id', 'affiliate_id', 'code', 'code_key', 'external_id', 'active', 'expires_at', 'max_redemptions',
      'times_redeemed', 'first_time_order', 'minimum_amount', 'minimum_amount_currency', 'limit_to_customers', 'customer_id',
      'limit_to_affiliate', 'is_auto_generated', 'created_at', 'updated_at',
    ]),
    referrals: statement('referrals', [
      'id', 'program_id', 'affiliate_id', 'link_id', 'promotional_code_id', 'name', 'email', 'email_key', 'referred_user_external_id',
      'plan', 'status', 'created_at', 'updated_at',
    ]),
    sales: statement('sales', [
      'program_id', 'affiliate_id', 'referral_id', 'link_id', 'promotional_code_id', 'external_id', 'external_invoice_id', 'name', 'email',
      'total_earned', 'commission_rate', 'commission', 'created_at',
    ]),
  };
  return (program: SeedProgram, size: ProgramSize, now: number, tag: string): SeededProgram => {
    const rows = planRows(program, size, now, tag);
    for (;;) {
      const next = rows.next();
      if (next.done) return next.value;
      const [table, row] = next.value;
      statements[table].run(row);
    }
  };
}

type Table = 'affiliates' | 'affiliate_links' | 'coupons' | 'promotional_codes' | 'referrals' | 'sales';

/** Rows per multi-row INSERT on PostgreSQL. */
const PG_BATCH = 5_000;

// PostgreSQL: the same planned rows, loaded in batches of a few thousand per statement through
// `json_populate_recordset` (the table's own row type does the casts: uuid, timestamptz, boolean
// from 1/0). Tables are flushed in dependency order, so foreign keys hold at every statement.
async function seedPostgres(url: string, big: SeedProgram, small: SeedProgram): Promise<{ big: SeededProgram; small: SeededProgram }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('set synchronous_commit = off');
    await client.query('begin');
    const order: Table[] = [];
    const buffers = new Map<Table, Record<string, unknown>[]>();
    let buffered = 0;
    const flush = async () => {
      for (const table of order) {
        const rows = buffers.get(table)!;
        if (rows.length === 0) continue;
        const columns = Object.keys(rows[0]!).join(', ');
        await client.query(`insert into ${table} (${columns}) select ${columns} from json_populate_recordset(null::${table}, $1::json)`, [JSON.stringify(rows)]);
        buffers.set(table, []);
      }
      buffered = 0;
    };
    const load = async (program: SeedProgram, size: ProgramSize, now: number, tag: string) => {
      const rows = planRows(program, size, now, tag);
      for (;;) {
        const next = rows.next();
        if (next.done) {
          await flush();
          return next.value;
        }
        const [table, row] = next.value;
        if (!buffers.has(table)) {
          order.push(table);
          buffers.set(table, []);
        }
        buffers.get(table)!.push(row);
        if (++buffered >= PG_BATCH) await flush();
      }
    };
    const now = Date.now();
    const seeded = { big: await load(big, BIG, now, 'b'), small: await load(small, SMALL, now, 's') };
    await client.query('commit');
    await client.query('analyze');
    return seeded;
  } finally {
    await client.end();
  }
}

function* planRows(program: SeedProgram, size: ProgramSize, now: number, tag: string): Generator<[Table, Record<string, unknown>], SeededProgram> {
  const start = now - HISTORY_MS;
  const rate = program.commissionRate;

  // Plan every referral and sale first, so the counters are known when affiliates are written.
  const referralAffiliate = new Uint32Array(size.referrals);
  for (let r = 0; r < size.referrals; r++) referralAffiliate[r] = r % size.affiliates;
  const saleReferral = (j: number) => Math.floor((j * size.referrals) / size.sales);
  const saleAmount = (j: number) => 1_000 + ((j * 7_919) % 19_000); // 10.00 to 199.99
  const referralTime = (r: number) => start + Math.floor((r * HISTORY_MS) / size.referrals);
  // A sale comes after its referral: sale j's time is never before referral saleReferral(j)'s.
  const saleTime = (j: number) => start + Math.floor((j * HISTORY_MS) / size.sales) + 1;

  const referredUsers = new Uint32Array(size.affiliates);
  const salesCount = new Uint32Array(size.affiliates);
  const revenue = new Float64Array(size.affiliates);
  const commission = new Float64Array(size.affiliates);
  for (let r = 0; r < size.referrals; r++) referredUsers[referralAffiliate[r]!]!++;
  for (let j = 0; j < size.sales; j++) {
    const a = referralAffiliate[saleReferral(j)]!;
    salesCount[a]!++;
    revenue[a]! += saleAmount(j);
    commission[a]! += commissionFor(saleAmount(j), rate);
  }

  const affiliateIds: string[] = [];
  const linkIds: string[] = [];
  for (let a = 0; a < size.affiliates; a++) {
    const id = randomUUID();
    const linkId = randomUUID();
    const createdAt = iso(start - 30 * DAY_MS + a * 1_000);
    const email = `affiliate${a}.${tag}@partners.example.com`;
    yield ['affiliates', {
      id, program_id: program.id, first_name: 'Partner', last_name: `${tag.toUpperCase()}${a}`, email, email_key: email,
      email_verified: 1, image: null, payout_email: email, payment_method: 'paypal', commission_rate: null, status: 'active',
      number_of_referred_users: referredUsers[a], number_of_clicks: 0, total_commission_earned: commission[a],
      created_at: createdAt, updated_at: createdAt,
    }];
    const link = `partner-${tag}${a}`;
    yield ['affiliate_links', {
      id: linkId, program_id: program.id, affiliate_id: id, link, link_key: link, is_primary: 1, clicks: 0,
      referrals: referredUsers[a], sales: salesCount[a], total_revenue: revenue[a], created_at: createdAt, updated_at: createdAt,
    }];
    affiliateIds.push(id);
    linkIds.push(linkId);
  }

  const couponIds: string[] = [];
  for (let c = 0; c < size.coupons; c++) {
    const id = randomUUID();
    const createdAt = iso(start - 20 * DAY_MS + c * 1_000);
    yield ['coupons', {
      id, program_id: program.id, name: `Coupon ${c + 1}`, external_id: `coupon_${tag}${c + 1}`, coupon_type: 'PERCENTAGE',
      percent_off: 10 + 5 * c, amount_off: null, currency: null, duration: 'once', duration_in_months: null, max_redemptions: null,
      times_redeemed: 0, limit_to_products: 0, product_ids: '[]', valid: 1, redeem_by: null, integration_type: null,
      created_at: createdAt, updated_at: createdAt,
    }];
    couponIds.push(id);
  }
  const codeStrings: string[] = [];
  for (let k = 0; k < size.promotionalCodes; k++) {
    const code = `${tag.toUpperCase()}SAVE${String(k).padStart(5, '0')}`;
    const createdAt = iso(start - 10 * DAY_MS + k * 1_000);
    yield ['promotional_codes', {
      id: randomUUID(), program_id: program.id, coupon_id: couponIds[k % size.coupons], affiliate_id: affiliateIds[(k * 7) % size.affiliates],
      code, code_key: code.toLowerCase(), external_id: null, active: 1, expires_at: null, max_redemptions: null, times_redeemed: 0,
      first_time_order: 0, minimum_amount: null, minimum_amount_currency: null, limit_to_customers: 0, customer_id: null,
      limit_to_affiliate: 0, is_auto_generated: 0, created_at: createdAt, updated_at: createdAt,
    }];
    codeStrings.push(code);
  }

  const referralIds: string[] = [];
  for (let r = 0; r < size.referrals; r++) {
    const id = randomUUID();
    const a = referralAffiliate[r]!;
    const email = `customer${r}.${tag}@customers.example.net`;
    const createdAt = iso(referralTime(r));
    yield ['referrals', {
      id, program_id: program.id, affiliate_id: affiliateIds[a], link_id: linkIds[a], promotional_code_id: null, name: `Customer ${r}`,
      email, email_key: email, referred_user_external_id: `cus_${tag}${r}`, plan: 'pro', status: 'active', created_at: createdAt, updated_at: createdAt,
    }];
    referralIds.push(id);
  }
  for (let j = 0; j < size.sales; j++) {
    const r = saleReferral(j);
    const a = referralAffiliate[r]!;
    yield ['sales', {
      program_id: program.id, affiliate_id: affiliateIds[a], referral_id: referralIds[r], link_id: linkIds[a], promotional_code_id: null,
      external_id: `ch_${tag}${j}`, external_invoice_id: `in_${tag}${j}`, name: `Customer ${r}`, email: `customer${r}.${tag}@customers.example.net`,
      total_earned: saleAmount(j), commission_rate: rate, commission: commissionFor(saleAmount(j), rate), created_at: iso(saleTime(j)),
    }];
  }
  return { id: program.id, token: program.token, commissionRate: rate, affiliateIds, referralIds, referralAffiliate, codes: codeStrings };
}
