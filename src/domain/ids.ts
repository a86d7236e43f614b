import { randomBytes, randomUUID } from 'node:crypto';

export const newId = randomUUID;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** Random URL-safe text with `bytes` bytes of entropy. */
export function randomToken(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * The shard of a program's kept rows an affiliate's writes move (sale_days, unpaid_days,
 * affiliate_counts; affiliate_counter_totals in SQL): the first hex digit of its id, so
 * concurrent writes of different affiliates rarely update the same row.
 */
export const affiliateShardOf = (affiliateId: string): string => affiliateId.slice(0, 1).toLowerCase();
