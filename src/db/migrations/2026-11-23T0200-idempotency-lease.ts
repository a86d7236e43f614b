import { sql, type Kysely } from 'kysely';
import { dialectOf } from '../dialect.ts';

// When a running Idempotency-Key was last claimed: a claim older than the lease belongs to a
// request that died before committing, and the next retry takes the key over.
export async function up(db: Kysely<unknown>): Promise<void> {
  const time = dialectOf(db) === 'postgres' ? sql`timestamptz(3)` : sql`text`;
  await db.schema.alterTable('idempotency_keys').addColumn('locked_at', time).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('idempotency_keys').dropColumn('locked_at').execute();
}
