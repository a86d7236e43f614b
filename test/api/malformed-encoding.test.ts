// A broken %-escape under /api/v1, in the path or the query string, is a 400 with the
// contract's problem body (the router answered Fastify's own JSON for the path; the query's
// broken text was kept as it came and matched as a filter). Nothing is written.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rawDb, startTestServer, type ApiClient, type ApiResponse, type TestServer } from '../helpers/test-server.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { newAffiliate, uniqueEmail } from '../helpers/fixtures.ts';

let t: TestServer;
let api: ApiClient;

before(async () => {
  t = await startTestServer();
  api = await t.createTenant();
});
after(() => t?.close());

/** A 400 bad_request problem whose requestId is the response's x-request-id. */
function assertBadEncoding(res: ApiResponse, part: 'path' | 'query string', label: string): void {
  assertProblem(res, 400, 'bad_request');
  assert.equal(res.body.requestId, res.headers.get('x-request-id'), label);
  assert.match(res.body.detail, new RegExp(`request ${part} is not valid percent-encoding`), label);
}

async function affiliateCount(): Promise<number> {
  const { n } = await rawDb(t).selectFrom('affiliates').select((eb) => eb.fn.countAll().as('n')).where('program_id', '=', api.programId).executeTakeFirstOrThrow();
  return Number(n);
}

// A % without two hex digits, an escape cut short, bytes that are no UTF-8, an encoded lone surrogate.
const BROKEN = ['%zz', '%', '%E0%A4%A', '%E0%A4', '%FF', '%ED%A0%80', '%C0%AF'];

describe('malformed percent-encoding', () => {
  it('in the path: 400 problem body, with or without a token, for every method', async () => {
    for (const broken of BROKEN) {
      for (const path of [`/affiliates/${broken}`, `/aff${broken}iliates`]) {
        assertBadEncoding(await api.get(path), 'path', path);
        assertBadEncoding(await api.post(path, { firstName: 'A', lastName: 'B', email: uniqueEmail() }), 'path', `POST ${path}`);
        const anonymous = await fetch(`${t.url}/api/v1${path}`);
        assertBadEncoding({ status: anonymous.status, headers: anonymous.headers, body: await anonymous.json() }, 'path', `anonymous ${path}`);
      }
    }
  });

  it('in the query string: 400 problem body, as a value or as a key, and nothing is written', async () => {
    const before = await affiliateCount();
    for (const broken of BROKEN) {
      for (const path of [`/affiliates?email=${broken}`, `/affiliates?email=a%40b.example${broken}`, `/sales?saleExternalId=100${broken}`, `/affiliates?${broken}=1`, `/me?x=${broken}`]) {
        assertBadEncoding(await api.get(path), 'query string', path);
      }
      assertBadEncoding(await api.post(`/affiliates?note=${broken}`, { firstName: 'A', lastName: 'B', email: uniqueEmail() }), 'query string', `POST ${broken}`);
    }
    assert.equal(await affiliateCount(), before);
  });

  it('leaves well-formed escapes alone', async () => {
    const affiliate = await newAffiliate(api);
    const res = await api.get(`/affiliates?email=${encodeURIComponent(affiliate.email)}`);
    assert.equal(res.status, 200);
    assert.equal(res.body.id, affiliate.id);
    assert.deepEqual((await api.get(`/sales?saleExternalId=${encodeURIComponent('100% ✓')}`)).body, []);
    assertProblem(await api.get(`/affiliates/${encodeURIComponent('ü')}`), 404, 'not_found');
  });
});
