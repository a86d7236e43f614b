import { setImmediate } from 'node:timers/promises';
import { sql, type Kysely, type QueryExecutorProvider } from 'kysely';
import { dialectOf } from './dialect.ts';
import { reindexRowidSearchTables } from './text-search.ts';

// The database's own upkeep, one function per chore, each knowing its dialect:
// - planner statistics: SQLite keeps none until ANALYZE runs, and without them it picks a
//   program-wide index over a selective one (issue 31: the portal, the affiliate page and the
//   sales CSV read a whole program of a million sales). `PRAGMA optimize` analyzes the tables
//   whose statistics are missing or stale, within a bounded number of rows per index, so it is
//   cheap at any size. PostgreSQL's autovacuum keeps its statistics itself.
// - free space: a purge of millions of rows leaves SQLite's file as large as before (free
//   pages) and PostgreSQL's tables full of dead rows that the next index scan must step over.

type AnyDb = { getExecutor(): { readonly adapter: unknown } } & QueryExecutorProvider;

/** Pages handed back per `incremental_vacuum` step: a step takes a few milliseconds. */
const VACUUM_STEP_PAGES = 512;

/**
 * Brings the planner's statistics up to date where they are missing or stale (SQLite; a no-op on
 * PostgreSQL). The per-value samples ANALYZE also gathers (sqlite_stat4, as better-sqlite3
 * builds SQLite) are dropped and the statistics reloaded, so the planner keeps only the
 * per-index averages (sqlite_stat1): with the samples, a statement whose plan could depend on a
 * bound value is prepared again whenever that value changes — every cached statement, every
 * request (measured: a sale cost 27 % more CPU). The averages alone pick the selective indexes.
 */
export async function refreshPlannerStatistics(db: AnyDb): Promise<void> {
  if (dialectOf(db) !== 'sqlite') return;
  await sql`pragma optimize`.execute(db);
  if (await hasSampleTable(db)) {
    await sql`delete from sqlite_stat4`.execute(db);
    await sql`analyze sqlite_schema`.execute(db);
  }
}

async function hasSampleTable(db: AnyDb): Promise<boolean> {
  const found = await sql<{ n: number }>`select count(*) as n from sqlite_schema where name = 'sqlite_stat4'`.execute(db);
  return Number(found.rows[0]?.n) > 0;
}

/**
 * SQLite: hands free pages back to the file system, a few hundred at a time with a turn of the
 * event loop between steps, until none are left or `budgetMs` has passed; returns the pages
 * freed. Only a file with `auto_vacuum = incremental` (every file Tandem creates; an older one
 * after `tandem vacuum`) can do this. PostgreSQL: 0 (VACUUM reuses the space in place).
 */
export async function reclaimFreePages(db: AnyDb, budgetMs: number): Promise<number> {
  if (dialectOf(db) !== 'sqlite') return 0;
  const mode = await sql<{ auto_vacuum: number }>`pragma auto_vacuum`.execute(db);
  if (Number(mode.rows[0]?.auto_vacuum) !== 2) return 0;
  const deadline = performance.now() + budgetMs;
  let free = await freePages(db);
  let freed = 0;
  for (let step = 0; free > 0 && performance.now() < deadline; step++) {
    if (step > 0) await setImmediate(); // requests waiting meanwhile go first
    await sql`pragma incremental_vacuum(${sql.lit(VACUUM_STEP_PAGES)})`.execute(db);
    const left = await freePages(db);
    freed += free - left;
    free = left;
  }
  return freed;
}

/**
 * After a purge deleted many rows of `tables`: PostgreSQL vacuums and analyzes them now rather
 * than when autovacuum gets to them (the first index scan after a purge of two million events
 * stepped over every dead row: 8 s). SQLite needs nothing here (reclaimFreePages gives the space back).
 */
export async function cleanUpAfterPurge(db: AnyDb, tables: readonly string[]): Promise<void> {
  if (dialectOf(db) !== 'postgres' || tables.length === 0) return;
  await withoutStatementTimeout(db, (connection) => sql`vacuum (analyze) ${sql.join(tables.map((table) => sql.table(table)))}`.execute(connection));
}

/**
 * `tandem vacuum`: rewrites the database compactly. SQLite: switches the file to incremental
 * auto-vacuum (so the maintenance worker can hand purged space back from then on) and runs
 * VACUUM, which blocks writers while it copies the file, then indexes the searches kept by
 * implicit rowid again (VACUUM may renumber those); PostgreSQL: `VACUUM (ANALYZE)`, which
 * blocks no one.
 */
export async function vacuumDatabase(db: AnyDb): Promise<void> {
  if (dialectOf(db) === 'sqlite') {
    await sql`pragma auto_vacuum = incremental`.execute(db);
    await sql`vacuum`.execute(db);
    await reindexRowidSearchTables(db as unknown as Kysely<unknown>);
    await refreshPlannerStatistics(db);
  } else {
    await withoutStatementTimeout(db, (connection) => sql`vacuum (analyze)`.execute(connection));
  }
}

/** Runs `work` on one connection whose statement timeout is lifted meanwhile: a VACUUM of a big table takes longer than a request may. */
async function withoutStatementTimeout(db: AnyDb, work: (connection: AnyDb) => Promise<unknown>): Promise<void> {
  await (db as unknown as Kysely<unknown>).connection().execute(async (connection) => {
    await sql`set statement_timeout = 0`.execute(connection);
    try {
      await work(connection);
    } finally {
      await sql`reset statement_timeout`.execute(connection);
    }
  });
}

async function freePages(db: AnyDb): Promise<number> {
  const result = await sql<{ freelist_count: number }>`pragma freelist_count`.execute(db);
  return Number(result.rows[0]?.freelist_count ?? 0);
}
