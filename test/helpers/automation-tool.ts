import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A stand-in for Zapier, n8n or Make, listening on 127.0.0.1: /start sends the browser to
// Tandem's connect page with a fresh state and PKCE challenge; /callback checks the state,
// trades the code at the token endpoint, and tests its token with GET /api/v1/me — what a
// real tool does (spec 5.2). Everything it saw is recorded for the test to assert.

export interface Callback {
  /** The callback's query as received. */
  query: Record<string, string>;
  stateMatches: boolean;
  tokenResponse?: { status: number; body: unknown };
  accessToken?: string;
  /** GET /api/v1/me with the new token. */
  me?: { status: number; body: any };
}

export interface AutomationTool {
  url: string;
  callbackUrl: string;
  /** Every callback received, in order. */
  callbacks: Callback[];
  close(): Promise<void>;
}

export async function startAutomationTool(options: { tandemUrl: string; integration: string; usePkce?: boolean }): Promise<AutomationTool> {
  const callbacks: Callback[] = [];
  const pending = new Map<string, string>(); // state → PKCE verifier
  let callbackUrl = '';

  const server: Server = createServer((request, response) => {
    void (async () => {
      const url = new URL(request.url ?? '/', 'http://tool.invalid');
      if (url.pathname === '/start') {
        const state = `tool-state ${randomBytes(8).toString('hex')}+/=&`;
        const verifier = randomBytes(32).toString('base64url');
        pending.set(state, verifier);
        const connect = new URL(`${options.tandemUrl}/connect/${options.integration}/choose-affiliate-program`);
        connect.searchParams.set('state', state);
        connect.searchParams.set('redirect_uri', callbackUrl);
        connect.searchParams.set('response_type', 'code');
        if (options.usePkce !== false) {
          connect.searchParams.set('code_challenge', createHash('sha256').update(verifier).digest('base64url'));
          connect.searchParams.set('code_challenge_method', 'S256');
        }
        response.writeHead(302, { location: connect.toString() }).end();
        return;
      }
      if (url.pathname === '/callback') {
        const query = Object.fromEntries(url.searchParams);
        const verifier = query.state === undefined ? undefined : pending.get(query.state);
        const callback: Callback = { query, stateMatches: verifier !== undefined };
        callbacks.push(callback);
        if (callback.stateMatches && query.code) {
          const body = new URLSearchParams({ code: query.code, grant_type: 'authorization_code', redirect_uri: callbackUrl });
          if (options.usePkce !== false) body.set('code_verifier', verifier!);
          const exchange = await fetch(`${options.tandemUrl}/api/${options.integration}/token`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body,
          });
          callback.tokenResponse = { status: exchange.status, body: await exchange.json() };
          callback.accessToken = (callback.tokenResponse.body as { access_token?: string }).access_token;
          if (callback.accessToken) {
            const me = await fetch(`${options.tandemUrl}/api/v1/me`, { headers: { authorization: `Bearer ${callback.accessToken}` } });
            callback.me = { status: me.status, body: await me.json() };
          }
        }
        const title = callback.me?.status === 200 ? `Connected to ${callback.me.body.name}` : `Not connected: ${query.error ?? 'no token'}`;
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><title>Tool</title><h1>${title.replace(/[<>&]/g, '')}</h1>`);
        return;
      }
      response.writeHead(404).end();
    })().catch((error: unknown) => {
      response.writeHead(500).end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  callbackUrl = `${url}/callback`;
  return {
    url,
    callbackUrl,
    callbacks,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
