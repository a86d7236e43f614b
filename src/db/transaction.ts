import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.ts';

export type Db = Kysely<Database>;
export type Tx = Transaction<Database>;

/** The one way to run several statements atomically: commits on return, rolls back on throw. */
export function inTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  return db.transaction().execute(work);
}
