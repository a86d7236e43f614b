// A month end on the dashboard over real HTTP (issue 18): the plan on Settings, "Run payouts",
// the PayPal file, marking paid and failed, an affiliate's balance and payout history, a refund
// after payment carried as a negative balance. What the pages change is checked through the
// JSON API, as the merchant's site would see it.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { apiClient, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, PASSWORD, uniqueEmail } from '../helpers/browser-session.ts';

let t: TestServer;
let merchant: BrowserSession;
let program: { id: string; base: string };
let api: ApiClient;
let now = new Date('2026-10-01T09:00:00.000Z');

function stat(page: string, key: string): string {
  const match = new RegExp(`data-stat="${key}">([^<]*)<`).exec(page);
  assert.ok(match, `the page shows ${key}`);
  return match[1]!.trim();
}

async function sell(affiliateId: string, totalEarned: number) {
  const res = await api.post('/sales', { referralId: affiliateId, name: 'Customer', email: uniqueEmail('customer'), totalEarned });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: number; commission: number };
}

before(async () => {
  t = await startTestServer({ worker: false }, { clock: () => now });
  merchant = await BrowserSession.signUp(t.url);
  program = await merchant.createProgram({ name: 'Acme', commissionRate: '20' });
  const { token } = await issueToken(t.server.database.db, { programId: program.id, name: 'site', kind: 'api_key' });
  api = apiClient(t.url, token, program.id);
});
after(() => t.close());

describe('the commission plan on Settings', () => {
  it('saves the plan, refuses a bad one beside its field, and GET /me shows it', async () => {
    const bad = await merchant.submit(`${program.base}/settings`, `${program.base}/settings/plan`, {
      commissionType: 'percentage', commissionRate: '20', commissionAmount: '', durationMonths: '', maxSalesPerCustomer: '', holdDays: '400', minimumPayout: '0',
    });
    assert.equal(bad.status, 422);
    assert.match(bad.text, /id="f-holdDays-error">Must be a whole number of days from 0 to 365/);
    assert.equal((await api.get('/me')).body.commission.holdDays, 30, 'nothing saved');

    const saved = await merchant.submit(`${program.base}/settings`, `${program.base}/settings/plan`, {
      commissionType: 'percentage', commissionRate: '10', commissionAmount: '', durationMonths: '12', maxSalesPerCustomer: '', holdDays: '14', minimumPayout: '5',
    });
    assert.equal(saved.status, 303, saved.text.slice(0, 300));
    assert.deepEqual((await api.get('/me')).body.commission, { type: 'percentage', rate: 10, amount: 0, durationMonths: 12, maxSalesPerCustomer: null, holdDays: 14, minimumPayout: 5 });
    const page = await merchant.page(`${program.base}/settings`);
    assert.match(page, /name="holdDays"[^>]*value="14"/);
    assert.equal((page.match(/id="f-commissionRate"/g) ?? []).length, 1, 'one rate field on the page (ids unique)');
    // The program form keeps the plan (it has no plan fields).
    const renamed = await merchant.submit(`${program.base}/settings`, `${program.base}/settings`, { name: 'Acme Outdoor', domain: 'acme.example', currency: 'USD', referralParam: 'ref', cookieDays: '60', attribution: 'last', baseUrls: '' });
    assert.equal(renamed.status, 303, renamed.text.slice(0, 500));
    assert.equal((await api.get('/me')).body.commission.holdDays, 14);
  });
});

describe('a month end on the Payouts page', () => {
  it('runs payouts, downloads the PayPal file, marks paid and failed; balances follow', async () => {
    const ann = (await api.post('/affiliates', { firstName: 'Ann', lastName: 'Lee', email: uniqueEmail('ann'), payoutEmail: uniqueEmail('ann-paypal'), paymentMethod: 'paypal' })).body;
    const bob = (await api.post('/affiliates', { firstName: 'Bob', lastName: 'Ray', email: uniqueEmail('bob') })).body;
    const annSale = await sell(ann.id, 200); // 20
    await sell(ann.id, 100); // 10
    await sell(bob.id, 100); // 10
    await api.post('/sales/refund', { saleId: annSale.id, amount: 50 }); // −5 before any payout

    const before = await merchant.page(`${program.base}/payouts`);
    assert.equal(stat(before, 'pending'), '$35.00');
    assert.equal(stat(before, 'due-open'), '$0.00');
    const early = await merchant.submit(`${program.base}/payouts`, `${program.base}/payouts/run`, {});
    assert.equal(early.location, `${program.base}/payouts?done=none`);

    now = new Date(now.getTime() + 15 * 86_400_000);
    await merchant.logIn(merchant.email, PASSWORD); // two weeks later: a new session
    const run = await merchant.submit(`${program.base}/payouts`, `${program.base}/payouts/run`, {});
    assert.equal(run.status, 303);
    assert.equal(run.location, `${program.base}/payouts?done=made`);
    const list = await merchant.page(run.location!);
    assert.match(list, /Payouts made: pay them/);
    assert.equal(stat(list, 'in-payouts'), '$35.00');
    const payouts = (await api.get('/payouts?status=pending')).body as { id: string; affiliateId: string; amount: number }[];
    assert.deepEqual(payouts.map((p) => [p.affiliateId, p.amount]).sort(), [[ann.id, 25], [bob.id, 10]].sort());
    for (const p of payouts) assert.ok(list.includes(`href="${program.base}/payouts/${p.id}"`));

    const paypal = await merchant.get(`${program.base}/payouts/export?format=paypal`);
    assert.equal(paypal.status, 200);
    assert.match(paypal.headers.get('content-type') ?? '', /^text\/csv/);
    assert.match(paypal.headers.get('content-disposition') ?? '', /attachment; filename="payouts-paypal-2026-10-16\.csv"/);
    assert.ok(paypal.text.includes(`${ann.payoutEmail},25.00,USD,`), paypal.text);
    assert.equal(paypal.text.trim().split('\r\n').length, 2);

    const annPayout = payouts.find((p) => p.affiliateId === ann.id)!;
    const bobPayout = payouts.find((p) => p.affiliateId === bob.id)!;
    const future = await merchant.submit(`${program.base}/payouts/${annPayout.id}`, `${program.base}/payouts/${annPayout.id}`, { status: 'paid', paidAt: '2030-01-01T00:00', method: 'PayPal', reference: 'PP-9' });
    assert.equal(future.status, 422);
    assert.match(future.text, /id="f-paidAt-error">Must not be in the future/);
    const paid = await merchant.submit(`${program.base}/payouts/${annPayout.id}`, `${program.base}/payouts/${annPayout.id}`, { status: 'paid', paidAt: '2026-10-16T09:00', method: 'PayPal', reference: 'PP-9' });
    assert.equal(paid.status, 303, paid.text.slice(0, 300));
    const shown = await merchant.page(paid.location!);
    assert.match(shown, /Payout marked paid/);
    assert.doesNotMatch(shown, /Mark it/, 'a paid payout has no form');
    const [stored] = (await api.get(`/payouts?affiliateId=${ann.id}`)).body;
    assert.deepEqual([stored.status, stored.paidAt, stored.method, stored.reference], ['paid', '2026-10-16T09:00:00.000Z', 'PayPal', 'PP-9']);
    const failed = await merchant.submit(`${program.base}/payouts/${bobPayout.id}`, `${program.base}/payouts/${bobPayout.id}`, { status: 'failed', method: '', reference: 'bounced' });
    assert.equal(failed.status, 303);
    assert.equal((await api.get(`/payouts?affiliateId=${bob.id}`)).body[0].status, 'failed');

    // The affiliate's page: balance and payout history; a refund after payment is carried.
    await api.post('/sales/refund', { saleId: annSale.id }); // the rest: −15, after payment
    const annPage = await merchant.page(`${program.base}/affiliates/${ann.id}`);
    assert.equal(stat(annPage, 'earned'), '$10.00');
    assert.equal(stat(annPage, 'paid'), '$25.00');
    assert.equal(stat(annPage, 'carried'), '-$15.00');
    assert.ok(annPage.includes(`href="${program.base}/payouts/${annPayout.id}"`), 'the payout history links the payout');
    const bobPage = await merchant.page(`${program.base}/affiliates/${bob.id}`);
    assert.equal(stat(bobPage, 'due'), '$10.00', 'a failed payout returns its commission to due');
    assert.equal(stat(await merchant.page(`${program.base}/payouts`), 'due-open'), '-$5.00');
  });

  it("another merchant cannot see or mark this program's payouts, and a form without its CSRF token changes nothing", async () => {
    const [payout] = (await api.get('/payouts?status=failed')).body;
    const stranger = await BrowserSession.signUp(t.url);
    const theirs = await stranger.createProgram({ name: 'Other' });
    assert.equal((await stranger.get(`${program.base}/payouts`)).status, 404);
    assert.equal((await stranger.get(`${theirs.base}/payouts/${payout.id}`)).status, 404);
    const forged = await merchant.post(`${program.base}/payouts/run`, {});
    assert.equal(forged.status, 403);
    const marked = await stranger.submit(`${theirs.base}/payouts`, `${theirs.base}/payouts/${payout.id}`, { status: 'paid' });
    assert.equal(marked.status, 404, 'not found in their program');
    assert.equal((await api.get(`/payouts?status=failed`)).body[0].status, 'failed');
  });
});
