/**
 * Where "now" comes from, for every timestamp written and every rule that expires. The app
 * receives one (AppServices.clock) and hands it on (ProgramContext.clock, or a parameter), so
 * tests can move time forward instead of waiting. Nothing else reads the system time
 * (enforced by eslint).
 */
export type Clock = () => Date;
export const systemClock: Clock = () => new Date();

/** Normalises a stored timestamp (text on SQLite, Date on PostgreSQL) to the API's form. */
export function toIso(value: string | Date): string {
  // Text timestamps are written by nowIso() or normalised on input, so they are already in form.
  return typeof value === 'string' ? value : value.toISOString();
}

export function toIsoOrNull(value: string | Date | null): string | null {
  return value === null ? null : toIso(value);
}
