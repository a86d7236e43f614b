// A property of the whole ledger: whatever mix of affiliates, links, referrals, sales, edits,
// refunds, voids, deletes, plan changes, payout runs and marks a program goes through — some of
// them at the same time, while the clock moves — after every step every stored counter equals
// a recount of the rows it summarises, the commission ledger adds up to the counters and the
// payouts (CONTRACT invariants), and no request answers 5xx.
// fast-check generates the mixes from a fixed seed (a failure prints the seed and the
// shrunk list of steps to replay it).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { rawDb, startTestServer, type ApiClient, type ApiResponse, type TestServer } from '../helpers/test-server.ts';
import { raceNote } from '../helpers/test-database.ts';
import { assertCountersMatchRows, assertLedgerMatchesCounters } from '../helpers/recount.ts';
import { updateProgramSettings } from '../../src/modules/programs/program.service.ts';
import { unique, uniqueEmail } from '../helpers/fixtures.ts';

/** One request, naming earlier resources by position (wrapping), so any list of steps is valid. */
type Op =
  | { kind: 'affiliate'; rate: number | null }
  | { kind: 'link'; affiliate: number }
  | { kind: 'referral'; affiliate: number; viaLink: boolean }
  | { kind: 'sale'; referral: number; cents: number; rate: number | null }
  | { kind: 'saleForNewCustomer'; link: number; cents: number }
  | { kind: 'editSale'; sale: number; cents: number | null; rate: number | null }
  | { kind: 'refund'; sale: number; cents: number | null }
  | { kind: 'voidSale'; sale: number }
  | { kind: 'editReferral'; referral: number; status: 'ACTIVE' | 'INACTIVE' }
  | { kind: 'deleteReferral'; referral: number; force: boolean }
  | { kind: 'setAffiliateStatus'; affiliate: number; status: 'active' | 'inactive' }
  | { kind: 'deleteAffiliate'; affiliate: number; force: boolean }
  | { kind: 'deleteLink'; link: number; force: boolean }
  | { kind: 'click'; link: number; visitor: number }
  | { kind: 'plan'; type: 'percentage' | 'flat'; amountCents: number; durationMonths: number | null; maxSales: number | null; holdDays: number; minimumCents: number }
  | { kind: 'runPayouts'; affiliate: number | null }
  | { kind: 'markPayout'; payout: number; status: 'paid' | 'failed' }
  | { kind: 'advance'; days: number };

const index = fc.nat({ max: 50 });
const cents = fc.integer({ min: 0, max: 1_000_000 });
const rate = fc.option(fc.integer({ min: 0, max: 1_000_000 }).map((n) => n / 10_000), { nil: null });

const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('affiliate' as const), rate }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('link' as const), affiliate: index }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('referral' as const), affiliate: index, viaLink: fc.boolean() }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant('sale' as const), referral: index, cents, rate }), weight: 5 },
  { arbitrary: fc.record({ kind: fc.constant('saleForNewCustomer' as const), link: index, cents }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('editSale' as const), sale: index, cents: fc.option(cents, { nil: null }), rate }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant('refund' as const), sale: index, cents: fc.option(fc.integer({ min: 1, max: 500_000 }), { nil: null }) }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('voidSale' as const), sale: index }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('editReferral' as const), referral: index, status: fc.constantFrom('ACTIVE' as const, 'INACTIVE' as const) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('deleteReferral' as const), referral: index, force: fc.boolean() }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('setAffiliateStatus' as const), affiliate: index, status: fc.constantFrom('active' as const, 'inactive' as const) }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('deleteAffiliate' as const), affiliate: index, force: fc.boolean() }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('deleteLink' as const), link: index, force: fc.boolean() }), weight: 1 },
  { arbitrary: fc.record({ kind: fc.constant('click' as const), link: index, visitor: fc.nat({ max: 3 }) }), weight: 4 },
  {
    arbitrary: fc.record({
      kind: fc.constant('plan' as const),
      type: fc.constantFrom('percentage' as const, 'flat' as const),
      amountCents: fc.integer({ min: 1, max: 5_000 }),
      durationMonths: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
      maxSales: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
      holdDays: fc.constantFrom(0, 1, 30),
      minimumCents: fc.constantFrom(0, 100, 10_000),
    }),
    weight: 1,
  },
  { arbitrary: fc.record({ kind: fc.constant('runPayouts' as const), affiliate: fc.option(index, { nil: null }) }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('markPayout' as const), payout: index, status: fc.constantFrom('paid' as const, 'failed' as const) }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('advance' as const), days: fc.constantFrom(1, 15, 40) }), weight: 2 },
);

/** Steps of one to three requests; the requests of a step run at the same time. */
const steps = fc.array(fc.array(op, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 25 });
const PREAMBLE: Op[] = [
  { kind: 'affiliate', rate: null },
  { kind: 'affiliate', rate: 12.5 },
  { kind: 'affiliate', rate: 33.3333 },
  ...[0, 1, 2, 0].map((affiliate) => ({ kind: 'referral' as const, affiliate, viaLink: affiliate === 1 })),
  ...[0, 1, 2, 3, 0, 1].map((referral, i) => ({ kind: 'sale' as const, referral, cents: 1999 + i * 10_001, rate: null })),
];

/** The hold a run starts with: mostly none, so payouts happen within a run's few steps. */
const startingHold = fc.constantFrom(0, 0, 1, 30);

/** What a run has made so far, by position. */
interface Made {
  /** The program's domain: clicks come from its pages. */
  domain: string;
  affiliates: { id: string; link: string }[];
  links: { id: string; link: string }[];
  referrals: string[];
  sales: number[];
  payouts: string[];
}

/** The servers' clock, which `advance` moves (holds end, plans' months pass). */
let now = new Date('2026-11-01T12:00:00.000Z');

let addresses = 0;
const nextAddress = () => `10.${(++addresses >> 16) & 255}.${(addresses >> 8) & 255}.${addresses & 255}`;

const pick = <T,>(list: T[], n: number): T | undefined => (list.length === 0 ? undefined : list[n % list.length]);
const money = (c: number) => c / 100;

async function run(t: TestServer, api: ApiClient, made: Made, o: Op): Promise<ApiResponse | undefined> {
  switch (o.kind) {
    case 'plan': {
      await updateProgramSettings(rawDb(t), api.programId, {
        commissionType: o.type,
        commissionAmount: money(o.amountCents),
        durationMonths: o.durationMonths,
        maxSalesPerCustomer: o.maxSales,
        holdDays: o.holdDays,
        minimumPayout: money(o.minimumCents),
      });
      return undefined;
    }
    case 'advance':
      now = new Date(now.getTime() + o.days * 86_400_000);
      return undefined;
    case 'runPayouts': {
      const a = o.affiliate === null ? undefined : pick(made.affiliates, o.affiliate);
      const res = await api.post('/payouts', a === undefined ? {} : { affiliateId: a.id });
      if (res.status === 201) made.payouts.push(...res.body.map((p: { id: string }) => p.id));
      return res;
    }
    case 'markPayout': {
      const p = pick(made.payouts, o.payout);
      return p === undefined ? undefined : api.put('/payouts', { payoutId: p, status: o.status });
    }
    case 'click': {
      const l = pick(made.links, o.link);
      if (!l) return undefined;
      const res = await fetch(`${t.url}/api/track/click?programId=${api.programId}`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', origin: `https://${made.domain}`, 'user-agent': 'Mozilla/5.0 Chrome/131.0', 'x-forwarded-for': nextAddress() },
        body: JSON.stringify({ url: `https://${made.domain}/?ref=${l.link}`, visitorId: `visitor-${o.visitor}` }),
      });
      return { status: res.status, headers: res.headers, body: await res.json() };
    }
    case 'affiliate': {
      const res = await api.post('/affiliates', { firstName: 'Pat', lastName: unique('P'), email: uniqueEmail('p'), ...(o.rate === null ? {} : { commissionRate: o.rate }) });
      if (res.status === 201) {
        made.affiliates.push({ id: res.body.id, link: res.body.link });
        made.links.push({ id: '', link: res.body.link });
      }
      return res;
    }
    case 'link': {
      const a = pick(made.affiliates, o.affiliate);
      if (!a) return undefined;
      const res = await api.post('/links', { affiliateId: a.id });
      if (res.status === 201) made.links.push({ id: res.body.id, link: res.body.link });
      return res;
    }
    case 'referral': {
      const a = pick(made.affiliates, o.affiliate);
      if (!a) return undefined;
      const res = await api.post('/referrals', { name: 'Cy', email: uniqueEmail('c'), referredUserExternalId: unique('cus'), affiliateId: o.viaLink ? a.link : a.id });
      if (res.status === 201) made.referrals.push(res.body.id);
      return res;
    }
    case 'sale': {
      const r = pick(made.referrals, o.referral);
      if (!r) return undefined;
      const res = await api.post('/sales', { referralId: r, totalEarned: money(o.cents), ...(o.rate === null ? {} : { commissionRate: o.rate }) });
      if (res.status === 201) made.sales.push(res.body.id);
      return res;
    }
    case 'saleForNewCustomer': {
      const l = pick(made.links, o.link);
      if (!l) return undefined;
      const res = await api.post('/sales', { referralId: l.link, email: uniqueEmail('n'), name: 'New', totalEarned: money(o.cents) });
      if (res.status === 201) {
        made.sales.push(res.body.id);
        made.referrals.push(res.body.referralId);
      }
      return res;
    }
    case 'editSale': {
      const s = pick(made.sales, o.sale);
      if (s === undefined) return undefined;
      return api.put('/sales', { saleId: s, ...(o.cents === null ? {} : { totalEarned: money(o.cents) }), ...(o.rate === null ? {} : { commissionRate: o.rate }) });
    }
    case 'refund': {
      const s = pick(made.sales, o.sale);
      if (s === undefined) return undefined;
      return api.post('/sales/refund', { saleId: s, ...(o.cents === null ? {} : { amount: money(o.cents) }) });
    }
    case 'voidSale': {
      const s = pick(made.sales, o.sale);
      return s === undefined ? undefined : api.request('DELETE', '/sales', { saleId: s });
    }
    case 'editReferral': {
      const r = pick(made.referrals, o.referral);
      return r === undefined ? undefined : api.put('/referrals', { referralId: r, status: o.status });
    }
    case 'deleteReferral': {
      const r = pick(made.referrals, o.referral);
      return r === undefined ? undefined : api.request('DELETE', `/referrals?id=${r}&force=${o.force}`);
    }
    case 'setAffiliateStatus': {
      const a = pick(made.affiliates, o.affiliate);
      return a === undefined ? undefined : api.put('/affiliates', { id: a.id, status: o.status });
    }
    case 'deleteAffiliate': {
      const a = pick(made.affiliates, o.affiliate);
      return a === undefined ? undefined : api.request('DELETE', '/affiliates', { id: a.id, force: o.force });
    }
    case 'deleteLink': {
      const l = pick(made.links, o.link);
      return l === undefined ? undefined : api.request('DELETE', '/links', { link: l.link, force: o.force });
    }
  }
}

describe('counters under random mixes of changes', () => {
  let t: TestServer;
  before(async () => {
    // Clicks come "through a proxy" from many addresses, so the per-address click limit does
    // not end the run (it has its own test).
    // Raw click rows are kept for the whole run (the clock moves by months): the recount reads them.
    t = await startTestServer({ rateLimitPerMinute: 0, trustProxy: ['127.0.0.1'], clickRetentionDays: 3650 }, { clock: () => now });
  });
  after(() => t?.close());

  it('after every step every counter equals a recount of the rows, the ledger adds up to the counters and payouts, and no request answers 5xx' + raceNote, async () => {
    await fc.assert(
      fc.asyncProperty(startingHold, steps, async (holdDays, plan) => {
        const api = await t.createTenant();
        await updateProgramSettings(rawDb(t), api.programId, { holdDays });
        const made: Made = { domain: (await api.get('/me')).body.domain, affiliates: [], links: [], referrals: [], sales: [], payouts: [] };
        // A program with something to pay from the first step: three affiliates, their customers and sales.
        for (const o of PREAMBLE) await run(t, api, made, o);
        for (const step of plan) {
          const answers = await Promise.all(step.map((o) => run(t, api, made, o)));
          for (const [i, res] of answers.entries()) {
            if (res) assert.ok(res.status < 500, `${step[i]!.kind} answered ${res.status}: ${JSON.stringify(res.body)}`);
          }
          await assertCountersMatchRows(rawDb(t), api.programId);
          await assertLedgerMatchesCounters(rawDb(t), api.programId);
        }
      }),
      { seed: Number(process.env.PROPERTY_SEED ?? 20261123), numRuns: Number(process.env.PROPERTY_RUNS ?? 25), endOnFailure: true },
    );
  });
});
