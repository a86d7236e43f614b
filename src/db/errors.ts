/**
 * True when a driver error reports a unique-constraint violation (SQLite or PostgreSQL); with
 * `column`, only when that column is part of the violated key (PostgreSQL names the index,
 * SQLite the columns, so indexes are named after the column they make unique).
 */
export function isUniqueViolationOn(error: unknown, column: string): boolean {
  if (!isUniqueViolation(error)) return false;
  const { constraint, message } = error as { constraint?: string; message?: string };
  return (constraint ?? message ?? '').includes(column);
}

/** True when a driver error reports a unique-constraint violation (SQLite or PostgreSQL). */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

/**
 * True when a driver error reports a foreign-key violation: on PostgreSQL, a row this request
 * refers to (an affiliate, a link, a coupon) was deleted by a concurrent request after it was
 * read. SQLite runs transactions one at a time, so there it would be a bug.
 */
export function isForeignKeyViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || code === '23503';
}

/** True when no pooled PostgreSQL connection came free within the wait (pg-pool's timeout). */
export function isPoolExhausted(error: unknown): boolean {
  return error instanceof Error && error.message === 'timeout exceeded when trying to connect';
}
