import { readFileSync } from 'node:fs';
import { COMMON_FLAGS, type Command, type Flag } from './command.ts';
import { commands } from './command-table.ts';
import { PACKAGE_JSON } from '../paths.ts';

// The help pages, written from the command table: what parses a command line also documents it.

/** package.json's version. */
export function version(): string {
  return (JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { version: string }).version;
}

function flagUsage(name: string, flag: Flag): string {
  const value = flag.choices ? flag.choices.join('|') : flag.value;
  const text = value ? `--${name} ${value}` : `--${name}`;
  if ('required' in flag) return flag.multiple ? `${text} [--${name} ${value} …]` : text;
  return flag.multiple ? `[${text} …]` : `[${text}]`;
}

export function usageLine(name: string, command: Command): string {
  return ['tandem', name, ...Object.entries(command.flags).map(([flag, spec]) => flagUsage(flag, spec)), '[--json]'].join(' ');
}

function flagLines(flags: Record<string, Flag>): string[] {
  const entries = Object.entries(flags).map(([name, flag]) => {
    const value = flag.choices ? flag.choices.join('|') : flag.value;
    const left = name === 'help' ? '-h, --help' : `--${name}${value ? ` ${value}` : ''}`;
    return [left, `${flag.description}; ${'required' in flag ? 'required' : `default: ${flag.default}`}`] as const;
  });
  const width = Math.max(...entries.map(([left]) => left.length));
  return entries.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`);
}

function commandList(names: string[]): string[] {
  const width = Math.max(...names.map((name) => name.length));
  return names.map((name) => `  ${name.padEnd(width)}  ${commands[name]!.summary}`);
}

export function globalHelp(): string {
  return [
    `tandem ${version()}: the operator command line of Tandem, the self-hosted affiliate-program service.`,
    '',
    'Usage: tandem <command> [flags] [--json]',
    '',
    'Commands:',
    ...commandList(Object.keys(commands)),
    '',
    'Every command accepts --json (one JSON object on the last line of stdout) and -h, --help.',
    'tandem help <command> (or tandem <command> --help) shows its flags and an example; tandem --version the version.',
    'The database and server are configured in the environment (DATABASE_URL, PORT, …; see README.md).',
    'Exit status: 0 done, 1 failed (not found, refused value, database), 2 usage error (unknown command or flag, missing or malformed flag).',
  ].join('\n');
}

/** The commands of a group (`tandem help program`). */
export function groupHelp(group: string): string {
  const names = Object.keys(commands).filter((name) => name.startsWith(`${group} `));
  return [`tandem ${group} commands:`, ...commandList(names), '', `Run tandem help ${group} <command> for its flags and an example.`].join('\n');
}

export function commandHelp(name: string): string {
  const command = commands[name]!;
  return [
    `Usage: ${usageLine(name, command)}`,
    '',
    command.description,
    '',
    'Flags:',
    ...flagLines({ ...command.flags, ...COMMON_FLAGS }),
    '',
    'Example:',
    `  ${command.example}`,
  ].join('\n');
}

/**
 * The candidate nearest to what was typed, when it is near enough to be a likely typo: at most a
 * third of its characters off (two for short words), or what was typed begins it.
 */
export function nearest(typed: string, candidates: readonly string[]): string | undefined {
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = typed.length >= 3 && candidate.startsWith(typed) ? 1 : editDistance(typed, candidate);
    if (!best || distance < best.distance) best = { candidate, distance };
  }
  return best && best.distance <= Math.max(2, Math.floor(typed.length / 3)) ? best.candidate : undefined;
}

/** Levenshtein distance, with a swap of two neighbouring characters counting as one edit (emial → email). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}
