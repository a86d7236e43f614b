import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { servedRoutes, toOpenApiPath } from '../helpers/route-tree.ts';

// The API reference (GET /api/v1/openapi.json, rendered at /docs): only the API, grouped by
// resource, public routes without a padlock, every error a documented problem body, examples
// that match their schemas, and servers that point wherever the document was fetched from.
// The statuses the server really answers (a sample of each kind) are the documented ones.

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const PROBLEM_TYPE = 'application/problem+json';
const SITE_URL = 'https://affiliates.example.net';

interface Media {
  schema?: Record<string, unknown>;
  example?: unknown;
  examples?: Record<string, { summary?: string; value: unknown }>;
}
interface Operation {
  tags?: string[];
  summary?: string;
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { description: string; content?: Record<string, Media> }>;
}
interface Document {
  openapi: string;
  servers: { url: string }[];
  tags: { name: string; description?: string }[];
  security: Record<string, string[]>[];
  components: { schemas: Record<string, Record<string, unknown>>; securitySchemes: Record<string, { type: string; scheme?: string }> };
  paths: Record<string, Record<string, Operation>>;
}

/** The connect flow's token endpoint keeps the original service's bodies (CONTRACT.md), not problem details. */
const TOKEN_ENDPOINT = 'POST /api/{integration}/token';

function operations(doc: Document): [string, Operation][] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]): [string, Operation] => [`${method.toUpperCase()} ${path}`, operation]),
  );
}

let t: TestServer;
let api: ApiClient;
let doc: Document;

before(async () => {
  // A SITE_URL the test never connects to: the document must not depend on it.
  t = await startTestServer({ siteUrl: SITE_URL, worker: false });
  api = await t.createTenant({ domain: 'acme.com' });
  const res = await fetch(`${t.url}/api/v1/openapi.json`);
  assert.equal(res.status, 200);
  doc = (await res.json()) as Document;
});
after(() => t.close());

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc as unknown as Record<string, unknown>);
    assert.equal(validator.version, '3.1');
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2)?.slice(0, 3000));
  });

  it('lists the API and nothing else: every route under /api/ the server serves, no page, asset or health check', () => {
    const documented = operations(doc).map(([name]) => name).sort();
    for (const name of documented) assert.match(name, /^[A-Z]+ \/api\//, `${name} is an API route`);
    const served = [...servedRoutes(t.server.app.printRoutes({ commonPrefix: false }))]
      .filter((route) => / \/api\//.test(route) && !/^(HEAD|OPTIONS) /.test(route) && route !== 'GET /api/v1/openapi.json')
      .map((route) => {
        const [method, path] = route.split(' ');
        return `${method} ${toOpenApiPath(path!)}`;
      })
      .sort();
    assert.deepEqual(documented, served);
    // The public ones, by name.
    for (const name of ['POST /api/track/click', TOKEN_ENDPOINT, 'POST /api/billing/stripe/{programId}']) assert.ok(documented.includes(name), `${name} is documented`);
    // Things that must stay out, though the server serves them.
    for (const path of ['/healthz', '/dashboard', '/portal/{slug}', '/connect/{integration}/confirm', '/login', '/tracker.js', '/docs', '/api/v1/openapi.json']) {
      assert.equal(doc.paths[path], undefined, `${path} is not in the document`);
    }
  });

  it('gives every operation one tag, from the described list, and a summary', () => {
    const tags = new Map(doc.tags.map((tag) => [tag.name, tag.description ?? '']));
    const used = new Set<string>();
    for (const [name, operation] of operations(doc)) {
      assert.equal(operation.tags?.length, 1, `${name} has one tag`);
      const tag = operation.tags![0]!;
      assert.ok(tags.get(tag), `${name}: its tag "${tag}" is listed with a description`);
      used.add(tag);
      assert.ok(operation.summary && operation.summary.length <= 60, `${name} has a short summary (${operation.summary})`);
    }
    assert.deepEqual([...tags.keys()].filter((tag) => !used.has(tag)), [], 'every listed tag is used');
  });

  it('asks for the bearer token on /api/v1 only: the public routes have no padlock', () => {
    const bearer = Object.entries(doc.components.securitySchemes).find(([, scheme]) => scheme.type === 'http' && scheme.scheme === 'bearer')?.[0];
    assert.ok(bearer);
    assert.deepEqual(doc.security, [{ [bearer]: [] }]);
    for (const [name, operation] of operations(doc)) {
      if (name.includes(' /api/v1/')) {
        assert.ok((operation.security ?? doc.security).some((requirement) => bearer in requirement), `${name} needs the token`);
        assert.ok(operation.responses['401'], `${name} documents 401`);
      } else {
        assert.deepEqual(operation.security, [], `${name} is public`);
        assert.equal(operation.responses['401'], undefined, `${name} never answers 401`);
      }
    }
  });

  it('documents every error as a problem body (application/problem+json) with an example of each code', () => {
    const problem = doc.components.schemas.Problem;
    assert.ok(problem, 'the Problem schema is a named component');
    assert.deepEqual(problem.required, ['type', 'title', 'status', 'detail', 'code', 'requestId']);
    let checked = 0;
    for (const [name, operation] of operations(doc)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400) continue;
        if (name === TOKEN_ENDPOINT) {
          // Its own bodies, documented as they are: {"error": "Invalid code"}.
          assert.deepEqual(Object.keys(response.content ?? {}), ['application/json'], `${name} ${status}`);
          continue;
        }
        assert.deepEqual(Object.keys(response.content ?? {}), [PROBLEM_TYPE], `${name} ${status} is ${PROBLEM_TYPE}`);
        const media = response.content![PROBLEM_TYPE]!;
        assert.deepEqual(media.schema, { $ref: '#/components/schemas/Problem' }, `${name} ${status} refers to the Problem schema`);
        const examples = Object.entries(media.examples ?? {});
        assert.ok(examples.length > 0, `${name} ${status} has examples`);
        for (const [code, example] of examples) {
          const value = example.value as { status: number; code: string };
          assert.equal(value.status, Number(status), `${name} ${status} ${code}: the example's status`);
          assert.equal(value.code, code, `${name} ${status}: the example is named after its code`);
          assert.ok(response.description.includes(`\`${code}\``), `${name} ${status} describes ${code}`);
        }
        checked++;
      }
    }
    assert.ok(checked > 200, `checked ${checked} error responses`);
  });

  it('documents the errors every API route can answer, by what the route reads', () => {
    const postgres = t.config.databaseUrl.startsWith('postgres');
    for (const [name, operation] of operations(doc)) {
      if (!name.includes(' /api/v1/')) continue;
      const [method] = name.split(' ');
      const statuses = Object.keys(operation.responses);
      for (const status of ['400', '401', '422', '429', '500']) assert.ok(statuses.includes(status), `${name} documents ${status}`);
      const withBody = ['POST', 'PUT', 'DELETE'].includes(method!);
      assert.equal(statuses.includes('413'), withBody, `${name}: 413 exactly when a body is read`);
      if (method === 'POST' || method === 'PUT') {
        assert.ok(operation.responses['409']?.content?.[PROBLEM_TYPE]?.examples?.idempotency_conflict, `${name}: 409 idempotency_conflict`);
        assert.ok(operation.parameters?.some((p) => p.in === 'header' && p.name === 'Idempotency-Key'), `${name} takes an Idempotency-Key`);
      }
      // The PostgreSQL pool's 503 (overload), which cannot happen on SQLite.
      assert.equal(Boolean(operation.responses['503']), postgres, `${name}: 503 exactly on PostgreSQL`);
    }
    // Route-specific codes come from the routes.
    const get = doc.paths['/api/v1/affiliates']!.get!;
    assert.ok(get.responses['404']?.content?.[PROBLEM_TYPE]?.examples?.not_found);
    assert.equal(doc.paths['/api/v1/me']!.get!.responses['404'], undefined, 'GET /me looks nothing up');
    const sale = doc.paths['/api/v1/sales']!.post!.responses;
    for (const code of ['duplicate_sale', 'idempotency_conflict']) assert.ok(sale['409']?.content?.[PROBLEM_TYPE]?.examples?.[code], `POST /sales 409 ${code}`);
    for (const code of ['validation_failed', 'affiliate_inactive', 'promo_code_exhausted', 'idempotency_key_reused']) assert.ok(sale['422']?.content?.[PROBLEM_TYPE]?.examples?.[code], `POST /sales 422 ${code}`);
    const click = doc.paths['/api/track/click']!.post!.responses;
    assert.deepEqual(Object.keys(click).sort(), ['200', '400', '403', '404', '413', '422', '429', '500', ...(postgres ? ['503'] : [])]);
  });

  it('has examples on every body and success answer of the API, each valid against its schema', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addFormat('status', /^(active|inactive)$/i);
    const check = (what: string, schema: Record<string, unknown> | undefined, value: unknown) => {
      assert.ok(schema, `${what} has a schema`);
      const validate = ajv.compile({ ...schema, components: doc.components });
      assert.ok(validate(value), `${what}: ${ajv.errorsText(validate.errors)}`);
    };
    let checked = 0;
    for (const [name, operation] of operations(doc)) {
      const main = name.startsWith('GET ') || name.startsWith('POST ') || name.startsWith('PUT ');
      for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) {
        if (main) assert.ok(media.example !== undefined, `${name} ${type} body has an example`);
        if (media.example !== undefined && type !== 'application/x-www-form-urlencoded') check(`${name} body`, media.schema, media.example);
      }
      for (const [status, response] of Object.entries(operation.responses)) {
        for (const [type, media] of Object.entries(response.content ?? {})) {
          const values = media.examples ? Object.values(media.examples).map((e) => e.value) : media.example !== undefined ? [media.example] : [];
          if (main && status.startsWith('2')) assert.ok(values.length > 0, `${name} ${status} has an example`);
          for (const value of values) {
            check(`${name} ${status} ${type}`, media.schema, value);
            checked++;
          }
        }
      }
    }
    // The examples follow the contract's money format: major units, at most the currency's decimals.
    const sale = doc.paths['/api/v1/sales']!.post!;
    assert.deepEqual(sale.requestBody!.content['application/json']!.example, { email: 'sam.lee@example.org', totalEarned: 49.99, externalInvoiceId: 'in_1QxLm2Ab3cD4eF5g' });
    assert.equal((sale.responses['201']!.content!['application/json']!.example as { commission: number }).commission, 12.5);
    assert.ok(checked > 250, `checked ${checked} examples`);
  });

  it('names no server but the one it was fetched from (relative), whatever SITE_URL says', () => {
    assert.deepEqual(doc.servers.map((server) => server.url), ['/']);
    assert.ok(!JSON.stringify(doc).includes(new URL(SITE_URL).host), 'the SITE_URL host appears nowhere');
  });
});

describe('the /docs page', () => {
  it("allows only its own origin, and does not send a page reached over http to https (upgrade-insecure-requests)", async () => {
    for (const path of ['/docs', '/docs/static/swagger-ui-bundle.js', '/docs/static/theme/tandem.css', '/docs/static/theme/tandem.js', '/docs/json']) {
      const res = await fetch(`${t.url}${path}`);
      assert.equal(res.status, 200, path);
      const policy = res.headers.get('content-security-policy') ?? '';
      const directives = new Map(policy.split(';').map((d) => d.trim().split(/\s+/)).filter((d) => d[0]).map(([name, ...sources]) => [name!, sources]));
      assert.ok(!directives.has('upgrade-insecure-requests'), `${path}: ${policy}`);
      for (const [name, sources] of directives) {
        for (const source of sources) assert.match(source, /^('self'|'none'|data:)$/, `${path}: ${name} allows only the page's own origin (${policy})`);
      }
      for (const name of ['default-src', 'script-src', 'style-src', 'connect-src', 'img-src']) assert.ok(directives.has(name), `${path}: ${name} is set`);
    }
    const html = await (await fetch(`${t.url}/docs`)).text();
    assert.match(html, /<title>Tandem API reference<\/title>/);
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=/i, 'no inline script or style');
  });
});

describe('the documented statuses are the answered ones', () => {
  /** The answer's status is documented for the operation, with the answer's content type. */
  async function assertDocumented(operation: string, res: Response, status: number): Promise<void> {
    assert.equal(res.status, status, `${operation} answered ${res.status}: ${await res.clone().text()}`);
    const [method, path] = operation.split(' ');
    const documented = doc.paths[path!]?.[method!.toLowerCase()]?.responses[String(status)];
    assert.ok(documented, `${operation} documents ${status}`);
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!;
    assert.ok(Object.keys(documented.content ?? {}).includes(type), `${operation} ${status} is documented as ${type}`);
    if (type === PROBLEM_TYPE) {
      const body = (await res.json()) as { code: string };
      assert.ok(documented.content![type]!.examples![body.code], `${operation} ${status} documents the code ${body.code}`);
    }
  }

  const call = (path: string, init: RequestInit = {}) => fetch(`${t.url}${path}`, init);
  const json = (body: unknown, headers: Record<string, string> = {}) => ({ 'content-type': 'application/json', authorization: `Bearer ${api.token}`, ...headers, body: JSON.stringify(body) });
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const { body: text, ...all } = json(body, headers);
    return call(path, { method: 'POST', headers: all, body: text });
  };

  it('on the API', async () => {
    await assertDocumented('GET /api/v1/me', await call('/api/v1/me'), 401);
    await assertDocumented('GET /api/v1/affiliates', await call(`/api/v1/affiliates?id=${randomUUID()}`, { headers: { authorization: `Bearer ${api.token}` } }), 404);
    await assertDocumented('GET /api/v1/affiliates', await call('/api/v1/affiliates?cursor=forged', { headers: { authorization: `Bearer ${api.token}` } }), 400);
    await assertDocumented('GET /api/v1/affiliates', await call('/api/v1/affiliates?limit=0', { headers: { authorization: `Bearer ${api.token}` } }), 422);
    const jane = { firstName: 'Jane', lastName: 'Doe', email: `jane-${randomUUID()}@example.com` };
    await assertDocumented('POST /api/v1/affiliates', await post('/api/v1/affiliates', jane), 201);
    await assertDocumented('POST /api/v1/affiliates', await post('/api/v1/affiliates', jane), 409);
    await assertDocumented('POST /api/v1/affiliates', await call('/api/v1/affiliates', { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${api.token}` }, body: '{"firstName":' }), 400);
    await assertDocumented('POST /api/v1/affiliates', await post('/api/v1/affiliates', { ...jane, firstName: 'x'.repeat(2 * 1024 * 1024) }), 413);
    await assertDocumented('POST /api/v1/sales', await post('/api/v1/sales', { totalEarned: 10, promoCode: 'NO-SUCH-CODE', email: 'sam@example.org' }), 404);
    await assertDocumented('DELETE /api/v1/webhooks', await call(`/api/v1/webhooks?id=${randomUUID()}`, { method: 'DELETE', headers: { authorization: `Bearer ${api.token}` } }), 404);
  });

  it('on the public routes', async () => {
    const click = (origin: string) =>
      call(`/api/track/click?programId=${api.programId}`, { method: 'POST', headers: { origin, 'content-type': 'text/plain' }, body: JSON.stringify({ url: 'https://acme.com/?ref=nobody' }) });
    await assertDocumented('POST /api/track/click', await click('https://acme.com'), 200);
    await assertDocumented('POST /api/track/click', await click('https://elsewhere.example'), 403);
    const stripe = await call(`/api/billing/stripe/${api.programId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' }, body: '{"id":"evt_1"}' });
    await assertDocumented('POST /api/billing/stripe/{programId}', stripe, 400);
    await assertDocumented('POST /api/billing/stripe/{programId}', await call(`/api/billing/stripe/${randomUUID()}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }), 404);
    const token = await call('/api/zapier/token', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'code=not-a-code' });
    await assertDocumented(TOKEN_ENDPOINT, token, 400);
    assert.deepEqual(await token.json(), { error: 'Invalid code' });
  });
});
