import { randomBytes } from 'node:crypto';
import type { Db } from './transaction.ts';

/**
 * The instance's key named `name` (32 random bytes): made by the first process that asks (an
 * insert that does nothing when another process made it first), then read, so every process
 * on the database signs with the same key.
 */
export async function instanceKey(db: Db, name: string): Promise<Buffer> {
  await db
    .insertInto('instance_keys')
    .values({ name, value: randomBytes(32).toString('base64url') })
    .onConflict((conflict) => conflict.column('name').doNothing())
    .execute();
  const { value } = await db.selectFrom('instance_keys').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return Buffer.from(value, 'base64url');
}
