// Contract tests for commission plans, the ledger and payouts (CONTRACT.md "Commission plans
// and the ledger", "Payouts"): a month end through the API, with the server's clock moved.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rawDb, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { assertProblem } from '../helpers/api-assertions.ts';
import { ISO_TIME, UUID, newAffiliate, newSale, uniqueEmail } from '../helpers/fixtures.ts';
import { updateProgramSettings, type ProgramInput } from '../../src/modules/programs/program.service.ts';

const DAY_MS = 86_400_000;
const ENTRY_FIELDS = ['id', 'affiliateId', 'saleId', 'payoutId', 'kind', 'amount', 'currency', 'status', 'dueAt', 'createdAt'].sort();
const PAYOUT_FIELDS = ['id', 'affiliateId', 'affiliate', 'amount', 'currency', 'status', 'entryCount', 'createdAt', 'paidAt', 'method', 'reference'].sort();

let t: TestServer;
let now = new Date('2026-10-01T12:00:00.000Z');
const days = (n: number) => {
  now = new Date(now.getTime() + n * DAY_MS);
};

async function setPlan(client: ApiClient, plan: Partial<Omit<ProgramInput, 'ownerUserId'>>): Promise<void> {
  await updateProgramSettings(rawDb(t), client.programId, plan, () => now);
}

async function sell(client: ApiClient, affiliateId: string, totalEarned: number, email = uniqueEmail('customer')) {
  return newSale(client, { referralId: affiliateId, email, name: 'Customer', totalEarned });
}

async function entries(client: ApiClient, query = ''): Promise<any[]> {
  const res = await client.get(`/commissions${query}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

const sum = (items: { amount: number }[]) => Math.round(items.reduce((total, item) => total + item.amount * 100, 0)) / 100;

before(async () => {
  t = await startTestServer({ worker: false }, { clock: () => now });
});
after(() => t.close());

describe('commission plans', () => {
  it('GET /me shows the plan, with the defaults of a new program', async () => {
    const api = await t.createTenant({ commissionRate: 25 });
    const me = await api.get('/me');
    assert.equal(me.status, 200);
    assert.deepEqual(me.body.commission, { type: 'percentage', rate: 25, amount: 0, durationMonths: null, maxSalesPerCustomer: null, holdDays: 30, minimumPayout: 0 });
    await setPlan(api, { commissionType: 'flat', commissionAmount: 12.5, durationMonths: 12, maxSalesPerCustomer: 3, holdDays: 14, minimumPayout: 50 });
    const changed = await api.get('/me');
    assert.deepEqual(changed.body.commission, { type: 'flat', rate: 25, amount: 12.5, durationMonths: 12, maxSalesPerCustomer: 3, holdDays: 14, minimumPayout: 50 });
  });

  it('refuses a plan out of bounds and changes nothing', async () => {
    const api = await t.createTenant();
    for (const [plan, pointer] of [
      [{ holdDays: 366 }, '#/commission/holdDays'],
      [{ holdDays: -1 }, '#/commission/holdDays'],
      [{ durationMonths: 0 }, '#/commission/durationMonths'],
      [{ maxSalesPerCustomer: 1.5 }, '#/commission/maxSalesPerCustomer'],
      [{ minimumPayout: 0.001 }, '#/commission/minimumPayout'],
      [{ commissionType: 'flat', commissionAmount: 0 }, '#/commission/amount'],
      [{ commissionType: 'tiered' }, '#/commission/type'],
    ] as const) {
      await assert.rejects(setPlan(api, plan as never), (error: any) => error.errors?.[0]?.pointer === pointer, JSON.stringify(plan));
    }
    assert.equal((await api.get('/me')).body.commission.holdDays, 30);
  });

  it('a flat plan pays its amount per sale, never more than the total', async () => {
    const api = await t.createTenant();
    await setPlan(api, { commissionType: 'flat', commissionAmount: 15 });
    const affiliate = await newAffiliate(api);
    assert.equal((await sell(api, affiliate.id, 100)).commission, 15);
    assert.equal((await sell(api, affiliate.id, 9.99)).commission, 9.99);
    // An affiliate's own rate is for percentage plans; an explicit rate on the sale wins.
    const own = await newAffiliate(api, { commissionRate: 50 });
    assert.equal((await sell(api, own.id, 100)).commission, 15);
    assert.equal((await newSale(api, { referralId: own.id, email: uniqueEmail('c'), name: 'C', totalEarned: 100, commissionRate: 10 })).commission, 10);
  });

  it('durationMonths and maxSalesPerCustomer: sales outside the plan are recorded with commission 0', async () => {
    const api = await t.createTenant({ commissionRate: 10 });
    await setPlan(api, { durationMonths: 2, maxSalesPerCustomer: 3 });
    const affiliate = await newAffiliate(api);
    const email = uniqueEmail('monthly');
    const first = await sell(api, affiliate.id, 100, email);
    assert.equal(first.commission, 10);
    days(30);
    assert.equal((await sell(api, affiliate.id, 100, email)).commission, 10);
    days(31); // 61 days after the referral: past two calendar months
    const late = await sell(api, affiliate.id, 100, email);
    assert.equal(late.commission, 0);
    assert.equal(late.totalEarned, 100, 'still recorded and counted as revenue');
    // A customer referred now is within the window, but the count of sales still applies.
    const other = uniqueEmail('count');
    const counted = [];
    for (let i = 0; i < 4; i++) counted.push((await sell(api, affiliate.id, 20, other)).commission);
    assert.deepEqual(counted, [2, 2, 2, 0]);
    // Changing the plan rewrites nothing; PUT /sales recomputes with the sale's own rule.
    await setPlan(api, { commissionRate: 50, durationMonths: null, maxSalesPerCustomer: null });
    const edited = await api.put('/sales', { saleId: late.id, totalEarned: 200 });
    assert.equal(edited.body.commission, 0, 'a sale outside the plan stays outside');
    const editedFirst = await api.put('/sales', { saleId: first.id, totalEarned: 200 });
    assert.equal(editedFirst.body.commission, 20, 'its own 10 %, not the new 50 %');
    const affiliateNow = await api.get(`/affiliates?id=${affiliate.id}`);
    assert.equal(affiliateNow.body.totalCommissionEarned, 20 + 10 + 6);
    assert.equal(sum(await entries(api, `?affiliateId=${affiliate.id}`)), 36, "the ledger adds up to the affiliate's total");
  });
});

describe('the ledger', () => {
  it('a sale, a refund, an edit and a void each write their entry; a sale\'s entries add up to its commission', async () => {
    const api = await t.createTenant({ commissionRate: 20 });
    const affiliate = await newAffiliate(api);
    const sale = await sell(api, affiliate.id, 100);
    assert.equal(sale.commission, 20);
    const [entry] = await entries(api, `?saleId=${sale.id}`);
    assert.deepEqual(Object.keys(entry).sort(), ENTRY_FIELDS);
    assert.equal(typeof entry.id, 'number');
    assert.deepEqual(
      { ...entry, id: 0 },
      { id: 0, affiliateId: affiliate.id, saleId: sale.id, payoutId: null, kind: 'sale', amount: 20, currency: 'USD', status: 'pending', dueAt: new Date(now.getTime() + 30 * DAY_MS).toISOString(), createdAt: now.toISOString() },
    );
    assert.match(entry.createdAt, ISO_TIME);

    const refunded = await api.post('/sales/refund', { saleId: sale.id, amount: 25 });
    assert.equal(refunded.status, 201);
    assert.equal(refunded.body.commission, 15);
    const edited = await api.put('/sales', { saleId: sale.id, totalEarned: 200 });
    assert.equal(edited.body.commission, 35, '20 % of 200, less the 5 the refund took back');
    const kinds = (await entries(api, `?saleId=${sale.id}`)).map((e) => [e.kind, e.amount, e.dueAt]);
    assert.deepEqual(kinds, [
      ['adjustment', 20, entry.dueAt],
      ['refund', -5, entry.dueAt],
      ['sale', 20, entry.dueAt],
    ], 'newest first; unpaid, each change falls due with the sale');
    assert.equal(sum(await entries(api, `?saleId=${sale.id}`)), 35);

    const voided = await api.request('DELETE', `/sales?id=${sale.id}`);
    assert.equal(voided.status, 200);
    const afterVoid = await entries(api, `?saleId=${sale.id}`);
    assert.deepEqual(afterVoid[0].kind, 'void');
    assert.equal(afterVoid[0].amount, -35);
    assert.equal(sum(afterVoid), 0);
    assert.equal((await api.get(`/affiliates?id=${affiliate.id}`)).body.totalCommissionEarned, 0);
  });

  it('a forced delete of a referral or an affiliate voids their sales in the ledger', async () => {
    const api = await t.createTenant({ commissionRate: 10 });
    const ann = await newAffiliate(api);
    const bob = await newAffiliate(api);
    const annSale = await sell(api, ann.id, 100);
    await sell(api, bob.id, 50);
    assert.equal((await api.request('DELETE', `/referrals?id=${annSale.referralId}&force=true`)).status, 200);
    assert.equal(sum(await entries(api, `?affiliateId=${ann.id}`)), 0);
    assert.equal((await api.request('DELETE', `/affiliates?id=${bob.id}&force=true`)).status, 200);
    const bobs = await entries(api, `?affiliateId=${bob.id}`);
    assert.deepEqual(bobs.map((e) => [e.kind, e.amount]), [['void', -5], ['sale', 5]], 'the ledger keeps what a deleted affiliate earned and lost');
  });

  it('filters by status with the clock: pending in the hold, then due', async () => {
    const api = await t.createTenant({ commissionRate: 10 });
    await setPlan(api, { holdDays: 7 });
    const affiliate = await newAffiliate(api);
    await sell(api, affiliate.id, 10);
    assert.equal((await entries(api, '?status=pending')).length, 1);
    assert.equal((await entries(api, '?status=due')).length, 0);
    days(7);
    assert.equal((await entries(api, '?status=pending')).length, 0);
    assert.deepEqual((await entries(api, '?status=due')).map((e) => e.status), ['due']);
    assertProblem(await api.get('/commissions?status=owed'), 422, 'validation_failed', '#/status');
    assertProblem(await api.get('/commissions?saleId=abc'), 422, 'validation_failed', '#/saleId');
  });
});

describe('payouts: a month end', () => {
  it('runs, exports, marks paid; a refund after payment comes off the next payout', async () => {
    const api = await t.createTenant({ commissionRate: 20, name: 'Acme' });
    const ann = await newAffiliate(api, { firstName: '=HYPERLINK("x")', payoutEmail: uniqueEmail('ann-pay') });
    const bob = await newAffiliate(api);
    const annSale = await sell(api, ann.id, 100);
    await sell(api, ann.id, 50);
    await api.post('/sales/refund', { saleId: annSale.id, amount: 50 }); // −10 before the payout
    await sell(api, bob.id, 10);
    assert.deepEqual((await api.post('/payouts', {})).body, [], 'nothing is due during the hold');

    days(30);
    const run = await api.post('/payouts', {});
    assert.equal(run.status, 201);
    assert.equal(run.body.length, 2);
    const annPayout = run.body.find((p: any) => p.affiliateId === ann.id);
    assert.deepEqual(Object.keys(annPayout).sort(), PAYOUT_FIELDS);
    assert.match(annPayout.id, UUID);
    assert.deepEqual(
      { ...annPayout, id: '' },
      {
        id: '',
        affiliateId: ann.id,
        affiliate: { id: ann.id, firstName: ann.firstName, lastName: ann.lastName, email: ann.email, payoutEmail: ann.payoutEmail, paymentMethod: ann.paymentMethod },
        amount: 20,
        currency: 'USD',
        status: 'pending',
        entryCount: 3,
        createdAt: now.toISOString(),
        paidAt: null,
        method: null,
        reference: null,
      },
    );
    assert.deepEqual((await api.post('/payouts', {})).body, [], 'run again at once: nothing more');
    const held = await entries(api, `?payoutId=${annPayout.id}`);
    assert.equal(held.length, 3);
    assert.ok(held.every((e) => e.status === 'due' && e.payoutId === annPayout.id), 'in a pending payout, entries read due');

    // Exports of the pending payouts.
    const csv = await api.request('GET', '/payouts/export?format=csv');
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
    const csvLines = (csv.body as string).trim().split('\r\n');
    assert.equal(csvLines[0], 'id,affiliateId,firstName,lastName,email,payoutEmail,paymentMethod,amount,currency,status,entryCount,createdAt,paidAt,method,reference');
    assert.equal(csvLines.length, 3);
    const annLine = csvLines.find((l) => l.startsWith(annPayout.id))!;
    assert.ok(annLine.includes(`"'=HYPERLINK(""x"")"`), `a formula is escaped: ${annLine}`);
    assert.ok(annLine.includes(',20.00,USD,pending,3,'), annLine);
    const paypal = (await api.request('GET', '/payouts/export?format=paypal')).body as string;
    const paypalLines = paypal.trim().split('\r\n');
    assert.equal(paypalLines.length, 2, 'no header row');
    const annPaypal = paypalLines.find((l) => l.startsWith(ann.payoutEmail))!.split(',');
    assert.deepEqual(annPaypal, [ann.payoutEmail, '20.00', 'USD', annPayout.id.replace(/-/g, '').slice(0, 30), 'Affiliate commission from Acme', 'PAYPAL']);
    const wise = ((await api.request('GET', '/payouts/export?format=wise')).body as string).trim().split('\r\n');
    assert.equal(wise[0], 'name,recipientEmail,paymentReference,receiverType,amountCurrency,amount,sourceCurrency,targetCurrency');
    assert.ok(wise.some((l) => l.startsWith(`"'=HYPERLINK(""x"") ${ann.lastName}",${ann.payoutEmail},TDM-`) && l.endsWith(',PERSON,USD,20.00,USD,USD')), wise.join('\n'));
    assertProblem(await api.get('/payouts/export?format=xlsx'), 422, 'validation_failed', '#/format');

    // Paid: final, entries paid, the export of pending ones no longer lists it.
    days(1);
    const paid = await api.put('/payouts', { payoutId: annPayout.id, status: 'paid', method: 'paypal', reference: 'PP-123' });
    assert.equal(paid.status, 200, JSON.stringify(paid.body));
    assert.deepEqual([paid.body.status, paid.body.paidAt, paid.body.method, paid.body.reference, paid.body.amount], ['paid', now.toISOString(), 'paypal', 'PP-123', 20]);
    assert.ok((await entries(api, `?payoutId=${annPayout.id}`)).every((e) => e.status === 'paid'));
    assertProblem(await api.put('/payouts', { payoutId: annPayout.id, status: 'failed' }), 409, 'conflict');
    assert.equal(((await api.request('GET', '/payouts/export?format=paypal')).body as string).trim().split('\r\n').length, 1);

    // A refund after payment: due at once, a negative balance carried, taken off the next payout.
    await api.post('/sales/refund', { saleId: annSale.id }); // the other 50: −10
    const [refundEntry] = await entries(api, `?saleId=${annSale.id}`);
    assert.deepEqual([refundEntry.kind, refundEntry.amount, refundEntry.status, refundEntry.dueAt], ['refund', -10, 'due', now.toISOString()]);
    assert.deepEqual((await api.post('/payouts', { affiliateId: ann.id })).body, [], 'a negative balance is carried, not paid');
    await sell(api, ann.id, 100); // +20 after its hold
    days(30);
    const next = await api.post('/payouts', { affiliateId: ann.id });
    assert.deepEqual(next.body.map((p: any) => [p.amount, p.entryCount]), [[10, 2]], '20 less the 10 carried');
    assert.equal((await api.get(`/affiliates?id=${ann.id}`)).body.totalCommissionEarned, 20 + 10 + 20 - 10 - 10 - 0);
    assert.equal(sum(await entries(api, `?affiliateId=${ann.id}`)), (await api.get(`/affiliates?id=${ann.id}`)).body.totalCommissionEarned);

    // A payout's amount is frozen: a refund while it is pending changes nothing in it.
    const pending = next.body[0];
    const list = await api.get(`/payouts?affiliateId=${ann.id}&status=pending`);
    assert.deepEqual(list.body.map((p: any) => [p.id, p.amount]), [[pending.id, 10]]);

    // Failed: entries due again (payoutId cleared), the next run pays them in a new payout.
    days(1);
    const failed = await api.put('/payouts', { payoutId: pending.id, status: 'failed', reference: 'bounced' });
    assert.equal(failed.body.status, 'failed');
    assert.equal((await entries(api, `?payoutId=${pending.id}`)).length, 0);
    days(1);
    const again = await api.post('/payouts', {});
    assert.deepEqual(again.body.map((p: any) => [p.affiliateId, p.amount]), [[ann.id, 10]]);
    assertProblem(await api.put('/payouts', { payoutId: pending.id, status: 'paid' }), 409, 'conflict');

    // The events of a payout's life.
    const events = await api.get('/events?type=payout.created,payout.paid,payout.failed');
    assert.deepEqual(events.body.map((e: any) => e.type), ['payout.created', 'payout.created', 'payout.paid', 'payout.created', 'payout.failed', 'payout.created']);
    assert.deepEqual(events.body[2].data, paid.body);
  });

  it('pays only balances of at least minimumPayout; a run for one affiliate pays only that one', async () => {
    const api = await t.createTenant({ commissionRate: 10 });
    await setPlan(api, { minimumPayout: 25, holdDays: 0 });
    const small = await newAffiliate(api);
    const large = await newAffiliate(api);
    await sell(api, small.id, 200);
    await sell(api, large.id, 300);
    assert.deepEqual((await api.post('/payouts', { affiliateId: small.id })).body, []);
    const run = await api.post('/payouts', {});
    assert.deepEqual(run.body.map((p: any) => [p.affiliateId, p.amount]), [[large.id, 30]]);
    assertProblem(await api.post('/payouts', { affiliateId: '00000000-0000-4000-8000-000000000000' }), 404, 'not_found');
  });

  it('a payout is frozen: a later run takes only entries outside every payout', async () => {
    const api = await t.createTenant({ commissionRate: 10 });
    await setPlan(api, { holdDays: 0 });
    const affiliate = await newAffiliate(api);
    const first = await sell(api, affiliate.id, 100);
    const [p1] = (await api.post('/payouts', {})).body;
    await sell(api, affiliate.id, 50);
    await api.post('/sales/refund', { saleId: first.id, amount: 10 }); // −1: due at once, outside p1
    const second = await api.post('/payouts', {});
    assert.deepEqual(second.body.map((p: any) => [p.amount, p.entryCount]), [[4, 2]]);
    assert.deepEqual((await entries(api, `?payoutId=${p1.id}`)).map((e) => [e.kind, e.amount]), [['sale', 10]]);
    assert.deepEqual((await api.get('/payouts?status=pending')).body.map((p: any) => p.amount).sort(), [10, 4]);
  });

  it('refuses bad marks and changes nothing', async () => {
    const api = await t.createTenant({ commissionRate: 10 });
    await setPlan(api, { holdDays: 0 });
    const affiliate = await newAffiliate(api);
    await sell(api, affiliate.id, 100);
    const [payout] = (await api.post('/payouts', {})).body;
    assertProblem(await api.put('/payouts', { payoutId: payout.id, status: 'pending' }), 422, 'validation_failed', '#/status');
    assertProblem(await api.put('/payouts', { payoutId: payout.id, status: 'paid', paidAt: new Date(now.getTime() + DAY_MS).toISOString() }), 422, 'validation_failed', '#/paidAt');
    assertProblem(await api.put('/payouts', { payoutId: payout.id, status: 'failed', paidAt: now.toISOString() }), 422, 'validation_failed', '#/paidAt');
    assertProblem(await api.put('/payouts', { payoutId: payout.id, status: 'paid', method: 'x'.repeat(201) }), 422, 'validation_failed', '#/method');
    assertProblem(await api.put('/payouts', { payoutId: '00000000-0000-4000-8000-000000000000', status: 'paid' }), 404, 'not_found');
    assert.equal((await api.get(`/payouts?status=pending`)).body.length, 1);
    assert.ok((await entries(api)).every((e) => e.status === 'due'));
  });

  it("one program's token never sees or changes another's ledger and payouts", async () => {
    const a = await t.createTenant({ commissionRate: 10 });
    const b = await t.createTenant({ commissionRate: 10 });
    await setPlan(a, { holdDays: 0 });
    const affiliate = await newAffiliate(a);
    const sale = await sell(a, affiliate.id, 100);
    const [payout] = (await a.post('/payouts', {})).body;
    assert.deepEqual(await entries(b), []);
    assert.deepEqual(await entries(b, `?saleId=${sale.id}`), []);
    assert.deepEqual((await b.get('/payouts')).body, []);
    assert.deepEqual((await b.post('/payouts', {})).body, []);
    assertProblem(await b.post('/payouts', { affiliateId: affiliate.id }), 404, 'not_found');
    assertProblem(await b.put('/payouts', { payoutId: payout.id, status: 'paid' }), 404, 'not_found');
    assert.equal(((await b.request('GET', '/payouts/export?format=csv')).body as string).trim().split('\r\n').length, 1);
    assert.equal((await a.get(`/payouts?status=pending`)).body.length, 1);
  });
});
