'use strict';
/* global require */
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS, the module format Zapier runs */

const { startTandem, createProgramWithKey, apiClient, appErrorOf } = require('./helpers/tandem');
const { after, before, describe, it } = require('node:test');
const assert = require('node:assert/strict');
const zapier = require('zapier-platform-core');
const App = require('../index');

const appTester = zapier.createAppTester(App);

let tandem;
let fixture;
let api;

before(async () => {
  tandem = await startTandem();
  fixture = await createProgramWithKey(tandem);
  api = apiClient(tandem.url, fixture.token);
});
after(() => tandem?.stop());

const run = (item, inputData) => appTester(item.operation.perform, { authData: { site_url: tandem.url, access_token: fixture.token }, inputData });
const failure = (promise) => promise.then(() => assert.fail('expected the step to fail'), (error) => appErrorOf(error));

describe('actions', () => {
  let affiliate;
  let referral;

  it('Create Affiliate: POST /affiliates, numbers typed, empty fields left out', async () => {
    affiliate = await run(App.creates.create_affiliate, {
      firstName: 'Jane',
      lastName: 'Doe',
      email: 'jane@example.com',
      commissionRate: '25', // Zapier may hand numbers over as text
      affiliateLink: 'jane',
    });
    assert.equal(affiliate.email, 'jane@example.com');
    assert.equal(affiliate.commissionRate, 25);
    assert.equal(affiliate.link, 'jane');
    assert.deepEqual(await api.get(`/affiliates?id=${affiliate.id}`), affiliate);

    const generated = await run(App.creates.create_affiliate, { firstName: 'Max', lastName: 'Roe', email: 'max@example.com', commissionRate: '', affiliateLink: '' });
    assert.equal(generated.commissionRate, 20, 'the program default');
    assert.match(generated.link, /^Max-?[A-Za-z0-9]+$/i);
  });

  it('Create Affiliate: a refusal names the reason and the field', async () => {
    const duplicate = await failure(run(App.creates.create_affiliate, { firstName: 'Jane', lastName: 'Again', email: 'JANE@example.com' }));
    assert.equal(duplicate.status, 409);
    assert.equal(duplicate.code, 'conflict');
    const invalid = await failure(run(App.creates.create_affiliate, { firstName: 'Bad', lastName: 'Mail', email: 'not-an-email' }));
    assert.equal(invalid.status, 422);
    assert.equal(invalid.code, 'validation_failed');
    assert.match(invalid.message, /email: must be an e-mail address/);
  });

  it('Create Referral: POST /referrals credited by affiliate link', async () => {
    referral = await run(App.creates.create_referral, {
      name: 'Sam Lee',
      email: 'sam@example.org',
      referredUserExternalId: 'cus_123',
      affiliateId: 'jane',
      plan: 'pro',
      status: 'active',
    });
    assert.equal(referral.affiliateId, affiliate.id);
    assert.equal(referral.referredUserExternalId, 'cus_123');
    assert.equal(referral.plan, 'pro');
    assert.deepEqual(await api.get(`/referrals?id=${referral.id}`), referral);
  });

  it('Create Sale: POST /sales by customer e-mail; the commission follows the affiliate', async () => {
    const sale = await run(App.creates.create_sale, { totalEarned: '49.99', email: 'sam@example.org', externalInvoiceId: 'in_42' });
    assert.equal(sale.totalEarned, 49.99);
    assert.equal(sale.referralId, referral.id);
    assert.equal(sale.affiliateId, affiliate.id);
    assert.equal(sale.commissionRate, 25);
    assert.deepEqual(await api.get(`/sales?id=${sale.id}`), sale);
    assert.equal((await api.get(`/affiliates?id=${affiliate.id}`)).totalCommissionEarned, 12.5);
  });

  let code;

  it('Update Promotional Code: PUT /promotional-codes with typed booleans, integers and dates', async () => {
    const coupon = await api.post('/coupons', { name: 'Ten off', couponType: 'PERCENTAGE', percentOff: 10, duration: 'once' });
    code = await api.post('/promotional-codes', { couponId: coupon.id, code: 'JANE10', affiliateEmail: 'jane@example.com' });
    const updated = await run(App.creates.update_promotional_code, {
      promotionalCodeId: code.id,
      active: 'false',
      maxRedemptions: '5',
      expiresAt: '2030-01-31T12:00:00+01:00',
      firstTimeOrder: true,
      minimumAmount: '10.5',
      minimumAmountCurrency: 'USD',
      code: '',
    });
    assert.equal(updated.id, code.id);
    assert.equal(updated.code, 'JANE10', 'an empty field changes nothing');
    assert.equal(updated.active, false);
    assert.equal(updated.maxRedemptions, 5);
    assert.equal(updated.expiresAt, '2030-01-31T11:00:00.000Z');
    assert.equal(updated.firstTimeOrder, true);
    assert.equal(updated.minimumAmount, 10.5);
    assert.deepEqual(await api.get(`/promotional-codes?id=${code.id}`), updated);
  });

  it('Update Promotional Code: an unknown id is a clear 404', async () => {
    const error = await failure(run(App.creates.update_promotional_code, { promotionalCodeId: '00000000-0000-4000-8000-000000000000', active: 'true' }));
    assert.equal(error.status, 404);
    assert.equal(error.code, 'not_found');
    assert.match(error.message, /not found/i);
  });

  it('Find Affiliate: by e-mail → that one affiliate; nobody → [] (a 404 is no error)', async () => {
    const found = await run(App.searches.find_affiliate, { email: '  JANE@example.com ' });
    assert.deepEqual(found, [await api.get(`/affiliates?id=${affiliate.id}`)]);
    assert.deepEqual(await run(App.searches.find_affiliate, { email: 'nobody@example.com' }), []);
    const invalid = await failure(run(App.searches.find_affiliate, { email: 'not an e-mail' }));
    assert.equal(invalid.status, 422, 'other errors are still errors');
  });

  it('Find Promotional Code: by code, ignoring case → that code; unknown → []', async () => {
    const found = await run(App.searches.find_promotional_code, { code: 'jane10' });
    assert.equal(found.length, 1);
    assert.equal(found[0].id, code.id);
    assert.equal(found[0].coupon.name, 'Ten off');
    assert.equal(found[0].affiliate.email, 'jane@example.com');
    assert.deepEqual(await run(App.searches.find_promotional_code, { code: 'NOSUCHCODE' }), []);
  });
});
