import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import SqliteDatabase from 'better-sqlite3';
import { loadConfig } from '../../src/config.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { testDialect } from '../helpers/test-database.ts';
import { runTandem, type CliRun } from '../helpers/cli.ts';
import { freePort } from '../helpers/server-process.ts';

/** The running server's token cache: short, so a revocation by the CLI shows quickly. */
const TOKEN_CACHE_MS = 500;

// The operator command line, run as operators run it: `./bin/tandem …` in a child process,
// configured through the environment, over a SQLite file in a temp directory.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type Run = CliRun;
const tandem = runTandem;

/**
 * A failed command: one line on stderr naming the reason, no stack trace, and its exit status:
 * 2 for a usage error (the command line itself is wrong), 1 for any other failure.
 */
function assertUsageFailure(run: Run, reason: RegExp, code: 1 | 2): void {
  assert.equal(run.code, code, `exit code; stdout ${run.stdout} stderr ${run.stderr}`);
  const lines = run.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line on stderr, got: ${JSON.stringify(run.stderr)}`);
  assert.match(lines[0]!, /^tandem: \S/);
  assert.match(lines[0]!, reason);
  assert.doesNotMatch(run.stderr + run.stdout, /\n\s+at |node:internal|\.ts:\d+/, 'no stack trace');
}

describe('tandem command line', { skip: testDialect !== 'sqlite' && 'runs in the SQLite leg only (it makes its own SQLite files)' }, () => {
  let dir: string;
  let file: string;
  let env: Record<string, string>;
  let server: RunningServer | undefined;
  const owner = 'Owner@Example.com';
  const password = 'correct horse battery staple';
  let programId: string;

  const count = (table: string): number => {
    const db = new SqliteDatabase(file, { readonly: true });
    try {
      return (db.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n;
    } finally {
      db.close();
    }
  };

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tandem-cli-'));
    file = join(dir, 'x.db');
    env = { DATABASE_URL: `sqlite:${file}` };
  });
  after(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('happy path', () => {
    it('migrate --json applies the migrations once, then reports none', async () => {
      const first = await tandem(['migrate', '--json'], env);
      assert.equal(first.code, 0, first.stderr);
      assert.equal(first.stderr, '');
      assert.ok(Array.isArray(first.json.applied));
      assert.ok((first.json.applied as unknown[]).length >= 1);
      assert.ok((first.json.applied as unknown[]).every((name) => typeof name === 'string'));
      assert.ok(existsSync(file), 'the database file is created');

      const again = await tandem(['migrate', '--json'], env);
      assert.equal(again.code, 0, again.stderr);
      assert.deepEqual(again.json, { applied: [] });

      const text = await tandem(['migrate'], env);
      assert.equal(text.code, 0);
      assert.match(text.stdout, /up to date/);
    });

    it('user create --email --password --json prints the user, never the password or its hash', async () => {
      const run = await tandem(['user', 'create', '--email', owner, '--password', password, '--json'], env);
      assert.equal(run.code, 0, run.stderr);
      assert.match(String(run.json.id), UUID);
      assert.equal(run.json.email, owner);
      assert.ok(!Number.isNaN(Date.parse(String(run.json.createdAt))));
      assert.ok(!run.stdout.includes(password));
      assert.doesNotMatch(run.stdout, /scrypt|hash/i);

      const db = new SqliteDatabase(file, { readonly: true });
      try {
        const row = db.prepare('select password_hash from users where id = ?').get(run.json.id) as { password_hash: string };
        assert.match(row.password_hash, /^scrypt\$/);
        assert.ok(!row.password_hash.includes(password));
      } finally {
        db.close();
      }
    });

    it('program create with every option --json prints the program with its id', async () => {
      const run = await tandem(
        [
          'program', 'create',
          '--owner', owner.toLowerCase(),
          '--name', 'Acme Partners',
          '--domain', 'acme.example.com',
          '--currency', 'eur',
          '--commission-rate', '12.5',
          '--logo-url', 'https://acme.example.com/logo.png',
          '--json',
        ],
        env,
      );
      assert.equal(run.code, 0, run.stderr);
      assert.match(String(run.json.id), UUID);
      assert.equal(run.json.name, 'Acme Partners');
      assert.equal(run.json.domain, 'acme.example.com');
      assert.equal(run.json.currency, 'EUR');
      assert.equal(run.json.commissionRate, 12.5);
      assert.equal(run.json.logoUrl, 'https://acme.example.com/logo.png');
      programId = String(run.json.id);
    });

    it('program create without the optional flags takes the defaults (USD, 20 %)', async () => {
      const run = await tandem(['program', 'create', '--owner', owner, '--name', 'Plain', '--domain', 'plain.example.com', '--json'], env);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.json.currency, 'USD');
      assert.equal(run.json.commissionRate, 20);
      assert.equal(run.json.logoUrl, null);
      const text = await tandem(['program', 'create', '--owner', owner, '--name', 'Texty', '--domain', 'texty.example.com'], env);
      assert.equal(text.code, 0);
      assert.match(text.stdout, /created program "Texty" with id [0-9a-f-]{36}/);
    });

    it('key create --json prints {id, token: "tdm_…"} and that token works against a server on the same file', async () => {
      const run = await tandem(['key', 'create', '--program', programId, '--json'], env);
      assert.equal(run.code, 0, run.stderr);
      assert.match(String(run.json.id), UUID);
      assert.match(String(run.json.token), /^tdm_[A-Za-z0-9_-]{43,}$/);

      server = await startServer(loadConfig({}, { databaseUrl: `sqlite:${file}`, port: 0, host: '127.0.0.1', logLevel: 'silent', tokenCacheMs: TOKEN_CACHE_MS }));
      const me = await fetch(`${server.url}/api/v1/me`, { headers: { authorization: `Bearer ${String(run.json.token)}` } });
      assert.equal(me.status, 200);
      const program = (await me.json()) as { id: string; name: string };
      assert.equal(program.id, programId);
      assert.equal(program.name, 'Acme Partners');

      // Only the hash is stored.
      const db = new SqliteDatabase(file, { readonly: true });
      try {
        const row = db.prepare('select * from api_tokens where id = ?').get(run.json.id) as Record<string, unknown>;
        assert.equal(row.program_id, programId);
        assert.ok(Object.values(row).every((value) => !String(value).includes(String(run.json.token).slice(4))));
      } finally {
        db.close();
      }
    });

    it('key create --name names the key; without --json the token is printed once, in the text', async () => {
      const named = await tandem(['key', 'create', '--program', programId, '--name', 'Zapier', '--json'], env);
      assert.equal(named.code, 0, named.stderr);
      assert.equal(named.json.name, 'Zapier');
      const text = await tandem(['key', 'create', '--program', programId], env);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /^tdm_[A-Za-z0-9_-]{43,}$/m);
    });

    it('key revoke --token-id makes the token 401 on the running server within TOKEN_CACHE_MS', async () => {
      const key = await tandem(['key', 'create', '--program', programId, '--json'], env);
      const token = String(key.json.token);
      const call = () => fetch(`${server!.url}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal((await call()).status, 200);

      const run = await tandem(['key', 'revoke', '--token-id', String(key.json.id), '--json'], env);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.json.id, key.json.id);
      assert.equal(run.json.revoked, true);

      // The server is another process: it honours the revocation once its cached lookup expires.
      const revokedAt = Date.now();
      let after = await call();
      while (after.status === 200 && Date.now() - revokedAt < TOKEN_CACHE_MS + 1000) {
        await new Promise((r) => setTimeout(r, 50));
        after = await call();
      }
      assert.equal(after.status, 401, `still accepted ${Date.now() - revokedAt} ms after the revocation`);
      assert.equal(after.headers.get('www-authenticate'), 'Bearer');

      // A second revoke has nothing to revoke.
      assertUsageFailure(await tandem(['key', 'revoke', '--token-id', String(key.json.id)], env), /not found/i, 1);
    });

    it('--help lists every command and exits 0; no command at all prints it on stderr and exits 2', async () => {
      const help = await tandem(['--help'], env);
      assert.equal(help.code, 0);
      for (const command of ['serve', 'migrate', 'user create', 'program create', 'key create', 'key revoke']) assert.match(help.stdout, new RegExp(`^  ${command}  `, 'm'), command);
      const none = await tandem([], env);
      assert.equal(none.code, 2);
      assert.equal(none.stdout, '');
      assert.equal(none.stderr.trimEnd(), help.stdout.trimEnd());
    });
  });

  describe('bad arguments print a one-line reason and exit 2 (usage) or 1 (refused)', { concurrency: 4 }, () => {
    const program = (extra: string[]) => ['program', 'create', '--owner', owner, '--name', 'Bad', '--domain', 'bad.example.com', ...extra];
    // Exit status 2: the command line is wrong (unknown command or flag, missing or malformed flag);
    // 1: the command ran and failed (a value the rules refuse, not found, a conflict).
    const cases: [name: string, args: () => string[], reason: RegExp, code: 1 | 2][] = [
      ['missing --email', () => ['user', 'create', '--password', password], /--email is required/, 2],
      ['missing --password', () => ['user', 'create', '--email', 'nopass@example.com'], /--password is required/, 2],
      ['a short password', () => ['user', 'create', '--email', 'short@example.com', '--password', 'short'], /password must be at least 10 characters/, 1],
      ['an invalid e-mail', () => ['user', 'create', '--email', 'not-an-email', '--password', password], /email/, 1],
      ['a user that exists', () => ['user', 'create', '--email', owner.toUpperCase(), '--password', password], /already exists/, 1],
      ['an unknown owner', () => ['program', 'create', '--owner', 'nobody@example.com', '--name', 'N', '--domain', 'n.example.com'], /nobody@example\.com/, 1],
      ['a missing --name', () => ['program', 'create', '--owner', owner, '--domain', 'n.example.com'], /--name is required/, 2],
      ['a non-numeric --commission-rate', () => program(['--commission-rate', 'abc']), /--commission-rate must be a number/, 2],
      ['an empty --commission-rate', () => program(['--commission-rate', '']), /--commission-rate must be a number/, 2],
      ['a --commission-rate over 100', () => program(['--commission-rate', '150']), /between 0 and 100/, 1],
      ['a bad currency', () => program(['--currency', 'EURO']), /currency/, 1],
      ['an unknown currency code', () => program(['--currency', 'QQQ']), /currency/, 1],
      ['a bad domain', () => ['program', 'create', '--owner', owner, '--name', 'N', '--domain', 'not a domain'], /domain/, 1],
      ['a logo URL that is not http(s)', () => program(['--logo-url', 'ftp://bad.example.com/logo.png']), /logoUrl/, 1],
      ['key create without --program', () => ['key', 'create'], /--program is required/, 2],
      ['key create with a non-UUID program', () => ['key', 'create', '--program', 'acme'], /--program must be a program id/, 2],
      ['key create for an unknown program', () => ['key', 'create', '--program', randomUUID()], /Program was not found/, 1],
      ['key revoke of an unknown token', () => ['key', 'revoke', '--token-id', randomUUID()], /not found/i, 1],
      ['key revoke without --token-id', () => ['key', 'revoke'], /--token-id is required/, 2],
      ['an unknown command', () => ['frobnicate'], /unknown command "frobnicate"/, 2],
      ['an unknown subcommand', () => ['user', 'delete', '--email', owner], /unknown command/, 2],
      ['an unknown option', () => ['user', 'create', '--email', 'opt@example.com', '--password', password, '--bogus'], /unknown flag --bogus for "user create"/, 2],
      ['an option without its value', () => ['user', 'create', '--password', password, '--email'], /--email/, 2],
      ['an unexpected positional argument', () => ['user', 'create', 'extra', '--email', 'pos@example.com', '--password', password], /unexpected argument "extra"/, 2],
    ];

    let usersBefore: number;
    let programsBefore: number;
    let tokensBefore: number;
    before(() => {
      usersBefore = count('users');
      programsBefore = count('programs');
      tokensBefore = count('api_tokens');
    });
    after(() => {
      assert.equal(count('users'), usersBefore, 'failed commands create no user');
      assert.equal(count('programs'), programsBefore, 'failed commands create no program');
      assert.equal(count('api_tokens'), tokensBefore, 'failed commands create no key');
    });

    for (const [name, args, reason, code] of cases) {
      it(`${name} (exit ${code})`, async () => {
        // With --json the reason is on stderr and also the last stdout line, as {"error": …}.
        const json = await tandem([...args(), '--json'], env);
        assertUsageFailure(json, reason, code);
        assert.equal(typeof json.json.error, 'string');
        assert.match(String(json.json.error), reason);
      });
    }

    it('without --json the reason goes to stderr only', async () => {
      for (const [, args, reason, code] of cases.filter(([name]) => ['a short password', 'an unknown command', 'an unknown option'].includes(name))) {
        const run = await tandem(args(), env);
        assertUsageFailure(run, reason, code);
        assert.equal(run.stdout, '');
      }
    });

    it('a bad DATABASE_URL', async () => {
      assertUsageFailure(await tandem(['migrate', '--json'], { DATABASE_URL: 'mysql://localhost/tandem' }), /DATABASE_URL must start with sqlite: or postgres:\/\//, 1);
    });

    it('a bad PORT for serve', async () => {
      assertUsageFailure(await tandem(['serve'], { ...env, PORT: 'eighty' }), /PORT must be a whole number/, 1);
    });

    it('a bad RATE_LIMIT_PER_MINUTE', async () => {
      assertUsageFailure(await tandem(['migrate'], { ...env, RATE_LIMIT_PER_MINUTE: '-1' }), /RATE_LIMIT_PER_MINUTE/, 1);
    });
  });
});

// `npm ci` builds dist/ (one bundled file, dist/tandem.js) and `npm start` runs it; the test
// runner builds it before the suite.
describe('the compiled build', { skip: testDialect !== 'sqlite' && 'runs in the SQLite leg only' }, () => {
  it('is newer than every source file, so bin/tandem runs it', async () => {
    const { readdirSync, statSync: stat } = await import('node:fs');
    const newest = (dir: string): number =>
      Math.max(0, ...readdirSync(dir, { withFileTypes: true }).map((e) => (e.isDirectory() ? newest(`${dir}/${e.name}`) : stat(`${dir}/${e.name}`).mtimeMs)));
    const built = stat(join(ROOT, 'dist/tandem.js')).mtimeMs;
    assert.ok(built >= newest(join(ROOT, 'src')), 'dist/ is up to date (npm run build)');
  });

  it('runs as one plain JavaScript file, without tsx, and serves every file it reads from beside its code', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tandem-dist-'));
    const port = await freePort();
    const script = "const { main } = await import('./dist/tandem.js'); process.exitCode = await main(process.argv.slice(1));";
    const env = { ...process.env, DATABASE_URL: `sqlite:${join(dir, 't.db')}`, LOG_LEVEL: 'silent', HOST: '127.0.0.1', PORT: String(port) };
    const start = (args: string[]) => spawn(process.execPath, ['--input-type=module', '-e', script, ...args], { cwd: ROOT, env });
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string }>((resolve) => {
        const child = start(args);
        let stdout = '';
        child.stdout.on('data', (c: Buffer) => (stdout += c));
        child.on('close', (code) => resolve({ code, stdout }));
      });
    try {
      const migrated = await run(['migrate', '--json']);
      assert.equal(migrated.code, 0);
      assert.ok(Array.isArray(JSON.parse(migrated.stdout.trim().split('\n').at(-1)!).applied));
      assert.equal((await run(['--', '--version'])).stdout.trim(), `tandem ${JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version}`);

      const server = start(['serve']);
      try {
        const origin = `http://127.0.0.1:${port}`;
        for (let i = 0; i < 100 && !(await fetch(`${origin}/healthz`).then((r) => r.ok, () => false)); i++) await new Promise((r) => setTimeout(r, 100));
        // The dashboard's files, the click tracker, the favicon and /docs with its own package's files.
        const expect = async (path: string, type: RegExp, text: string) => {
          const response = await fetch(origin + path);
          assert.equal(response.status, 200, path);
          assert.match(response.headers.get('content-type') ?? '', type, path);
          assert.ok((await response.text()).includes(text), `${path} holds ${text}`);
        };
        await expect('/assets/app.css', /text\/css/, readFileSync(join(ROOT, 'src/web/assets/app.css'), 'utf8').slice(0, 40));
        await expect('/tracker.js', /javascript/, readFileSync(join(ROOT, 'src/web/assets/tracker.js'), 'utf8').slice(0, 40));
        await expect('/favicon.ico', /svg/, '<svg');
        await expect('/docs/', /html/, 'swagger-ui-bundle.js');
        await expect('/docs/static/swagger-ui-bundle.js', /javascript/, 'SwaggerUIBundle');
        await expect('/login', /html/, '<form');
      } finally {
        server.kill('SIGTERM');
        await new Promise((r) => server.once('close', r));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
