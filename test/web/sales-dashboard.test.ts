// Sales on the dashboard over real HTTP (issue 21 item 1): recording a sale by hand, a sale's
// page with its refunds, ledger entries and events, refund (part and all) and void — with the
// API's rules and errors, checked through the JSON API as the merchant's site sees it — and the
// list's search, filters, sorting (paged), totals and CSV.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { apiClient, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { BrowserSession, uniqueEmail } from '../helpers/browser-session.ts';

let t: TestServer;
let merchant: BrowserSession;
let program: { id: string; base: string };
let api: ApiClient;
let jane: { id: string; email: string };
let omar: { id: string; email: string };

before(async () => {
  t = await startTestServer({ worker: false });
  merchant = await BrowserSession.signUp(t.url);
  program = await merchant.createProgram({ name: 'Acme', commissionRate: '20' });
  const { token } = await issueToken(t.server.database.db, { programId: program.id, name: 'site', kind: 'api_key' });
  api = apiClient(t.url, token, program.id);
  jane = (await api.post('/affiliates', { firstName: 'Jane', lastName: 'Cooper', email: uniqueEmail('jane'), affiliateLink: 'jane-c' })).body;
  omar = (await api.post('/affiliates', { firstName: 'Omar', lastName: 'Haddad', email: uniqueEmail('omar'), affiliateLink: 'omar-h' })).body;
});
after(() => t.close());

async function sell(affiliateId: string, totalEarned: number, customer: { name?: string; email?: string } = {}) {
  const res = await api.post('/sales', { referralId: affiliateId, name: customer.name ?? 'Customer', email: customer.email ?? uniqueEmail('customer'), totalEarned });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: number; commission: number };
}

const newSale = (fields: Record<string, string>) => merchant.submit(`${program.base}/sales/new`, `${program.base}/sales/new`, fields);

describe('recording a sale by hand', () => {
  it('records through the API’s service: the same sale, commission and event as POST /sales', async () => {
    const email = uniqueEmail('walkin');
    const done = await newSale({ totalEarned: '49.99', customer: email, affiliate: 'jane-c', name: 'Walk In', externalInvoiceId: 'in_hand_1', promoCode: '', commissionRate: '' });
    assert.equal(done.status, 303, done.text.slice(0, 500));
    const id = Number(/\/sales\/(\d+)\?done=recorded$/.exec(done.location ?? '')?.[1]);
    assert.ok(id > 0, String(done.location));
    const sale = (await api.get(`/sales?id=${id}`)).body;
    assert.equal(sale.totalEarned, 49.99);
    assert.equal(sale.commission, 10);
    assert.equal(sale.affiliateId, jane.id);
    assert.equal(sale.email, email);
    const page = await merchant.page(done.location!);
    assert.match(page, /Sale recorded\./);
    assert.match(page, /<code>sale\.created<\/code>/);
  });

  it("names the customer by e-mail or referral id, and a new customer's affiliate by e-mail, link, id or a name chosen from a list", async () => {
    const saleOf = async (done: { status: number; location: string | null; text: string }) => {
      assert.equal(done.status, 303, done.text.slice(0, 500));
      return (await api.get(`/sales?id=${/\/sales\/(\d+)/.exec(done.location!)![1]}`)).body as { affiliateId: string; email: string; referralId: string };
    };
    const referred = uniqueEmail('referred');
    const referral = (await api.post('/referrals', { name: 'Re Ferred', email: referred, referredUserExternalId: 'cus_referred', affiliateId: omar.id })).body;

    // A referred customer: their e-mail (any case) or their referral's id is enough; their affiliate is credited.
    assert.equal((await saleOf(await newSale({ totalEarned: '10', customer: referred.toUpperCase() }))).affiliateId, omar.id);
    const byReferral = await saleOf(await newSale({ totalEarned: '10', customer: referral.id.toUpperCase() }));
    assert.deepEqual([byReferral.affiliateId, byReferral.referralId], [omar.id, referral.id]);

    // A new customer: the affiliate by e-mail, by id, or by a name chosen from the matches.
    const byEmail = await saleOf(await newSale({ totalEarned: '10', customer: uniqueEmail('new1'), name: 'New One', affiliate: omar.email }));
    assert.equal(byEmail.affiliateId, omar.id);
    assert.equal((await saleOf(await newSale({ totalEarned: '10', customer: uniqueEmail('new2'), name: 'New Two', affiliate: jane.id }))).affiliateId, jane.id);
    const fields = { totalEarned: '10', customer: uniqueEmail('new3'), name: 'New Three', affiliate: 'haddad' };
    const asked = await newSale(fields);
    assert.equal(asked.status, 422);
    assert.match(asked.text, /id="f-affiliate-error">“haddad” is not an affiliate’s e-mail, link or id\. One active affiliate matches it: choose below\.</);
    assert.match(asked.text, new RegExp(`<select id="f-affiliatePick" name="affiliatePick"[^>]*>\\s*<option value="">Choose one…</option>\\s*<option value="${omar.id}">Omar Haddad · `));
    assert.equal((await saleOf(await newSale({ ...fields, affiliatePick: omar.id, affiliateSearched: 'haddad' }))).affiliateId, omar.id);

    // An e-mail nobody was referred with, and no affiliate: said beside the customer, nothing recorded.
    const before = (await api.get('/sales')).body.length;
    const unknown = await newSale({ totalEarned: '10', customer: uniqueEmail('stranger') });
    assert.equal(unknown.status, 422);
    assert.match(unknown.text, /id="f-customer-error">No customer of this program has this e-mail yet\. To record a new customer’s first sale, name their affiliate and the customer’s name below\.</);
    const notAReferral = await newSale({ totalEarned: '10', customer: jane.id });
    assert.equal(notAReferral.status, 422);
    assert.match(notAReferral.text, /id="f-customer-error">No customer of this program has this referral id\.</);
    const neither = await newSale({ totalEarned: '10', customer: 'Re Ferred' });
    assert.equal(neither.status, 422);
    assert.match(neither.text, /id="f-customer-error">Give the customer’s e-mail, or their referral’s id\.</);
    const twoAffiliates = await newSale({ totalEarned: '10', customer: referral.id, affiliate: 'jane-c' });
    assert.equal(twoAffiliates.status, 422);
    assert.match(twoAffiliates.text, /id="f-affiliate-error">The referral names its affiliate: leave this empty, or give the customer’s e-mail instead\.</);
    assert.equal((await api.get('/sales')).body.length, before);
  });

  it('refuses what the API refuses, beside the field, and records nothing', async () => {
    const before = (await api.get('/sales')).body.length;
    const noAmount = await newSale({ totalEarned: '', customer: uniqueEmail('x'), affiliate: 'jane-c', name: 'X' });
    assert.equal(noAmount.status, 422);
    assert.match(noAmount.text, /id="f-totalEarned-error">Must be a number\./);
    assert.match(noAmount.text, /<input id="f-totalEarned"[^>]*aria-invalid="true"[^>]*autofocus/);
    const nobody = await newSale({ totalEarned: '10', customer: '', affiliate: 'no-such-link', name: '' });
    assert.equal(nobody.status, 422);
    assert.match(nobody.text, /id="f-affiliate-error">No affiliate of this program has the e-mail, link or id “no-such-link”, and no active affiliate’s name contains it\./);
    const empty = await newSale({ totalEarned: '10', customer: '', affiliate: '' });
    assert.equal(empty.status, 422);
    assert.match(empty.text, /id="f-customer-error">Is required: the customer’s e-mail or referral id\./);
    const noName = await newSale({ totalEarned: '10', customer: uniqueEmail('noname'), affiliate: 'jane-c' });
    assert.equal(noName.status, 422);
    assert.match(noName.text, /id="f-name-error">Is required when the customer is not found\./);
    const duplicate = await newSale({ totalEarned: '10', customer: uniqueEmail('y'), affiliate: 'jane-c', name: 'Y', externalInvoiceId: 'in_hand_1' });
    assert.equal(duplicate.status, 409);
    assert.match(duplicate.text, /class="flash error"/);
    assert.match(duplicate.text, /id="f-externalInvoiceId-error">A sale with externalInvoiceId &quot;in_hand_1&quot; is already recorded in this program\./);
    assert.equal((await api.get('/sales')).body.length, before);
  });
});

describe("a sale's page", () => {
  it('refunds part, refuses more than is left, refunds the rest; shows refunds, ledger and events', async () => {
    const sale = await sell(jane.id, 100);
    const path = `${program.base}/sales/${sale.id}`;
    const part = await merchant.submit(path, `${path}/refund`, { amount: '30' });
    assert.equal(part.status, 303, part.text.slice(0, 500));
    let api_sale = (await api.get(`/sales?id=${sale.id}`)).body;
    assert.equal(api_sale.refundedAmount, 30);
    assert.equal(api_sale.commission, 14);

    const tooMuch = await merchant.submit(path, `${path}/refund`, { amount: '80' });
    assert.equal(tooMuch.status, 422);
    assert.match(tooMuch.text, /id="f-amount-error">Is more than the 70 not yet refunded\./);
    assert.equal((await api.get(`/sales?id=${sale.id}`)).body.refundedAmount, 30, 'nothing refunded');

    const rest = await merchant.submit(path, `${path}/refund`, { amount: '' });
    assert.equal(rest.status, 303);
    api_sale = (await api.get(`/sales?id=${sale.id}`)).body;
    assert.equal(api_sale.refundedAmount, 100);
    assert.equal(api_sale.commission, 0);

    const page = await merchant.page(path);
    assert.match(page, /Fully refunded\./);
    assert.equal((page.match(/<code>sale\.refunded<\/code>/g) ?? []).length, 2);
    assert.match(page, /<td>refund<\/td>/);
    assert.match(page, /<td>sale<\/td>/);
    const ledger = (await api.get(`/commissions?saleId=${sale.id}`)).body;
    assert.equal(ledger.length, 3, 'one sale entry and two refunds, as on the page');
  });

  it('voids a sale (asking first in the browser); it leaves the API and its page', async () => {
    const sale = await sell(omar.id, 40);
    const path = `${program.base}/sales/${sale.id}`;
    const page = await merchant.page(path);
    assert.match(page, /<form method="post" action="[^"]*\/void" class="inline" data-confirm="Void sale #\d+\? It cannot be undone\.">/);
    const voided = await merchant.submit(path, `${path}/void`, {});
    assert.equal(voided.status, 303);
    assert.equal(voided.location, `${program.base}/sales?done=voided`);
    assert.equal((await api.get(`/sales?id=${sale.id}`)).status, 404);
    assert.equal((await merchant.get(path)).status, 404);
  });

  it("another program's sale, or a malformed id, is a 404", async () => {
    const other = await BrowserSession.signUp(t.url);
    const theirs = await other.createProgram({ name: 'Other' });
    const sale = await sell(jane.id, 10);
    assert.equal((await other.get(`${theirs.base}/sales/${sale.id}`)).status, 404);
    assert.equal((await other.submit(`${theirs.base}/sales`, `${theirs.base}/sales/${sale.id}/void`, {})).status, 404);
    assert.equal((await api.get(`/sales?id=${sale.id}`)).status, 200, 'still there');
    for (const bad of ['0', 'abc', '99999999999999999999', '1e3']) assert.equal((await merchant.get(`${program.base}/sales/${bad}`)).status, 404, bad);
  });
});

describe('the sales list', () => {
  let p: { id: string; base: string };
  let a: ApiClient;
  before(async () => {
    p = await merchant.createProgram({ name: 'Listing', commissionRate: '10' });
    const { token } = await issueToken(t.server.database.db, { programId: p.id, name: 'site', kind: 'api_key' });
    a = apiClient(t.url, token, p.id);
    const lee = (await a.post('/affiliates', { firstName: 'Lee', lastName: 'Park', email: uniqueEmail('lee'), affiliateLink: 'lee-p' })).body;
    const kim = (await a.post('/affiliates', { firstName: 'Kim', lastName: 'Ro', email: uniqueEmail('kim'), affiliateLink: 'kim-r' })).body;
    for (let i = 1; i <= 55; i++) {
      const res = await a.post('/sales', { referralId: i % 5 === 0 ? kim.id : lee.id, name: i === 7 ? '=HYPERLINK("http://evil.example")' : `Buyer ${i}`, email: `buyer${i}@shop${i % 2}.example`, totalEarned: i });
      assert.equal(res.status, 201);
    }
    const refundable = (await a.get('/sales?saleExternalId=&limit=1000')).body as { id: number; totalEarned: number }[];
    const s3 = refundable.find((s) => s.totalEarned === 3)!;
    const s4 = refundable.find((s) => s.totalEarned === 4)!;
    assert.equal((await a.post('/sales/refund', { saleId: s3.id })).status, 201);
    assert.equal((await a.post('/sales/refund', { saleId: s4.id, amount: 1 })).status, 201);
  });

  const amounts = (page: string) => [...page.matchAll(/<td class="num">\$([\d,.]+)<\/td>\s*<td class="num">/g)].map((m) => Number(m[1]!.replace(/,/g, '')));

  it('searches inside names and e-mails, filters by affiliate link and refunds, and adds up what it shows', async () => {
    const byName = await merchant.page(`${p.base}/sales?q=${encodeURIComponent('uyer 1')}`);
    assert.deepEqual(amounts(byName).sort((x, y) => x - y), [1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    const byEmail = await merchant.page(`${p.base}/sales?q=shop1`);
    assert.equal(amounts(byEmail).length, 28);
    assert.match(byEmail, /<strong>28 sales<\/strong>/);
    const byLink = await merchant.page(`${p.base}/sales?affiliate=kim-r`);
    assert.deepEqual(amounts(byLink).sort((x, y) => x - y), [5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55]);
    assert.match(byLink, /<strong>11 sales<\/strong> ·\s*\$330\.00 in all · \$0\.00 refunded ·\s*\$33\.00 commission after refunds/);
    const full = await merchant.page(`${p.base}/sales?refunded=full`);
    assert.deepEqual(amounts(full), [3]);
    const partial = await merchant.page(`${p.base}/sales?refunded=partial`);
    assert.deepEqual(amounts(partial), [4]);
    const none = await merchant.page(`${p.base}/sales?refunded=none&q=%25%25%25`);
    assert.match(none, /No sales match these filters/, 'a % in the search is a character, not a wildcard');
    const unknown = await merchant.get(`${p.base}/sales?affiliate=nobody-here`);
    assert.equal(unknown.status, 200);
    assert.match(unknown.text, /No affiliate in this program has the e-mail, id or link “nobody-here”/);
  });

  it('sorts by amount across pages, each sale once', async () => {
    const first = await merchant.page(`${p.base}/sales?sort=amount-asc`);
    assert.match(first, /aria-sort="ascending">Amount/);
    const next = /<a href="([^"]+)" rel="next">/.exec(first)?.[1]?.replace(/&amp;/g, '&');
    assert.ok(next, 'a next page');
    const second = await merchant.page(next);
    assert.deepEqual([...amounts(first), ...amounts(second)], Array.from({ length: 55 }, (_, i) => i + 1));
    const desc = await merchant.page(`${p.base}/sales?sort=amount-desc`);
    assert.deepEqual(amounts(desc).slice(0, 3), [55, 54, 53]);
    const oldest = await merchant.page(`${p.base}/sales?sort=oldest`);
    assert.deepEqual(amounts(oldest).slice(0, 3), [1, 2, 3]);
  });

  it('downloads what the filter shows as CSV, with formula-safe cells', async () => {
    const page = await merchant.page(`${p.base}/sales?affiliate=lee-p&sort=amount-asc`);
    const link = /href="([^"]+\/sales\.csv[^"]*)" download/.exec(page)?.[1]?.replace(/&amp;/g, '&');
    assert.ok(link);
    const csv = await merchant.get(link);
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
    assert.match(csv.headers.get('content-disposition') ?? '', /^attachment; filename="sales-\d{4}-\d{2}-\d{2}\.csv"$/);
    const lines = csv.text.trimEnd().split('\r\n');
    assert.equal(lines[0], 'id,created_at,customer_name,customer_email,affiliate_id,affiliate_name,affiliate_email,currency,amount,refunded,commission_rate,commission,commission_refunded,commission_net,invoice_id,external_id');
    assert.equal(lines.length, 1 + 44);
    const rows = lines.slice(1).map((l) => l.split(','));
    assert.deepEqual(rows.map((r) => Number(r[8])), Array.from({ length: 55 }, (_, i) => i + 1).filter((i) => i % 5 !== 0));
    const evil = lines.find((l) => l.includes('HYPERLINK'))!;
    assert.match(evil, /,"'=HYPERLINK\(""http:\/\/evil\.example""\)",/);
    const four = rows.find((r) => r[8] === '4.00')!;
    assert.deepEqual([four[9], four[11], four[13]], ['1.00', '0.40', '0.30']);
  });
});
