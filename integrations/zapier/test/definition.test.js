'use strict';
/* global require */
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS, the module format Zapier runs */

require('./helpers/tandem');
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const zapier = require('zapier-platform-core');
const { validateAppDefinition } = require('zapier-platform-schema');
const App = require('../index');
const { normalizeSiteUrl } = require('../lib/tandem');

// What `zapier validate --without-style` checks: the CLI runs the app's own
// zapier-platform-core with the "validate" command, which checks the compiled definition
// against zapier-platform-schema (its JSON schema and functional constraints). The CLI itself
// needs Node 22 and Zapier's servers for its style checks, so the tests call the same handler.

/** The errors `zapier validate` would list for `app`. */
async function validate(app) {
  const response = await zapier.createAppHandler(app)({ command: 'validate', calledFromCli: true });
  return response.results.map((error) => `${error.property}: ${error.message}`);
}

describe('app definition', () => {
  it('validates as `zapier validate` does it', async () => {
    assert.deepEqual(await validate(App), []);
  });

  it('its serialised definition (what `zapier push` uploads) validates against zapier-platform-schema', async () => {
    const definition = (await zapier.createAppHandler(App)({ command: 'definition', calledFromCli: true })).results;
    assert.equal(definition.authentication.type, 'oauth2');
    assert.deepEqual(validateAppDefinition(definition).errors, []);
  });

  it('the validator catches a broken definition (the check above can fail)', async () => {
    const broken = {
      ...App,
      searchOrCreates: { find_affiliate: { ...App.searchOrCreates.find_affiliate, create: 'create_nothing' } },
      creates: { ...App.creates, create_sale: { ...App.creates.create_sale, display: { label: 'Create Sale' } } },
    };
    const errors = await validate(broken);
    assert.ok(errors.some((e) => /searchOrCreates\.find_affiliate\.create/.test(e)), errors.join('\n'));
    assert.ok(errors.some((e) => /create_sale\.display.*description/.test(e)), errors.join('\n'));
  });

  it('pins the platform version it was built with, and the package version', () => {
    assert.equal(App.platformVersion, require('zapier-platform-core').version);
    assert.equal(App.platformVersion, require('../package.json').dependencies['zapier-platform-core']);
    assert.equal(App.version, require('../package.json').version);
  });

  it('OAuth2 without refresh, a site URL field, a connection test and label', () => {
    const auth = App.authentication;
    assert.equal(auth.type, 'oauth2');
    assert.equal(auth.oauth2Config.refreshAccessToken, undefined);
    assert.equal(auth.oauth2Config.autoRefresh, false);
    assert.deepEqual(auth.fields.map((f) => [f.key, f.required]), [['site_url', true]]);
    assert.equal(typeof auth.test, 'function');
    assert.equal(typeof auth.connectionLabel, 'function');
  });

  it('every trigger is a complete REST hook with a sample of the real fields', () => {
    assert.deepEqual(Object.keys(App.triggers).sort(), ['new_affiliate', 'new_referral', 'new_sale', 'payout_paid']);
    for (const trigger of Object.values(App.triggers)) {
      const op = trigger.operation;
      assert.equal(op.type, 'hook', trigger.key);
      for (const method of ['performSubscribe', 'performUnsubscribe', 'perform', 'performList']) assert.equal(typeof op[method], 'function', `${trigger.key}.${method}`);
      assert.ok(op.sample.id !== undefined, `${trigger.key} sample has an id`);
      const keys = op.outputFields.map((f) => f.key);
      // Zapier flattens nested objects with "__": affiliate__email is sample.affiliate.email.
      const inSample = (key) => key.split('__').reduce((value, part) => (value !== null && typeof value === 'object' && part in value ? value[part] : undefined), op.sample) !== undefined;
      for (const key of keys) assert.ok(inSample(key), `${trigger.key}: output field ${key} is in the sample`);
    }
  });

  it('every input field has a label; optional ones say what they do', () => {
    for (const group of ['creates', 'searches']) {
      for (const item of Object.values(App[group])) {
        for (const field of item.operation.inputFields) {
          assert.ok(field.label, `${item.key}.${field.key} has a label`);
          if (!field.required) assert.ok(field.helpText, `${item.key}.${field.key} has help text`);
        }
      }
    }
  });

  it('the server address is made canonical, and a non-address is refused with a hint', () => {
    assert.equal(normalizeSiteUrl('tandem.example.com'), 'https://tandem.example.com');
    assert.equal(normalizeSiteUrl(' https://tandem.example.com/ '), 'https://tandem.example.com');
    assert.equal(normalizeSiteUrl('https://example.com/affiliates/api/v1/'), 'https://example.com/affiliates');
    assert.equal(normalizeSiteUrl('http://127.0.0.1:3000/api'), 'http://127.0.0.1:3000');
    assert.equal(normalizeSiteUrl('https://tandem.example.com/?x=1#y'), 'https://tandem.example.com');
    assert.throws(() => normalizeSiteUrl(''), /address of your Tandem server/);
    assert.throws(() => normalizeSiteUrl('https://exa mple.com'), /not a web address/);
  });
});
