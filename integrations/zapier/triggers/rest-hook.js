'use strict';
/* global require, module */
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS, the module format Zapier runs */

const { apiUrl, requestAllowing } = require('../lib/tandem');

// A REST-hook trigger (CONTRACT.md, Events): turning a Zap on subscribes its hook URL to one
// event type with POST /api/v1/webhooks; turning it off deletes that subscription. Tandem then
// POSTs each event as {id, type, timestamp, programId, sequence, livemode, data}, where data is the
// resource exactly as the API returns it — which is what the trigger hands to the Zap.

function makeRestHookTrigger({ key, noun, label, description, event, listPath, listParams = {}, sample, outputFields }) {
  const performSubscribe = async (z, bundle) => {
    const response = await z.request({
      method: 'POST',
      url: apiUrl(bundle, '/webhooks'),
      body: { url: bundle.targetUrl, events: [event] },
    });
    // {id, url, events, secret, createdAt}: kept by Zapier as bundle.subscribeData.
    return response.data;
  };

  const performUnsubscribe = async (z, bundle) => {
    const id = bundle.subscribeData && bundle.subscribeData.id;
    if (!id) return {};
    // Already gone (removed in Tandem, or after Zapier answered 410 to a delivery): done too.
    const response = await requestAllowing(z, 404, {
      method: 'DELETE',
      url: apiUrl(bundle, '/webhooks'),
      params: { id },
    });
    return response.status === 404 ? { id, alreadyRemoved: true } : response.data;
  };

  const perform = (z, bundle) => {
    const envelope = bundle.cleanedRequest || {};
    // A subscription only receives its own event type; anything else is not this trigger's.
    if (envelope.type !== undefined && envelope.type !== event) return [];
    return envelope.data ? [envelope.data] : [];
  };

  // The newest few, for the Zap editor's "test trigger" step: the same objects perform returns.
  const performList = async (z, bundle) => {
    const response = await z.request({ url: apiUrl(bundle, listPath), params: { ...listParams, limit: 3 } });
    return response.data;
  };

  return {
    key,
    noun,
    display: { label, description },
    operation: {
      type: 'hook',
      performSubscribe,
      performUnsubscribe,
      perform,
      performList,
      sample,
      outputFields,
    },
  };
}

module.exports = { makeRestHookTrigger };
