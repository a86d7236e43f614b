'use strict';
/* global require, Buffer */
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS, the module format Zapier runs */

const { startTandem, createProgramWithKey, apiClient } = require('./helpers/tandem');
const { startReceiver } = require('./helpers/http');
const { after, before, describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { createHmac } = require('node:crypto');
const zapier = require('zapier-platform-core');
const App = require('../index');

const appTester = zapier.createAppTester(App);

let tandem;
let fixture;
let api;
let receiver; // stands in for Zapier's hook URLs

before(async () => {
  tandem = await startTandem();
  fixture = await createProgramWithKey(tandem);
  api = apiClient(tandem.url, fixture.token);
  receiver = await startReceiver();
});
after(async () => {
  await receiver?.close();
  await tandem?.stop();
});

const authData = () => ({ site_url: tandem.url, access_token: fixture.token });

/** Standard Webhooks: v1,<base64 HMAC-SHA256 of "id.timestamp.body"> with the whsec_ secret. */
function signatureValid(delivery, secret) {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${delivery.headers['webhook-id']}.${delivery.headers['webhook-timestamp']}.${delivery.body}`).digest('base64');
  return delivery.headers['webhook-signature'].split(' ').includes(`v1,${expected}`);
}

let counter = 0;
/** Creates the affiliate, referral and sale the triggers react to; returns them as the API did. */
async function makeActivity() {
  counter += 1;
  const affiliate = await api.post('/affiliates', { firstName: 'Jane', lastName: `Doe${counter}`, email: `jane${counter}@example.com` });
  const referral = await api.post('/referrals', { name: 'Sam Lee', email: `sam${counter}@example.org`, referredUserExternalId: `cus_${counter}`, affiliateId: affiliate.id });
  const sale = await api.post('/sales', { email: referral.email, totalEarned: 49.99, externalInvoiceId: `in_${counter}` });
  const [made] = await api.post('/payouts', { affiliateId: affiliate.id });
  const payout = await api.put('/payouts', { payoutId: made.id, status: 'paid', method: 'paypal', reference: `PP-${counter}` });
  return { affiliate, referral, sale, payout };
}

const cases = [
  { key: 'new_sale', event: 'sale.created', resource: 'sale', list: '/sales' },
  { key: 'new_referral', event: 'referral.created', resource: 'referral', list: '/referrals' },
  { key: 'new_affiliate', event: 'affiliate.created', resource: 'affiliate', list: '/affiliates' },
  { key: 'payout_paid', event: 'payout.paid', resource: 'payout', list: '/payouts?status=paid' },
];

describe('REST-hook triggers', () => {
  for (const { key, event, resource, list } of cases) {
    it(`${key}: subscribe → a real ${event} delivery → perform gives the ${resource} → unsubscribe`, async () => {
      const trigger = App.triggers[key].operation;
      const targetUrl = `${receiver.base}/hooks/${key}`;

      // Turning the Zap on.
      const subscribeData = await appTester(trigger.performSubscribe, { authData: authData(), targetUrl });
      assert.equal(subscribeData.url, targetUrl);
      assert.deepEqual(subscribeData.events, [event]);
      assert.match(subscribeData.secret, /^whsec_/);
      const subscribed = (await api.get('/webhooks')).find((w) => w.id === subscribeData.id);
      assert.deepEqual(subscribed && subscribed.events, [event]);

      // Something happens in Tandem; the hook URL receives the event.
      const created = (await makeActivity())[resource];
      const delivery = await receiver.waitFor(
        (r) => r.path === `/hooks/${key}` && r.json && r.json.data && r.json.data.id === created.id,
        `the ${event} delivery of ${created.id}`,
      );
      assert.equal(delivery.json.type, event);
      assert.equal(delivery.json.programId, fixture.program.id);
      assert.ok(signatureValid(delivery, subscribeData.secret), 'signed with the secret the subscription returned');
      assert.ok(
        receiver.received.filter((r) => r.path === `/hooks/${key}`).every((r) => r.json.type === event),
        'the hook receives only its own event type',
      );

      // Zapier runs perform with the delivery.
      const results = await appTester(trigger.perform, {
        authData: authData(),
        subscribeData,
        targetUrl,
        cleanedRequest: delivery.json,
        rawRequest: { method: 'POST', headers: delivery.headers, content: delivery.body, querystring: '' },
      });
      assert.deepEqual(results, [created]);

      // "Test trigger" in the Zap editor: the newest items, in the same shape as perform's.
      const recent = await appTester(trigger.performList, { authData: authData() });
      assert.ok(recent.length >= 1 && recent.length <= 3, `${recent.length} items`);
      // The newest first, with the same fields as perform's (an affiliate's counters have moved on since).
      assert.equal(recent[0].id, created.id);
      assert.deepEqual(Object.keys(recent[0]).sort(), Object.keys(results[0]).sort());
      assert.deepEqual(recent, await api.get(`${list}${list.includes('?') ? '&' : '?'}limit=3`));

      // Turning the Zap off.
      await appTester(trigger.performUnsubscribe, { authData: authData(), subscribeData, targetUrl });
      assert.equal((await api.get('/webhooks')).find((w) => w.id === subscribeData.id), undefined, 'the subscription is gone');
      // Off twice (the subscription already gone) is not an error.
      assert.deepEqual(await appTester(trigger.performUnsubscribe, { authData: authData(), subscribeData, targetUrl }), { id: subscribeData.id, alreadyRemoved: true });
    });
  }

  it('perform ignores an envelope of another event type', async () => {
    const { affiliate } = await makeActivity();
    const envelope = { id: 'evt_x', type: 'affiliate.created', timestamp: new Date().toISOString(), programId: fixture.program.id, sequence: 1, livemode: true, data: affiliate };
    assert.deepEqual(await appTester(App.triggers.new_sale.operation.perform, { authData: authData(), cleanedRequest: envelope }), []);
    assert.deepEqual(await appTester(App.triggers.new_affiliate.operation.perform, { authData: authData(), cleanedRequest: envelope }), [affiliate]);
  });
});
