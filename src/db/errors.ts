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
