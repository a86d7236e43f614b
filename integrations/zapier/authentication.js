'use strict';
/* global require, module */
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS, the module format Zapier runs */

const { apiUrl, normalizeSiteUrl } = require('./lib/tandem');

// OAuth2 through Tandem's connect flow (docs/integrations.md). Tandem is self-hosted, so the
// user first types the address of their server; Zapier then sends them to that server's
// connect page, they pick one affiliate program and confirm, and the code Zapier receives is
// traded for a bearer token bound to that program. Tokens do not expire: there is no refresh,
// and a revoked token means reconnecting (see lib/tandem.js).

const INTEGRATION = 'zapier';

const authorizeUrl = (z, bundle) => {
  const url = new URL(`${normalizeSiteUrl(bundle.inputData.site_url)}/connect/${INTEGRATION}/choose-affiliate-program`);
  url.searchParams.set('state', bundle.inputData.state);
  url.searchParams.set('redirect_uri', bundle.inputData.redirect_uri);
  url.searchParams.set('response_type', 'code');
  return url.toString();
};

const getAccessToken = async (z, bundle) => {
  const site = normalizeSiteUrl(bundle.inputData.site_url);
  const response = await z.request({
    method: 'POST',
    url: `${site}/api/${INTEGRATION}/token`,
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
    body: {
      code: bundle.inputData.code,
      redirect_uri: bundle.inputData.redirect_uri,
      grant_type: 'authorization_code',
    },
  });
  const token = response.data && response.data.access_token;
  if (typeof token !== 'string' || token === '') {
    throw new z.errors.Error(`${site}/api/${INTEGRATION}/token answered without an access token. Is this the address of a Tandem server?`, 'oauth_error', response.status);
  }
  // site_url is returned with the token so that it is kept in authData for every later call.
  return { access_token: token, site_url: site };
};

/** The connection test: the program the token belongs to. */
const test = async (z, bundle) => {
  const response = await z.request({ url: apiUrl(bundle, '/me') });
  return response.data;
};

/** "Acme Partners": the program's name, from the test's answer (or asked for, if not at hand). */
const connectionLabel = async (z, bundle) => {
  const program = bundle.inputData && bundle.inputData.name ? bundle.inputData : await test(z, bundle);
  return program.name;
};

module.exports = {
  type: 'oauth2',
  fields: [
    {
      key: 'site_url',
      label: 'Tandem Server Address',
      type: 'string',
      required: true,
      helpText:
        'The address of your Tandem server, the one you open the Tandem dashboard at, such as `https://tandem.example.com`. ' +
        'Its operator must have allowed Zapier (`tandem integration add --name zapier`).',
    },
  ],
  oauth2Config: {
    authorizeUrl,
    getAccessToken,
    // Tandem issues no refresh token: its tokens do not expire.
    autoRefresh: false,
  },
  test,
  connectionLabel,
};
