'use strict';
/* global require, module */
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS, the module format Zapier runs */

const { apiUrl, bodyFrom } = require('../lib/tandem');
const { samples, outputFields } = require('../lib/samples');

// Actions: each sends only the fields the user filled in, typed as the API expects, and
// returns the resource Tandem answers with (201 for POST, 200 for PUT).

/** Field key → JSON type, from the input field definitions. */
function typesOf(inputFields) {
  return Object.fromEntries(inputFields.map((field) => [field.key, field.type || 'string']));
}

function makeCreate({ key, noun, label, description, method, path, inputFields, sample, outputFields: fields }) {
  const types = typesOf(inputFields);
  return {
    key,
    noun,
    display: { label, description },
    operation: {
      inputFields,
      perform: async (z, bundle) => {
        const response = await z.request({ method, url: apiUrl(bundle, path), body: bodyFrom(bundle.inputData, types) });
        return response.data;
      },
      sample,
      outputFields: fields,
    },
  };
}

const STATUS_CHOICES = { active: 'Active', inactive: 'Inactive' };

const createAffiliate = makeCreate({
  key: 'create_affiliate',
  noun: 'Affiliate',
  label: 'Create Affiliate',
  description: 'Adds an affiliate to your Tandem program, with their own referral link.',
  method: 'POST',
  path: '/affiliates',
  inputFields: [
    { key: 'firstName', label: 'First Name', required: true },
    { key: 'lastName', label: 'Last Name', required: true },
    { key: 'email', label: 'Email', required: true, helpText: 'Unique within the program; also used as the payout e-mail.' },
    {
      key: 'commissionRate',
      label: 'Commission Rate (%)',
      type: 'number',
      helpText: 'A percentage from 0 to 100 (20 means 20 %). Leave empty to follow the program\'s default rate.',
    },
    {
      key: 'affiliateLink',
      label: 'Referral Link',
      helpText: 'The affiliate\'s link string: letters, digits and hyphens, such as `jane`. Leave empty to have one generated.',
    },
  ],
  sample: samples.affiliate,
  outputFields: outputFields.affiliate,
});

const createReferral = makeCreate({
  key: 'create_referral',
  noun: 'Referral',
  label: 'Create Referral',
  description: 'Records a customer who signed up through an affiliate, credited by affiliate or promotional code.',
  method: 'POST',
  path: '/referrals',
  inputFields: [
    { key: 'name', label: 'Customer Name', required: true },
    { key: 'email', label: 'Customer Email', required: true },
    {
      key: 'referredUserExternalId',
      label: 'Customer External ID',
      required: true,
      helpText: 'Your id for this customer, such as your user id or the payment processor\'s customer id (`cus_123`).',
    },
    {
      key: 'affiliateId',
      label: 'Affiliate ID or Link',
      helpText: 'The affiliate to credit: their id, or their link string (what the Tandem tracker reports as `window.tandem.referral`). Fill in this, Affiliate Email or Promotional Code.',
    },
    { key: 'affiliateEmail', label: 'Affiliate Email', helpText: 'Credit the affiliate with this e-mail instead.' },
    {
      key: 'promoCode',
      label: 'Promotional Code',
      helpText: 'Credit the affiliate the code is assigned to. The code is checked and its redemption count goes up by one.',
    },
    { key: 'plan', label: 'Plan', helpText: 'The customer\'s plan, such as `pro`.' },
    { key: 'status', label: 'Status', choices: STATUS_CHOICES, helpText: 'Defaults to active.' },
  ],
  sample: samples.referral,
  outputFields: outputFields.referral,
});

const createSale = makeCreate({
  key: 'create_sale',
  noun: 'Sale',
  label: 'Create Sale',
  description: 'Records a sale by a referred customer; the affiliate earns their commission on it.',
  method: 'POST',
  path: '/sales',
  inputFields: [
    {
      key: 'totalEarned',
      label: 'Amount',
      type: 'number',
      required: true,
      helpText: 'What the customer paid, in major units of the program\'s currency (49.99, not 4999).',
    },
    {
      key: 'email',
      label: 'Customer Email',
      helpText: 'The referred customer\'s e-mail. Fill in this, Referral ID or Promotional Code.',
    },
    {
      key: 'referralId',
      label: 'Referral ID',
      helpText: 'The referral\'s id (or an affiliate\'s id or link string, to credit that affiliate directly).',
    },
    { key: 'promoCode', label: 'Promotional Code', helpText: 'Credit the affiliate the code is assigned to; the code is checked and redeemed.' },
    { key: 'name', label: 'Customer Name', helpText: 'Needed only when the customer is not already known by referral or e-mail.' },
    { key: 'externalId', label: 'External ID', helpText: 'Your id for the payment, such as a charge id.' },
    {
      key: 'externalInvoiceId',
      label: 'External Invoice ID',
      helpText: 'Your invoice id. Tandem refuses a second sale with the same invoice id, so a repeated run cannot count a sale twice.',
    },
    {
      key: 'commissionRate',
      label: 'Commission Rate (%)',
      type: 'number',
      helpText: 'Overrides the affiliate\'s rate for this sale (0 to 100). Leave empty to use the affiliate\'s rate.',
    },
  ],
  sample: samples.sale,
  outputFields: outputFields.sale,
});

const updatePromotionalCode = makeCreate({
  key: 'update_promotional_code',
  noun: 'Promotional Code',
  label: 'Update Promotional Code',
  description: 'Changes a promotional code: activate or deactivate it, rename it, or change its limits.',
  method: 'PUT',
  path: '/promotional-codes',
  inputFields: [
    {
      key: 'promotionalCodeId',
      label: 'Promotional Code ID',
      required: true,
      search: 'find_promotional_code.id',
      helpText: 'The id of the code to change. Use the Find Promotional Code search to look it up by the code customers type.',
    },
    { key: 'code', label: 'New Code', helpText: 'Rename the code: letters, digits, `-` and `_`, unique in the program.' },
    { key: 'active', label: 'Active', type: 'boolean', helpText: 'False deactivates the code: it no longer redeems.' },
    { key: 'expiresAt', label: 'Expires At', type: 'datetime', helpText: 'After this moment the code no longer redeems.' },
    { key: 'maxRedemptions', label: 'Max Redemptions', type: 'integer', helpText: 'How many times the code may be redeemed in all.' },
    { key: 'firstTimeOrder', label: 'First-Time Orders Only', type: 'boolean', helpText: 'Only customers without an earlier sale may use it.' },
    { key: 'minimumAmount', label: 'Minimum Amount', type: 'number', helpText: 'The smallest sale amount the code applies to.' },
    { key: 'minimumAmountCurrency', label: 'Minimum Amount Currency', helpText: 'A three-letter currency code, such as `USD`.' },
    { key: 'limitToCustomers', label: 'Limit to One Customer', type: 'boolean', helpText: 'Only the customer given in Customer ID may use it.' },
    { key: 'customerId', label: 'Customer ID', helpText: 'The customer\'s external id (the referral\'s Customer External ID).' },
    { key: 'limitToAffiliate', label: 'Limit to the Affiliate', type: 'boolean', helpText: 'Only the affiliate the code is assigned to may be credited.' },
    { key: 'affiliateId', label: 'Assign to Affiliate ID', helpText: 'Assign the code to this affiliate (their id).' },
  ],
  sample: samples.promotionalCode,
  outputFields: outputFields.promotionalCode,
});

module.exports = { createAffiliate, createReferral, createSale, updatePromotionalCode };
