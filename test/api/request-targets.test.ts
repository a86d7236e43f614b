// PUT names its target in the query or the JSON body, as DELETE does (docs/api.md, "Targets of
// PUT and DELETE"): `PUT /sales?saleId=5`, `PUT /referrals?referralId=…`, `PUT /affiliates?id=…`,
// and the same on coupons, links and promotional codes. A field given in both places with
// different values is a 422 that changes nothing, for PUT and DELETE alike.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { newAffiliate, newCode, newCoupon, newReferral, newSale, unique } from '../helpers/fixtures.ts';

let t: TestServer;
let api: ApiClient;
let other: ApiClient;

before(async () => {
  t = await startTestServer();
  api = await t.createTenant();
  other = await t.createTenant();
});
after(() => t?.close());

async function eventCount(): Promise<number> {
  const { n } = await rawDb(t).selectFrom('events').select((eb) => eb.fn.countAll().as('n')).where('program_id', '=', api.programId).executeTakeFirstOrThrow();
  return Number(n);
}

interface Case {
  path: string;
  /** The two names of the target, as the SDKs send them. */
  names: [string, string];
  /** A new resource: its id and a body field that PUT changes, with the resource's field to read it back. */
  make(): Promise<{ id: string | number }>;
  change: (value: string) => Record<string, unknown>;
  read: (body: any) => string;
}

const cases: Case[] = [
  {
    path: '/sales',
    names: ['saleId', 'id'],
    make: async () => newSale(api, { referralId: (await newAffiliate(api)).id }),
    change: (value) => ({ name: value }),
    read: (body) => body.name,
  },
  {
    path: '/referrals',
    names: ['referralId', 'id'],
    make: async () => newReferral(api, { affiliateId: (await newAffiliate(api)).id }),
    change: (value) => ({ name: value }),
    read: (body) => body.name,
  },
  {
    path: '/affiliates',
    names: ['id', 'affiliateId'],
    make: () => newAffiliate(api),
    change: (value) => ({ firstName: value }),
    read: (body) => body.firstName,
  },
  {
    path: '/coupons',
    names: ['id', 'couponId'],
    make: () => newCoupon(api),
    change: (value) => ({ name: value }),
    read: (body) => body.name,
  },
];

for (const c of cases) {
  describe(`PUT ${c.path}`, () => {
    it(`takes ${c.names.join(' or ')} in the query string`, async () => {
      for (const name of c.names) {
        const target = await c.make();
        const value = unique('Query');
        const res = await api.put(`${c.path}?${name}=${target.id}`, c.change(value));
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.equal(String(res.body.id), String(target.id));
        assert.equal(c.read(res.body), value);
        assert.equal(c.read((await api.get(`${c.path}?id=${target.id}`)).body), value, 'stored');
      }
    });

    it('takes the same id in both places; refuses two different ones with 422, changing nothing', async () => {
      const [a, b] = [await c.make(), await c.make()];
      const [name, otherName] = c.names;
      const same = await api.put(`${c.path}?${name}=${a.id}`, { [name]: a.id, ...c.change('Same') });
      assert.equal(same.status, 200, JSON.stringify(same.body));

      const events = await eventCount();
      for (const [query, body, pointer] of [
        [`${name}=${a.id}`, { [name]: b.id }, `#/${name}`],
        [`${otherName}=${a.id}`, { [otherName]: b.id }, `#/${otherName}`],
        [`${name}=${a.id}`, { [otherName]: b.id }, `#/${otherName}`],
      ] as const) {
        const res = await api.put(`${c.path}?${query}`, { ...body, ...c.change('Never') });
        assert.deepEqual(assertProblem(res, 422, 'validation_failed'), [pointer], `${query} with ${JSON.stringify(body)}`);
      }
      for (const target of [a, b]) assert.notEqual(c.read((await api.get(`${c.path}?id=${target.id}`)).body), 'Never');
      assert.equal(await eventCount(), events, 'no event');
    });

    it('answers 422 without any target, and 404 for a target of another program', async () => {
      assert.deepEqual(assertProblem(await api.put(c.path, c.change('Nobody')), 422, 'validation_failed'), [`#/${c.names[0]}`]);
      const foreignOf: Record<string, () => Promise<{ id: string | number }>> = {
        '/sales': async () => newSale(other, { referralId: (await newAffiliate(other)).id }),
        '/referrals': async () => newReferral(other, { affiliateId: (await newAffiliate(other)).id }),
        '/affiliates': () => newAffiliate(other),
        '/coupons': () => newCoupon(other),
      };
      const foreign = await foreignOf[c.path]!();
      assertProblem(await api.put(`${c.path}?${c.names[0]}=${foreign.id}`, c.change('Stranger')), 404, 'not_found');
    });
  });
}

describe('a target in the query beside a body value of the wrong type', () => {
  it('is the body schema\'s 422, never a 500 (found by the fuzzer: an object whose toString is not a function)', async () => {
    const sale = await newSale(api, { referralId: (await newAffiliate(api)).id });
    for (const id of [{ toString: 'x', valueOf: null }, [sale.id], null]) {
      const res = await api.put(`/sales?id=${sale.id}`, { id, name: 'Never' });
      assert.deepEqual(assertProblem(res, 422, 'validation_failed'), ['#/id'], JSON.stringify(id));
    }
    assert.notEqual((await api.get(`/sales?id=${sale.id}`)).body.name, 'Never');
  });
});

describe('PUT /links and PUT /promotional-codes', () => {
  it('take the link by id or current link, and the code by promotionalCodeId, in the query; two different targets are a 422', async () => {
    const affiliate = await newAffiliate(api);
    const link = (await api.post('/links', { link: unique('old'), affiliateId: affiliate.id })).body;
    const renamed = unique('new');
    const byString = await api.put(`/links?link=${link.link}`, { newLink: renamed });
    assert.equal(byString.status, 200, JSON.stringify(byString.body));
    assert.equal(byString.body.id, link.id);
    const byId = await api.put(`/links?id=${link.id}`, { newLink: `${renamed}x` });
    assert.equal(byId.body.link, `${renamed}x`);
    assert.deepEqual(assertProblem(await api.put(`/links?link=${affiliate.link}`, { link: `${renamed}x`, newLink: unique('never') }), 422, 'validation_failed'), ['#/link']);

    const code = await newCode(api, { couponId: (await newCoupon(api)).id, affiliateId: affiliate.id });
    const second = await newCode(api, { couponId: (await newCoupon(api)).id, affiliateId: affiliate.id });
    const off = await api.put(`/promotional-codes?promotionalCodeId=${code.id}`, { active: false });
    assert.equal(off.status, 200, JSON.stringify(off.body));
    assert.equal(off.body.id, code.id);
    assert.equal(off.body.active, false);
    assert.deepEqual(assertProblem(await api.put(`/promotional-codes?promotionalCodeId=${code.id}`, { promotionalCodeId: second.id, active: false }), 422, 'validation_failed'), ['#/promotionalCodeId']);
    assert.equal((await api.get(`/promotional-codes?id=${second.id}`)).body.active, true);
  });
});

describe('Idempotency-Key with a target in the query', () => {
  it('counts the query target as part of the request: another target with the same key and body is 422 idempotency_key_reused', async () => {
    const affiliate = await newAffiliate(api);
    const [a, b] = [await newSale(api, { referralId: affiliate.id }), await newSale(api, { referralId: affiliate.id })];
    const key = unique('key');
    const first = await api.request('PUT', `/sales?saleId=${a.id}`, { name: 'Keyed' }, { 'idempotency-key': key });
    assert.equal(first.status, 200);
    const replay = await api.request('PUT', `/sales?saleId=${a.id}`, { name: 'Keyed' }, { 'idempotency-key': key });
    assert.deepEqual(replay.body, first.body);
    assertProblem(await api.request('PUT', `/sales?saleId=${b.id}`, { name: 'Keyed' }, { 'idempotency-key': key }), 422, 'idempotency_key_reused');
    assert.notEqual((await api.get(`/sales?id=${b.id}`)).body.name, 'Keyed');
  });

  it('is the same request whether the target comes in the query or the body, in any field order: a replay', async () => {
    const affiliate = await newAffiliate(api);
    const sale = await newSale(api, { referralId: affiliate.id });
    const key = unique('key');
    const first = await api.request('PUT', `/sales?saleId=${sale.id}`, { name: 'Either way' }, { 'idempotency-key': key });
    assert.equal(first.status, 200);
    const inBody = await api.request('PUT', '/sales', { saleId: sale.id, name: 'Either way' }, { 'idempotency-key': key });
    assert.equal(inBody.status, 200, JSON.stringify(inBody.body));
    assert.equal(inBody.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(inBody.body, first.body);
  });
});

describe('DELETE', () => {
  it('refuses an id in the query and another in the body (422), deleting neither', async () => {
    const affiliate = await newAffiliate(api);
    const [a, b] = [await newSale(api, { referralId: affiliate.id }), await newSale(api, { referralId: affiliate.id })];
    const res = await api.request('DELETE', `/sales?id=${a.id}`, { id: b.id });
    assert.deepEqual(assertProblem(res, 422, 'validation_failed'), ['#/id']);
    for (const sale of [a, b]) assert.equal((await api.get(`/sales?id=${sale.id}`)).status, 200);
    const same = await api.request('DELETE', `/sales?id=${a.id}`, { id: a.id });
    assert.equal(same.status, 200);
    assert.equal((await api.get(`/sales?id=${a.id}`)).status, 404);
  });
});
