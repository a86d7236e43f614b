import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import type { Database } from './schema.ts';
import type { Dialect } from './dialect.ts';

export interface DatabaseHandle {
  readonly db: Kysely<Database>;
  readonly dialect: Dialect;
  /** True when the database answers a trivial query. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** Opens the database named by a DATABASE_URL (`sqlite:<path>`, `sqlite::memory:`). */
export function openDatabase(databaseUrl: string): DatabaseHandle {
  if (databaseUrl.startsWith('sqlite:')) return openSqlite(databaseUrl.slice('sqlite:'.length));
  throw new Error(`unsupported DATABASE_URL scheme: ${databaseUrl.split(':')[0]}`);
}

function openSqlite(path: string): DatabaseHandle {
  const file = path === ':memory:' ? path : resolve(path);
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const connection = new SqliteDatabase(file);
  // WAL lets readers (a second CLI process, a backup) work beside the server; NORMAL sync
  // is durable across process crashes, which is the embedded default's promise.
  connection.pragma('journal_mode = WAL');
  connection.pragma('synchronous = NORMAL');
  connection.pragma('foreign_keys = ON');
  connection.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: connection }) });
  return {
    db,
    dialect: 'sqlite',
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
