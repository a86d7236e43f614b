/**
 * Where "now" comes from for rules that expire (authorization codes). The app receives one
 * (AppServices.clock) so tests can move time forward instead of waiting.
 */
export type Clock = () => Date;
export const systemClock: Clock = () => new Date();

/** Current time as stored and returned: ISO 8601 UTC with milliseconds. */
export function nowIso(): string {
  return new Date().toISOString();
}

/** Normalises a stored timestamp (text on SQLite, Date on PostgreSQL) to the API's form. */
export function toIso(value: string | Date): string {
  // Text timestamps are written by nowIso() or normalised on input, so they are already in form.
  return typeof value === 'string' ? value : value.toISOString();
}

export function toIsoOrNull(value: string | Date | null): string | null {
  return value === null ? null : toIso(value);
}
