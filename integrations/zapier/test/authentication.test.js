'use strict';
/* global require, URLSearchParams */
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS, the module format Zapier runs */

const { startTandem, createProgramWithKey, apiClient, appErrorOf, realFetch } = require('./helpers/tandem');
const { startReceiver, Browser, hiddenFields } = require('./helpers/http');
const { after, before, describe, it } = require('node:test');
const assert = require('node:assert/strict');
const zapier = require('zapier-platform-core');
const App = require('../index');

const appTester = zapier.createAppTester(App);

let tandem;
let fixture;
let callback; // stands in for Zapier's OAuth return URL
let callbackUrl;
let secondProgram;

before(async () => {
  tandem = await startTandem();
  fixture = await createProgramWithKey(tandem);
  secondProgram = await tandem.cli('program', 'create', '--owner', fixture.email, '--name', 'Beta Store', '--domain', 'beta.example.com');
  callback = await startReceiver();
  callbackUrl = `${callback.base}/dashboard/auth/oauth/return/App123CLIAPI/`;
  await tandem.cli('integration', 'add', '--name', 'zapier', '--display-name', 'Zapier', '--redirect-uri', callbackUrl);
});

after(async () => {
  await callback?.close();
  await tandem?.stop();
});

const authData = () => ({ site_url: tandem.url, access_token: fixture.token });

describe('connection test and label', () => {
  it('the test answers the token\'s program (GET /api/v1/me)', async () => {
    const program = await appTester(App.authentication.test, { authData: authData() });
    assert.equal(program.id, fixture.program.id);
    assert.equal(program.name, 'Acme Partners');
    assert.equal(program.domain, 'acme.example.com');
  });

  it('the label is the program\'s name, from the test\'s answer or asked for', async () => {
    assert.equal(await appTester(App.authentication.connectionLabel, { authData: authData(), inputData: { name: 'From the test' } }), 'From the test');
    assert.equal(await appTester(App.authentication.connectionLabel, { authData: authData() }), 'Acme Partners');
  });

  it('a server address typed loosely still reaches the API', async () => {
    for (const typed of [`${tandem.url}/`, `${tandem.url}/api/v1`, `  ${tandem.url}/api/v1/  `]) {
      const program = await appTester(App.authentication.test, { authData: { ...authData(), site_url: typed } });
      assert.equal(program.id, fixture.program.id, typed);
    }
  });

  it('a revoked token fails with a message to reconnect, not a refresh', async () => {
    const key = await tandem.cli('key', 'create', '--program', fixture.program.id, '--name', 'to revoke');
    await tandem.cli('key', 'revoke', '--token-id', key.id);
    const error = await appTester(App.authentication.test, { authData: { ...authData(), access_token: key.token } }).then(
      () => assert.fail('the test passed with a revoked token'),
      (e) => e,
    );
    assert.equal(error.name, 'AppError', error.stack);
    const { message, code, status } = appErrorOf(error);
    assert.equal(status, 401);
    assert.equal(code, 'unauthorized');
    assert.match(message, /Reconnect your Tandem account/);
  });
});

describe('OAuth2 through the connect flow', () => {
  it('authorize URL → log in → choose a program → confirm → code → token that works', async () => {
    const state = `zapier-state ${Date.now()} +/&=`;

    // 1. Where Zapier sends the user.
    const authorizeUrl = await appTester(App.authentication.oauth2Config.authorizeUrl, {
      inputData: { site_url: `${tandem.url}/`, state, redirect_uri: callbackUrl },
    });
    const url = new URL(authorizeUrl);
    assert.equal(`${url.origin}${url.pathname}`, `${tandem.url}/connect/zapier/choose-affiliate-program`);
    assert.equal(url.searchParams.get('state'), state);
    assert.equal(url.searchParams.get('redirect_uri'), callbackUrl);

    // 2. The user's browser: not logged in yet, so Tandem asks to log in first.
    const browser = new Browser(tandem.url);
    const first = await browser.get(authorizeUrl);
    assert.equal(first.status, 303, first.text.slice(0, 300));
    const loginPage = await browser.get(first.location);
    assert.equal(loginPage.status, 200);
    const loggedIn = await browser.post('/login', {
      ...hiddenFields(loginPage.text, /<form\b[^>]*action="\/login"/),
      email: fixture.email,
      password: fixture.password,
    });
    assert.equal(loggedIn.status, 303, loggedIn.text.slice(0, 300));

    // 3. Back on the connect page: choose "Beta Store", then confirm.
    const choose = await browser.get(loggedIn.location);
    assert.equal(choose.status, 200, choose.text.slice(0, 300));
    assert.match(choose.text, new RegExp(`value="${secondProgram.id}"`));
    const params = new URLSearchParams({ ...hiddenFields(choose.text, /<form id="connect-choose"/), program: secondProgram.id });
    const consent = await browser.get(`/connect/zapier/confirm?${params}`);
    assert.equal(consent.status, 200, consent.text.slice(0, 300));
    const confirmed = await browser.post('/connect/zapier/authorize', {
      ...hiddenFields(consent.text, /<form method="post" action="\/connect\/zapier\/authorize"/),
      decision: 'allow',
    });
    assert.equal(confirmed.status, 303, confirmed.text.slice(0, 300));

    // 4. The browser lands on Zapier's return URL with the code and the same state.
    await (await realFetch(confirmed.location)).text();
    const landed = await callback.waitFor((r) => r.path === new URL(callbackUrl).pathname, 'the OAuth redirect');
    assert.equal(landed.query.state, state);
    assert.ok(landed.query.code);

    // 5. Zapier trades the code for a token.
    const tokens = await appTester(App.authentication.oauth2Config.getAccessToken, {
      inputData: { site_url: `${tandem.url}/`, code: landed.query.code, redirect_uri: callbackUrl, state },
    });
    assert.match(tokens.access_token, /^tdm_/);
    assert.equal(tokens.site_url, tandem.url);

    // 6. The token is bound to the chosen program: plain API call, then the app's test and label.
    const me = await apiClient(tandem.url, tokens.access_token).get('/me');
    assert.equal(me.id, secondProgram.id);
    const program = await appTester(App.authentication.test, { authData: tokens });
    assert.equal(program.id, secondProgram.id);
    assert.equal(await appTester(App.authentication.connectionLabel, { authData: tokens, inputData: program }), 'Beta Store');

    // 7. A code is single use: a second exchange is refused with a clear message (and, as
    //    Tandem documents, revokes the token it issued — the app then says to reconnect).
    const reuse = await appTester(App.authentication.oauth2Config.getAccessToken, {
      inputData: { site_url: tandem.url, code: landed.query.code, redirect_uri: callbackUrl, state },
    }).then(
      () => assert.fail('a used code was accepted'),
      (e) => appErrorOf(e),
    );
    assert.equal(reuse.status, 400);
    assert.match(reuse.message, /Tandem refused the authorization: Invalid code/);
    const revoked = await appTester(App.authentication.test, { authData: tokens }).then(
      () => assert.fail('the token survived its code\'s reuse'),
      (e) => appErrorOf(e),
    );
    assert.equal(revoked.status, 401);
  });

  it('a made-up code is refused with the token endpoint\'s reason', async () => {
    const error = await appTester(App.authentication.oauth2Config.getAccessToken, {
      inputData: { site_url: tandem.url, code: 'not-a-real-code', redirect_uri: callbackUrl, state: 's' },
    }).then(
      () => assert.fail('a made-up code was accepted'),
      (e) => appErrorOf(e),
    );
    assert.equal(error.code, 'oauth_error');
    assert.match(error.message, /Invalid code/);
  });
});
