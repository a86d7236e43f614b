// CSRF is app-wide: every unsafe route of the browser side needs the session's token unless it
// opts out explicitly. The routes are read from the sources, so a form added tomorrow is
// covered by this test without anyone remembering to add it here.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { sql } from 'kysely';
import { createUser } from '../../src/modules/users/user.service.ts';
import { createProgram } from '../../src/modules/programs/program.service.ts';
import { rawDb, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { WebClient } from '../helpers/web-client.ts';

const WEB = 'src/web';
/** Routes that opt out, and why; a new opt-out must be added here on purpose. */
const OPTED_OUT: Record<string, 'in-handler' | 'exempt'> = {
  '/connect/:integration/programs': 'in-handler', // the logged-out user is sent to log in first
  '/connect/:integration/authorize': 'in-handler',
  '/api/:integration/token': 'exempt', // called by the tool's server, not a browser form
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Every POST/PUT/PATCH/DELETE route of the web side, with its full path and declared opt-out. */
function unsafeRoutes(): { path: string; csrf: string | undefined }[] {
  const routes: { path: string; csrf: string | undefined }[] = [];
  for (const file of sourceFiles(WEB)) {
    const text = readFileSync(file, 'utf8');
    // Dashboard plugins other than the program list are mounted under one program.
    const inProgram = relative(WEB, file).startsWith('dashboard/') && !file.endsWith('programs.routes.ts');
    for (const match of text.matchAll(/app\.(post|put|patch|delete)(?:<[^>]*>)?\(\s*'([^']+)'(,\s*\{[^]*?\}\s*,)?/g)) {
      const options = match[3] ?? '';
      const csrf = /csrf:\s*'([a-z-]+)'/.exec(options)?.[1];
      routes.push({ path: (inProgram ? '/dashboard/programs/:programId' : '') + match[2], csrf });
    }
  }
  return routes;
}

async function rowCounts(t: TestServer): Promise<Record<string, number>> {
  const db = rawDb(t);
  const counts: Record<string, number> = {};
  for (const table of await db.introspection.getTables()) {
    const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table.name)}`.execute(db);
    counts[table.name] = Number(rows[0]!.n);
  }
  return counts;
}

describe('CSRF on every unsafe page route', () => {
  let t: TestServer;
  let owner: WebClient;
  let programId: string;

  before(async () => {
    t = await startTestServer({ worker: false });
    const db = rawDb(t);
    const email = `csrf-${Date.now()}@example.com`;
    const user = await createUser(db, { email, password: 'a long password' });
    programId = (await createProgram(db, { ownerUserId: user.id, name: 'Guarded', domain: 'guarded.example.com' })).id;
    owner = new WebClient(t.url);
    await owner.logIn(email, 'a long password');
  });
  after(() => t.close());

  it('finds the routes, and only the known ones opt out', () => {
    const routes = unsafeRoutes();
    assert.ok(routes.length >= 25, `found ${routes.length} routes`);
    const optedOut = Object.fromEntries(routes.filter((r) => r.csrf !== undefined).map((r) => [r.path, r.csrf]));
    assert.deepEqual(optedOut, OPTED_OUT);
  });

  it('refuses each protected route without the token with 403, changing nothing', async () => {
    const before = await rowCounts(t);
    for (const { path, csrf } of unsafeRoutes()) {
      if (csrf !== undefined) continue;
      const url = path
        .replace(':programId', programId)
        .replace(/:[A-Za-z]+Id/g, () => randomUUID())
        .replace(/:[A-Za-z]+/g, 'zapier');
      // Fields a real form would carry, without _csrf (and once with a wrong one).
      const forms: Record<string, string>[] = [{ name: 'x', email: 'x@example.com', url: 'https://example.com/' }, { _csrf: 'forged', name: 'x' }];
      for (const form of forms) {
        const res = await owner.post(url, form);
        assert.equal(res.status, 403, `POST ${path} without a valid CSRF token: ${res.status}`);
        assert.match(res.text, /This form has expired/);
      }
    }
    assert.deepEqual(await rowCounts(t), before, 'no row written or deleted');
    // Still logged in: the refused logout did not log out.
    assert.equal((await owner.get('/account/password')).status, 200);
  });
});
