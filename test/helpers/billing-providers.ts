import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Webhook } from 'standardwebhooks';
import { unique, uniqueEmail } from './fixtures.ts';
import { apiClient, rawDb, type ApiClient, type TestServer } from './test-server.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { createProgram } from '../../src/modules/programs/program.service.ts';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { billingProviderOf, connectBilling } from '../../src/modules/billing/billing.service.ts';

// Billing providers' side of a test, beyond Stripe (stripe-events.ts): events built from the
// trimmed fixtures (test/billing/fixtures, each named with its source), signed as each
// provider signs them, posted to a real server's receiver.

export interface ConnectedProgram {
  api: ApiClient;
  programId: string;
  secret: string;
  affiliate: { id: string; link: string };
}

/** A new program (20 % commission, in `currency`) connected to `provider` by `secret`, with an API key and one affiliate. */
export async function connectedProgram(t: TestServer, provider: string, secret: string, currency = 'USD'): Promise<ConnectedProgram> {
  const db = rawDb(t);
  const owner = await createUser(db, { email: uniqueEmail('owner'), password: 'a long password' });
  const program = await createProgram(db, { ownerUserId: owner.id, name: `${provider} shop`, domain: 'shop.example', currency, commissionRate: 20 });
  await connectBilling(db, program.id, billingProviderOf(provider), secret, new Date().toISOString());
  const { token } = await issueToken(db, { programId: program.id, name: 'test', kind: 'api_key' });
  const api = apiClient(t.url, token, program.id);
  const affiliate = (await api.post('/affiliates', { firstName: 'Jane', lastName: 'Cooper', email: uniqueEmail('jane') })).body;
  return { api, programId: program.id, secret, affiliate };
}

/** A fixture of `provider` (its folder under test/billing/fixtures), parsed afresh: the caller may change it. */
export function fixture(provider: string, name: string): any {
  return JSON.parse(readFileSync(new URL(`../billing/fixtures/${provider}/${name}.json`, import.meta.url), 'utf8'));
}

/** A provider-style id: `prefix_` and 26 lowercase letters and digits, unique in this run. */
export const providerId = (prefix: string) => `${prefix}_${unique('x').toLowerCase().replace(/[^a-z0-9]/g, '').padEnd(26, '0').slice(0, 26)}`;

/** Paddle-Signature for `payload` at `ts` (seconds) under each of `secrets`: one h1 per secret, as Paddle signs during a rotation. */
export function paddleSignature(payload: string, secrets: string[], ts = Math.floor(Date.now() / 1000)): string {
  return [`ts=${ts}`, ...secrets.map((secret) => `h1=${createHmac('sha256', secret).update(`${ts}:${payload}`).digest('hex')}`)].join(';');
}

export interface Posted {
  status: number;
  body: any;
}

/** Posts `payload` (the exact bytes signed) to the program's receiver of `provider` with `headers`. */
export async function postBillingEvent(baseUrl: string, provider: string, programId: string, payload: string, headers: Record<string, string>): Promise<Posted> {
  const res = await fetch(`${baseUrl}/api/billing/${provider}/${programId}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: payload });
  return { status: res.status, body: await res.json() };
}

/** Posts a Paddle event signed with `secret` (null: no Paddle-Signature header). */
export function postPaddleEvent(baseUrl: string, programId: string, event: object, secret: string | null, signature?: string): Promise<Posted> {
  const payload = JSON.stringify(event);
  return postBillingEvent(baseUrl, 'paddle', programId, payload, secret === null ? {} : { 'paddle-signature': signature ?? paddleSignature(payload, [secret]) });
}

/** Lemon Squeezy's X-Signature: hex HMAC-SHA256 of the raw body under the signing secret. */
export const lemonSqueezySignature = (payload: string, secret: string) => createHmac('sha256', secret).update(payload).digest('hex');

/** Posts a Lemon Squeezy event signed with `secret` (null: no X-Signature header). */
export function postLemonSqueezyEvent(baseUrl: string, programId: string, event: object, secret: string | null, signature?: string): Promise<Posted> {
  const payload = JSON.stringify(event);
  const headers: Record<string, string> = { 'x-event-name': (event as { meta?: { event_name?: string } }).meta?.event_name ?? '' };
  if (secret !== null) headers['x-signature'] = signature ?? lemonSqueezySignature(payload, secret);
  return postBillingEvent(baseUrl, 'lemonsqueezy', programId, payload, headers);
}

/** Polar's Standard Webhooks headers for `payload`, signed as Polar signs (the key is the secret's own bytes), at `at`. */
export function polarHeaders(payload: string, secret: string, id = `msg_${unique('p').replace(/[^A-Za-z0-9]/g, '')}`, at = new Date()): Record<string, string> {
  const signature = new Webhook(Buffer.from(secret, 'utf8').toString('base64')).sign(id, at, payload);
  return { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature };
}

/** Posts a Polar event with `headers` (default: signed now with `secret`, under a new webhook-id). */
export function postPolarEvent(baseUrl: string, programId: string, event: object, secret: string, headers?: Record<string, string>): Promise<Posted> {
  const payload = JSON.stringify(event);
  return postBillingEvent(baseUrl, 'polar', programId, payload, headers ?? polarHeaders(payload, secret));
}

/** Chargebee's webhook basic authentication for `userAndPassword`, as the Authorization header it sends. */
export const chargebeeAuthorization = (userAndPassword: string) => `Basic ${Buffer.from(userAndPassword, 'utf8').toString('base64')}`;

/** Posts a Chargebee event with the credentials `userAndPassword` (null: none). */
export function postChargebeeEvent(baseUrl: string, programId: string, event: object, userAndPassword: string | null): Promise<Posted> {
  return postBillingEvent(baseUrl, 'chargebee', programId, JSON.stringify(event), userAndPassword === null ? {} : { authorization: chargebeeAuthorization(userAndPassword) });
}
