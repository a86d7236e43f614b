// The command line helps: every command's help page (from the real command table, so a command
// added without help fails here), the version, the nearest command or flag for a typo, exit
// status 2 for usage errors and 1 for failures, and the operator's lists (user, program, key),
// which never show a token's secret. Run as operators run it: ./bin/tandem in a child process
// over a SQLite file.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { commands } from '../../src/cli/main.ts';
import { openDatabase } from '../../src/db/database.ts';
import { authenticateToken, hashToken, issueToken } from '../../src/modules/tokens/token.service.ts';
import { testDialect } from '../helpers/test-database.ts';
import { runTandem, type CliRun } from '../helpers/cli.ts';

const names = Object.keys(commands);
const packageVersion = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** A usage error or failure: exactly this one line on stderr, nothing on stdout, no stack trace. */
function assertOneLine(run: CliRun, code: 1 | 2, line: string | RegExp): void {
  assert.equal(run.code, code, `exit status; stdout ${run.stdout} stderr ${run.stderr}`);
  assert.equal(run.stdout, '');
  const lines = run.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line on stderr, got ${JSON.stringify(run.stderr)}`);
  if (typeof line === 'string') assert.equal(lines[0], line);
  else assert.match(lines[0]!, line);
  assert.doesNotMatch(run.stderr, /\n\s+at |node:internal|\.ts:\d+/, 'no stack trace');
}

/** Checks a command's help page against its entry in the table. */
function assertCommandHelp(name: string, run: CliRun): void {
  const command = commands[name]!;
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stderr, '');
  const lines = run.stdout.split('\n');
  const usage = lines.find((line) => line.startsWith('Usage: '));
  assert.ok(usage?.startsWith(`Usage: tandem ${name}`), `${name}: a usage line, got ${usage}`);
  assert.ok(lines.includes(command.description), `${name}: its description`);
  const flags = { ...command.flags, json: { description: 'print one JSON object', default: '' }, help: { description: 'print this help', default: '' } };
  for (const [flag, spec] of Object.entries(flags)) {
    assert.ok(usage!.includes(`--${flag}`) || flag === 'help', `${name}: --${flag} in the usage line`);
    const line = lines.find((l) => l.startsWith(flag === 'help' ? '  -h, --help ' : `  --${flag} `));
    assert.ok(line, `${name}: a line for --${flag}`);
    assert.ok(line.includes(spec.description), `${name}: --${flag}'s meaning`);
    assert.match(line, 'required' in spec ? /; required$/ : /; default: \S/, `${name}: --${flag}'s default or "required"`);
    if ('default' in spec && spec.default) assert.ok(line.endsWith(`; default: ${spec.default}`), `${name}: --${flag}'s default`);
    for (const choice of (spec as { choices?: readonly string[] }).choices ?? []) assert.ok(line.includes(choice), `${name}: --${flag} may be ${choice}`);
  }
  const example = lines[lines.indexOf('Example:') + 1]?.trim();
  assert.equal(example, command.example, `${name}: its example`);
}

describe('tandem help', { skip: testDialect !== 'sqlite' && 'runs in the SQLite leg only (it makes its own SQLite files)' }, () => {
  let dir: string;
  let env: Record<string, string>;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tandem-cli-help-'));
    env = { DATABASE_URL: `sqlite:${join(dir, 'x.db')}` };
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const tandem = (args: string[]) => runTandem(args, env);

  it('the table gives every command a summary, a sentence, flags with meanings and an example that parses', () => {
    assert.ok(names.length >= 16, `the table has ${names.length} commands`);
    for (const name of names) {
      const command = commands[name]!;
      assert.match(command.summary, /^\S[^\n]{9,100}$/, `${name}: a one-line summary`);
      assert.match(command.description, /^[A-Z][^\n]+\.$/, `${name}: one sentence`);
      for (const [flag, spec] of Object.entries(command.flags)) {
        assert.match(flag, /^[a-z][a-z-]*$/, `${name}: --${flag}`);
        assert.ok(spec.description.trim().length > 5, `${name}: --${flag} has a meaning`);
        assert.ok('required' in spec || spec.default.trim() !== '', `${name}: --${flag} is required or has a default`);
      }
      // The example names the command, then only its own flags, each required one at least once.
      assert.ok(command.example.startsWith(`tandem ${name}`), `${name}: example ${command.example}`);
      const used = [...command.example.matchAll(/ --([a-z-]+)/g)].map((m) => m[1]!);
      for (const flag of used) assert.ok(flag in command.flags || flag === 'json', `${name}: the example's --${flag} is a flag of the command`);
      for (const [flag, spec] of Object.entries(command.flags)) if ('required' in spec) assert.ok(used.includes(flag), `${name}: the example gives the required --${flag}`);
    }
  });

  describe('every command: tandem help <command> and tandem <command> --help print its page', { concurrency: 4 }, () => {
    for (const name of names) {
      it(name, async () => {
        const [help, flag] = await Promise.all([tandem(['help', ...name.split(' ')]), tandem([...name.split(' '), '--help'])]);
        assertCommandHelp(name, help);
        assert.equal(flag.stdout, help.stdout, 'the same page either way');
        assert.equal(flag.code, 0);
      });
    }
  });

  it('-h works like --help, before or after the flags, and wins over a missing required flag', async () => {
    const page = await tandem(['help', 'program', 'update']);
    for (const args of [['program', 'update', '-h'], ['program', 'update', '--program', 'x', '-h'], ['--help', 'program', 'update']]) {
      const run = await tandem(args);
      assert.equal(run.code, 0, args.join(' '));
      assert.equal(run.stdout, page.stdout, args.join(' '));
    }
  });

  it('tandem --help, -h and help list every command with its summary, on stdout, exit 0', async () => {
    const [long, short, word] = await Promise.all([tandem(['--help']), tandem(['-h']), tandem(['help'])]);
    for (const run of [long, short, word]) {
      assert.equal(run.code, 0);
      assert.equal(run.stderr, '');
      assert.equal(run.stdout, long.stdout);
    }
    for (const name of names) assert.match(long.stdout, new RegExp(`^  ${name} +${commands[name]!.summary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'), name);
    assert.match(long.stdout, /Exit status: 0 .*, 1 .*, 2 usage error/);
  });

  it('tandem help <group> lists the group', async () => {
    const run = await tandem(['help', 'key']);
    assert.equal(run.code, 0);
    for (const name of names.filter((n) => n.startsWith('key '))) assert.match(run.stdout, new RegExp(`^  ${name} `, 'm'));
    assert.doesNotMatch(run.stdout, /user create/);
  });

  it('--version and tandem version print package.json\'s version', async () => {
    const [flag, word, json] = await Promise.all([tandem(['--version']), tandem(['version']), tandem(['version', '--json'])]);
    assert.equal(flag.code, 0);
    assert.equal(flag.stdout, `tandem ${packageVersion}\n`);
    assert.equal(word.stdout, flag.stdout);
    assert.deepEqual(json.json, { version: packageVersion });
  });

  it('no arguments at all: the global help on stderr, exit 2', async () => {
    const [none, help] = await Promise.all([tandem([]), tandem(['--help'])]);
    assert.equal(none.code, 2);
    assert.equal(none.stdout, '');
    assert.equal(none.stderr, help.stdout);
  });

  describe('usage errors: one line naming the nearest command or flag, exit 2', { concurrency: 4 }, () => {
    const cases: [args: string[], line: string][] = [
      [['progam', 'list'], 'tandem: unknown command "progam list"; did you mean "program list"? Run tandem --help'],
      [['usr', 'create', '--email', 'a@example.com'], 'tandem: unknown command "usr create"; did you mean "user create"? Run tandem --help'],
      [['migrat'], 'tandem: unknown command "migrat"; did you mean "migrate"? Run tandem --help'],
      [['help', 'key', 'lsit'], 'tandem: unknown command "key lsit"; did you mean "key list"? Run tandem --help'],
      [['frobnicate'], 'tandem: unknown command "frobnicate"; run tandem --help'],
      [['key'], 'tandem: "key" needs a subcommand: key create, key list, key revoke; run tandem help key'],
      [['user', 'create', '--emial', 'a@example.com', '--password', 'a long password'], 'tandem: unknown flag --emial for "user create"; did you mean --email?'],
      [['program', 'list', '--ownr', 'a@example.com'], 'tandem: unknown flag --ownr for "program list"; did you mean --owner?'],
      [['key', 'list', '--program-id', randomUUID()], 'tandem: unknown flag --program-id for "key list"; did you mean --program?'],
      [['user', 'list', '--bogus'], 'tandem: unknown flag --bogus for "user list"; run tandem help user list'],
      [['user', 'create', '--email', '--password', 'a long password'], 'tandem: --email needs a value (it is followed by --password; write --email=--password if that is the value); run tandem help user create'],
      [['user', 'list', '--json=yes'], 'tandem: --json takes no value; run tandem help user list'],
      [['program', 'update', '--program', randomUUID(), '--portal-signup', 'opn'], 'tandem: --portal-signup must be one of open, approval, invite, not "opn"; did you mean open?'],
      [['key', 'list', '--program', 'acme'], 'tandem: --program must be a program id (a UUID)'],
      [['program', 'create', '--owner', 'a@example.com', '--name', 'N', '--domain', 'n.example.com', '--commission-rate', 'lots'], 'tandem: --commission-rate must be a number'],
    ];
    for (const [args, line] of cases) {
      it(args.join(' '), async () => assertOneLine(await tandem(args), 2, line));
    }
  });

  describe('a missing required flag: exit 2, naming it', { concurrency: 4 }, () => {
    for (const name of names) {
      const required = Object.entries(commands[name]!.flags).filter(([, spec]) => 'required' in spec);
      if (required.length === 0) continue;
      it(name, async () => {
        const run = await tandem([...name.split(' '), '--json']);
        assert.equal(run.code, 2, run.stderr);
        assert.match(run.stderr, new RegExp(`^tandem: --${required[0]![0]} is required`));
        assert.match(String(run.json.error), new RegExp(`--${required[0]![0]} is required`));
      });
    }
  });

  it('help, versions and usage errors never open the database', () => {
    assert.ok(!existsSync(join(dir, 'x.db')), 'no database file was made');
  });
});

describe('tandem user list, program list, key list', { skip: testDialect !== 'sqlite' && 'runs in the SQLite leg only (it makes its own SQLite files)' }, () => {
  let dir: string;
  let file: string;
  let env: Record<string, string>;
  const tandem = (args: string[]) => runTandem(args, env);
  let acme: string;
  let beta: string;
  const tokens: { id: string; token: string }[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tandem-cli-lists-'));
    file = join(dir, 'x.db');
    env = { DATABASE_URL: `sqlite:${file}` };
    // Migrated once up front: the tests below run commands side by side.
    assert.equal((await tandem(['migrate'])).code, 0);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('empty lists say so, and --json gives empty arrays', async () => {
    const [users, programs, usersJson] = await Promise.all([tandem(['user', 'list']), tandem(['program', 'list']), tandem(['user', 'list', '--json'])]);
    assert.equal(users.code, 0, users.stderr);
    assert.match(users.stdout, /^no users; add one with tandem user create\n$/);
    assert.match(programs.stdout, /^no programs; create one with tandem program create\n$/);
    assert.deepEqual(usersJson.json, { users: [] });
  });

  it('user list: every user, oldest first, the operator marked; never a password or its hash', async () => {
    for (const email of ['first@example.com', 'second@example.com']) assert.equal((await tandem(['user', 'create', '--email', email, '--password', 'a long passphrase'])).code, 0);
    const [text, json] = await Promise.all([tandem(['user', 'list']), tandem(['user', 'list', '--json'])]);
    assert.equal(text.code, 0, text.stderr);
    const lines = text.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID +E-MAIL +CREATED \(UTC\)$/);
    assert.match(lines[1]!, /^[0-9a-f-]{36} {2}first@example\.com {2,}\d{4}-\d\d-\d\d \d\d:\d\d {2}operator$/);
    assert.match(lines[2]!, /^[0-9a-f-]{36} {2}second@example\.com {2}\d{4}-\d\d-\d\d \d\d:\d\d$/);
    assert.equal(lines.length, 3);
    assert.deepEqual(json.json.users.map((u: any) => [u.email, u.operator, Object.keys(u).sort()]), [
      ['first@example.com', true, ['createdAt', 'email', 'id', 'operator']],
      ['second@example.com', false, ['createdAt', 'email', 'id', 'operator']],
    ]);
    assert.doesNotMatch(text.stdout + json.stdout, /scrypt|passphrase/);
  });

  it('program list: every program with its owner, or one owner\'s with --owner; an unknown owner exits 1', async () => {
    acme = (await tandem(['program', 'create', '--owner', 'first@example.com', '--name', 'Acme', '--domain', 'acme.example.com', '--json'])).json.id;
    beta = (await tandem(['program', 'create', '--owner', 'second@example.com', '--name', 'Beta Partners', '--domain', 'beta.example.com', '--currency', 'EUR', '--json'])).json.id;
    const [text, json, mine] = await Promise.all([tandem(['program', 'list']), tandem(['program', 'list', '--json']), tandem(['program', 'list', '--owner', 'SECOND@example.com', '--json'])]);
    assert.equal(text.code, 0, text.stderr);
    const lines = text.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID +NAME +DOMAIN +CURRENCY +OWNER +CREATED \(UTC\)$/);
    assert.ok(lines[1]!.startsWith(`${acme}  Acme `) && lines[1]!.includes(' acme.example.com ') && lines[1]!.includes(' USD ') && lines[1]!.includes(' first@example.com '), lines[1]);
    assert.ok(lines[2]!.startsWith(`${beta}  Beta Partners `) && lines[2]!.includes(' EUR ') && lines[2]!.includes(' second@example.com '), lines[2]);
    assert.deepEqual(json.json.programs.map((p: any) => [p.id, p.name, p.ownerEmail, p.currency]), [
      [acme, 'Acme', 'first@example.com', 'USD'],
      [beta, 'Beta Partners', 'second@example.com', 'EUR'],
    ]);
    assert.deepEqual(mine.json.programs.map((p: any) => p.id), [beta]);
    assertOneLine(await tandem(['program', 'list', '--owner', 'nobody@example.com']), 1, 'tandem: No user with e-mail nobody@example.com.');
  });

  it('key list: id, prefix, name, kind, created, last used and status of every token of the program, never the secret or its hash', async () => {
    for (const name of ['billing', 'zapier-test']) {
      const key = await tandem(['key', 'create', '--program', acme, '--name', name, '--json']);
      assert.equal(key.code, 0, key.stderr);
      tokens.push({ id: key.json.id, token: key.json.token });
    }
    // A connected app's token, and a use of the first key, as the API would record it.
    const database = openDatabase({ databaseUrl: env.DATABASE_URL! });
    try {
      const connect = await issueToken(database.db, { programId: acme, name: 'Zapier', kind: 'connect' });
      tokens.push({ id: connect.id, token: connect.token });
      assert.ok(await authenticateToken(database.db, tokens[0]!.token));
    } finally {
      await database.close();
    }
    assert.equal((await tandem(['key', 'revoke', '--token-id', tokens[1]!.id])).code, 0);
    const other = await tandem(['key', 'create', '--program', beta, '--json']);

    const [text, json] = await Promise.all([tandem(['key', 'list', '--program', acme]), tandem(['key', 'list', '--program', acme, '--json'])]);
    assert.equal(text.code, 0, text.stderr);
    assert.equal(json.code, 0, json.stderr);
    const lines = text.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID +PREFIX +NAME +KIND +CREATED \(UTC\) +LAST USED +STATUS$/);
    assert.equal(lines.length, 4, 'three tokens of this program, none of the other');
    const row = (id: string) => lines.find((line) => line.startsWith(id)) ?? assert.fail(`no row for ${id}`);
    assert.match(row(tokens[0]!.id), new RegExp(`^${tokens[0]!.id} {2}${tokens[0]!.token.slice(0, 10)}… +billing +api_key +\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d {2}\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d +active$`));
    assert.match(row(tokens[1]!.id), / zapier-test +api_key +\S+ \S+ +never +revoked \d{4}-\d\d-\d\d \d\d:\d\d$/);
    assert.match(row(tokens[2]!.id), / Zapier +connect +\S+ \S+ +never +active$/);

    assert.equal(json.json.programId, acme);
    const byId = new Map(json.json.keys.map((k: any) => [k.id, k]));
    assert.deepEqual(json.json.keys.map((k: any) => k.id), [tokens[2]!.id, tokens[1]!.id, tokens[0]!.id], 'newest first');
    for (const key of json.json.keys) assert.deepEqual(Object.keys(key).sort(), ['createdAt', 'createdByEmail', 'id', 'integration', 'kind', 'lastUsedAt', 'name', 'prefix', 'revokedAt']);
    assert.equal((byId.get(tokens[0]!.id) as any).prefix, tokens[0]!.token.slice(0, 10));
    assert.ok(!Number.isNaN(Date.parse((byId.get(tokens[0]!.id) as any).lastUsedAt)), 'the used key has its last use');
    assert.equal((byId.get(tokens[2]!.id) as any).lastUsedAt, null);
    assert.ok((byId.get(tokens[1]!.id) as any).revokedAt);

    // Neither the secret (beyond the prefix every list shows) nor its stored hash, in either mode.
    for (const { token } of [...tokens, { token: String(other.json.token) }]) {
      for (const run of [text, json]) {
        assert.ok(!run.stdout.includes(token), 'the token');
        assert.ok(!run.stdout.includes(token.slice(10)), 'the secret part of the token');
        assert.ok(!run.stdout.includes(hashToken(token)), 'the token\'s hash');
      }
    }
    const db = new SqliteDatabase(file, { readonly: true });
    try {
      for (const { token_hash } of db.prepare('select token_hash from api_tokens').all() as { token_hash: string }[]) {
        assert.ok(!text.stdout.includes(token_hash) && !json.stdout.includes(token_hash), 'no stored hash');
      }
    } finally {
      db.close();
    }
  });

  it('key list of an unknown program exits 1; of a program without keys says so', async () => {
    assertOneLine(await tandem(['key', 'list', '--program', randomUUID()]), 1, 'tandem: Program was not found.');
    const empty = (await tandem(['program', 'create', '--owner', 'first@example.com', '--name', 'Empty', '--domain', 'empty.example.com', '--json'])).json.id;
    const run = await tandem(['key', 'list', '--program', empty]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, 'no keys; create one with tandem key create\n');
  });

  it('a command that fails (a program not found) exits 1 with one line, and {"error"} with --json', async () => {
    const run = await tandem(['program', 'update', '--program', randomUUID(), '--name', 'Nope', '--json']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^tandem: Program was not found\.\n$/);
    assert.deepEqual(run.json, { error: 'Program was not found.' });
  });
});
