// `tandem user reset-password` (issue 21 item 2): prints a one-time link for the operator to
// hand over; the link sets the new password on a real server over the same SQLite file.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { testDialect } from '../helpers/test-database.ts';
import { runTandem } from '../helpers/cli.ts';
import { csrfOf, WebClient } from '../helpers/web-client.ts';

describe('tandem user reset-password', { skip: testDialect !== 'sqlite' && 'runs in the SQLite leg only (it makes its own SQLite files)' }, () => {
  let dir: string;
  let env: Record<string, string>;
  let server: RunningServer | undefined;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tandem-reset-'));
    env = { DATABASE_URL: `sqlite:${join(dir, 'x.db')}`, SITE_URL: 'http://tandem.test' };
  });
  after(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints a link that sets the new password once; the old one works until then', async () => {
    assert.equal((await runTandem(['user', 'create', '--email', 'Owner@Example.com', '--password', 'the old passphrase'], env)).code, 0);
    const run = await runTandem(['user', 'reset-password', '--email', 'owner@example.com', '--json'], env);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.json.email, 'Owner@Example.com');
    const path = /^http:\/\/tandem\.test(\/reset-password\/[A-Za-z0-9_-]{43})$/.exec(run.json.url)?.[1];
    assert.ok(path, run.json.url);
    const text = await runTandem(['user', 'reset-password', '--email', 'owner@example.com'], env);
    assert.match(text.stdout, /^reset link for Owner@Example\.com \(valid once, until \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\):\nhttp:\/\/tandem\.test\/reset-password\/[A-Za-z0-9_-]{43}\n$/);

    server = await startServer(loadConfig({}, { databaseUrl: env.DATABASE_URL!, port: 0, host: '127.0.0.1', logLevel: 'silent', siteUrl: 'http://tandem.test' }));
    const login = async (password: string) => {
      const who = new WebClient(server!.url);
      const page = await who.get('/login');
      return (await who.post('/login', { _csrf: csrfOf(page.text), email: 'owner@example.com', password })).status;
    };
    assert.equal(await login('the old passphrase'), 303, 'the old password works until the link is used');
    const who = new WebClient(server.url);
    const page = await who.get(path);
    assert.equal(page.status, 200);
    assert.equal((await who.post(path, { _csrf: csrfOf(page.text), password: 'the new passphrase' })).status, 303);
    assert.equal(await login('the old passphrase'), 401);
    assert.equal(await login('the new passphrase'), 303);
    assert.equal((await new WebClient(server.url).get(path)).status, 410, 'used once');
  });

  it('a printed link stops working when the password is changed on the dashboard before it is used', async () => {
    const run = await runTandem(['user', 'reset-password', '--email', 'owner@example.com', '--json'], env);
    assert.equal(run.code, 0, run.stderr);
    const path = new URL(run.json.url).pathname;
    assert.equal((await new WebClient(server!.url).get(path)).status, 200);
    const owner = new WebClient(server!.url);
    const login = await owner.get('/login');
    assert.equal((await owner.post('/login', { _csrf: csrfOf(login.text), email: 'owner@example.com', password: 'the new passphrase' })).status, 303);
    const form = await owner.get('/account/password');
    assert.equal((await owner.post('/account/password', { _csrf: csrfOf(form.text), current: 'the new passphrase', password: 'the third passphrase' })).status, 200);
    assert.equal((await new WebClient(server!.url).get(path)).status, 410, 'the change voided the printed link');
  });

  it('an unknown e-mail fails (1); a missing --email is a usage error (2)', async () => {
    const unknown = await runTandem(['user', 'reset-password', '--email', 'nobody@example.com'], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^tandem: No user with e-mail nobody@example\.com\.\n$/);
    const missing = await runTandem(['user', 'reset-password'], env);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--email is required/);
  });
});
