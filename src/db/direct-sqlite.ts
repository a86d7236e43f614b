import type SqliteDatabase from 'better-sqlite3';
import { SqliteAdapter, type DialectAdapter, type QueryResult, type SqliteDialectConfig } from 'kysely';

// The direct path of compiled queries on SQLite: database.ts builds it into the connection it
// opens, compiled-query.ts runs queries through it. It stands apart from both, so the query
// layer does not import the file that opens the database, which imports the query layer.

/** A better-sqlite3 connection that reuses prepared statements (database.ts, `withStatementCache`). */
export type CachedSqlite = SqliteDialectConfig['database'] & { prepare(text: string): SqliteDatabase.Statement };

/**
 * Compiled queries (compiled-query.ts) on SQLite run their statement at once, synchronously,
 * instead of through Kysely's connection queue: each query there costs a chain of promises, a
 * new executor and a wait for the connection (measured: the affiliate lookup 12.7 → 11.8 µs in
 * process; a sale runs eight queries). Doing so is the same as queuing only when it cannot interleave with a transaction: a
 * transaction's own query runs while its transaction is open (group commit runs one member at
 * a time), a query outside any transaction only while none is open. Otherwise `run` says no and
 * the query waits its turn through Kysely as before.
 */
export class DirectSqlite {
  /** Between a transaction's BEGIN and its COMMIT or ROLLBACK (kept by the driver, database.ts). */
  transactionOpen = false;

  constructor(private readonly database: CachedSqlite) {}

  /** The result of `text` with `parameters`, or undefined when it has to wait its turn. */
  run(text: string, parameters: readonly unknown[], inTransaction: boolean): QueryResult<unknown> | undefined {
    if (inTransaction !== this.transactionOpen) return undefined;
    const statement = this.database.prepare(text);
    if (statement.reader) return { rows: statement.all(parameters) };
    const { changes, lastInsertRowid } = statement.run(parameters);
    return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
  }
}

/** The direct runner of `db`'s SQLite connection; undefined on PostgreSQL. */
export function directSqliteOf(db: { getExecutor(): { readonly adapter: DialectAdapter } }): DirectSqlite | undefined {
  const adapter = db.getExecutor().adapter;
  return adapter instanceof DirectSqliteAdapter ? adapter.direct : undefined;
}

/** The adapter of a SQLite database whose compiled queries may run directly (database.ts makes it). */
export class DirectSqliteAdapter extends SqliteAdapter {
  constructor(readonly direct: DirectSqlite) {
    super();
  }
}
