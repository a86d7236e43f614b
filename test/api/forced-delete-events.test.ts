// DELETE /affiliates?force=true also voids the sales of its customers that were credited to
// another affiliate, and DELETE /referrals?force=true the referral's sales (docs/api.md,
// "Deleting"). Another affiliate's totals change, so it gets its own affiliate.updated event
// (and its link, link.updated) in the same transaction: a subscriber mirroring it never keeps
// a total that changed silently.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { created, newAffiliate, newReferral, newSale } from '../helpers/fixtures.ts';
import { assertCountersMatchRows } from '../helpers/recount.ts';

let t: TestServer;
let api: ApiClient;

before(async () => {
  t = await startTestServer();
  api = await t.createTenant({ currency: 'USD', commissionRate: 20 });
});
after(() => t?.close());

interface Envelope {
  type: string;
  data: { id: string; totalCommissionEarned?: number; sales?: number; totalRevenue?: number };
}

/** Every event of the program of these types, oldest first, through the polling API. */
async function events(types: string): Promise<Envelope[]> {
  const res = await api.get(`/events?type=${types}&limit=1000`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

describe('forced deletes', () => {
  it("DELETE /affiliates?force=true announces each other affiliate (and link) whose totals it changed, with totals equal to a recount", async () => {
    const leaving = await newAffiliate(api);
    const staying = await newAffiliate(api, { commissionRate: 30 });
    const bystander = await newAffiliate(api);
    const customer = await newReferral(api, { affiliateId: leaving.id });
    // The leaving affiliate's customer buys through the staying affiliate's link: credited to it.
    const credited = await newSale(api, { referralId: staying.link, email: customer.email, totalEarned: 200 });
    assert.equal(credited.affiliateId, staying.id);
    assert.equal(credited.referralId, customer.id);
    await newSale(api, { referralId: staying.id, totalEarned: 100 }); // its own customer: stays
    await newSale(api, { referralId: customer.id, totalEarned: 50 }); // the leaving affiliate's own sale
    await newSale(api, { referralId: bystander.id, totalEarned: 10 });
    assert.equal((await api.get(`/affiliates?id=${staying.id}`)).body.totalCommissionEarned, 90);
    const before = await events('affiliate.updated,link.updated');
    assert.equal(before.length, 0);

    const res = await api.request('DELETE', `/affiliates?id=${leaving.id}&force=true`);
    assert.equal(res.status, 200, JSON.stringify(res.body));

    const now = (await api.get(`/affiliates?id=${staying.id}`)).body;
    assert.equal(now.totalCommissionEarned, 30, 'the credited sale is voided from its total');
    await assertCountersMatchRows(rawDb(t), api.programId);

    const updates = await events('affiliate.updated,link.updated');
    const affiliateUpdates = updates.filter((e) => e.type === 'affiliate.updated');
    assert.deepEqual(affiliateUpdates.map((e) => e.data.id), [staying.id], 'only the affiliate whose totals changed; not the bystander');
    assert.deepEqual(affiliateUpdates[0]!.data, now, 'the event carries the affiliate as the API returns it');
    const link = (await api.get(`/links?link=${staying.link}`)).body;
    assert.deepEqual(updates.filter((e) => e.type === 'link.updated').map((e) => e.data), [link]);
    assert.equal(link.sales, 1);
    assert.equal(link.totalRevenue, 100);
    assert.deepEqual((await events('affiliate.deleted')).map((e) => e.data.id), [leaving.id]);
  });

  it('DELETE /referrals?force=true does the same for a sale of the referral credited to another affiliate', async () => {
    const owner = await newAffiliate(api);
    const other = await newAffiliate(api, { commissionRate: 50 });
    const customer = await newReferral(api, { affiliateId: owner.id });
    await newSale(api, { referralId: customer.id, totalEarned: 10 }); // credited to the referral's own affiliate
    await newSale(api, { referralId: other.link, email: customer.email, totalEarned: 60 });
    assert.equal((await api.get(`/affiliates?id=${other.id}`)).body.totalCommissionEarned, 30);
    const seen = (await events('affiliate.updated')).length;

    assert.equal((await api.request('DELETE', `/referrals?id=${customer.id}&force=true`)).status, 200);
    const now = (await api.get(`/affiliates?id=${other.id}`)).body;
    assert.equal(now.totalCommissionEarned, 0);
    const announced = (await events('affiliate.updated')).slice(seen);
    assert.deepEqual(announced.map((e) => e.data), [now], 'the other affiliate, as the API returns it; referral.deleted names the owner');
    await assertCountersMatchRows(rawDb(t), api.programId);
  });

  it('emits no update when the voided sales earned nothing (rate 0): counters unchanged means no event', async () => {
    const leaving = await newAffiliate(api);
    const unpaid = await newAffiliate(api, { commissionRate: 0 });
    const customer = await newReferral(api, { affiliateId: leaving.id });
    await created(api.post('/sales', { referralId: unpaid.id, email: customer.email, totalEarned: 40 }));
    const before = (await events('affiliate.updated')).length;
    assert.equal((await api.request('DELETE', `/affiliates?id=${leaving.id}&force=true`)).status, 200);
    assert.equal((await events('affiliate.updated')).length, before);
    await assertCountersMatchRows(rawDb(t), api.programId);
  });
});
