// Correctness across real OS processes: two `tandem serve` processes share one fresh
// PostgreSQL database (the deployment shape of CONTRACT.md "across any number of server
// processes"), and requests are split across them. Limits hold exactly, unique conflicts are
// 409 (never 500, never two rows), counters equal the sums over their rows, Idempotency-Key
// claims hold across processes, and `tandem migrate` run three times at once applies once.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { createTestDatabase, testDialect, type TestDatabase } from '../helpers/test-database.ts';
import { apiClient, type ApiClient, type ApiResponse } from '../helpers/test-server.ts';
import { runTandem, seedTenant, startServerProcesses, type ServerProcess, type Tenant } from '../helpers/server-process.ts';
import { attempt, counterMismatches, tally, type Outcome } from './invariants.ts';
import { unique, uniqueEmail } from '../helpers/fixtures.ts';
import { assertLedgerMatchesCounters } from '../helpers/recount.ts';
import { updateProgramSettings } from '../../src/modules/programs/program.service.ts';
import { billingProviderOf, connectBilling, connectStripe } from '../../src/modules/billing/billing.service.ts';
import { chargebeeAuthorization, fixture, lemonSqueezySignature, paddleSignature, polarHeaders, providerId } from '../helpers/billing-providers.ts';
import Stripe from 'stripe';

const PROCESSES = 2;


interface Affiliate {
  id: string;
  email: string;
  link: string;
  totalCommissionEarned: number;
  numberOfReferredUsers: number;
}

describe('several server processes on one PostgreSQL database', { skip: testDialect !== 'postgres' && 'needs PostgreSQL: several processes share one database' }, () => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  let servers: ServerProcess[] = [];
  let tenant: Tenant;
  let clients: ApiClient[];

  before(async () => {
    database = await createTestDatabase('postgres');
    tenant = await seedTenant(database.url, { currency: 'USD', commissionRate: 20 });
    servers = await startServerProcesses(PROCESSES, { databaseUrl: database.url });
    clients = servers.map((s) => apiClient(s.url, tenant.token, tenant.programId));
    handle = openDatabase({ databaseUrl: database.url, databasePoolSize: 2 });
  });

  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await handle?.close();
    await database?.drop();
  });

  const db = () => handle.db;
  /** The client of request number i: requests are dealt round-robin to the processes. */
  const via = (i: number) => clients[i % clients.length]!;
  const serverLogs = () => servers.map((s, i) => `--- process ${i} (pid ${s.pid}) ---\n${s.output().slice(-4000)}`).join('\n');

  function assertNo500(outcomes: Outcome[]): void {
    const bad = outcomes.filter((o) => o.status === 0 || o.status >= 500);
    assert.equal(bad.length, 0, `unexpected responses: ${JSON.stringify(tally(outcomes))}\nfirst: ${JSON.stringify(bad[0])}\n${serverLogs()}`);
  }

  async function created<T>(res: ApiResponse): Promise<T> {
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body as T;
  }

  const createAffiliate = (i = 0) => via(i).post('/affiliates', { firstName: 'Multi', lastName: unique('P'), email: uniqueEmail('aff') }).then(created<Affiliate>);
  const createCoupon = (body: Record<string, unknown> = {}) =>
    via(0).post('/coupons', { name: unique('Coupon'), couponType: 'PERCENTAGE', percentOff: 10, ...body }).then(created<{ id: string }>);
  const createCode = (body: Record<string, unknown>) => via(1).post('/promotional-codes', { code: unique('CODE'), ...body }).then(created<{ id: string; code: string }>);

  it('(a) a code with maxRedemptions 50 is redeemed exactly 50 times by 300 parallel referrals across the processes', async () => {
    const affiliate = await createAffiliate();
    const coupon = await createCoupon();
    const code = await createCode({ couponId: coupon.id, affiliateId: affiliate.id, maxRedemptions: 50 });

    const outcomes = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        attempt(via(i), 'POST', '/referrals', { name: `Buyer ${i}`, email: uniqueEmail(), referredUserExternalId: `ext-${i}`, promoCode: code.code }),
      ),
    );
    assertNo500(outcomes);
    const statuses = tally(outcomes);
    assert.deepEqual(statuses, { '201': 50, '422 promo_code_exhausted': 250 });

    const row = await db().selectFrom('promotional_codes').select('times_redeemed').where('id', '=', code.id).executeTakeFirstOrThrow();
    assert.equal(Number(row.times_redeemed), 50);
    const referrals = await db().selectFrom('referrals').select((eb) => eb.fn.countAll().as('n')).where('promotional_code_id', '=', code.id).executeTakeFirstOrThrow();
    assert.equal(Number(referrals.n), 50);
    const stored = await via(1).get(`/promotional-codes?id=${code.id}`);
    assert.equal(stored.body.timesRedeemed, 50);
    const aff = await via(1).get(`/affiliates?id=${affiliate.id}`);
    assert.equal(aff.body.numberOfReferredUsers, 50, 'failed redemptions wrote no referral and counted none');
  });

  it('(b) a coupon-wide maxRedemptions 50 shared by 3 unlimited codes holds under 300 parallel sales across the processes', async () => {
    const coupon = await createCoupon({ maxRedemptions: 50 });
    const codes: { id: string; code: string }[] = [];
    for (let i = 0; i < 3; i++) {
      const affiliate = await createAffiliate(i);
      codes.push(await createCode({ couponId: coupon.id, affiliateId: affiliate.id }));
    }

    const outcomes = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        attempt(via(i), 'POST', '/sales', { name: `Buyer ${i}`, email: uniqueEmail(), totalEarned: 10 + (i % 7), promoCode: codes[Math.floor(i / 3) % 3]!.code }),
      ),
    );
    assertNo500(outcomes);
    assert.deepEqual(tally(outcomes), { '201': 50, '422 coupon_invalid': 250 });

    const couponRow = await db().selectFrom('coupons').select('times_redeemed').where('id', '=', coupon.id).executeTakeFirstOrThrow();
    assert.equal(Number(couponRow.times_redeemed), 50);
    const codeRows = await db().selectFrom('promotional_codes').select('times_redeemed').where('coupon_id', '=', coupon.id).execute();
    assert.equal(codeRows.reduce((sum, r) => sum + Number(r.times_redeemed), 0), 50);
    const codeIds = codes.map((c) => c.id);
    const sales = await db().selectFrom('sales').select((eb) => eb.fn.countAll().as('n')).where('promotional_code_id', 'in', codeIds).executeTakeFirstOrThrow();
    assert.equal(Number(sales.n), 50);
    const referrals = await db().selectFrom('referrals').select((eb) => eb.fn.countAll().as('n')).where('promotional_code_id', 'in', codeIds).executeTakeFirstOrThrow();
    assert.equal(Number(referrals.n), 50, 'a rejected sale wrote no customer');
  });

  it('(c) the same affiliate e-mail or link created on two processes at once: one 201, one 409, one row', async () => {
    for (let round = 0; round < 20; round++) {
      const email = uniqueEmail('twin');
      const pair = await Promise.all([
        attempt(clients[0]!, 'POST', '/affiliates', { firstName: 'Twin', lastName: 'A', email }),
        attempt(clients[1]!, 'POST', '/affiliates', { firstName: 'Twin', lastName: 'B', email: email.toUpperCase() }),
      ]);
      assertNo500(pair);
      assert.deepEqual(tally(pair), { '201': 1, '409 conflict': 1 }, `round ${round}: ${JSON.stringify(pair.map((p) => ('body' in p ? p.body : p)))}`);
      const rows = await db().selectFrom('affiliates').select('id').where('program_id', '=', tenant.programId).where('email_key', '=', email).execute();
      assert.equal(rows.length, 1, `round ${round}: one affiliate row`);
    }

    const owner = await createAffiliate();
    for (let round = 0; round < 20; round++) {
      const link = unique('shared-link');
      const pair = await Promise.all([
        attempt(clients[1]!, 'POST', '/links', { affiliateId: owner.id, link }),
        attempt(clients[0]!, 'POST', '/links', { affiliateId: owner.id, link: link.toUpperCase() }),
      ]);
      assertNo500(pair);
      assert.deepEqual(tally(pair), { '201': 1, '409 conflict': 1 }, `round ${round}: ${JSON.stringify(pair.map((p) => ('body' in p ? p.body : p)))}`);
      const rows = await db().selectFrom('affiliate_links').select('id').where('program_id', '=', tenant.programId).where('link_key', '=', link.toLowerCase()).execute();
      assert.equal(rows.length, 1, `round ${round}: one link row`);
    }
  });

  it('(d) a storm of 500 parallel sales over 20 affiliates leaves every counter equal to the sums over its rows', async () => {
    const affiliates: Affiliate[] = [];
    for (let i = 0; i < 20; i++) affiliates.push(await createAffiliate(i));
    // A second link per affiliate, and two existing customers per affiliate (one through each link).
    const extraLinks = await Promise.all(affiliates.map((a, i) => via(i).post('/links', { affiliateId: a.id, link: unique('storm') }).then(created<{ link: string }>)));
    const customers = await Promise.all(
      affiliates.flatMap((a, i) => [
        via(i).post('/referrals', { name: 'Old customer', email: uniqueEmail('old'), referredUserExternalId: unique('x'), affiliateId: a.link }).then(created<{ email: string; affiliateId: string }>),
        via(i + 1).post('/referrals', { name: 'Old customer', email: uniqueEmail('old'), referredUserExternalId: unique('x'), affiliateId: extraLinks[i]!.link }).then(created<{ email: string; affiliateId: string }>),
      ]),
    );
    // Unlimited codes of the first two affiliates: redemptions by new customers (referral row
    // first, then the code) race redemptions by existing customers of the same affiliate.
    const coupon = await createCoupon();
    const codes = [await createCode({ couponId: coupon.id, affiliateId: affiliates[0]!.id }), await createCode({ couponId: coupon.id, affiliateId: affiliates[1]!.id })];
    const codeCustomers = customers.filter((c) => c.affiliateId === affiliates[0]!.id || c.affiliateId === affiliates[1]!.id);

    const bodies = Array.from({ length: 500 }, (_, i) => {
      const a = i % 20;
      const totalEarned = Number((5 + ((i * 37) % 500) + ((i * 13) % 100) / 100).toFixed(2));
      const rate = i % 4 === 0 ? { commissionRate: 7.5 } : {};
      switch (i % 6) {
        case 0:
          return { referralId: extraLinks[a]!.link, name: `New ${i}`, email: uniqueEmail(), totalEarned, ...rate };
        case 1:
          return { referralId: affiliates[a]!.id, name: `New ${i}`, email: uniqueEmail(), totalEarned, ...rate };
        case 2:
          return { referralId: affiliates[a]!.link, name: `New ${i}`, email: uniqueEmail(), totalEarned, ...rate };
        case 3:
          return { email: customers[i % customers.length]!.email, totalEarned, ...rate };
        case 4: {
          const customer = codeCustomers[i % codeCustomers.length]!;
          const code = codes[customer.affiliateId === affiliates[0]!.id ? 0 : 1]!;
          return { email: customer.email, promoCode: code.code, totalEarned, ...rate };
        }
        default:
          return { promoCode: codes[i % 2]!.code, name: `New ${i}`, email: uniqueEmail(), totalEarned, ...rate };
      }
    });
    const outcomes = await Promise.all(bodies.map((body, i) => attempt(via(i), 'POST', '/sales', body)));
    assertNo500(outcomes);
    assert.deepEqual(tally(outcomes), { '201': 500 });

    assert.deepEqual(await counterMismatches(db(), tenant.programId), [], 'every affiliate and link counter equals the aggregate of its rows');

    // The API reports the same: totalCommissionEarned = Σ commission, numberOfReferredUsers = referral rows.
    const sums = await db()
      .selectFrom('sales')
      .select(['affiliate_id', (eb) => eb.fn.sum<string>('commission').as('commission'), (eb) => eb.fn.countAll<string>().as('n')])
      .where('program_id', '=', tenant.programId)
      .groupBy('affiliate_id')
      .execute();
    const referralCounts = await db()
      .selectFrom('referrals')
      .select(['affiliate_id', (eb) => eb.fn.countAll<string>().as('n')])
      .where('program_id', '=', tenant.programId)
      .groupBy('affiliate_id')
      .execute();
    for (const [i, a] of affiliates.entries()) {
      const res = await via(i).get(`/affiliates?id=${a.id}`);
      assert.equal(res.status, 200);
      const sum = sums.find((s) => s.affiliate_id === a.id);
      assert.ok(sum && Number(sum.n) > 0, `affiliate ${i} has sales`);
      assert.equal(Math.round(res.body.totalCommissionEarned * 100), Number(sum.commission), `affiliate ${i} totalCommissionEarned`);
      assert.equal(res.body.numberOfReferredUsers, Number(referralCounts.find((r) => r.affiliate_id === a.id)?.n ?? 0), `affiliate ${i} numberOfReferredUsers`);
    }
    const storedSales = await db()
      .selectFrom('sales')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('affiliate_id', 'in', affiliates.map((a) => a.id))
      .executeTakeFirstOrThrow();
    assert.equal(Number(storedSales.n), 500);
  });

  it('(e) one Idempotency-Key sent to every process at once creates one sale; the others replay it or get 409', async () => {
    const affiliate = await createAffiliate();
    for (let round = 0; round < 8; round++) {
      const key = unique('idem');
      const body = { referralId: affiliate.link, name: 'Idem buyer', email: uniqueEmail('idem'), totalEarned: 42.5, externalId: key };
      const outcomes = await Promise.all(
        Array.from({ length: PROCESSES * 2 }, (_, i) => attempt(via(i), 'POST', '/sales', body, { 'idempotency-key': key })),
      );
      assertNo500(outcomes);
      const ok = outcomes.filter((o): o is ApiResponse => o.status === 201);
      const others = outcomes.filter((o) => o.status !== 201);
      assert.ok(ok.length >= 1, `round ${round}: at least one 201: ${JSON.stringify(tally(outcomes))}`);
      for (const o of others) {
        assert.equal(o.status, 409, `round ${round}: ${JSON.stringify(tally(outcomes))}`);
        assert.equal((o as ApiResponse).body.code, 'idempotency_conflict');
      }
      for (const o of ok) assert.deepEqual(o.body, ok[0]!.body, `round ${round}: a replay carries the original body`);
      const rows = await db().selectFrom('sales').select('id').where('program_id', '=', tenant.programId).where('external_id', '=', key).execute();
      assert.equal(rows.length, 1, `round ${round}: exactly one sale for the key`);
      assert.equal(rows[0]!.id, ok[0]!.body.id);

      // Once finished, every process replays the stored response.
      for (const client of clients) {
        const replay = await client.request('POST', '/sales', body, { 'idempotency-key': key });
        assert.equal(replay.status, 201);
        assert.equal(replay.headers.get('idempotent-replayed'), 'true');
        assert.deepEqual(replay.body, ok[0]!.body);
      }
    }
    assert.deepEqual(await counterMismatches(db(), tenant.programId), []);
  });

  it('(f) `tandem migrate` run by three processes at once on a fresh database applies every migration once', async () => {
    const fresh = await createTestDatabase('postgres');
    try {
      const runs = await Promise.all([0, 1, 2].map(() => runTandem(['migrate', '--json'], { databaseUrl: fresh.url })));
      for (const run of runs) assert.equal(run.code, 0, `tandem migrate failed:\n${run.stdout}\n${run.stderr}`);
      const applied = runs.flatMap((run) => (JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { applied: string[] }).applied);

      const probe = openDatabase({ databaseUrl: fresh.url, databasePoolSize: 1 });
      try {
        const rows = await sql<{ name: string; n: unknown }>`select name, count(*) as n from tandem_migrations group by name order by name`.execute(probe.db);
        assert.ok(rows.rows.length >= 2, 'the migrations are recorded');
        for (const row of rows.rows) assert.equal(Number(row.n), 1, `${row.name} is recorded once`);
        assert.deepEqual([...applied].sort(), rows.rows.map((r) => r.name), 'each migration was applied by exactly one of the processes');
        // The schema is there and whole.
        await sql`select count(*) from sales`.execute(probe.db);
        await sql`select count(*) from idempotency_keys`.execute(probe.db);
      } finally {
        await probe.close();
      }
    } finally {
      await fresh.drop();
    }
  });

  it('(g) payout runs on both processes at once, racing refunds: no entry in two payouts, every payout is the sum of its entries, nothing lost', async () => {
    // No hold: every sale is due at once. The change reaches the processes' token caches (NOTIFY).
    await updateProgramSettings(db(), tenant.programId, { holdDays: 0 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const affiliates = await Promise.all(Array.from({ length: 10 }, (_, i) => createAffiliate(i)));
    const sales: number[] = [];
    for (const [i, affiliate] of affiliates.entries()) {
      for (let n = 0; n < 4; n++) {
        const sale = await created<{ id: number }>(await via(i + n).post('/sales', { referralId: affiliate.id, email: uniqueEmail('payee'), name: 'Payee', totalEarned: 50 + n }));
        sales.push(sale.id);
      }
    }
    const runs = Array.from({ length: 8 }, (_, i) => attempt(via(i), 'POST', '/payouts', {}));
    const refunds = sales.filter((_, i) => i % 2 === 0).map((id, i) => attempt(via(i + 1), 'POST', '/sales/refund', { saleId: id, amount: 10 }));
    const outcomes = await Promise.all([...runs, ...refunds]);
    assertNo500(outcomes);
    await assertLedgerMatchesCounters(db(), tenant.programId);
    const made = await db().selectFrom('payouts').select(['affiliate_id']).where('program_id', '=', tenant.programId).where('status', '=', 'pending').execute();
    // Refunds only take money back, so one payout per affiliate: eight runs at once made no second one.
    assert.deepEqual(made.map((p) => p.affiliate_id).sort(), affiliates.map((a) => a.id).sort(), 'exactly one payout per affiliate');

    // Whatever a refund took back after its sale went into a payout is due and comes off the next one; nothing is lost.
    const open = await sql<{ n: string | number; total: string | number | null }>`
      select count(*) as n, sum(amount) as total from commission_entries where program_id = ${tenant.programId} and payout_id is null`.execute(db());
    const ledger = await sql<{ total: string | number }>`select sum(amount) as total from commission_entries where program_id = ${tenant.programId}`.execute(db());
    const paidOut = await sql<{ total: string | number }>`select sum(amount) as total from payouts where program_id = ${tenant.programId} and status = 'pending'`.execute(db());
    assert.equal(Number(paidOut.rows[0]!.total) + Number(open.rows[0]!.total ?? 0), Number(ledger.rows[0]!.total), 'payouts + entries outside them = the whole ledger');
  });

  it('(h) one Stripe event delivered to both processes at once, ten times over, records one sale and one event', async () => {
    const secret = 'whsec_multiprocessSecret1234';
    await connectStripe(db(), tenant.programId, secret, new Date().toISOString());
    const affiliate = await createAffiliate();
    await created(await via(0).post('/referrals', { name: 'Stripe Buyer', email: uniqueEmail('stripe'), referredUserExternalId: 'cus_multi', affiliateId: affiliate.id }));
    const stripe = new Stripe('sk_test_unused');
    const payload = JSON.stringify({ id: 'evt_multi_1', object: 'event', type: 'invoice.paid', created: 1, data: { object: { id: 'in_multi_1', object: 'invoice', customer: 'cus_multi', amount_paid: 2500, currency: 'usd', status: 'paid' } } });
    const deliveries = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        fetch(`${servers[i % servers.length]!.url}/api/billing/stripe/${tenant.programId}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload, secret }) },
          body: payload,
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as { duplicate: boolean } })),
      ),
    );
    assert.deepEqual(deliveries.map((d) => d.status), Array(10).fill(200), serverLogs());
    assert.equal(deliveries.filter((d) => !d.body.duplicate).length, 1, 'stored once');
    const sales = await sql<{ n: string | number }>`select count(*) as n from sales where program_id = ${tenant.programId} and external_invoice_id = 'in_multi_1'`.execute(db());
    assert.equal(Number(sales.rows[0]!.n), 1, 'one sale');
    const events = await sql<{ n: string | number }>`select count(*) as n from billing_events where program_id = ${tenant.programId}`.execute(db());
    assert.equal(Number(events.rows[0]!.n), 1);
  });

  it("(i) Paddle: a transaction naming the affiliate and its customer's e-mail, at once on both processes, pair into one referral and one sale, every time", async () => {
    const secret = 'pdl_ntfset_01multiprocess0000000000000_Av4U6W2GMu';
    await connectBilling(db(), tenant.programId, billingProviderOf('paddle'), secret, new Date().toISOString());
    const affiliate = await createAffiliate();
    const post = (i: number, event: object) => {
      const payload = JSON.stringify(event);
      return fetch(`${servers[i % servers.length]!.url}/api/billing/paddle/${tenant.programId}`, { method: 'POST', headers: { 'content-type': 'application/json', 'paddle-signature': paddleSignature(payload, [secret]) }, body: payload }).then((r) => r.status);
    };
    const customers: string[] = [];
    for (let round = 0; round < 40; round++) {
      const customer = fixture('paddle', 'customer.created');
      customer.event_id = providerId('evt');
      Object.assign(customer.data, { id: providerId('ctm'), email: uniqueEmail('paddle') });
      const txn = fixture('paddle', 'transaction.completed');
      txn.event_id = providerId('evt');
      Object.assign(txn.data, { id: providerId('txn'), customer_id: customer.data.id, custom_data: { tandem_referral: affiliate.id } });
      customers.push(customer.data.id);
      // Each event on both processes, the four deliveries at once (the order between the pair is the race).
      const statuses = await Promise.all([post(0, customer), post(1, txn), post(1, customer), post(0, { ...txn, event_id: providerId('evt') })]);
      assert.deepEqual(statuses, [200, 200, 200, 200], serverLogs());
    }
    const referrals = await db().selectFrom('referrals').select(['referred_user_external_id']).where('program_id', '=', tenant.programId).where('referred_user_external_id', 'in', customers).execute();
    assert.equal(referrals.length, customers.length, 'every customer referred once');
    const sales = await sql<{ n: string | number }>`select count(*) as n from sales s join referrals r on r.id = s.referral_id where r.program_id = ${tenant.programId} and r.referred_user_external_id like 'ctm_%'`.execute(db());
    assert.equal(Number(sales.rows[0]!.n), customers.length, 'one sale each, none left waiting');
    const waiting = await sql<{ n: string | number }>`select count(*) as n from billing_events where program_id = ${tenant.programId} and outcome = 'waiting'`.execute(db());
    assert.equal(Number(waiting.rows[0]!.n), 0);
    await assertLedgerMatchesCounters(db(), tenant.programId);
  });

  it('(j) Lemon Squeezy, Polar and Chargebee: one event on both processes at once, ten times over, records once', async () => {
    const affiliate = await createAffiliate();
    const secrets = { lemonsqueezy: 'lsq-multiprocess-secret', polar: 'polar_whs_multiprocessSecret01', chargebee: 'tandem:multiprocess-password' };
    for (const [name, secret] of Object.entries(secrets)) await connectBilling(db(), tenant.programId, billingProviderOf(name), secret, new Date().toISOString());
    const order = fixture('lemonsqueezy', 'order_created');
    order.meta.custom_data = { tandem_referral: affiliate.id };
    Object.assign(order.data, { id: '777001' });
    Object.assign(order.data.attributes, { customer_id: 777001, user_email: uniqueEmail('lsq') });
    const polar = fixture('polar', 'order.paid');
    polar.data.metadata = { tandem_referral: affiliate.id };
    Object.assign(polar.data, { id: crypto.randomUUID(), customer_id: crypto.randomUUID() });
    Object.assign(polar.data.customer, { id: polar.data.customer_id, email: uniqueEmail('polar') });
    const chargebee = fixture('chargebee', 'payment_succeeded');
    chargebee.id = providerId('ev');
    chargebee.content.invoice.id = providerId('INV');
    Object.assign(chargebee.content.customer, { id: providerId('cust'), email: uniqueEmail('cb'), cf_tandem_referral: affiliate.id });
    const cases = [
      { name: 'lemonsqueezy', body: JSON.stringify(order), headers: (payload: string) => ({ 'x-signature': lemonSqueezySignature(payload, secrets.lemonsqueezy) }), invoice: `orders/${order.data.id}` },
      { name: 'polar', body: JSON.stringify(polar), headers: (() => { const h = polarHeaders(JSON.stringify(polar), secrets.polar); return () => h; })(), invoice: polar.data.id },
      { name: 'chargebee', body: JSON.stringify(chargebee), headers: () => ({ authorization: chargebeeAuthorization(secrets.chargebee) }), invoice: chargebee.content.invoice.id },
    ];
    for (const c of cases) {
      const deliveries = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          fetch(`${servers[i % servers.length]!.url}/api/billing/${c.name}/${tenant.programId}`, { method: 'POST', headers: { 'content-type': 'application/json', ...c.headers(c.body) }, body: c.body }).then(async (r) => ({ status: r.status, body: (await r.json()) as { duplicate: boolean } })),
        ),
      );
      assert.deepEqual(deliveries.map((d) => d.status), Array(10).fill(200), `${c.name}: ${serverLogs()}`);
      assert.equal(deliveries.filter((d) => !d.body.duplicate).length, 1, `${c.name}: stored once`);
      const sales = await sql<{ n: string | number }>`select count(*) as n from sales where program_id = ${tenant.programId} and external_invoice_id = ${c.invoice}`.execute(db());
      assert.equal(Number(sales.rows[0]!.n), 1, `${c.name}: one sale`);
    }
  });
});
