// Two findings of the outside attack (issue 12): a billing burst for one new customer lost
// sales (nine 409s out of ten on PostgreSQL), and the Link header took its origin from an
// absolute-form request line instead of SITE_URL.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { newAffiliate, newCode, newCoupon, newReferral, unique, uniqueEmail } from '../helpers/fixtures.ts';
import { raceNote } from '../helpers/test-database.ts';
import { assertCountersMatchRows } from '../helpers/recount.ts';

let t: TestServer;
let api: ApiClient;

before(async () => {
  t = await startTestServer();
  api = await t.createTenant();
});
after(() => t?.close());

async function referralsWithEmail(email: string) {
  return rawDb(t).selectFrom('referrals').select(['id', 'affiliate_id']).where('program_id', '=', api.programId).where('email_key', '=', email.toLowerCase()).execute();
}

describe('a burst of first sales for one new customer', () => {
  it('ten at once through an affiliate link and the e-mail: ten 201s, one referral' + raceNote, async () => {
    const affiliate = await newAffiliate(api, { commissionRate: 10 });
    const email = uniqueEmail('burst');
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => api.post('/sales', { referralId: affiliate.link, email, name: 'Burst Buyer', totalEarned: 10, externalInvoiceId: unique(`in_${i}_`) })),
    );
    assert.deepEqual(results.map((r) => r.status), Array(10).fill(201), JSON.stringify(results.find((r) => r.status !== 201)?.body));
    const customers = await referralsWithEmail(email);
    assert.equal(customers.length, 1);
    assert.ok(results.every((r) => r.body.referralId === customers[0]!.id), 'every sale is the one customer’s');
    const stored = await api.get(`/affiliates?id=${affiliate.id}`);
    assert.deepEqual([stored.body.numberOfReferredUsers, stored.body.totalCommissionEarned], [1, 10]);
    await assertCountersMatchRows(rawDb(t), api.programId);
  });

  it('ten at once with a promotional code: ten 201s, one referral, ten redemptions' + raceNote, async () => {
    const affiliate = await newAffiliate(api);
    const coupon = await newCoupon(api);
    const code = await newCode(api, { couponId: coupon.id, affiliateId: affiliate.id });
    const email = uniqueEmail('burst');
    const results = await Promise.all(Array.from({ length: 10 }, () => api.post('/sales', { promoCode: code.code, email, name: 'Code Buyer', totalEarned: 20 })));
    assert.deepEqual(results.map((r) => r.status), Array(10).fill(201), JSON.stringify(results.find((r) => r.status !== 201)?.body));
    assert.equal((await referralsWithEmail(email)).length, 1);
    assert.equal((await api.get(`/promotional-codes?id=${code.id}`)).body.timesRedeemed, 10);
    await assertCountersMatchRows(rawDb(t), api.programId);
  });

  it('a firstTimeOrder code is still redeemed once for the customer' + raceNote, async () => {
    const affiliate = await newAffiliate(api);
    const coupon = await newCoupon(api);
    const code = await newCode(api, { couponId: coupon.id, affiliateId: affiliate.id, firstTimeOrder: true });
    const email = uniqueEmail('first');
    const results = await Promise.all(Array.from({ length: 6 }, () => api.post('/sales', { promoCode: code.code, email, name: 'First Buyer', totalEarned: 20 })));
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [201, 422, 422, 422, 422, 422], JSON.stringify(results.map((r) => r.body.code)));
    assert.ok(results.filter((r) => r.status === 422).every((r) => r.body.code === 'promo_code_first_time_only'));
    assert.equal((await api.get(`/promotional-codes?id=${code.id}`)).body.timesRedeemed, 1);
  });

  it('POST /referrals still refuses a second referral with the same e-mail (409)', async () => {
    const affiliate = await newAffiliate(api);
    const referral = await newReferral(api, { affiliateId: affiliate.id });
    const again = await api.post('/referrals', { name: 'Again', email: referral.email, referredUserExternalId: unique('cus'), affiliateId: affiliate.id });
    assert.equal(again.status, 409);
  });
});

describe('Link: rel="next" comes from SITE_URL', () => {
  it('an absolute-form request line does not choose the origin of the next page', async () => {
    for (let i = 0; i < 2; i++) await newAffiliate(api);
    const url = new URL(t.url);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(
          `GET http://evil.example/api/v1/affiliates?limit=1 HTTP/1.1\r\nHost: evil.example\r\nAuthorization: Bearer ${api.token}\r\nConnection: close\r\n\r\n`,
        );
      });
      let data = '';
      socket.on('data', (chunk) => (data += chunk.toString()));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
    });
    assert.match(raw, /^HTTP\/1\.1 200/);
    const link = /^link: <([^>]+)>; rel="next"/im.exec(raw)?.[1];
    assert.ok(link, raw.slice(0, 400));
    const next = new URL(link);
    assert.equal(next.origin, t.config.siteUrl);
    assert.equal(next.pathname, '/api/v1/affiliates');
    assert.equal(next.searchParams.get('limit'), '1');
  });
});
