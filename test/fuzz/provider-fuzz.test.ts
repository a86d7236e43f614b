import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import Stripe from 'stripe';
import { sql, type Kysely } from 'kysely';
import { loadConfig } from '../../src/config.ts';
import { copyData } from '../../src/db/copy-data.ts';
import { openDatabase } from '../../src/db/database.ts';
import type { Database } from '../../src/db/schema.ts';
import { connectStripe } from '../../src/modules/billing/billing.service.ts';
import { startServer } from '../../src/server.ts';
import { apiClient, rawDb, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createTestDatabase, testDialect, type TestDialect } from '../helpers/test-database.ts';
import { assertLedgerMatchesCounters } from '../helpers/recount.ts';
import { hostileJson, hostileString, RawJson, serialiseJson } from './request-arbitraries.ts';
import { nextAddress, seedTenant, snapshotDifference, takeSnapshot, type Snapshot, type Tenant } from './fuzz-world.ts';

// The fuzzer's "provider payload" class (docs/security.md#fuzzing): signed Stripe events with
// generated field values — mostly plausible (known customers, invoices, payment intents,
// disputes, the tenant's affiliates and codes, amounts, currencies, times), some hostile (NUL
// and other control characters, lone surrogates, 70,000-character strings, 1e308, raw 1e999,
// wrong types, objects where ids go, missing fields) — posted to the receiver, as Stripe posts
// them. What must hold for every delivery: no 5xx; a 4xx changes nothing; a 200 lists the event
// once and changes no other program; every referral, sale and billing row stored keeps the
// API's input rules (docs/security.md, Limits); the lists answer and the ledger matches the
// counters. In the PostgreSQL leg the same events go to a SQLite server too: both databases
// must give each event the same outcome, and what SQLite stored must copy to PostgreSQL
// (tandem migrate-data's code) with the same answers.

const SEED = process.env.FUZZ_SEED === undefined || process.env.FUZZ_SEED === '' ? 20_261_212 : process.env.FUZZ_SEED === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(process.env.FUZZ_SEED);
const RUNS = Number(process.env.FUZZ_PROVIDER_RUNS ?? Math.max(200, Math.round(Number(process.env.FUZZ_RUNS ?? 1000) / 8)));
/** Stripe's times in the plan are fixed when the run starts, so every server gets the same event. */
const NOW = Math.floor(Date.now() / 1000);
const stripe = new Stripe('sk_test_unused');

/** A value of the tenant the event goes to (or of the other tenant), resolved per server when it is sent. */
class Ref {
  constructor(
    readonly kind: 'link' | 'affiliateId' | 'otherLink' | 'code',
    readonly n: number,
  ) {}

  toJSON(): string {
    return `<${this.kind}#${this.n}>`;
  }
}

const OMIT = Symbol('omit');

/** A field: mostly a plausible value, sometimes a hostile one, sometimes absent. */
const field = <T>(plausible: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 60, arbitrary: plausible }, { weight: 2, arbitrary: hostileJson }, { weight: 1, arbitrary: fc.constant(OMIT as unknown) });

const pool = (prefix: string, size: number) => fc.nat({ max: size - 1 }).map((n) => `${prefix}${n}`);
/**
 * One customer's ids (customer k, invoice k, payment intent k, session k, e-mail k) mostly go
 * together, so that events find each other's rows (a dispute its sale, a refund its invoice);
 * sometimes another's.
 */
const CUSTOMERS = 8;
const mostly = (k: number, prefix: string) => fc.oneof({ weight: 5, arbitrary: fc.constant(`${prefix}${k}`) }, { weight: 1, arbitrary: pool(prefix, CUSTOMERS) });
const expandable = (ids: fc.Arbitrary<string>) => fc.oneof({ weight: 4, arbitrary: ids }, { weight: 1, arbitrary: ids.map((id) => ({ id, object: 'x' })) });
const email = (k: number) => fc.oneof({ weight: 12, arbitrary: fc.constant(`fz${k}@example.com`) }, { weight: 1, arbitrary: fc.constantFrom(` FZ${k}@Example.com `, `${'a'.repeat(250)}@example.com`, 'no-at-sign') });
const name = fc.oneof({ weight: 4, arbitrary: fc.constantFrom('Carl Customer', 'Zoë Ünïcode', '  padded  ', 'x'.repeat(260), `${'é'.repeat(199)}😀😀`) }, { weight: 3, arbitrary: hostileString });
const referral = fc.oneof(
  { weight: 5, arbitrary: fc.nat().map((n) => new Ref('link', n)) },
  { weight: 3, arbitrary: fc.nat().map((n) => new Ref('affiliateId', n)) },
  { weight: 1, arbitrary: fc.nat().map((n) => new Ref('otherLink', n)) },
  { weight: 1, arbitrary: fc.constantFrom('no-such-link', 'x'.repeat(65), '') },
);
const amount = fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 1, max: 5_000_000 }) }, { weight: 1, arbitrary: fc.constantFrom(0, 12_345, 100, 1, 2e15, 1.5, -100) });
const currency = fc.constantFrom('usd', 'usd', 'usd', 'jpy', 'USD', 'eur');
const seconds = fc.oneof({ weight: 6, arbitrary: fc.integer({ min: NOW - 40 * 86_400, max: NOW }) }, { weight: 1, arbitrary: fc.constantFrom(0, 1e12, 253_402_300_800, 1.5, -1) });
const discounts = fc.array(
  fc.record({ promotion_code: fc.oneof(fc.constantFrom('promo_fz0', 'promo_fz1'), fc.nat().map((n) => ({ id: `promo_fz${n % 3}`, code: new Ref('code', n) }))) }),
  { maxLength: 2 },
);

/** data.object of each type Tandem reads (and one it does not), for customer k. */
const objects: Record<string, (k: number) => fc.Arbitrary<Record<string, unknown>>> = {
  'customer.created': (k) => fc.record({ id: field(mostly(k, 'cus_fz')), object: fc.constant('customer'), email: field(email(k)), name: field(name), metadata: field(fc.record({ tandem_referral: field(referral) })) }),
  'checkout.session.completed': (k) =>
    fc.record({
      id: field(mostly(k, 'cs_fz')),
      object: fc.constant('checkout.session'),
      customer: field(expandable(mostly(k, 'cus_fz'))),
      client_reference_id: field(referral),
      customer_details: field(fc.record({ email: field(email(k)), name: field(name) })),
      mode: field(fc.constantFrom('payment', 'subscription')),
      payment_status: field(fc.constant('paid')),
      invoice: field(fc.oneof(fc.constant(null), mostly(k, 'in_fz'))),
      amount_total: field(amount),
      currency: field(currency),
      payment_intent: field(expandable(mostly(k, 'pi_fz'))),
      created: field(seconds),
      discounts: field(discounts),
    }),
  'invoice.paid': (k) =>
    fc.record({
      id: field(mostly(k, 'in_fz')),
      object: fc.constant('invoice'),
      customer: field(expandable(mostly(k, 'cus_fz'))),
      amount_paid: field(amount),
      currency: field(currency),
      customer_email: field(email(k)),
      customer_name: field(name),
      payment_intent: field(expandable(mostly(k, 'pi_fz'))),
      status_transitions: field(fc.record({ paid_at: field(seconds) })),
      discounts: field(discounts),
    }),
  'invoice_payment.paid': (k) => fc.record({ id: field(mostly(k, 'inpay_fz')), object: fc.constant('invoice_payment'), invoice: field(mostly(k, 'in_fz')), payment: field(fc.record({ type: fc.constant('payment_intent'), payment_intent: field(mostly(k, 'pi_fz')) })) }),
  'charge.refunded': (k) => fc.record({ id: field(mostly(k, 'ch_fz')), object: fc.constant('charge'), currency: field(currency), amount_refunded: field(amount), invoice: field(fc.oneof(fc.constant(null), mostly(k, 'in_fz'))), payment_intent: field(expandable(mostly(k, 'pi_fz'))) }),
  'charge.dispute.created': (k) => fc.record({ id: field(mostly(k % 4, 'dp_fz')), object: fc.constant('dispute'), payment_intent: field(expandable(mostly(k, 'pi_fz'))), status: field(fc.constantFrom('needs_response', 'warning_needs_response')) }),
  'charge.dispute.closed': (k) => fc.record({ id: field(mostly(k % 4, 'dp_fz')), object: fc.constant('dispute'), payment_intent: field(expandable(mostly(k, 'pi_fz'))), status: field(fc.constantFrom('won', 'lost', 'warning_closed')) }),
  'charge.succeeded': (k) => fc.record({ id: field(mostly(k, 'ch_fz')), object: fc.constant('charge') }),
};
objects['customer.updated'] = objects['customer.created']!;

interface ProviderPlan {
  /** The tenant whose receiver gets it. */
  to: 'a' | 'b';
  /** Signed with that tenant's secret, the other tenant's, or not at all. */
  signing: 'own' | 'other' | 'none';
  event: unknown;
}

const eventId = fc.oneof({ weight: 10, arbitrary: fc.nat({ max: 1_000_000 }).map((n) => `evt_fz${n}`) }, { weight: 2, arbitrary: pool('evt_again', 4) }, { weight: 1, arbitrary: hostileJson });

const providerPlan: fc.Arbitrary<ProviderPlan> = fc
  .tuple(fc.constantFrom(...Object.keys(objects)), fc.nat({ max: CUSTOMERS - 1 }))
  .chain(([type, k]) =>
    fc.record({
      to: fc.constantFrom('a' as const, 'a' as const, 'a' as const, 'a' as const, 'a' as const, 'b' as const),
      signing: fc.oneof({ weight: 30, arbitrary: fc.constant('own' as const) }, { weight: 1, arbitrary: fc.constantFrom('other' as const, 'none' as const) }),
      event: fc.record({
        id: eventId,
        object: fc.constant('event'),
        api_version: fc.constant('2025-03-31.basil'),
        created: field(seconds),
        livemode: fc.constant(true),
        type: fc.oneof({ weight: 30, arbitrary: fc.constant(type) }, { weight: 1, arbitrary: hostileJson }),
        data: fc.oneof({ weight: 30, arbitrary: objects[type]!(k).map((object) => ({ object })) }, { weight: 1, arbitrary: hostileJson }),
      }),
    }),
  );

/** One server, its two connected tenants, and what was sent to it. */
interface ProviderWorld {
  dialect: TestDialect;
  t: TestServer;
  a: Tenant;
  b: Tenant;
  secrets: { a: string; b: string };
}

async function providerWorld(dialect: TestDialect): Promise<ProviderWorld> {
  const t = await startTestServer({ rateLimitPerMinute: 0, trustProxy: ['127.0.0.1'], worker: false }, {}, dialect);
  const [a, b] = [await seedTenant(t, 'USD'), await seedTenant(t, 'JPY')];
  const secrets = { a: 'whsec_providerFuzzA12345', b: 'whsec_providerFuzzB12345' };
  await connectStripe(rawDb(t), a.programId, secrets.a, new Date().toISOString());
  await connectStripe(rawDb(t), b.programId, secrets.b, new Date().toISOString());
  return { dialect, t, a, b, secrets };
}

/** The plan's event with its references to the world's rows filled in; OMIT fields left out. */
function resolve(value: unknown, world: ProviderWorld, to: 'a' | 'b'): unknown {
  if (value instanceof Ref) {
    const own = world[to];
    const other = world[to === 'a' ? 'b' : 'a'];
    const pick = <T>(values: T[]) => values[value.n % values.length]!;
    if (value.kind === 'link') return pick(own.affiliates).link;
    if (value.kind === 'affiliateId') return pick(own.affiliates).id;
    if (value.kind === 'otherLink') return pick(other.affiliates).link;
    return pick(own.codes).code;
  }
  if (value instanceof RawJson) return value;
  if (Array.isArray(value)) return value.filter((v) => v !== OMIT).map((v) => resolve(v, world, to));
  const proto = value !== null && typeof value === 'object' ? Object.getPrototypeOf(value) : undefined;
  if (proto === Object.prototype || proto === null) {
    return Object.fromEntries(Object.entries(value as object).filter(([, v]) => v !== OMIT).map(([k, v]) => [k, resolve(v, world, to)]));
  }
  return value;
}

/** What one delivery came to, comparable between servers (the world's own ids replaced by names). */
interface Delivered {
  status: number;
  text: string;
  payload: string;
  outcome: string;
}

// eslint-disable-next-line no-control-regex -- the API's refused characters: C0 but tab, line feed, carriage return; and DEL
const REFUSED = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
// eslint-disable-next-line no-control-regex -- ids hold no control character at all, tab and line breaks included
const ID_REFUSED = /[\u0000-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Every row the receiver may have written for the program keeps the API's rules: '' when it does, else what breaks them. */
async function storedRuleBreaks(db: Kysely<Database>, programId: string): Promise<string> {
  const breaks: string[] = [];
  for (const r of await db.selectFrom('referrals').select(['name', 'email', 'referred_user_external_id']).where('program_id', '=', programId).execute()) {
    const length = Array.from(r.name).length;
    if (REFUSED.test(r.name) || length === 0 || length > 200 || r.name.trim() !== r.name) breaks.push(`referral name ${JSON.stringify(r.name)}`);
    if (!EMAIL.test(r.email) || r.email.length > 254 || REFUSED.test(r.email)) breaks.push(`referral e-mail ${JSON.stringify(r.email)}`);
    if (ID_REFUSED.test(r.referred_user_external_id) || r.referred_user_external_id.length > 200) breaks.push(`referral external id ${JSON.stringify(r.referred_user_external_id)}`);
  }
  for (const s of await db.selectFrom('sales').select(['external_invoice_id']).where('program_id', '=', programId).execute()) {
    if (ID_REFUSED.test(s.external_invoice_id) || s.external_invoice_id.length > 200) breaks.push(`sale invoice ${JSON.stringify(s.external_invoice_id)}`);
  }
  for (const e of await db.selectFrom('billing_events').select(['id', 'type', 'reason', 'customer_id', 'waiting']).where('program_id', '=', programId).execute()) {
    for (const [column, value] of Object.entries(e)) {
      if (typeof value === 'string' && (REFUSED.test(value) || ((column === 'id' || column === 'type' || column === 'customer_id') && (ID_REFUSED.test(value) || value.length > 200)))) breaks.push(`billing event ${column} ${JSON.stringify(value).slice(0, 200)}`);
    }
    if (e.reason !== null && e.reason.length > 2000) breaks.push(`billing event reason of ${e.reason.length} characters`);
  }
  for (const d of await db.selectFrom('billing_disputes').select(['id', 'status']).where('program_id', '=', programId).execute()) {
    if (ID_REFUSED.test(d.id) || ID_REFUSED.test(d.status)) breaks.push(`dispute ${JSON.stringify(d)}`);
  }
  return breaks.join('\n');
}

/** The billing tables of the programs, as JSON (the fuzzer's snapshot does not hold them). */
async function billingRows(db: Kysely<Database>, programIds: string[]): Promise<string> {
  const rows = await Promise.all(
    ['billing_events', 'billing_payments', 'billing_disputes', 'commission_entries'].map((table) => sql`select * from ${sql.table(table)} where program_id in (${sql.join(programIds)}) order by 1, 2`.execute(db)),
  );
  return JSON.stringify(rows.map((r) => r.rows));
}

async function deliver(world: ProviderWorld, plan: ProviderPlan): Promise<Delivered> {
  const tenant = world[plan.to];
  const payload = serialiseJson(resolve(plan.event, world, plan.to));
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-forwarded-for': nextAddress() };
  const secret = plan.signing === 'own' ? world.secrets[plan.to] : plan.signing === 'other' ? world.secrets[plan.to === 'a' ? 'b' : 'a'] : null;
  if (secret !== null) headers['stripe-signature'] = stripe.webhooks.generateTestHeaderString({ payload, secret });
  const response = await fetch(`${world.t.url}/api/billing/stripe/${tenant.programId}`, { method: 'POST', headers, body: payload });
  const text = await response.text();
  let outcome = '';
  if (response.status === 200) {
    const id = (JSON.parse(payload) as { id: string }).id;
    const rows = await rawDb(world.t).selectFrom('billing_events').selectAll().where('program_id', '=', tenant.programId).where('id', '=', id).execute();
    assert.equal(rows.length, 1, `a 200 lists the event once: ${payload.slice(0, 500)}`);
    const row = rows[0]!;
    outcome = JSON.stringify([JSON.parse(text).duplicate, row.outcome, normalise(row.reason ?? '', world), row.referral_id !== null, row.sale_id !== null]);
  }
  return { status: response.status, text, payload, outcome };
}

/** A reason with the world's own ids and link strings replaced by what they are. */
function normalise(reason: string, world: ProviderWorld): string {
  let text = reason;
  for (const key of ['a', 'b'] as const) {
    const tenant = world[key];
    const names: [string, string][] = [[tenant.programId, `<${key} program>`], ...tenant.affiliates.flatMap((a, i): [string, string][] => [[a.id, `<${key} affiliate ${i}>`], [a.link, `<${key} link ${i}>`]]), ...tenant.codes.map((c, i): [string, string] => [c.code, `<${key} code ${i}>`])];
    for (const [value, placeholder] of names) if (value) text = text.split(value).join(placeholder);
  }
  // Names and e-mails the seeding made unique (fixtures.ts unique()): "Ada Last7x19003".
  return text.replace(/[A-Za-z-]+\d+x\d+/g, '<unique>');
}

const LIST_PATHS = ['/referrals?limit=1000', '/sales?limit=1000', '/billing-events?limit=1000', '/commissions?limit=1000', '/affiliates?limit=1000'];

/** The lists a merchant reads, for both tenants: each must answer 200. */
async function listAnswers(url: string, world: ProviderWorld): Promise<Map<string, string>> {
  const answers = new Map<string, string>();
  for (const key of ['a', 'b'] as const) {
    const tenant = world[key];
    const client = apiClient(url, tenant.client.token, tenant.programId);
    for (const path of LIST_PATHS) {
      const res = await client.get(path);
      assert.equal(res.status, 200, `GET ${path} on ${world.dialect}: ${JSON.stringify(res.body).slice(0, 500)}`);
      // receivedAt is the moment each server received it: not compared between databases.
      answers.set(`${key} ${path}`, JSON.stringify(res.body, (k, v) => (k === 'receivedAt' ? undefined : v)));
    }
  }
  return answers;
}

async function fuzzProviders(worlds: ProviderWorld[], seed: number, runs: number): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  const snapshots = new Map<ProviderWorld, { data: Snapshot; billing: string }>();
  const snapshot = async (world: ProviderWorld) => ({ data: await takeSnapshot(rawDb(world.t), [world.a.programId, world.b.programId]), billing: await billingRows(rawDb(world.t), [world.a.programId, world.b.programId]) });
  let count = 0;
  const property = fc.asyncProperty(providerPlan, async (plan) => {
    count++;
    const outcomes: string[] = [];
    for (const world of worlds) {
      const before = snapshots.get(world) ?? (await snapshot(world));
      const sent = await deliver(world, plan);
      const what = `${world.dialect}: POST /api/billing/stripe/<${plan.to}> (signed: ${plan.signing}) ${sent.payload.slice(0, 1500)}\nanswer: ${sent.status} ${sent.text.slice(0, 800)}\n(seed ${seed}; repeat with FUZZ_SEED=${seed} FUZZ_PROVIDER_RUNS=${runs})`;
      statuses.set(sent.status, (statuses.get(sent.status) ?? 0) + (world === worlds[0] ? 1 : 0));
      assert.ok(sent.status < 500, `a ${sent.status} answer\n${what}`);
      const after = await snapshot(world);
      const own = world[plan.to].programId;
      const other = world[plan.to === 'a' ? 'b' : 'a'].programId;
      if (sent.status >= 400) {
        const changed = snapshotDifference(before.data, after.data, [own, other], true);
        assert.equal(changed, '', `a ${sent.status} answer changed data\n${what}`);
        assert.equal(after.billing, before.billing, `a ${sent.status} answer changed billing rows\n${what}`);
      } else {
        assert.equal(snapshotDifference(before.data, after.data, [other], false), '', `a 200 changed another program's data\n${what}`);
        const breaks = await storedRuleBreaks(rawDb(world.t), own);
        assert.equal(breaks, '', `stored outside the API's rules\n${what}`);
      }
      snapshots.set(world, after);
      outcomes.push(`${sent.status} ${sent.outcome}`);
      if (count % 25 === 0) {
        await listAnswers(world.t.url, world);
        for (const tenant of [world.a, world.b]) await assertLedgerMatchesCounters(rawDb(world.t), tenant.programId);
      }
    }
    if (worlds.length > 1) assert.deepEqual(outcomes.slice(1).map(() => outcomes[0]), outcomes.slice(1), `the databases disagree (${worlds.map((w) => w.dialect).join(', ')}) on ${serialiseJson(plan.event).slice(0, 1500)}\n(seed ${seed})`);
  });
  await fc.assert(property, { seed, numRuns: runs, endOnFailure: true, includeErrorInReport: true });
  return statuses;
}

/** Copies the SQLite world's database into a fresh PostgreSQL one with migrate-data's code: the API answers the same from it. */
async function copyToPostgres(world: ProviderWorld): Promise<void> {
  const answers = await listAnswers(world.t.url, world);
  await world.t.server.close();
  const target = await createTestDatabase('postgres');
  try {
    const from = openDatabase({ databaseUrl: world.t.database.url });
    const to = openDatabase({ databaseUrl: target.url });
    try {
      await copyData(from, to);
    } finally {
      await Promise.all([from.close(), to.close()]);
    }
    const server = await startServer(loadConfig({}, { port: 0, host: '127.0.0.1', databaseUrl: target.url, logLevel: 'silent', siteUrl: 'http://tandem.test', worker: false }));
    try {
      const copied = await listAnswers(server.url, world);
      for (const [key, answer] of answers) assert.equal(copied.get(key), answer, `GET ${key} differs after the copy to PostgreSQL`);
    } finally {
      await server.close();
    }
  } finally {
    await target.drop();
  }
}

describe(`fuzzing: signed provider payloads (seed ${SEED}, ${RUNS} events)`, () => {
  // The dialect under test; in the PostgreSQL leg a SQLite server beside it gets the same events.
  const dialects: TestDialect[] = testDialect === 'postgres' ? ['postgres', 'sqlite'] : ['sqlite'];
  const worlds: ProviderWorld[] = [];
  let sqliteClosed = false;

  before(async () => {
    for (const dialect of dialects) worlds.push(await providerWorld(dialect));
  });

  after(async () => {
    for (const world of worlds) {
      if (world.dialect === 'sqlite' && sqliteClosed) await world.t.database.drop();
      else await world.t.close();
    }
  });

  it(`Stripe events: never a 5xx; a 4xx changes nothing; a 200 lists the event once, changes no other program, and stores only what the API would${dialects.length > 1 ? '; both databases give every event the same outcome' : ''}`, async () => {
    const statuses = await fuzzProviders(worlds, SEED, RUNS);
    const outcomes = await rawDb(worlds[0]!.t).selectFrom('billing_events').select(['outcome', (eb) => eb.fn.countAll().as('n')]).groupBy('outcome').orderBy('outcome').execute();
    console.log(`fuzz providers on ${dialects.join(' + ')}: seed ${SEED}, ${RUNS} events, statuses ${[...statuses].map(([s, n]) => `${s}×${n}`).join(' ')}, outcomes ${outcomes.map((o) => `${o.outcome}×${o.n}`).join(' ')}`);
    for (const world of worlds) {
      await listAnswers(world.t.url, world);
      for (const tenant of [world.a, world.b]) await assertLedgerMatchesCounters(rawDb(world.t), tenant.programId);
    }
    // The generator reaches the work: most events are handled, some refused.
    const ok = statuses.get(200) ?? 0;
    assert.ok(ok >= RUNS * 0.5 && ok < RUNS, `${ok} of ${RUNS} events answered 200`);
    if (process.env.FUZZ_VERBOSE) {
      const reasons = await rawDb(worlds[0]!.t).selectFrom('billing_events').select(['type', 'outcome', 'reason']).execute();
      const counts = new Map<string, number>();
      for (const r of reasons) counts.set(`${r.type.slice(0, 40)} ${r.outcome} ${(r.reason ?? '').slice(0, 90)}`, (counts.get(`${r.type.slice(0, 40)} ${r.outcome} ${(r.reason ?? '').slice(0, 90)}`) ?? 0) + 1);
      for (const [line, n] of [...counts].sort()) console.log(`  ${n}× ${line}`);
    }
    const recorded = Number(outcomes.find((o) => o.outcome === 'recorded')?.n ?? 0);
    assert.ok(recorded >= RUNS * 0.05, `only ${recorded} events recorded something`);
  });

  it('what the SQLite run stored copies to PostgreSQL (tandem migrate-data), and the API answers the same', { skip: testDialect !== 'postgres' && 'runs in the PostgreSQL leg' }, async () => {
    const world = worlds.find((w) => w.dialect === 'sqlite')!;
    sqliteClosed = true;
    await copyToPostgres(world);
  });
});
