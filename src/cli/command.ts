import type { Config } from '../config.ts';
import { openDatabase, type DatabaseHandle } from '../db/database.ts';
import { migrateToLatest } from '../db/migrate.ts';
import { isUuid } from '../domain/ids.ts';

// What a command of the operator command line is. The table of commands (commands/*.ts) is the
// one source of truth: parsing, the checks of required flags and allowed values, the usage line
// and the help page are all made from it.

/** A bad command line (unknown command or flag, missing or malformed flag): exit status 2. */
export class UsageError extends Error {}

export type Options = Record<string, string | string[] | boolean | undefined>;

/** A flag of a command: what it means, and either that it is required or what applies without it. */
export type Flag = {
  /** One line: what the flag sets. */
  description: string;
  /** The value's placeholder in the usage line (E, ID, N); a flag without one is a switch. */
  value?: string;
  /** May be given several times (the values are collected in order). */
  multiple?: true;
  /** The only values accepted; anything else is a usage error. */
  choices?: readonly string[];
} & ({ required: true } | { default: string });

export interface Command {
  /** One line for the list of commands (tandem --help). */
  summary: string;
  /** One sentence for the command's own help page. */
  description: string;
  flags: Record<string, Flag>;
  /** One concrete invocation, as typed. */
  example: string;
  /** Returns what to print (text, or the JSON object with --json); long-running commands return nothing. */
  run(config: Config, options: Options): Promise<{ text: string; json: unknown } | void>;
}

/** The flags every command accepts besides its own. */
export const COMMON_FLAGS = {
  json: { description: 'print one JSON object on the last line of stdout (errors too, as {"error": …})', default: 'off: text' },
  help: { description: 'print this help and exit', default: 'off' },
} as const satisfies Record<string, Flag>;

/** A string flag's value (required ones are checked before the command runs). */
export function text(options: Options, name: string): string {
  const value = options[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

export function optionalText(options: Options, name: string): string | undefined {
  const value = options[name];
  return typeof value === 'string' ? value : undefined;
}

export function optionalNumber(options: Options, name: string): number | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  const number = Number(value);
  if (typeof value !== 'string' || value.trim() === '' || !Number.isFinite(number)) throw new UsageError(`--${name} must be a number`);
  return number;
}

/** A whole number, or `none` (null) for "no limit". */
export function optionalCount(options: Options, name: string): number | null | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  const number = optionalNumber(options, name)!;
  if (!Number.isInteger(number)) throw new UsageError(`--${name} must be a whole number or none`);
  return number;
}

/** A flag holding an id (a UUID), lower-cased. */
export function uuid(options: Options, name: string, what: string): string {
  const id = text(options, name);
  if (!isUuid(id)) throw new UsageError(`--${name} must be ${what} id (a UUID)`);
  return id.toLowerCase();
}

export async function withMigratedDatabase<T>(config: Config, work: (database: DatabaseHandle) => Promise<T>): Promise<T> {
  const database = openDatabase(config);
  try {
    await migrateToLatest(database.db as never);
    return await work(database);
  } finally {
    await database.close();
  }
}

/** Rows as aligned columns under a header, two spaces apart. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  return [header, ...rows].map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}

/** An ISO timestamp as "2026-11-27 09:30" (UTC), or "never". */
export function minute(iso: string | null): string {
  return iso === null ? 'never' : `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
}
