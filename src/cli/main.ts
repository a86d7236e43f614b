import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';
import { MigrationError } from '../db/migrate.ts';
import { CopyError } from '../db/copy-data.ts';
import { ApiError } from '../domain/errors.ts';
import { UsageError, type Command, type Options } from './command.ts';
import { commands } from './command-table.ts';
import { commandHelp, globalHelp, groupHelp, nearest, version } from './help.ts';

// The operator command line: `tandem <command> [flags]`. Every command accepts --json and then
// prints one JSON object on the last line of stdout; help goes to stdout. A failure prints one
// line on stderr (and {"error": …} with --json) and exits 1; a usage error (unknown command or
// flag, missing or malformed flag, no arguments) exits 2.

export { commands };

const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;

/** Switches understood wherever they stand: they take no value and belong to no one command. */
const SWITCHES = new Set(['--json', '--help', '-h', '--version']);

type Outcome = { help: string } | { result: { text: string; json: unknown } | void };

export async function main(argv: string[]): Promise<number> {
  if (argv.length === 0) {
    console.error(globalHelp());
    return EXIT_USAGE;
  }
  const json = argv.includes('--json');
  try {
    const outcome = await interpret(argv);
    if ('help' in outcome) console.log(outcome.help);
    else if (outcome.result) console.log(json ? JSON.stringify(outcome.result.json) : outcome.result.text);
    return 0;
  } catch (error) {
    const reason = describe(error);
    if (json) console.log(JSON.stringify({ error: reason }));
    console.error(`tandem: ${reason}`);
    return error instanceof UsageError ? EXIT_USAGE : EXIT_FAILURE;
  }
}

async function interpret(argv: string[]): Promise<Outcome> {
  const wantsHelp = argv.includes('--help') || argv.includes('-h');
  const rest = argv.filter((arg) => !SWITCHES.has(arg));
  const firstFlag = rest.findIndex((arg) => arg.startsWith('-'));
  const words = firstFlag === -1 ? rest : rest.slice(0, firstFlag);

  if (words[0] === 'help') return { help: helpOn(words.slice(1)) };
  if (words.length === 0) {
    if (wantsHelp) return { help: globalHelp() };
    if (firstFlag !== -1) throw new UsageError(`unknown flag ${rest[firstFlag]}; run tandem --help`);
    if (argv.includes('--version')) return printVersion();
    throw new UsageError('no command given; run tandem --help');
  }
  if (words[0] === 'version' && rest.length === 1) return printVersion();

  const name = commandNamed(words);
  if (wantsHelp) return { help: commandHelp(name) };
  const command = commands[name]!;
  const options = parseFlags(name, command, argv.filter((arg) => arg !== '--json'));
  return { result: await command.run(loadConfig(), options) };
}

function printVersion(): Outcome {
  return { result: { text: `tandem ${version()}`, json: { version: version() } } };
}

/** `tandem help …`: the list of commands, a group's, or one command's page. */
function helpOn(topic: string[]): string {
  if (topic.length === 0) return globalHelp();
  const name = topic.join(' ');
  if (name in commands) return commandHelp(name);
  if (topic.length === 1 && isGroup(name)) return groupHelp(name);
  return commandHelp(commandNamed(topic));
}

function isGroup(word: string): boolean {
  return Object.keys(commands).some((name) => name.startsWith(`${word} `));
}

/** The command the leading words name (two words, else one), or a usage error naming the nearest. */
function commandNamed(words: string[]): string {
  const [first, second] = words as [string, string | undefined];
  const two = second === undefined ? undefined : `${first} ${second}`;
  if (two !== undefined && two in commands) return two;
  if (first in commands) return first;
  const names = Object.keys(commands);
  if (isGroup(first)) {
    const group = names.filter((name) => name.startsWith(`${first} `));
    if (two === undefined) throw new UsageError(`"${first}" needs a subcommand: ${group.join(', ')}; run tandem help ${first}`);
    const near = nearest(two, group);
    if (near) throw new UsageError(`unknown command "${two}"; did you mean "${near}"? Run tandem --help`);
    throw new UsageError(`unknown command "${two}"; the ${first} commands are ${group.join(', ')}. Run tandem --help`);
  }
  for (const typed of [two, first]) {
    const near = typed === undefined ? undefined : nearest(typed, names);
    if (near) throw new UsageError(`unknown command "${typed}"; did you mean "${near}"? Run tandem --help`);
  }
  throw new UsageError(`unknown command "${two ?? first}"; run tandem --help`);
}

/** The command's flags as parseArgs takes them: its own, and the switches every command has. */
function parseArgsOptions(command: Command): NonNullable<ParseArgsConfig['options']> {
  const options: NonNullable<ParseArgsConfig['options']> = { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } };
  for (const [name, flag] of Object.entries(command.flags)) options[name] = { type: flag.value ? 'string' : 'boolean', multiple: flag.multiple ?? false };
  return options;
}

/** Checks the command line against the command's table: known flags, their values, required ones, allowed values. */
function parseFlags(name: string, command: Command, args: string[]): Options {
  const options = parseArgsOptions(command);
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    if (!(token.name in options)) {
      const near = nearest(token.name, Object.keys(options));
      throw new UsageError(`unknown flag ${token.rawName} for "${name}"; ${near ? `did you mean --${near}?` : `run tandem help ${name}`}`);
    }
    const takesValue = options[token.name]!.type === 'string';
    if (takesValue && (token.value === undefined || (!token.inlineValue && token.value.startsWith('-')))) {
      throw new UsageError(`${token.rawName} needs a value${token.value === undefined ? '' : ` (it is followed by ${token.value}; write ${token.rawName}=${token.value} if that is the value)`}; run tandem help ${name}`);
    }
    if (!takesValue && token.value !== undefined) throw new UsageError(`${token.rawName} takes no value; run tandem help ${name}`);
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args, options, strict: true, allowPositionals: true });
  } catch (error) {
    throw new UsageError(`${(error as Error).message.split('\n')[0]!.replace(/\.$/, '')}; run tandem help ${name}`);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== name.split(' ').length) throw new UsageError(`unexpected argument "${positionals.at(-1)}"; run tandem help ${name}`);
  for (const [flagName, flag] of Object.entries(command.flags)) {
    const value = values[flagName];
    const given = ([] as unknown[]).concat(value ?? []);
    if ('required' in flag && (given.length === 0 || given.some((v) => v === ''))) {
      throw new UsageError(`--${flagName} is required${flag.multiple ? ' (repeat it for several)' : ''}; run tandem help ${name}`);
    }
    for (const choice of given) {
      if (flag.choices && !flag.choices.includes(choice as string)) {
        const near = nearest(String(choice), flag.choices);
        throw new UsageError(`--${flagName} must be one of ${flag.choices.join(', ')}, not "${String(choice)}"${near ? `; did you mean ${near}?` : ''}`);
      }
    }
  }
  return values as Options;
}

function describe(error: unknown): string {
  if (error instanceof ApiError) {
    const field = error.errors?.[0];
    return field ? `${field.pointer.replace('#/', '')} ${field.detail}` : error.detail;
  }
  if (error instanceof UsageError || error instanceof ConfigError || error instanceof MigrationError || error instanceof CopyError) return error.message;
  if ((error as { code?: string }).code === 'EADDRINUSE') return `port already in use: ${(error as Error).message}`;
  return error instanceof Error ? error.message.split('\n')[0]! : String(error);
}
