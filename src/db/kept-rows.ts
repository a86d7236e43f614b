// Kept aggregate rows (sale_days, unpaid_days, affiliate_counts: issue 31) are moved by
// upserts adding to their sums. A write that moves several merges its changes per row first and
// takes the rows in one order (their key's): two transactions that move several rows lock them
// alike and never wait for each other in a circle, and a row whose changes cancel is not written.

/**
 * `changes` merged per row (`keyOf`), their `sums` added up, in key order; rows whose sums all
 * come to 0 are left out.
 */
export function mergedInKeyOrder<C extends object>(changes: readonly C[], keyOf: (change: C) => string, sums: readonly (keyof C & string)[]): C[] {
  const merged = new Map<string, C>();
  for (const change of changes) {
    const key = keyOf(change);
    const row = merged.get(key);
    if (!row) merged.set(key, { ...change });
    else for (const sum of sums) (row[sum] as number) += change[sum] as number;
  }
  return [...merged.keys()]
    .sort()
    .map((key) => merged.get(key)!)
    .filter((row) => sums.some((sum) => (row[sum] as number) !== 0));
}
