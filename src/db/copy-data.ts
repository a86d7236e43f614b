import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.ts';
import type { DatabaseHandle } from './database.ts';
import { migrateToLatest } from './migrate.ts';

// Moves every row from one database to another (SQLite → PostgreSQL, or back): both are
// migrated to the same schema, the target must be empty, and the copy is one transaction on
// the target, so a failure leaves it empty. Rows are read in key order, in batches.

/** Tables in foreign-key order, each with the columns that order it uniquely. */
const TABLES: { name: keyof Database; key: string[] }[] = [
  { name: 'users', key: ['id'] },
  { name: 'programs', key: ['id'] },
  { name: 'api_tokens', key: ['id'] },
  { name: 'affiliates', key: ['id'] },
  { name: 'affiliate_links', key: ['id'] },
  { name: 'affiliate_counts', key: ['program_id', 'shard', 'status'] },
  { name: 'coupons', key: ['id'] },
  { name: 'promotional_codes', key: ['id'] },
  { name: 'referrals', key: ['id'] },
  { name: 'sales', key: ['id'] },
  { name: 'sale_refunds', key: ['id'] },
  { name: 'payouts', key: ['id'] },
  { name: 'commission_entries', key: ['id'] },
  { name: 'sale_days', key: ['program_id', 'day', 'shard'] },
  { name: 'unpaid_days', key: ['program_id', 'due_day', 'shard', 'held', 'in_payout'] },
  { name: 'clicks', key: ['id'] },
  { name: 'click_days', key: ['id'] },
  { name: 'events', key: ['id'] },
  { name: 'webhooks', key: ['id'] },
  { name: 'webhook_deliveries', key: ['id'] },
  { name: 'webhook_attempts', key: ['id'] },
  { name: 'webhook_fanout', key: ['program_id'] },
  { name: 'idempotency_keys', key: ['program_id', 'key'] },
  { name: 'mail_outbox', key: ['id'] },
  { name: 'portal_login_tokens', key: ['token_hash'] },
  { name: 'password_reset_tokens', key: ['token_hash'] },
  { name: 'portal_sessions', key: ['id_hash'] },
  { name: 'billing_connections', key: ['program_id', 'provider', 'mode'] },
  { name: 'billing_events', key: ['program_id', 'provider', 'id'] },
  { name: 'billing_customers', key: ['program_id', 'provider', 'id'] },
  { name: 'billing_payments', key: ['program_id', 'payment_intent'] },
  { name: 'billing_disputes', key: ['program_id', 'id'] },
  { name: 'sessions', key: ['id_hash'] },
  { name: 'integrations', key: ['name'] },
  { name: 'authorization_codes', key: ['code_hash'] },
  { name: 'attempt_counters', key: ['key'] },
  // The cursor key: pages a client was walking stay valid after the move.
  { name: 'instance_keys', key: ['name'] },
];

/**
 * Tables of the schema that are not copied row by row: the migrator's own, outbox_state (its one
 * value is set after the copy), SQLite's search indexes with their FTS5 shadow tables (the
 * target's own triggers or trigram indexes index the rows as they are copied), and what
 * triggers keep.
 */
const NOT_COPIED = new Set([
  'tandem_migrations', 'tandem_migrations_lock', 'outbox_state',
  ...['sales_search', 'referrals_search', 'affiliates_search'].flatMap((index) => [index, ...['config', 'data', 'docsize', 'idx'].map((part) => `${index}_${part}`)]),
  // Kept by triggers on affiliates: the target's fill it as the affiliates are copied.
  'affiliate_counter_totals',
]);

// Rows per read and per INSERT: 1000 rows × at most 20 columns (promotional_codes, the widest
// table) bind 20,000 parameters, under SQLite's 32,766 and PostgreSQL's 65,535.
const BATCH = 1000;

/**
 * The hand-kept list above must name every table of the schema: a table added by a migration
 * and forgotten here would otherwise be left behind silently.
 */
async function assertEveryTableListed(db: Kysely<Database>): Promise<void> {
  const listed = new Set<string>(TABLES.map((t) => t.name));
  const tables = await db.introspection.getTables();
  const forgotten = tables.map((t) => t.name).filter((name) => !listed.has(name) && !NOT_COPIED.has(name));
  if (forgotten.length > 0) throw new CopyError(`tandem migrate-data does not know the table(s) ${forgotten.join(', ')}: add them to TABLES in src/db/copy-data.ts`);
}

export class CopyError extends Error {}

/** `id=…` or `(program_id, key)=(…, …)`: which row, in the words of the table's key. */
function describeKey(key: string[], row: Record<string, unknown>): string {
  const values = key.map((k) => JSON.stringify(row[k] instanceof Date ? (row[k] as Date).toISOString() : row[k]));
  return key.length === 1 ? `${key[0]}=${values[0]}` : `(${key.join(', ')})=(${values.join(', ')})`;
}

/** The database's reason, on one line and short enough for a terminal. */
function reasonOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

/**
 * Inserts one batch. When the target refuses it, the batch is undone (a savepoint: on
 * PostgreSQL a failed statement would otherwise abort the whole copy's transaction) and its
 * rows are inserted one at a time, so the error can name the table and the key of the row the
 * target refuses — the operator can then find and fix that row in the source.
 */
async function insertBatch(tx: Kysely<Database>, name: keyof Database, key: string[], rows: Record<string, unknown>[]): Promise<void> {
  await sql`savepoint copy_batch`.execute(tx);
  try {
    await tx.insertInto(name).values(rows as never).execute();
    await sql`release savepoint copy_batch`.execute(tx);
    return;
  } catch {
    await sql`rollback to savepoint copy_batch`.execute(tx);
  }
  for (const row of rows) {
    await sql`savepoint copy_row`.execute(tx);
    try {
      await tx.insertInto(name).values(row as never).execute();
      await sql`release savepoint copy_row`.execute(tx);
    } catch (error) {
      throw new CopyError(`cannot copy table ${name}, row ${describeKey(key, row)}: ${reasonOf(error)} (nothing was copied; fix that row in the source and run again)`);
    }
  }
  await sql`release savepoint copy_batch`.execute(tx);
}

export interface CopyReport {
  tables: Record<string, number>;
}

async function countRows(db: Kysely<Database>, table: keyof Database): Promise<number> {
  const row = await db.selectFrom(table).select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function copyData(from: DatabaseHandle, to: DatabaseHandle, onProgress?: (table: string, copied: number) => void): Promise<CopyReport> {
  await migrateToLatest(from.db as never);
  await migrateToLatest(to.db as never);
  await assertEveryTableListed(from.db);
  for (const { name } of TABLES) {
    if ((await countRows(to.db, name)) > 0) throw new CopyError(`the target database is not empty (table ${name} has rows); copy into a fresh database`);
  }
  const tables: Record<string, number> = {};
  await to.db.transaction().execute(async (tx) => {
    for (const { name, key } of TABLES) {
      let copied = 0;
      let after: unknown[] | undefined;
      for (;;) {
        let q = from.db.selectFrom(name).selectAll();
        if (after) {
          const columns = sql.join(key.map((k) => sql.ref(k)));
          q = q.where(sql<boolean>`(${columns}) > (${sql.join(after)})`);
        }
        const rows = (await q.orderBy(sql.join(key.map((k) => sql.ref(k)))).limit(BATCH).execute()) as Record<string, unknown>[];
        if (rows.length === 0) break;
        await insertBatch(tx, name, key, rows);
        copied += rows.length;
        onProgress?.(name, copied);
        const last = rows[rows.length - 1]!;
        after = key.map((k) => last[k]);
      }
      tables[name] = copied;
    }
    // The event sequence continues where the source's stopped (a poller's cursor stays valid).
    const { last_sequence } = await from.db.selectFrom('outbox_state').select('last_sequence').where('id', '=', 1).executeTakeFirstOrThrow();
    await tx.updateTable('outbox_state').set({ last_sequence }).where('id', '=', 1).execute();
    if (to.dialect === 'postgres') {
      // Integer ids were copied as they were; new rows continue after the largest.
      for (const table of ['sales', 'commission_entries', 'webhook_deliveries', 'webhook_attempts']) {
        await sql`select setval(pg_get_serial_sequence(${table}, 'id'), coalesce((select max(id) from ${sql.table(table)}), 0) + 1, false)`.execute(tx);
      }
    }
  });
  for (const { name } of TABLES) {
    const [source, target] = [await countRows(from.db, name), await countRows(to.db, name)];
    if (source !== target) throw new CopyError(`table ${name}: ${source} rows in the source but ${target} in the target`);
  }
  return { tables };
}
