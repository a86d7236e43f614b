import { after, before } from 'node:test';
import type { Kysely } from 'kysely';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import type { Database } from '../../src/db/schema.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { createProgram, getProgram, toProgramContext } from '../../src/modules/programs/program.service.ts';
import type { ProgramContext } from '../../src/domain/program-context.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { createTestDatabase, type TestDatabase } from './test-database.ts';

// Migration tests: a fresh database of the leg's dialect, migrated to the latest schema, with
// no server on it; a test then stores what an older version stored and runs a migration's
// `up` again over it.

/** Opens a migrated database before the file's tests and drops it after; call at the top level. */
export function useMigratedDatabase(): () => Kysely<Database> {
  let database: TestDatabase | undefined;
  let handle: DatabaseHandle | undefined;
  before(async () => {
    database = await createTestDatabase();
    handle = openDatabase({ databaseUrl: database.url });
    await migrateToLatest(handle.db as unknown as Kysely<unknown>);
  });
  after(async () => {
    await handle?.close();
    await database?.drop();
  });
  return () => handle!.db;
}

/** An owner and a program, made through the services, as the services' first argument expects. */
export async function seedProgram(db: Kysely<Database>): Promise<ProgramContext> {
  const user = await createUser(db, { email: 'owner@example.com', password: 'a long password' });
  const { id } = await createProgram(db, { ownerUserId: user.id, name: 'Old', domain: 'old.example' });
  return toProgramContext(await getProgram(db, id), systemClock);
}

/** The same program with its clock stopped at `instant`: what it writes is dated then. */
export const programAt = (program: ProgramContext, instant: string): ProgramContext => ({ ...program, clock: () => new Date(instant) });
