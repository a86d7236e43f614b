// Reading two tables in one statement when they share column names (id, created_at, …): the
// joined table's columns are selected under a prefix and split off again afterwards.
// The column sets are Records over the table's keys, so a column added to the schema and not
// here is a type error rather than a silently missing field.

export type ColumnSet<Table> = Record<keyof Table & string, true>;

/** Select-list entries `alias.column as prefixcolumn` for every column of the set. */
export function prefixedColumns<Table>(alias: string, columns: ColumnSet<Table>, prefix: string): `${string}.${string} as ${string}`[] {
  return Object.keys(columns).map((column) => `${alias}.${column} as ${prefix}${column}` as const);
}

/** Splits a joined row into the columns under `prefix` (prefix removed) and all the others. */
export function splitPrefixed(row: Record<string, unknown>, prefix: string): [joined: Record<string, unknown>, own: Record<string, unknown>] {
  const joined: Record<string, unknown> = {};
  const own: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) {
    if (key.startsWith(prefix)) joined[key.slice(prefix.length)] = value;
    else own[key] = value;
  }
  return [joined, own];
}
