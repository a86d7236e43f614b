import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { CompiledQuery, Kysely, PostgresDialect, SqliteDialect, SqliteDriver, sql, type DatabaseConnection, type DialectAdapter, type Driver, type SqliteDialectConfig } from 'kysely';
import type { Config } from '../config.ts';
import type { Database } from './schema.ts';
import type { Dialect } from './dialect.ts';
import { listenPostgres, watchSqliteChanges, type ChangeWatch } from './change-watch.ts';
import { preparedStatementName } from './compiled-query.ts';
import { DirectSqlite, DirectSqliteAdapter, type CachedSqlite } from './direct-sqlite.ts';
import { shareProgramsOf } from './program-share.ts';

export interface DatabaseHandle {
  readonly db: Kysely<Database>;
  readonly dialect: Dialect;
  /** True when the database answers a trivial query. */
  ping(): Promise<boolean>;
  /**
   * Calls `onChange` when another process announces a change on `channel` (PostgreSQL NOTIFY,
   * see change-watch.ts) or, on SQLite, when any other connection wrote the file.
   */
  watchChanges(channel: string, onChange: () => void): ChangeWatch;
  close(): Promise<void>;
}

export type DatabaseOptions = Pick<Config, 'databaseUrl'> &
  Partial<Pick<Config, 'databasePoolSize' | 'databaseStatementTimeoutMs' | 'databaseSsl' | 'databasePreparedStatements'>>;

/** Opens the database named by DATABASE_URL: `sqlite:<path>` or `postgres://…`. */
export function openDatabase(options: DatabaseOptions): DatabaseHandle {
  const url = options.databaseUrl;
  if (url.startsWith('sqlite:')) {
    const { db, connection } = openSqlite(url.slice('sqlite:'.length));
    return handle(db, 'sqlite', (_channel, onChange) => watchSqliteChanges(connection, onChange));
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    const clientConfig = { connectionString: url, ...sslOption(options) };
    const db = openPostgres(options);
    return handle(db, 'postgres', (channel, onChange) =>
      listenPostgres(clientConfig, channel, onChange, async (payload) => {
        await sql`select pg_notify(${channel}, ${payload})`.execute(db);
      }),
    );
  }
  throw new Error(`unsupported DATABASE_URL scheme: ${url.split(':')[0]}`);
}

function handle(db: Kysely<Database>, dialect: Dialect, watchChanges: DatabaseHandle['watchChanges']): DatabaseHandle {
  return {
    db,
    dialect,
    watchChanges,
    async ping() {
      try {
        await sql`select 1`.execute(db);
        return true;
      } catch {
        return false;
      }
    },
    close: () => db.destroy(),
  };
}

/** The pragmas every connection to a Tandem SQLite file runs with (the bench's baseline too). */
export function configureSqlite(connection: SqliteDatabase.Database): void {
  // Set before the first table exists (a no-op on an older file until `tandem vacuum`): the
  // maintenance worker can then hand the pages a purge freed back to the file system.
  connection.pragma('auto_vacuum = INCREMENTAL');
  // WAL lets readers (a second CLI process, a backup) work beside the server; NORMAL sync
  // is durable across process crashes, which is the embedded default's promise.
  connection.pragma('journal_mode = WAL');
  connection.pragma('synchronous = NORMAL');
  connection.pragma('foreign_keys = ON');
  connection.pragma('busy_timeout = 5000');
}

function openSqlite(path: string): { db: Kysely<Database>; connection: SqliteDatabase.Database } {
  const file = path === ':memory:' ? path : resolve(path);
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const connection = new SqliteDatabase(file);
  configureSqlite(connection);
  // Statistics for the planner, where missing or stale (db/upkeep.ts says why, and why only the
  // per-index averages are kept): the form SQLite recommends when a connection opens, bounded in
  // the rows it reads.
  connection.pragma('optimize = 0x10002');
  if (connection.prepare("select 1 from sqlite_schema where name = 'sqlite_stat4'").get()) connection.exec('delete from sqlite_stat4; analyze sqlite_schema');
  return { db: new Kysely<Database>({ dialect: new ImmediateSqliteDialect(withStatementCache(connection)) }), connection };
}

// Kysely's SQLite driver prepares every query anew, and preparing costs more than running a
// point query (measured: the affiliate lookup takes ~75 µs to prepare and ~25 µs to run).
// Statements are reused by SQL text; the cache is bounded because `in (?, ?, …)` lists make
// their text vary.
const STATEMENT_CACHE_SIZE = 500;

function withStatementCache(connection: SqliteDatabase.Database): CachedSqlite {
  const statements = new Map<string, SqliteDatabase.Statement>();
  return {
    close: () => connection.close(),
    prepare(text: string) {
      let statement = statements.get(text);
      // A statement still being iterated (a streamed query) cannot run twice at once.
      if (statement === undefined || statement.busy) {
        statement = connection.prepare(text);
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!);
        statements.set(text, statement);
      }
      return statement;
    },
  };
}


// Transactions begin IMMEDIATE: they take SQLite's write lock up front, so a transaction of
// another process waits for it (busy_timeout) instead of failing with "database is locked"
// when it reads first and then finds it cannot upgrade its outdated snapshot to a writer.
class ImmediateSqliteDriver extends SqliteDriver {
  constructor(
    config: SqliteDialectConfig,
    private readonly direct: DirectSqlite,
  ) {
    super(config);
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    this.direct.transactionOpen = true;
  }

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await super.commitTransaction(connection);
    this.direct.transactionOpen = false;
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await super.rollbackTransaction(connection);
    } finally {
      this.direct.transactionOpen = false;
    }
  }
}

class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  readonly #direct: DirectSqlite;
  constructor(database: CachedSqlite) {
    const config = { database };
    super(config);
    this.#config = config;
    this.#direct = new DirectSqlite(database);
  }
  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#config, this.#direct);
  }
  override createAdapter(): DialectAdapter {
    return new DirectSqliteAdapter(this.#direct);
  }
}

// PostgreSQL values are read in the same shapes SQLite gives, so the code above the
// repositories never branches on the dialect: bigint → number (all our integers are far
// below 2^53), timestamptz → ISO string with milliseconds, boolean → 1/0.
const { types } = pg;
const parsers: Record<number, (value: string) => unknown> = {
  [types.builtins.INT8]: (value) => Number(value),
  [types.builtins.TIMESTAMPTZ]: (value) => new Date(value).toISOString(),
  [types.builtins.BOOL]: (value) => (value === 't' ? 1 : 0),
};
const pgTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => parsers[oid] ?? types.getTypeParser(oid, format)) as typeof types.getTypeParser,
};

function sslOption(options: DatabaseOptions): { ssl?: { rejectUnauthorized: boolean } } {
  if (options.databaseSsl === 'verify') return { ssl: { rejectUnauthorized: true } };
  if (options.databaseSsl === 'require') return { ssl: { rejectUnauthorized: false } };
  return {};
}

/**
 * The client runs compiled queries (compiled-query.ts) as named prepared statements: pg parses
 * one the first time the connection sees its name and then only binds and executes it.
 */
function usePreparedStatements(client: pg.PoolClient): void {
  const plain = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((text: unknown, values?: unknown, ...rest: unknown[]) => {
    const name = typeof text === 'string' && Array.isArray(values) && rest.length === 0 ? preparedStatementName(text) : undefined;
    return name === undefined ? plain(text, values, ...rest) : plain({ name, text, values });
  }) as typeof client.query;
}

function openPostgres(options: DatabaseOptions): Kysely<Database> {
  const poolSize = options.databasePoolSize ?? 10;
  const timeoutMs = options.databaseStatementTimeoutMs ?? 10_000;
  const pool = new pg.Pool({
    connectionString: options.databaseUrl,
    max: poolSize,
    statement_timeout: timeoutMs,
    // Waiting for a free connection is bounded like a statement: a starved pool fails the
    // request instead of hanging it (and the process's shutdown) forever.
    connectionTimeoutMillis: timeoutMs,
    ...sslOption(options),
    types: pgTypes,
  });
  // An idle client losing its connection (server restart) must not crash the process.
  pool.on('error', () => {});
  if (options.databasePreparedStatements ?? true) pool.on('connect', usePreparedStatements);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  shareProgramsOf(db, poolSize, timeoutMs);
  return db;
}
