'use strict';
/* global require, module */
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS, the module format Zapier runs */

const { makeRestHookTrigger } = require('./rest-hook');
const { samples, outputFields } = require('../lib/samples');

const newSale = makeRestHookTrigger({
  key: 'new_sale',
  noun: 'Sale',
  label: 'New Sale',
  description: 'Triggers when a sale is recorded in your Tandem program, with the commission rate it earned.',
  event: 'sale.created',
  listPath: '/sales',
  sample: samples.sale,
  outputFields: outputFields.sale,
});

const newReferral = makeRestHookTrigger({
  key: 'new_referral',
  noun: 'Referral',
  label: 'New Referral',
  description: 'Triggers when a referred customer is recorded in your Tandem program.',
  event: 'referral.created',
  listPath: '/referrals',
  sample: samples.referral,
  outputFields: outputFields.referral,
});

const newAffiliate = makeRestHookTrigger({
  key: 'new_affiliate',
  noun: 'Affiliate',
  label: 'New Affiliate',
  description: 'Triggers when an affiliate joins your Tandem program.',
  event: 'affiliate.created',
  listPath: '/affiliates',
  sample: samples.affiliate,
  outputFields: outputFields.affiliate,
});

const payoutPaid = makeRestHookTrigger({
  key: 'payout_paid',
  noun: 'Payout',
  label: 'Payout Paid',
  description: 'Triggers when a payout to an affiliate is marked paid in your Tandem program (to thank them, or to book it).',
  event: 'payout.paid',
  listPath: '/payouts',
  listParams: { status: 'paid' },
  sample: samples.payout,
  outputFields: outputFields.payout,
});

module.exports = { newSale, newReferral, newAffiliate, payoutPaid };
