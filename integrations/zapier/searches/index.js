'use strict';
/* global require, module */
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS, the module format Zapier runs */

const { apiUrl, requestAllowing } = require('../lib/tandem');
const { samples, outputFields } = require('../lib/samples');

// Searches: a GET by a unique key answers one object, or 404 when nothing matches — which a
// search reports as "nothing found" ([]), not as an error.

function makeSearch({ key, noun, label, description, path, field, sample, outputFields: fields }) {
  return {
    key,
    noun,
    display: { label, description },
    operation: {
      inputFields: [field],
      perform: async (z, bundle) => {
        const response = await requestAllowing(z, 404, {
          url: apiUrl(bundle, path),
          params: { [field.key]: String(bundle.inputData[field.key]).trim() },
        });
        if (response.status === 404) return [];
        return Array.isArray(response.data) ? response.data : [response.data];
      },
      sample,
      outputFields: fields,
    },
  };
}

const findAffiliate = makeSearch({
  key: 'find_affiliate',
  noun: 'Affiliate',
  label: 'Find Affiliate',
  description: 'Finds an affiliate of your Tandem program by e-mail.',
  path: '/affiliates',
  field: { key: 'email', label: 'Email', required: true, helpText: 'The affiliate\'s e-mail; letter case and surrounding spaces do not matter.' },
  sample: samples.affiliate,
  outputFields: outputFields.affiliate,
});

const findPromotionalCode = makeSearch({
  key: 'find_promotional_code',
  noun: 'Promotional Code',
  label: 'Find Promotional Code',
  description: 'Finds a promotional code by the code customers type, with its coupon and affiliate.',
  path: '/promotional-codes',
  field: { key: 'code', label: 'Code', required: true, helpText: 'The code string, such as `JANE10`; letter case does not matter.' },
  sample: samples.promotionalCode,
  outputFields: outputFields.promotionalCode,
});

module.exports = { findAffiliate, findPromotionalCode };
