import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createUser } from '../../src/modules/users/user.service.ts';
import { createProgram, type Program } from '../../src/modules/programs/program.service.ts';
import { addIntegration, removeIntegration } from '../../src/modules/integrations/integration.service.ts';
import { apiClient, rawDb, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { csrfOf, WebClient, type WebResponse } from '../helpers/web-client.ts';
import { raceNote } from '../helpers/test-database.ts';

// The connect flow over plain HTTP (spec 5.2, CONTRACT.md "Connect flow"): every protection
// has a test that fails if the protection is removed. The browser tests (test/browser/) drive
// the same flow in Chromium.

const CALLBACK = 'https://tool.example/callback?source=tandem';
const OTHER_CALLBACK = 'https://tool.example/other';
const N8N_CALLBACK = 'https://n8n.example/rest/oauth2-credential/callback';
const PASSWORD = 'a long password';
/** Spaces, reserved and non-ASCII characters: it must come back byte for byte. */
const STATE = 'st a+te/?x=1&y=ü%20~';

let test: TestServer;
let clockOffsetMs = 0;
let email: string;
let programA: Program;
let programB: Program;
let foreignProgram: Program;

function chooseUrl(params: Record<string, string | undefined>, integration = 'zapier', page = 'choose-affiliate-program'): string {
  const defined = Object.entries(params).filter((entry): entry is [string, string] => entry[1] !== undefined);
  return `/connect/${integration}/${page}?${new URLSearchParams(defined)}`;
}

const flow = (extra: Record<string, string | undefined> = {}) => ({ state: STATE, redirect_uri: CALLBACK, ...extra });

/** One logged-in browser for most tests: logins are rate limited (10 a minute per address). */
let browser: WebClient;
const loggedIn = async (): Promise<WebClient> => browser;

async function newLogin(): Promise<WebClient> {
  const client = new WebClient(test.url);
  await client.logIn(email, PASSWORD);
  return client;
}

/** Opens the choice page, then posts the consent form with the page's CSRF token (unless told otherwise). */
async function decide(client: WebClient, options: { params?: Record<string, string>; program?: string; decision?: string; csrf?: string | null; integration?: string } = {}): Promise<WebResponse> {
  const params = options.params ?? flow();
  const integration = options.integration ?? 'zapier';
  const page = await client.get(chooseUrl(params, integration));
  assert.equal(page.status, 200, page.text.slice(0, 500));
  const csrf: Record<string, string> = options.csrf === undefined ? { _csrf: csrfOf(page.text) } : options.csrf === null ? {} : { _csrf: options.csrf };
  return client.post(`/connect/${integration}/authorize`, { ...csrf, ...params, program: options.program ?? programB.id, decision: options.decision ?? 'allow' });
}

/** Runs the flow to the redirect and returns the code from it. */
async function authorize(options: Parameters<typeof decide>[1] = {}): Promise<string> {
  const response = await decide(await loggedIn(), options);
  assert.equal(response.status, 303, response.text.slice(0, 500));
  const code = new URL(response.location!).searchParams.get('code');
  assert.ok(code);
  return code;
}

async function exchange(body: Record<string, string> | string | undefined, integration = 'zapier', headers: Record<string, string> = {}) {
  const form = typeof body === 'object';
  const response = await fetch(`${test.url}/api/${integration}/token`, {
    method: 'POST',
    headers: { ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}), ...headers },
    body: form ? new URLSearchParams(body).toString() : body,
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: JSON.parse(text) as Record<string, string> };
}

const codeCount = async () => Number((await rawDb(test).selectFrom('authorization_codes').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
const me = (token: string) => apiClient(test.url, token, '').get('/me');

function assertErrorPage(response: WebResponse, pattern: RegExp): void {
  assert.equal(response.status, 400, response.text.slice(0, 300));
  assert.equal(response.location, null, 'never a redirect');
  assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
  assert.match(response.text, pattern);
}

function assertInvalidCode(response: Awaited<ReturnType<typeof exchange>>): void {
  assert.equal(response.status, 400);
  assert.deepEqual(response.json, { error: 'Invalid code' });
}

before(async () => {
  test = await startTestServer({}, { clock: () => new Date(Date.now() + clockOffsetMs) });
  const db = rawDb(test);
  email = `connect-${Date.now()}@example.com`;
  const user = await createUser(db, { email, password: PASSWORD });
  programA = await createProgram(db, { ownerUserId: user.id, name: 'Alpha Shop', domain: 'alpha.example.com', logoUrl: 'https://alpha.example.com/logo.png' });
  programB = await createProgram(db, { ownerUserId: user.id, name: 'Beta Store', domain: 'beta.example.com' });
  const other = await createUser(db, { email: `other-${Date.now()}@example.com`, password: PASSWORD });
  foreignProgram = await createProgram(db, { ownerUserId: other.id, name: 'Not Yours', domain: 'foreign.example.com' });
  await addIntegration(db, { name: 'zapier', displayName: 'Zapier', redirectUris: [CALLBACK, OTHER_CALLBACK] });
  await addIntegration(db, { name: 'n8n', displayName: 'n8n', redirectUris: [N8N_CALLBACK] });
  browser = await newLogin();
});
after(() => test.close());

describe('connect flow: the authorization request', () => {
  it('an unknown integration is a 400 page, logged out and logged in, never a redirect', async () => {
    assertErrorPage(await new WebClient(test.url).get(chooseUrl(flow(), 'nosuchtool')), /does not know the app/);
    assertErrorPage(await (await loggedIn()).get(chooseUrl(flow(), 'nosuchtool')), /does not know the app/);
    assertErrorPage(await (await loggedIn()).get(chooseUrl(flow(), 'Zapier')), /does not know the app/);
  });

  it('a redirect URI not registered for the integration, by exact string, is a 400 page', async () => {
    const foreign = [
      'https://evil.example/callback',
      N8N_CALLBACK, // registered, but for another integration
      'https://tool.example/callback', // registered one without its query
      `${CALLBACK}&x=1`,
      'https://TOOL.example/callback?source=tandem',
      'https://tool.example/other/',
      'http://tool.example/other',
    ];
    const client = await loggedIn();
    for (const redirectUri of foreign) {
      assertErrorPage(await new WebClient(test.url).get(chooseUrl(flow({ redirect_uri: redirectUri }))), /not registered/);
      assertErrorPage(await client.get(chooseUrl(flow({ redirect_uri: redirectUri }))), /not registered/);
    }
    assertErrorPage(await client.get(chooseUrl({ state: STATE })), /not registered/);
  });

  it('a missing state is a 400 page, logged out and logged in', async () => {
    assertErrorPage(await new WebClient(test.url).get(chooseUrl({ redirect_uri: CALLBACK })), /state/);
    assertErrorPage(await (await loggedIn()).get(chooseUrl({ redirect_uri: CALLBACK, state: '' })), /state/);
  });

  it('response_type other than code, PKCE methods other than S256, malformed challenges are 400 pages', async () => {
    const client = await loggedIn();
    assertErrorPage(await client.get(chooseUrl(flow({ response_type: 'token' }))), /response_type/);
    assertErrorPage(await client.get(chooseUrl(flow({ code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' }))), /S256/);
    assertErrorPage(await client.get(chooseUrl(flow({ code_challenge: 'a'.repeat(43) }))), /S256/);
    assertErrorPage(await client.get(chooseUrl(flow({ code_challenge: 'short', code_challenge_method: 'S256' }))), /code_challenge/);
    assertErrorPage(await client.get(`${chooseUrl(flow())}&state=second`), /more than once/);
    assert.equal((await client.get(chooseUrl(flow({ response_type: 'code' })))).status, 200);
  });

  it('a logged-out user is sent to log in, then back to the exact same URL', async () => {
    const client = new WebClient(test.url);
    const url = chooseUrl(flow());
    const first = await client.get(url);
    assert.equal(first.status, 303);
    const login = new URL(first.location!, test.url);
    assert.equal(login.pathname, '/login');
    assert.equal(login.searchParams.get('next'), url);
    const back = await client.logIn(email, PASSWORD, url);
    assert.equal(back.location, url);
    const page = await client.get(back.location!);
    assert.equal(page.status, 200);
  });

  it('the choice page lists the account’s programs with name, domain and logo, and no one else’s', async () => {
    const page = await (await loggedIn()).get(chooseUrl(flow()));
    assert.equal(page.status, 200);
    assert.match(page.text, /Connect Zapier to Tandem/);
    for (const text of ['Alpha Shop', 'alpha.example.com', 'src="https://alpha.example.com/logo.png"', 'Beta Store', 'beta.example.com']) assert.ok(page.text.includes(text), text);
    assert.ok(!page.text.includes('Not Yours'));
    assert.ok(page.text.includes(`value="${programA.id}"`) && page.text.includes(`value="${programB.id}"`));
    // The confirmation dialog names the tool and lists the permissions.
    assert.match(page.text, /<dialog id="consent-dialog"/);
    for (const permission of [/Trigger on program events/, /Act within the program/, /Read affiliate, sales and referral data/]) assert.match(page.text, permission);
    assert.match(page.text, /src="\/assets\/connect\.js"/);
    assert.equal((await fetch(`${test.url}/assets/connect.js`)).status, 200);
  });

  it('login, choice and consent pages forbid framing and referrers', async () => {
    const client = await loggedIn();
    const pages = [
      await new WebClient(test.url).get(`/login?next=${encodeURIComponent(chooseUrl(flow()))}`),
      await client.get(chooseUrl(flow())),
      await client.get(chooseUrl({ ...flow(), program: programB.id }, 'zapier', 'confirm')),
    ];
    for (const page of pages) {
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
      assert.equal(page.headers.get('x-frame-options'), 'DENY');
      assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
      assert.equal(page.headers.get('cache-control'), 'no-store');
    }
  });

  it('without JavaScript, Connect loads the confirmation as a page naming the tool, program and permissions', async () => {
    const client = await loggedIn();
    const page = await client.get(chooseUrl({ ...flow(), program: programB.id }, 'zapier', 'confirm'));
    assert.equal(page.status, 200);
    assert.match(page.text, /Allow Zapier to use <span data-program-name>Beta Store<\/span>\?/);
    assert.match(page.text, /Trigger on program events/);
    assert.match(page.text, /action="\/connect\/zapier\/authorize"/);
    const confirmed = await client.post('/connect/zapier/authorize', { _csrf: csrfOf(page.text), ...flow(), program: programB.id, decision: 'allow' });
    assert.equal(confirmed.status, 303);
    assert.ok(new URL(confirmed.location!).searchParams.get('code'));
    // Someone else's program is not offered.
    const foreign = await client.get(chooseUrl({ ...flow(), program: foreignProgram.id }, 'zapier', 'confirm'));
    assert.equal(foreign.status, 422);
    assert.ok(!foreign.text.includes('Not Yours'));
  });
});

describe('connect flow: consent', () => {
  it('Confirm redirects to the redirect URI with code and the state byte for byte, keeping its own query', async () => {
    const response = await decide(await loggedIn());
    assert.equal(response.status, 303);
    const location = response.location!;
    assert.ok(location.startsWith(`${CALLBACK}&code=`), location);
    const url = new URL(location);
    assert.equal(url.searchParams.get('source'), 'tandem');
    assert.equal(url.searchParams.get('state'), STATE);
    assert.equal(decodeURIComponent(/[?&]state=([^&]*)/.exec(location)![1]!), STATE, 'a plain percent-decoder reads the same state');
    assert.match(url.searchParams.get('code')!, /^[A-Za-z0-9_-]{43}$/, '256 bits');
    assert.deepEqual([...url.searchParams.keys()].sort(), ['code', 'source', 'state']);
  });

  it('a redirect URI without a query gets ?code=…&state=…', async () => {
    const response = await decide(await loggedIn(), { params: flow({ redirect_uri: OTHER_CALLBACK }) });
    assert.match(response.location!, /^https:\/\/tool\.example\/other\?code=[A-Za-z0-9_-]{43}&state=/);
  });

  it('codes are stored only as SHA-256, bound to integration, redirect URI, user, program and PKCE challenge', async () => {
    const challenge = createHash('sha256').update('v'.repeat(50)).digest('base64url');
    const code = await authorize({ params: flow({ code_challenge: challenge, code_challenge_method: 'S256' }) });
    const row = await rawDb(test).selectFrom('authorization_codes').selectAll().where('code_hash', '=', createHash('sha256').update(code).digest('hex')).executeTakeFirstOrThrow();
    assert.equal(row.integration, 'zapier');
    assert.equal(row.redirect_uri, CALLBACK);
    assert.equal(row.program_id, programB.id);
    assert.equal(row.code_challenge, challenge);
    assert.equal(row.used_at, null);
    const lifetime = Date.parse(String(row.expires_at)) - Date.parse(String(row.created_at));
    assert.equal(lifetime, 10 * 60_000);
    const all = await rawDb(test).selectFrom('authorization_codes').selectAll().execute();
    assert.ok(all.every((r) => !Object.values(r).some((v) => String(v).includes(code))), 'the code itself is never stored');
  });

  it('Cancel redirects with error=access_denied and the state, and issues no code', async () => {
    const before = await codeCount();
    const response = await decide(await loggedIn(), { decision: 'deny' });
    assert.equal(response.status, 303);
    const url = new URL(response.location!);
    assert.equal(`${url.origin}${url.pathname}`, 'https://tool.example/callback');
    assert.equal(url.searchParams.get('error'), 'access_denied');
    assert.equal(url.searchParams.get('state'), STATE);
    assert.equal(url.searchParams.get('code'), null);
    assert.equal(await codeCount(), before);
  });

  it('a consent POST without the CSRF token, or with another session’s, issues no code', async () => {
    const before = await codeCount();
    for (const csrf of [null, 'forged', csrfOf((await (await newLogin()).get(chooseUrl(flow()))).text)]) {
      const response = await decide(await loggedIn(), { csrf });
      assert.equal(response.status, 403);
      assert.equal(response.location, null);
    }
    assert.equal(await codeCount(), before);
  });

  it('a consent POST without a session goes to the login page and issues no code', async () => {
    const before = await codeCount();
    const response = await new WebClient(test.url).post('/connect/zapier/authorize', { ...flow(), program: programB.id, decision: 'allow' });
    assert.equal(response.status, 303);
    assert.match(response.location!, /^\/login\?next=/);
    assert.equal(await codeCount(), before);
  });

  it('the consent POST re-checks integration, redirect URI and state, and the program must be the user’s', async () => {
    const client = await loggedIn();
    const csrf = csrfOf((await client.get(chooseUrl(flow()))).text);
    const before = await codeCount();
    const post = (form: Record<string, string>, integration = 'zapier') => client.post(`/connect/${integration}/authorize`, { _csrf: csrf, program: programB.id, decision: 'allow', ...form });
    assertErrorPage(await post({ state: STATE, redirect_uri: 'https://evil.example/cb' }), /not registered/);
    assertErrorPage(await post({ state: STATE, redirect_uri: CALLBACK }, 'nosuchtool'), /does not know/);
    assertErrorPage(await post({ redirect_uri: CALLBACK }), /state/);
    assertErrorPage(await post({ ...flow(), program: foreignProgram.id }), /Choose one of your programs/);
    assertErrorPage(await post({ ...flow(), program: 'not-a-uuid' }), /Choose one of your programs/);
    assert.equal(await codeCount(), before);
  });

  it('a user without a program creates one inside the flow, then sees it chosen', async () => {
    const db = rawDb(test);
    const newEmail = `newcomer-${Date.now()}@example.com`;
    await createUser(db, { email: newEmail, password: PASSWORD });
    const client = new WebClient(test.url);
    await client.logIn(newEmail, PASSWORD);
    const page = await client.get(chooseUrl(flow()));
    assert.match(page.text, /you do not have one yet/);
    assert.match(page.text, /action="\/connect\/zapier\/programs"/);

    const invalid = await client.post('/connect/zapier/programs', { _csrf: csrfOf(page.text), ...flow(), name: 'Gamma', domain: 'not a domain' });
    assert.equal(invalid.status, 422);
    assert.match(invalid.text, /Must be a domain name/);

    const created = await client.post('/connect/zapier/programs', { _csrf: csrfOf(page.text), ...flow(), name: 'Gamma', domain: 'gamma.example.com' });
    assert.equal(created.status, 303);
    const back = new URL(created.location!, test.url);
    assert.equal(back.pathname, '/connect/zapier/choose-affiliate-program');
    assert.equal(back.searchParams.get('state'), STATE);
    const choice = await client.get(created.location!);
    assert.match(choice.text, /Gamma/);
    assert.match(choice.text, /name="program" value="[0-9a-f-]{36}" data-name="Gamma" required checked/);
  });
});

describe('connect flow: the token endpoint', () => {
  it('trades a form-encoded code for exactly {"access_token"} of a connect token bound to the chosen program', async () => {
    const code = await authorize();
    const response = await exchange({ code });
    assert.equal(response.status, 200);
    assert.deepEqual(Object.keys(response.json), ['access_token']);
    assert.match(response.json.access_token!, /^tdm_[A-Za-z0-9_-]{43}$/);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.equal(response.headers.get('pragma'), 'no-cache');
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);

    const program = await me(response.json.access_token!);
    assert.equal(program.status, 200);
    assert.equal(program.body.id, programB.id);

    const token = await rawDb(test).selectFrom('api_tokens').selectAll().where('program_id', '=', programB.id).where('kind', '=', 'connect').orderBy('created_at', 'desc').executeTakeFirstOrThrow();
    assert.equal(token.integration, 'zapier');
    assert.equal(token.name, 'Zapier connection');
    const user = await rawDb(test).selectFrom('users').select('id').where('email', '=', email).executeTakeFirstOrThrow();
    assert.equal(token.created_by_user_id, user.id);
  });

  it('accepts JSON and ignores client_id, client_secret, grant_type and HTTP Basic credentials', async () => {
    const json = await exchange(JSON.stringify({ code: await authorize(), grant_type: 'authorization_code', client_id: 'x', client_secret: 'y' }), 'zapier', { 'content-type': 'application/json' });
    assert.equal(json.status, 200, json.text);
    const form = await exchange({ code: await authorize(), grant_type: 'authorization_code', client_id: 'x', client_secret: 'y', redirect_uri: CALLBACK }, 'zapier', {
      authorization: `Basic ${Buffer.from('client:secret').toString('base64')}`,
    });
    assert.equal(form.status, 200, form.text);
  });

  it('a missing code is 400 {"error":"Code is required"}', async () => {
    for (const body of [{}, { code: '' }, { grant_type: 'authorization_code' }] as Record<string, string>[]) {
      const response = await exchange(body);
      assert.equal(response.status, 400);
      assert.deepEqual(response.json, { error: 'Code is required' });
      assert.equal(response.headers.get('cache-control'), 'no-store');
      assert.equal(response.headers.get('pragma'), 'no-cache');
    }
    const empty = await exchange(undefined);
    assert.deepEqual([empty.status, empty.json], [400, { error: 'Code is required' }]);
    const badJson = await exchange('{"code":', 'zapier', { 'content-type': 'application/json' });
    assert.deepEqual([badJson.status, badJson.json], [400, { error: 'Code is required' }]);
  });

  it('an unknown code, or one at an unknown integration, is 400 {"error":"Invalid code"}', async () => {
    assertInvalidCode(await exchange({ code: randomBytes(32).toString('base64url') }));
    assertInvalidCode(await exchange({ code: await authorize() }, 'nosuchtool'));
  });

  it('a code is single use: the second exchange is "Invalid code" and revokes the token the first one got', async () => {
    const code = await authorize();
    const first = await exchange({ code });
    assert.equal(first.status, 200);
    const token = first.json.access_token!;
    assert.equal((await me(token)).status, 200);

    assertInvalidCode(await exchange({ code }));
    const after = await me(token);
    assert.equal(after.status, 401, 'the token issued from a replayed code is revoked');
    assertInvalidCode(await exchange({ code }));
  });

  it('concurrent exchanges of one code issue exactly one token (and the race counts as reuse)' + raceNote, async () => {
    const code = await authorize();
    const tokensBefore = await rawDb(test).selectFrom('api_tokens').select('id').execute();
    const responses = await Promise.all(Array.from({ length: 8 }, () => exchange({ code })));
    assert.equal(responses.filter((r) => r.status === 200).length, 1);
    responses.filter((r) => r.status !== 200).forEach(assertInvalidCode);
    const tokensAfter = await rawDb(test).selectFrom('api_tokens').select('id').execute();
    assert.equal(tokensAfter.length, tokensBefore.length + 1);
  });

  it('a code expires after 10 minutes (the clock is moved, not waited for)', async () => {
    const fresh = await authorize();
    const stale = await authorize();
    try {
      clockOffsetMs = 10 * 60_000 - 1_000;
      assert.equal((await exchange({ code: fresh })).status, 200, 'still valid just before 10 minutes');
      clockOffsetMs = 10 * 60_000 + 1;
      assertInvalidCode(await exchange({ code: stale }));
    } finally {
      clockOffsetMs = 0;
    }
    // The expired code was not consumed, yet it stays invalid: expiry is checked on every try.
    clockOffsetMs = 11 * 60_000;
    try {
      assertInvalidCode(await exchange({ code: stale }));
    } finally {
      clockOffsetMs = 0;
    }
  });

  it('a code issued for one integration is "Invalid code" at another integration’s token endpoint', async () => {
    const code = await authorize();
    assertInvalidCode(await exchange({ code }, 'n8n'));
    // That failed attempt did not burn the code for the tool it was issued to.
    assert.equal((await exchange({ code }, 'zapier')).status, 200);
  });

  it('a redirect_uri sent to the token endpoint must equal the bound one', async () => {
    const code = await authorize();
    assertInvalidCode(await exchange({ code, redirect_uri: OTHER_CALLBACK }));
    assertInvalidCode(await exchange({ code, redirect_uri: 'https://tool.example/callback' }));
    assert.equal((await exchange({ code, redirect_uri: CALLBACK })).status, 200);
  });

  it('PKCE S256: a missing or wrong verifier is "Invalid code"; the right one works', async () => {
    const verifier = randomBytes(48).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const code = await authorize({ params: flow({ code_challenge: challenge, code_challenge_method: 'S256' }) });
    assertInvalidCode(await exchange({ code }));
    assertInvalidCode(await exchange({ code, code_verifier: randomBytes(48).toString('base64url') }));
    assertInvalidCode(await exchange({ code, code_verifier: challenge }));
    const ok = await exchange({ code, code_verifier: verifier });
    assert.equal(ok.status, 200, ok.text);
  });

  it('PKCE: a verifier for a code issued without a challenge is refused (no downgrade)', async () => {
    const code = await authorize();
    assertInvalidCode(await exchange({ code, code_verifier: randomBytes(48).toString('base64url') }));
    assert.equal((await exchange({ code })).status, 200);
  });

  it('removing an integration stops its flow and its pending codes at once; its tokens keep working', async () => {
    await addIntegration(rawDb(test), { name: 'make', displayName: 'Make', redirectUris: ['https://www.make.com/oauth/cb/app'] });
    const params = flow({ redirect_uri: 'https://www.make.com/oauth/cb/app' });
    const token = (await exchange({ code: await authorize({ integration: 'make', params }) }, 'make')).json.access_token!;
    const pending = await authorize({ integration: 'make', params });
    await removeIntegration(rawDb(test), 'make');
    assertInvalidCode(await exchange({ code: pending }, 'make'));
    assertErrorPage(await browser.get(chooseUrl(params, 'make')), /does not know the app/);
    assert.equal((await me(token)).status, 200);
  });

  it('the token endpoint needs no bearer token and is not confused with /api/v1', async () => {
    const response = await exchange({ code: 'whatever' }, 'v1');
    assertInvalidCode(response);
    assert.equal(response.headers.get('www-authenticate'), null);
  });
});
