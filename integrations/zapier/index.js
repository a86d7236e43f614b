'use strict';
/* global require, module */
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS, the module format Zapier runs */

// The Tandem app for Zapier (Zapier Platform CLI). Triggers are REST hooks on Tandem's
// webhooks; actions and searches call the JSON API of the user's own Tandem server.

const { version } = require('./package.json');
const { version: platformVersion } = require('zapier-platform-core');
const authentication = require('./authentication');
const { addBearerToken, throwForTandemErrors } = require('./lib/tandem');
const { newSale, newReferral, newAffiliate, payoutPaid } = require('./triggers');
const { createAffiliate, createReferral, createSale, updatePromotionalCode } = require('./creates');
const { findAffiliate, findPromotionalCode } = require('./searches');

const byKey = (...items) => Object.fromEntries(items.map((item) => [item.key, item]));

module.exports = {
  version,
  platformVersion,

  authentication,
  beforeRequest: [addBearerToken],
  afterResponse: [throwForTandemErrors],

  triggers: byKey(newSale, newReferral, newAffiliate, payoutPaid),
  creates: byKey(createAffiliate, createReferral, createSale, updatePromotionalCode),
  searches: byKey(findAffiliate, findPromotionalCode),
  searchOrCreates: {
    find_affiliate: {
      key: 'find_affiliate',
      display: {
        label: 'Find or Create Affiliate',
        description: 'Finds an affiliate by e-mail, or adds them to the program if there is none.',
      },
      search: 'find_affiliate',
      create: 'create_affiliate',
    },
  },
};
