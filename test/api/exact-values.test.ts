// Money and rates stay exact (CONTRACT.md "Values"): an amount or rate with more decimals than
// it may have is a 422 that stores nothing, however small the number (1e-300 was stored as 0),
// and no total ever passes 2^53 − 1 minor units, where a JSON number would drift from it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { created, newAffiliate, newSale, unique, uniqueEmail } from '../helpers/fixtures.ts';
import { assertCountersMatchRows } from '../helpers/recount.ts';

let t: TestServer;

before(async () => {
  t = await startTestServer();
});
after(() => t?.close());

/** Everything a refused request could have written in the program. */
async function snapshot(programId: string) {
  const db = rawDb(t);
  const count = async (table: 'sales' | 'referrals' | 'events' | 'affiliates' | 'sale_refunds') =>
    Number((await db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).where('program_id', '=', programId).executeTakeFirstOrThrow()).n);
  const affiliates = await db.selectFrom('affiliates').select(['id', 'commission_rate', 'total_commission_earned', 'updated_at']).where('program_id', '=', programId).orderBy('id').execute();
  const links = await db.selectFrom('affiliate_links').select(['id', 'sales', 'total_revenue']).where('program_id', '=', programId).orderBy('id').execute();
  const sales = await db.selectFrom('sales').select(['id', 'total_earned', 'commission_rate', 'commission', 'refunded_amount']).where('program_id', '=', programId).orderBy('id').execute();
  return {
    counts: { sales: await count('sales'), referrals: await count('referrals'), events: await count('events'), affiliates: await count('affiliates'), refunds: await count('sale_refunds') },
    affiliates: affiliates.map((a) => ({ ...a, total_commission_earned: String(a.total_commission_earned), commission_rate: String(a.commission_rate), updated_at: String(a.updated_at) })),
    links: links.map((l) => ({ id: l.id, sales: String(l.sales), total_revenue: String(l.total_revenue) })),
    sales: sales.map((s) => Object.fromEntries(Object.entries(s).map(([k, v]) => [k, String(v)]))),
  };
}

describe('amounts and rates with more decimals than allowed, however small', () => {
  let api: ApiClient;
  let affiliate: { id: string };
  let sale: { id: number };

  before(async () => {
    api = await t.createTenant({ currency: 'USD', commissionRate: 20 });
    affiliate = await newAffiliate(api, { commissionRate: 10 });
    sale = await newSale(api, { referralId: affiliate.id, totalEarned: 50 });
  });

  // 5e-324 is the smallest double; 1e-7 and 0.001 have decimals a cent cannot hold.
  const TINY_AMOUNTS = [1e-300, 5e-324, 1e-7, 0.001, 1e-22];
  const TINY_RATES = [1e-300, 5e-324, 1e-7, 0.00001, 1e-11];

  it('POST /sales: a totalEarned below a cent is a 422 at #/totalEarned, and nothing is stored', async () => {
    const before = await snapshot(api.programId);
    for (const totalEarned of TINY_AMOUNTS) {
      const res = await api.post('/sales', { referralId: affiliate.id, name: 'Tiny', email: uniqueEmail('tiny'), totalEarned });
      assert.deepEqual(assertProblem(res, 422, 'validation_failed'), ['#/totalEarned'], `totalEarned ${totalEarned}`);
      assert.match(res.body.errors[0].detail, /more decimals than USD allows \(2\)/);
    }
    assert.deepEqual(await snapshot(api.programId), before);
    assert.deepEqual((await api.get(`/sales?affiliateId=${affiliate.id}`)).body.map((s: { id: number }) => s.id), [sale.id], 'no new sale is listed');
  });

  it('POST /sales and POST /affiliates: a commissionRate with more than 4 decimals is a 422 at #/commissionRate, and nothing is stored', async () => {
    const before = await snapshot(api.programId);
    for (const commissionRate of TINY_RATES) {
      const onSale = await api.post('/sales', { referralId: affiliate.id, name: 'Rate', email: uniqueEmail('rate'), totalEarned: 10, commissionRate });
      assert.deepEqual(assertProblem(onSale, 422, 'validation_failed'), ['#/commissionRate'], `sale commissionRate ${commissionRate}`);
      const onAffiliate = await api.post('/affiliates', { firstName: 'Tiny', lastName: 'Rate', email: uniqueEmail('rate'), commissionRate });
      assert.deepEqual(assertProblem(onAffiliate, 422, 'validation_failed'), ['#/commissionRate'], `affiliate commissionRate ${commissionRate}`);
      assert.match(onAffiliate.body.errors[0].detail, /at most 4 decimals/);
    }
    assert.deepEqual(await snapshot(api.programId), before);
  });

  it('PUT /affiliates, PUT /sales and POST /sales/refund refuse the same values and change nothing', async () => {
    const before = await snapshot(api.programId);
    for (const value of [1e-300, 5e-324, 1e-7]) {
      assert.deepEqual(assertProblem(await api.put('/affiliates', { id: affiliate.id, commissionRate: value }), 422, 'validation_failed'), ['#/commissionRate']);
      assert.deepEqual(assertProblem(await api.put('/sales', { saleId: sale.id, commissionRate: value }), 422, 'validation_failed'), ['#/commissionRate']);
      assert.deepEqual(assertProblem(await api.put('/sales', { saleId: sale.id, totalEarned: value }), 422, 'validation_failed'), ['#/totalEarned']);
      assert.deepEqual(assertProblem(await api.post('/sales/refund', { saleId: sale.id, amount: value }), 422, 'validation_failed'), ['#/amount']);
    }
    assert.deepEqual(await snapshot(api.programId), before);
  });

  it('still takes exact values, zero, and the float noise of a client sum (0.1 + 0.2)', async () => {
    const exact = await newSale(api, { referralId: affiliate.id, totalEarned: 12.34, commissionRate: 12.3456 });
    assert.equal(exact.totalEarned, 12.34);
    assert.equal(exact.commissionRate, 12.3456);
    const zero = await newSale(api, { referralId: affiliate.id, totalEarned: 0, commissionRate: 0 });
    assert.equal(zero.totalEarned, 0);
    const noisy = await newSale(api, { referralId: affiliate.id, totalEarned: 0.1 + 0.2, commissionRate: 0.1 + 0.2 });
    assert.equal(noisy.totalEarned, 0.3);
    assert.equal(noisy.commissionRate, 0.3);
    const row = await rawDb(t).selectFrom('sales').select(['total_earned', 'commission_rate']).where('id', '=', noisy.id).executeTakeFirstOrThrow();
    assert.deepEqual([Number(row.total_earned), Number(row.commission_rate)], [30, 3000]);
  });
});

describe('totals never pass 2^53 − 1 minor units', () => {
  const MAX = Number.MAX_SAFE_INTEGER; // 9007199254740991
  const MAX_DOLLARS = MAX / 100; // 90071992547409.91
  /** The largest amount a sale may have (1e13 major units = 1e15 cents). */
  const LARGEST_SALE = 1e13;
  /** Dollars that take nine of the largest sales to MAX plus `cents` (71992547409.91 for 0). */
  const rest = (cents = 0) => (MAX - 9 * LARGEST_SALE * 100 + cents) / 100;

  /** A sale of a new customer credited through `link` (a link string). */
  function sell(api: ApiClient, link: string, totalEarned: number, commissionRate?: number) {
    return api.post('/sales', { referralId: link, name: 'Big Customer', email: uniqueEmail('big'), totalEarned, ...(commissionRate === undefined ? {} : { commissionRate }) });
  }

  it("a link's totalRevenue stops at the limit: the sale past it is a 422 naming the limit, and nothing changes", async () => {
    const api = await t.createTenant({ currency: 'USD' });
    const affiliate = await newAffiliate(api, { commissionRate: 0 });
    for (let i = 0; i < 9; i++) await created(sell(api, affiliate.link, LARGEST_SALE));
    // Exactly at the limit is still exact, and accepted.
    const last = await created(sell(api, affiliate.link, rest()));
    const link = (await api.get(`/links?affiliateId=${affiliate.id}`)).body[0];
    assert.equal(link.totalRevenue, MAX_DOLLARS);
    assert.equal(link.sales, 10);

    const before = await snapshot(api.programId);
    const over = await sell(api, affiliate.link, 0.01);
    assert.deepEqual(assertProblem(over, 422, 'validation_failed'), ['#/totalEarned']);
    assert.match(over.body.errors[0].detail, new RegExp(`totalRevenue past ${MAX} minor units`));
    // PUT that raises an amount is refused the same way.
    const raised = await api.put('/sales', { saleId: last.id, totalEarned: rest(1) });
    assert.deepEqual(assertProblem(raised, 422, 'validation_failed'), ['#/totalEarned']);
    assert.deepEqual(await snapshot(api.programId), before, 'no sale, counter or event was written');

    // Refunding a cent makes room for a cent again; every total stays equal to a recount.
    await created(api.post('/sales/refund', { saleId: last.id, amount: 0.01 }));
    await created(sell(api, affiliate.link, 0.01));
    const stored = await rawDb(t).selectFrom('affiliate_links').select('total_revenue').where('id', '=', link.id).executeTakeFirstOrThrow();
    assert.equal(String(stored.total_revenue), String(MAX));
    assert.equal((await api.get(`/links?id=${link.id}`)).body.totalRevenue, MAX_DOLLARS);
    await assertCountersMatchRows(rawDb(t), api.programId);
  });

  it("an affiliate's totalCommissionEarned stops at the limit across its links, by amount or by rate", async () => {
    const api = await t.createTenant({ currency: 'USD' });
    const affiliate = await newAffiliate(api, { commissionRate: 100 });
    const second = await created(api.post('/links', { link: unique('second'), affiliateId: affiliate.id }));
    // Nine of the largest sales over two links: neither link is near the limit, the affiliate is.
    for (let i = 0; i < 5; i++) await created(sell(api, affiliate.link, LARGEST_SALE));
    for (let i = 0; i < 4; i++) await created(sell(api, second.link, LARGEST_SALE));
    await created(sell(api, second.link, rest(-1))); // commission total: MAX − 1 cent
    const half = await created(sell(api, affiliate.link, 0.02, 50)); // + 1 cent: exactly MAX
    assert.equal((await api.get(`/affiliates?id=${affiliate.id}`)).body.totalCommissionEarned, MAX_DOLLARS);

    const before = await snapshot(api.programId);
    const bySale = await sell(api, affiliate.link, 0.01);
    assert.deepEqual(assertProblem(bySale, 422, 'validation_failed'), ['#/totalEarned']);
    assert.match(bySale.body.errors[0].detail, new RegExp(`totalCommissionEarned past ${MAX} minor units`));
    const byRate = await api.put('/sales', { saleId: half.id, commissionRate: 100 });
    assert.deepEqual(assertProblem(byRate, 422, 'validation_failed'), ['#/commissionRate']);
    assert.deepEqual(await snapshot(api.programId), before, 'no sale, counter or event was written');

    // Lowering a rate is always possible, and the totals stay exact.
    assert.equal((await api.put('/sales', { saleId: half.id, commissionRate: 0 })).status, 200);
    assert.equal((await api.get(`/affiliates?id=${affiliate.id}`)).body.totalCommissionEarned, (MAX - 1) / 100);
    await assertCountersMatchRows(rawDb(t), api.programId);
  });
});
