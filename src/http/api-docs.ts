import type { FastifyInstance, FastifySchema } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Config } from '../config.ts';
import { isProblemResponse, problemResponses, type ProblemCode } from './problem-responses.ts';
import { API_EXAMPLES } from './api-examples.ts';
import { DOCS_SCRIPT, DOCS_STYLESHEET } from './api-docs-theme.ts';

// The OpenAPI 3.1 document is generated from the route schemas (served at
// /api/v1/openapi.json); /docs renders it with Swagger UI from npm-installed assets.
//
// One rule decides what the document shows: the API is what lives under /api/. Everything
// else the server answers (dashboard, portal, connect pages, assets, health, the docs
// themselves) is hidden. Under /api/, /api/v1/ needs the bearer token; the rest is public
// (click tracking, the connect flow's token endpoint, Stripe's webhooks) and has no padlock.

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The OpenAPI description of a route that reads its input itself (the connect token
     * endpoint, Stripe's webhooks): as the route's `schema` it would validate and serialise,
     * and so change what the route accepts and answers; here it only documents.
     */
    docs?: FastifySchema;
  }
}

/** Tags in the order the reference shows them: one per resource, each operation has one. */
export const API_TAGS = [
  { name: 'Program', description: "The program the bearer token belongs to: a connection test for automation tools, with the program's tracking settings, commission plan and portal." },
  { name: 'Affiliates', description: 'The people who refer customers. Each has its own link (`link`), a commission rate (or the program\'s), and counters kept exact: referred users, clicks, commission earned.' },
  { name: 'Links', description: 'Extra referral links of an affiliate. A link string (letters, digits, hyphens) is unique within the program, ignoring case; the tracking script sends it as the referral.' },
  { name: 'Referrals', description: 'Customers an affiliate brought in, credited by affiliate id, link string, affiliate e-mail or promotional code. `referredUserExternalId` (your customer id) is recorded once.' },
  { name: 'Sales', description: 'Payments of referred customers and the commission they earn, computed and stored exactly (amounts in major units: 49.99). `externalInvoiceId` is recorded once, so a retried billing webhook never pays twice.' },
  { name: 'Commissions', description: 'The commission ledger: every change of what an affiliate earns (sale, refund, adjustment, void) as an entry that is only ever appended, pending during the hold, then due, then paid.' },
  { name: 'Payouts', description: 'Paying affiliates their due balance: a payout run, marking payouts paid or failed, and export files for PayPal Payouts and Wise.' },
  { name: 'Coupons', description: 'Discount definitions (percent or amount off) that promotional codes redeem.' },
  { name: 'Promotional codes', description: 'Codes customers enter, each on a coupon and assigned to the affiliate it credits; redeemed by `promoCode` on POST /referrals and POST /sales, with its restrictions checked atomically.' },
  { name: 'Webhooks', description: 'REST-hook subscriptions: every change is delivered to subscribed URLs as a signed event (Standard Webhooks), retried for about three days.' },
  { name: 'Events', description: 'The same events for polling: everything after a sequence number, oldest first.' },
  { name: 'Billing', description: 'Stripe connected by its webhooks: the endpoint Stripe posts to (public; its Stripe-Signature header is the credential) and the list of what each event did.' },
  { name: 'Tracking', description: 'Click tracking from the merchant\'s site: what `/tracker.js` reports to. Public, no token; only pages of the program\'s domain and its subdomains are answered.' },
  { name: 'Connect', description: 'The token endpoint of the connect flow automation tools (Zapier, n8n, Make) use: an authorization code for a bearer token. Public; keeps the OAuth-style bodies of the original service, not problem details.' },
];

/** Whether the document shows a route: the API is what lives under /api/ (the document itself aside). */
export function isDocumentedUrl(url: string): boolean {
  return url.startsWith('/api/') && url !== '/api/v1/openapi.json';
}

/** A documented route without the bearer token: everything under /api/ but /api/v1/. */
export function isPublicApiUrl(url: string): boolean {
  return isDocumentedUrl(url) && !url.startsWith('/api/v1/');
}

/** The Content-Security-Policy of /docs and its assets. */
export const DOCS_CSP = [
  "default-src 'self'",
  "base-uri 'self'",
  "connect-src 'self'",
  "font-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self'",
].join('; ');

/** Methods whose body Fastify reads (so it can be malformed or too large). */
const WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The problem codes a documented route can answer besides its own (the route declares those):
 * every API route's (token, input, limits), and on every route the unexpected.
 */
export function standardProblemCodes(method: string, url: string, schema: FastifySchema, config: Config): ProblemCode[] {
  const codes: ProblemCode[] = [];
  if (!isPublicApiUrl(url)) {
    const body = WITH_BODY.has(method);
    const query = (schema.querystring as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
    codes.push([
      'bad_request',
      body
        ? 'the body is not JSON, not sent as `application/json`, empty or nested deeper than 32 levels; or the query string has a broken %-escape'
        : 'the query string has a broken %-escape (`%zz`, a lone `%`, bytes that are no UTF-8)',
    ]);
    if ('cursor' in query) codes.push('invalid_cursor');
    codes.push('unauthorized');
    if (method === 'POST' || method === 'PUT') codes.push('idempotency_conflict', 'idempotency_key_reused');
    if (body) codes.push('payload_too_large');
    codes.push(['validation_failed', body ? 'the body or the query fails validation; `errors` holds a JSON Pointer (`#/field`) and a reason per field' : 'the query fails validation; `errors` holds a JSON Pointer (`#/field`) and a reason per field']);
    if (config.rateLimitPerMinute > 0) codes.push(['rate_limited', `over the program's ${config.rateLimitPerMinute} requests per minute (all its tokens together); \`Retry-After\` says when to retry`]);
  }
  codes.push('internal');
  if (config.databaseUrl.startsWith('postgres')) codes.push('unavailable');
  return codes;
}

interface MediaType {
  example?: unknown;
  examples?: Record<string, { summary: string; value: unknown }>;
}
interface Operation {
  parameters?: Record<string, unknown>[];
  requestBody?: { content: Record<string, MediaType> };
  responses: Record<string, { description?: string; content?: Record<string, MediaType> }>;
}

/** What a success answer is called when its schema has no description of its own. */
const SUCCESS = { '200': 'OK', '201': 'Created' } as Record<string, string>;

const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: 'Any unique string (a UUID): a retry with the same key and body gets the first answer again (`Idempotent-Replayed: true`) and writes nothing. Kept 24 hours.',
  // No example: Swagger UI would fill it in, and every "Try it out" would replay the first answer.
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

/**
 * The last touches of the generated document: the examples of api-examples.ts on each
 * operation's body and success answer, success answers named, and the Idempotency-Key header
 * on every API write.
 */
function finishDocument(document: { paths?: Record<string, Record<string, Operation>> }): void {
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      const name = method.toUpperCase();
      if (path.startsWith('/api/v1/') && (name === 'POST' || name === 'PUT')) operation.parameters = [...(operation.parameters ?? []), IDEMPOTENCY_KEY];
      for (const [status, response] of Object.entries(operation.responses)) {
        if (response.description === 'Default Response' && SUCCESS[status]) response.description = SUCCESS[status];
      }
      const examples = API_EXAMPLES[`${name} ${path}`];
      if (!examples) continue;
      for (const media of Object.values(operation.requestBody?.content ?? {})) if (examples.request !== undefined) media.example = examples.request;
      const success = Object.keys(operation.responses).find((status) => status.startsWith('2'));
      for (const media of Object.values((success && operation.responses[success]!.content) || {})) {
        if (examples.named) media.examples = examples.named;
        else if (examples.response !== undefined) media.example = examples.response;
      }
    }
  }
}

export async function registerApiDocs(app: FastifyInstance, config: Config): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Tandem API',
        version: '1.0.0',
        description:
          'Affiliates, links, referrals, sales, coupons and promotional codes of one affiliate program. Every call under `/api/v1` needs `Authorization: Bearer <token>`; the token decides the program. Errors are RFC 9457 problem details (`application/problem+json`). Behaviour and decisions: docs/api.md.',
      },
      // Same-origin: "Try it out" calls whatever address this page was loaded from, whatever
      // SITE_URL says (a server reached on 127.0.0.1, a LAN address, behind a proxy).
      servers: [{ url: '/', description: 'this server' }],
      tags: API_TAGS,
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key (`tdm_…`) from the dashboard\'s API keys page or `tandem key create`, or a token from the connect flow.' } } },
      security: [{ bearer: [] }],
    },
    // Shared schemas (the problem body) appear under their own $id, not `def-0`.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transform: ({ schema, url, route }) => {
      const documented: FastifySchema = { ...schema, ...route.config?.docs };
      if (!isDocumentedUrl(url)) return { schema: { ...documented, hide: true }, url };
      if (isPublicApiUrl(url)) documented.security = [];
      // A route with its own 500 answers every error its own way (the token endpoint's bodies).
      const own = documented.response as Record<string, unknown> | undefined;
      if (own?.['500'] === undefined || isProblemResponse(own['500'])) documented.response = problemResponses(standardProblemCodes(String(route.method), url, documented, config), own);
      return { schema: documented, url };
    },
    transformObject: (document) => {
      if (!('openapiObject' in document)) return document.swaggerObject;
      finishDocument(document.openapiObject as Parameters<typeof finishDocument>[0]);
      return document.openapiObject;
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // Everything the page loads is its own (scripts, styles, the favicon, the spec, "Try it
    // out"), so the policy names nothing else: no https: wildcard for styles and fonts, no
    // validator.swagger.io image, and no upgrade-insecure-requests, which would send a page
    // reached over plain http (a LAN address) to https for its own scripts and calls.
    staticCSP: DOCS_CSP,
    theme: {
      title: 'Tandem API reference',
      css: [{ filename: 'tandem.css', content: DOCS_STYLESHEET }],
      js: [{ filename: 'tandem.js', content: DOCS_SCRIPT }],
    },
    uiConfig: {
      // BaseLayout: no top bar, whose URL box, logo and theme toggle the reference has no use
      // for (and whose logo is an SVG with an inline <style>, refused by the policy).
      layout: 'BaseLayout',
      docExpansion: 'list',
      // Deep links put a link inside each operation's toggle button (nested-interactive).
      deepLinking: false,
      tryItOutEnabled: false,
      persistAuthorization: false,
      displayRequestDuration: true,
    },
  });
  app.get('/api/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
