import { Migrator, type Kysely, type Migration, type MigrationResultSet } from 'kysely';
import * as initial from './migrations/2026-11-22T0300-initial.ts';
import * as idempotencyKeys from './migrations/2026-11-22T0400-idempotency-keys.ts';

// Migrations are listed here rather than read from a folder, so they work the same
// whether the code runs from TypeScript sources or a bundle. Names sort by time.
const migrations: Record<string, Migration> = {
  '2026-11-22T0300-initial': initial,
  '2026-11-22T0400-idempotency-keys': idempotencyKeys,
};

export class MigrationError extends Error {}

export async function migrateToLatest(db: Kysely<unknown>): Promise<string[]> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'tandem_migrations',
    migrationLockTableName: 'tandem_migrations_lock',
  });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  const failed = result.results?.find((r) => r.status === 'Error');
  if (result.error || failed) {
    const reason = result.error instanceof Error ? result.error.message : String(result.error ?? 'unknown error');
    throw new MigrationError(`migration ${failed?.migrationName ?? ''} failed: ${reason}`.replace('  ', ' '));
  }
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
