import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase } from '../../src/db/database.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/test-database.ts';
import { runTandem, type CliRun } from '../helpers/cli.ts';

// `tandem integration add | list | remove`: the operator's list of tools allowed to use the
// connect flow, run as operators run it, on the dialect under test.

const ZAPIER_CALLBACK = 'https://zapier.com/dashboard/auth/oauth/return/App123CLIAPI/';

let database: TestDatabase;

const tandem = (args: string[]) => runTandem(args, { DATABASE_URL: database.url, SITE_URL: 'https://affiliates.example.com' });

/** One line on stderr, and exit status 2 for a usage error (a missing or malformed flag), 1 for a refusal. */
function assertFailure(run: CliRun, reason: RegExp, code: 1 | 2): void {
  assert.equal(run.code, code, run.stdout);
  assert.equal(run.stderr.trimEnd().split('\n').length, 1, run.stderr);
  assert.match(run.stderr, reason);
}

before(async () => {
  database = await createTestDatabase();
});
after(() => database.drop());

describe('tandem integration', () => {
  it('add --json stores name, display name and every exact redirect URI; prints no secret', async () => {
    const run = await tandem([
      'integration', 'add', '--name', 'zapier', '--display-name', 'Zapier',
      '--redirect-uri', ZAPIER_CALLBACK, '--redirect-uri', 'https://zapier.com/other?x=1',
      '--client-id', 'tandem-zapier', '--client-secret', 'very secret value', '--json',
    ]);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(run.json.redirectUris, [ZAPIER_CALLBACK, 'https://zapier.com/other?x=1']);
    assert.equal(run.json.displayName, 'Zapier');
    assert.equal(run.json.clientId, 'tandem-zapier');
    assert.equal(run.json.hasClientSecret, true);
    assert.ok(!run.stdout.includes('very secret value'));

    const handle = openDatabase({ databaseUrl: database.url });
    try {
      const row = await handle.db.selectFrom('integrations').selectAll().where('name', '=', 'zapier').executeTakeFirstOrThrow();
      assert.match(row.client_secret_hash!, /^[0-9a-f]{64}$/, 'the client secret is stored hashed');
      assert.deepEqual(JSON.parse(row.redirect_uris), [ZAPIER_CALLBACK, 'https://zapier.com/other?x=1']);
    } finally {
      await handle.close();
    }
  });

  it('add without --json prints the connect and token URLs of the site', async () => {
    const run = await tandem(['integration', 'add', '--name', 'n8n', '--redirect-uri', 'http://localhost:5678/rest/oauth2-credential/callback']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /https:\/\/affiliates\.example\.com\/connect\/n8n\/choose-affiliate-program/);
    assert.match(run.stdout, /https:\/\/affiliates\.example\.com\/api\/n8n\/token/);
  });

  it('list --json lists every integration by name', async () => {
    const run = await tandem(['integration', 'list', '--json']);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(run.json.integrations.map((i: { name: string }) => i.name), ['n8n', 'zapier']);
    assert.equal(run.json.integrations[0].displayName, 'n8n', 'the display name defaults to the name');
  });

  it('bad arguments print a one-line reason and change nothing', async () => {
    const cases: [string[], RegExp, 1 | 2][] = [
      [['--name', 'zapier', '--redirect-uri', 'https://a.example/cb'], /already exists/, 1],
      [['--name', 'Make', '--redirect-uri', 'https://a.example/cb'], /name must be 1 to 50 lowercase letters/, 1],
      [['--name', 'v1', '--redirect-uri', 'https://a.example/cb'], /reserved/, 1],
      [['--name', 'make'], /--redirect-uri is required/, 2],
      [['--redirect-uri', 'https://a.example/cb'], /--name is required/, 2],
      [['--name', 'make', '--redirect-uri', '/relative'], /absolute URL/, 1],
      [['--name', 'make', '--redirect-uri', 'ftp://a.example/cb'], /https:\/\/ or http:\/\//, 1],
      [['--name', 'make', '--redirect-uri', 'https://a.example/cb#top'], /fragment/, 1],
      [['--name', 'make', '--redirect-uri', 'https://user:pw@a.example/cb'], /credentials/, 1],
      [['--name', 'make', '--redirect-uri', 'https://a.example/cb', '--client-secret', 's'], /--client-secret needs --client-id/, 2],
    ];
    const runs = await Promise.all(cases.map(([args]) => tandem(['integration', 'add', ...args, '--json'])));
    runs.forEach((run, i) => assertFailure(run, cases[i]![1], cases[i]![2]));
    const list = await tandem(['integration', 'list', '--json']);
    assert.equal(list.json.integrations.length, 2);
  });

  it('remove --json removes it; removing it again is a one-line failure', async () => {
    const run = await tandem(['integration', 'remove', '--name', 'n8n', '--json']);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(run.json, { name: 'n8n', removed: true });
    assertFailure(await tandem(['integration', 'remove', '--name', 'n8n']), /not found/, 1);
    assertFailure(await tandem(['integration', 'remove']), /--name is required/, 2);
    const list = await tandem(['integration', 'list', '--json']);
    assert.deepEqual(list.json.integrations.map((i: { name: string }) => i.name), ['zapier']);
  });
});
