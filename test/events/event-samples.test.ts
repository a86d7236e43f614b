// docs/events.md against real events: every event type Tandem emits has a sample there whose
// envelope and `data` have exactly the keys and JSON value types of a real event (recursively;
// null-or-value only where the doc says the field may be null, and only where the response
// schema allows null), and a real delivery verifies with the signature algorithm the doc
// describes. A sample that drifts from what Tandem sends fails here.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { programContext, startTestServer, type ApiClient, type TestServer } from '../helpers/test-server.ts';
import { startWebhookReceiver, type ReceivedDelivery, type WebhookReceiver } from '../helpers/webhook-receiver.ts';
import { EVENT_TYPES, SUBSCRIBABLE_EVENT_TYPES } from '../../src/modules/events/outbox.ts';
import { updateAffiliate } from '../../src/modules/affiliates/affiliate.service.ts';
import { sendTestEvent } from '../../src/modules/webhooks/webhook.service.ts';
import { AffiliateSchema } from '../../src/modules/affiliates/affiliate.schema.ts';
import { AffiliateLinkSchema } from '../../src/modules/affiliates/link.schema.ts';
import { ReferralSchema } from '../../src/modules/referrals/referral.schema.ts';
import { SaleSchema } from '../../src/modules/sales/sale.schema.ts';
import { CouponSchema, PromotionalCodeSchema } from '../../src/modules/coupons/promotional-code.schema.ts';
import { PayoutSchema } from '../../src/modules/payouts/payout.schema.ts';
import { updateProgramSettings } from '../../src/modules/programs/program.service.ts';

const DOC_PATH = new URL('../../docs/events.md', import.meta.url);
const SRC_DIR = new URL('../../src/', import.meta.url);

/** The event types Tandem emits today; this test makes each of them happen. */
const EMITTED = [
  'affiliate.created',
  'affiliate.updated',
  'affiliate.deleted',
  'referral.created',
  'referral.updated',
  'referral.deleted',
  'sale.created',
  'sale.updated',
  'sale.refunded',
  'sale.deleted',
  'link.created',
  'link.updated',
  'link.deleted',
  'coupon.created',
  'coupon.updated',
  'coupon.deleted',
  'promotional_code.created',
  'promotional_code.updated',
  'promotional_code.deleted',
  'promotional_code.redeemed',
  'payout.created',
  'payout.paid',
  'payout.failed',
  'webhook.test',
] as const;

/** The response schema of each event's `data`, by the type's resource (webhook.test has none). */
const DATA_SCHEMAS: Record<string, object> = {
  affiliate: AffiliateSchema,
  link: AffiliateLinkSchema,
  referral: ReferralSchema,
  sale: SaleSchema,
  coupon: CouponSchema,
  promotional_code: PromotionalCodeSchema,
  payout: PayoutSchema,
};

interface Envelope {
  id: string;
  type: string;
  timestamp: string;
  programId: string;
  sequence: number;
  data: any;
}

// ---- reading the doc ------------------------------------------------------------------------

interface DocSample {
  type: string;
  envelope: Envelope;
  /** Paths in `data` the doc says may be null (`coupon.redeemBy`, `promotionalCodes[].expiresAt`). */
  nullable: Set<string>;
}

interface ParsedDoc {
  text: string;
  jsonBlocks: { line: number; source: string }[];
  samples: Map<string, DocSample>;
  /** Blocks marked `<!-- shape: NAME -->`: documented API answers, compared like samples. */
  shapes: Map<string, unknown>;
  markerCount: number;
}

const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;
const PATH_TOKEN = /^[a-z][A-Za-z]*(\[\])?(\.[a-z][A-Za-z]*(\[\])?)*$/;

/** The "**May be `null`:** `a`, `b.c`" paragraph of the `###` section holding `index`. */
function nullableFieldsAt(text: string, index: number): Set<string> {
  const start = text.lastIndexOf('\n### ', index);
  const nextHeading = /\n#{1,3} /g;
  nextHeading.lastIndex = index;
  const end = nextHeading.exec(text)?.index ?? text.length;
  const section = text.slice(start, end);
  const paragraphs = [...section.matchAll(/\*\*May be `null`:\*\*([\s\S]*?)(?:\n\n|$)/g)];
  assert.ok(paragraphs.length <= 1, `one "May be null" paragraph per section (line ${lineOf(text, start)})`);
  if (paragraphs.length === 0) return new Set();
  const tokens = [...paragraphs[0]![1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
  return new Set(tokens.filter((t) => t !== 'null' && PATH_TOKEN.test(t)));
}

function parseDoc(): ParsedDoc {
  const text = readFileSync(DOC_PATH, 'utf8');
  const jsonBlocks = [...text.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map((m) => ({ line: lineOf(text, m.index!), source: m[1]! }));
  const samples = new Map<string, DocSample>();
  for (const m of text.matchAll(/<!-- sample: ([a-z_.]+) -->\n```json\n([\s\S]*?)^```$/gm)) {
    const type = m[1]!;
    assert.ok(!samples.has(type), `docs/events.md has two samples of ${type}`);
    samples.set(type, { type, envelope: JSON.parse(m[2]!) as Envelope, nullable: nullableFieldsAt(text, m.index!) });
  }
  const shapes = new Map<string, unknown>();
  for (const m of text.matchAll(/<!-- shape: ([^>]+?) -->\n```json\n([\s\S]*?)^```$/gm)) shapes.set(m[1]!, JSON.parse(m[2]!));
  const markerCount = [...text.matchAll(/<!-- (sample|shape): /g)].length;
  return { text, jsonBlocks, samples, shapes, markerCount };
}

// ---- comparing shapes -----------------------------------------------------------------------

type JsonType = 'null' | 'array' | 'object' | 'string' | 'number' | 'boolean';
function jsonType(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value as JsonType;
}

const join_ = (path: string, key: string) => (path === '' ? key : `${path}.${key}`);

/**
 * Every difference between a documented value and a real one: keys missing or extra at any
 * depth, and values of another JSON type. null against a value is a difference unless the path
 * is in `nullable`. Array elements are compared with the other side's first element.
 */
function shapeProblems(doc: unknown, real: unknown, nullable: Set<string> = new Set(), path = ''): string[] {
  const [td, tr] = [jsonType(doc), jsonType(real)];
  const where = path === '' ? '(top level)' : path;
  if (td !== tr) {
    if ((td === 'null' || tr === 'null') && nullable.has(path)) return [];
    const why = td === 'null' || tr === 'null' ? ' (document the field under "May be `null`" if it can be null)' : '';
    return [`${where}: the doc has ${td}, Tandem sends ${tr}${why}`];
  }
  if (td === 'object') {
    const d = doc as Record<string, unknown>;
    const r = real as Record<string, unknown>;
    const problems: string[] = [];
    for (const key of Object.keys(r)) if (!(key in d)) problems.push(`${join_(path, key)}: sent by Tandem, missing from the doc`);
    for (const key of Object.keys(d)) if (!(key in r)) problems.push(`${join_(path, key)}: in the doc, not sent by Tandem`);
    for (const key of Object.keys(d)) if (key in r) problems.push(...shapeProblems(d[key], r[key], nullable, join_(path, key)));
    return problems;
  }
  if (td === 'array') {
    const d = doc as unknown[];
    const r = real as unknown[];
    if (d.length === 0 || r.length === 0) return [];
    return [...d.map((x) => shapeProblems(x, r[0], nullable, `${path}[]`)), ...r.map((x) => shapeProblems(d[0], x, nullable, `${path}[]`))].flat();
  }
  return [];
}

/** The JSON schema at a path of `data` (`coupon.redeemBy`, `promotionalCodes[].expiresAt`). */
function schemaAt(schema: any, path: string): any {
  let at = schema;
  for (const part of path.split('.')) {
    const name = part.replace(/\[\]$/, '');
    at = at?.properties?.[name];
    if (part.endsWith('[]')) at = at?.items;
  }
  return at;
}

const schemaAllowsNull = (schema: any) => schema?.type === 'null' || (Array.isArray(schema?.type) && schema.type.includes('null'));

/** The paths of `value` whose schema allows null. */
function nullablePathsIn(schema: any, value: unknown, path = '', out = new Set<string>()): Set<string> {
  if (path !== '' && schemaAllowsNull(schema)) out.add(path);
  if (Array.isArray(value)) for (const item of value) nullablePathsIn(schema?.items, item, `${path}[]`, out);
  else if (value !== null && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) nullablePathsIn(schema?.properties?.[key], v, join_(path, key), out);
  }
  return out;
}

// ---- signatures, as docs/events.md describes them ---------------------------------------------

/**
 * The doc's algorithm: HMAC-SHA256 keyed with the base64-decoded part of the secret after
 * `whsec_`, over `{webhook-id}.{webhook-timestamp}.{raw body}`, base64, compared in constant
 * time with each space-separated `v1,` entry; the timestamp within 5 minutes of now.
 */
function verifyAsDocumented(secret: string, headers: Record<string, string | undefined>, body: string, nowSeconds: number | null = Date.now() / 1000): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (!id || !timestamp || !signatures || !secret.startsWith('whsec_')) return false;
  if (nowSeconds !== null && (!/^\d+$/.test(timestamp) || Math.abs(nowSeconds - Number(timestamp)) > 5 * 60)) return false;
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(' ').some((entry) => {
    const [version, signature] = entry.split(',');
    if (version !== 'v1' || !signature) return false;
    const given = Buffer.from(signature, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

// ---- the test -------------------------------------------------------------------------------

describe('docs/events.md samples and signatures against real events', () => {
  let t: TestServer;
  let api: ApiClient;
  let receiver: WebhookReceiver;
  let hook: { id: string; url: string; events: string[]; secret: string; createdAt: string };
  let doc: ParsedDoc;
  let events: Envelope[];
  let pollText: string;
  let testEventId: string;
  const real = new Map<string, Envelope>();

  before(async () => {
    doc = parseDoc();
    t = await startTestServer({ webhookAllowPrivateUrls: true, webhookRetrySchedule: [200, 200, 200, 200] });
    api = await t.createTenant({ commissionRate: 20, name: 'Acme Analytics' });
    receiver = await startWebhookReceiver('/tandem');
    // The first delivery of the test event fails once, to see a retry.
    let failedTestEvent = false;
    receiver.respondWith((d) => {
      if (d.json?.type === 'webhook.test' && !failedTestEvent) {
        failedTestEvent = true;
        return 500;
      }
      return 200;
    });
    const subscribed = await api.post('/webhooks', { url: receiver.url, events: ['*'] });
    assert.equal(subscribed.status, 201, JSON.stringify(subscribed.body));
    hook = subscribed.body;

    const created = async (res: { status: number; body: any }, status = 201) => {
      assert.equal(res.status, status, JSON.stringify(res.body));
      return res.body;
    };
    const tag = `${process.pid}-${Date.now()}`;
    // No hold, so the sales below can be paid out at once.
    await updateProgramSettings(t.server.database.db, api.programId, { holdDays: 0 });
    const affiliate = await created(await api.post('/affiliates', { firstName: 'Jane', lastName: 'Doe', email: `jane-${tag}@example.com`, affiliateLink: `jane-${tag}` }));
    const db = t.server.database.db;
    await updateAffiliate(db, await programContext(t, api.programId), affiliate.id, { paymentMethod: 'paypal', payoutEmail: `payouts-${tag}@example.com` });
    const link = await created(await api.post('/links', { affiliateId: affiliate.id, link: `blog-${tag}` }));
    await created(await api.put('/links', { id: link.id, newLink: `newsletter-${tag}` }), 200);
    const customer = `carl-${tag}@example.org`;
    await created(await api.post('/referrals', { name: 'Carl Customer', email: customer, referredUserExternalId: `cus_${tag}`, affiliateId: affiliate.link, plan: 'pro' }));
    const coupon = await created(await api.post('/coupons', { name: '20% off the first month', couponType: 'PERCENTAGE', percentOff: 20, duration: 'once' }));
    const code = await created(await api.post('/promotional-codes', { couponId: coupon.id, code: `JANE${process.pid}`, affiliateId: affiliate.id }));
    await created(await api.put('/promotional-codes', { promotionalCodeId: code.id, maxRedemptions: 100 }), 200);
    const sale = await created(await api.post('/sales', { email: customer, promoCode: code.code, totalEarned: 49.99, externalId: `ch_${tag}`, externalInvoiceId: `in_${tag}` }));
    // A sale edited and partly refunded, another voided; a referral edited and deleted; a spare affiliate deleted.
    await created(await api.put('/sales', { saleId: sale.id, name: 'Carl C. Customer' }), 200);
    await created(await api.post('/sales/refund', { saleId: sale.id, amount: 10 }));
    const voided = await created(await api.post('/sales', { email: customer, totalEarned: 19, externalInvoiceId: `in2_${tag}` }));
    await created(await api.request('DELETE', '/sales', { id: voided.id }), 200);
    const doubt = await created(await api.post('/referrals', { name: 'Dana Doubt', email: `dana-${tag}@example.org`, referredUserExternalId: `cus2_${tag}`, affiliateId: affiliate.id }));
    await created(await api.put('/referrals', { referralId: doubt.id, plan: 'team', status: 'INACTIVE' }), 200);
    await created(await api.request('DELETE', '/referrals', { id: doubt.id }), 200);
    const spareAffiliate = await created(await api.post('/affiliates', { firstName: 'Sam', lastName: 'Spare', email: `sam-${tag}@example.net` }));
    await created(await api.request('DELETE', '/affiliates', { id: spareAffiliate.id }), 200);
    // The deletes and coupon.updated: a spare link, then a coupon updated and deleted with its
    // codes after one of them was deleted on its own.
    const spare = await created(await api.post('/links', { affiliateId: affiliate.id, link: `spare-${tag}` }));
    await created(await api.request('DELETE', `/links?id=${spare.id}`), 200);
    const summer = await created(await api.post('/coupons', { name: 'Summer', couponType: 'FLAT', amountOff: 10 }));
    const once = await created(await api.post('/promotional-codes', { couponId: summer.id, code: `ONCE${process.pid}` }));
    await created(await api.request('DELETE', '/promotional-codes', { id: once.id }), 200);
    await created(await api.post('/promotional-codes', { couponId: summer.id, code: `SUMMER${process.pid}`, affiliateId: affiliate.id }));
    await created(await api.put('/coupons', { id: summer.id, name: 'Summer sale', redeemBy: '2030-09-01T00:00:00Z' }), 200);
    await created(await api.request('DELETE', '/coupons', { id: summer.id }), 200);
    // A payout paid, and one that failed.
    const [paidOut] = await created(await api.post('/payouts', {}));
    await created(await api.put('/payouts', { payoutId: paidOut.id, status: 'paid', method: 'paypal', reference: 'PP-1' }), 200);
    await created(await api.post('/sales', { email: customer, totalEarned: 5, externalInvoiceId: `in3_${tag}` }));
    const [bounced] = await created(await api.post('/payouts', {}));
    await created(await api.put('/payouts', { payoutId: bounced.id, status: 'failed', reference: 'returned' }), 200);
    testEventId = await sendTestEvent(db, await programContext(t, api.programId), hook.id);

    const polled = await fetch(`${t.url}/api/v1/events?limit=1000`, { headers: { authorization: `Bearer ${api.token}` } });
    assert.equal(polled.status, 200);
    pollText = await polled.text();
    events = JSON.parse(pollText) as Envelope[];
    for (const e of events) if (!real.has(e.type)) real.set(e.type, e);
  });
  after(async () => {
    await t?.close();
    await receiver?.close();
  });

  it('every ```json block of the doc is valid JSON, and every marked block is a sample or shape', () => {
    assert.ok(doc.jsonBlocks.length >= EMITTED.length);
    for (const block of doc.jsonBlocks) {
      assert.doesNotThrow(() => JSON.parse(block.source), `docs/events.md line ${block.line}: not valid JSON`);
    }
    assert.equal(doc.samples.size + doc.shapes.size, doc.markerCount, 'every <!-- sample: … --> or <!-- shape: … --> marker is directly followed by a ```json block');
    for (const [type, sample] of doc.samples) {
      assert.ok((EVENT_TYPES as readonly string[]).includes(type), `a sample of an unknown event type: ${type}`);
      assert.equal(sample.envelope.type, type, `the sample marked ${type} has "type": "${sample.envelope.type}"`);
      assert.match(sample.envelope.id, /^evt_[A-Za-z0-9_-]{24}$/, `${type}: id`);
      assert.ok(!Number.isNaN(Date.parse(sample.envelope.timestamp)), `${type}: timestamp`);
    }
  });

  it('the event types emitted in src/ are the ones this test makes happen, and each has a sample', () => {
    const emittedInSource = new Set<string>();
    for (const file of readdirSync(SRC_DIR, { recursive: true }) as string[]) {
      if (!file.endsWith('.ts')) continue;
      const source = readFileSync(join(SRC_DIR.pathname, file), 'utf8');
      for (const m of source.matchAll(/recordEvents?\(\s*\w+\s*,[^,]+,\s*'([a-z_.]+)'/g)) emittedInSource.add(m[1]!);
      // The outbox's other doors: an event with its id and JSON given, and one inside a one-statement write.
      for (const m of source.matchAll(/recordEventJson\(\s*\w+\s*,[^,]+,[^,]+,\s*'([a-z_.]+)'/g)) emittedInSource.add(m[1]!);
      for (const m of source.matchAll(/eventInsertFrom\(\s*'\w+'\s*,\s*\{[^}]*?type:\s*'([a-z_.]+)'/g)) emittedInSource.add(m[1]!);
    }
    assert.deepEqual(
      [...emittedInSource].sort(),
      [...EMITTED].sort(),
      'a new event type is emitted: add a sample to docs/events.md, list it there as emitted, and make it happen in this test',
    );
    for (const type of EMITTED) {
      assert.ok(real.has(type), `this test did not make a ${type} event happen`);
      assert.ok(doc.samples.has(type), `docs/events.md has no sample of ${type} (mark it <!-- sample: ${type} -->)`);
    }
  });

  it('offers only types that are emitted: the dashboard form and POST /webhooks list SUBSCRIBABLE_EVENT_TYPES', () => {
    const never = SUBSCRIBABLE_EVENT_TYPES.filter((type) => !(EMITTED as readonly string[]).includes(type));
    assert.deepEqual(never, [], 'a type nothing sends is offered to subscribers: drop it from the form (the API keeps accepting contract types)');
  });

  it('names every other event type of the contract as reserved, and no emitted one', () => {
    const reserved = /^Reserved, emitted (?:when|once)[\s\S]*?(?:\n\n)/m.exec(doc.text)?.[0] ?? '';
    const anyReserved = EVENT_TYPES.some((type) => !(EMITTED as readonly string[]).includes(type));
    assert.equal(reserved !== '', anyReserved, 'a "Reserved, emitted once …" paragraph exactly when some type is not emitted yet');
    for (const type of EVENT_TYPES) {
      const named = reserved.includes(`\`${type}\``);
      if ((EMITTED as readonly string[]).includes(type)) assert.ok(!named, `${type} is emitted, not reserved`);
      else assert.ok(named, `${type} is missing from the reserved types`);
    }
  });

  it("each sample's envelope has exactly the real envelope's keys and value types", () => {
    const problems: string[] = [];
    for (const type of EMITTED) {
      const [sample, event] = [doc.samples.get(type), real.get(type)];
      if (!sample || !event) continue; // reported by the test above
      const { data: _sd, ...sampleHead } = sample.envelope;
      const { data: _rd, ...realHead } = event;
      assert.deepEqual(Object.keys(realHead).sort(), ['id', 'livemode', 'programId', 'sequence', 'timestamp', 'type']);
      problems.push(...shapeProblems(sampleHead, realHead).map((p) => `${type} envelope: ${p}`));
      if (!('data' in sample.envelope)) problems.push(`${type} envelope: data: missing from the doc`);
    }
    assert.deepEqual(problems, []);
  });

  it("each sample's data has the real keys and JSON value types, recursively; null only where documented", () => {
    const problems: string[] = [];
    for (const type of EMITTED) {
      const [sample, event] = [doc.samples.get(type), real.get(type)];
      if (!sample || !event) continue; // reported above
      problems.push(...shapeProblems(sample.envelope.data, event.data, sample.nullable).map((p) => `${type} data: ${p}`));
    }
    assert.deepEqual(problems, []);
  });

  it('documents as "May be null" exactly the fields the response schema lets be null', () => {
    const problems: string[] = [];
    for (const type of EMITTED) {
      const sample = doc.samples.get(type);
      if (!sample) continue; // reported above
      const schema = DATA_SCHEMAS[type.slice(0, type.lastIndexOf('.'))];
      if (schema === undefined) {
        if (sample.nullable.size > 0) problems.push(`${type}: documents nullable fields, but its data has no response schema`);
        continue;
      }
      const mayBeNull = nullablePathsIn(schema, sample.envelope.data);
      for (const path of sample.nullable) {
        if (!schemaAllowsNull(schemaAt(schema, path))) problems.push(`${type}: "${path}" is documented as nullable but the schema does not allow null there`);
      }
      for (const path of mayBeNull) if (!sample.nullable.has(path)) problems.push(`${type}: "${path}" can be null but is not listed under "May be \`null\`"`);
    }
    assert.deepEqual(problems, []);
  });

  it('the comparison catches drift: a renamed key, a changed type, an undocumented null', () => {
    // Mutated copies of real payloads stand for a drifted doc (independent of the doc's state).
    const realData = real.get('sale.created')!.data;
    const sample = structuredClone(realData) as Record<string, unknown>;
    assert.deepEqual(shapeProblems(sample, realData), [], 'a payload matches itself');
    const { totalEarned, ...rest } = sample;
    assert.ok(shapeProblems({ ...rest, totalEarnings: totalEarned }, realData).length === 2, 'renamed key: one missing, one extra');
    assert.ok(shapeProblems({ ...sample, totalEarned: '49.99' }, realData).length === 1, 'number documented as string');
    assert.ok(shapeProblems({ ...sample, externalId: null }, realData).length === 1, 'undocumented null');
    assert.deepEqual(shapeProblems({ ...sample, externalId: null }, realData, new Set(['externalId'])), [], 'documented null');
    const link = real.get('link.created')!.data;
    const badUrls = { ...link, fullURLs: [{ baseUrl: 'https://acme.com', fullURL: 'https://acme.com/?via=x' }] };
    assert.ok(shapeProblems(badUrls, real.get('link.created')!.data).length > 0, 'a key inside an array element');
  });

  it('the documented subscription answers have the keys and types of the real ones', async () => {
    const listed = await api.get('/webhooks');
    assert.equal(listed.status, 200);
    const checks: [string, unknown][] = [
      ['POST /webhooks', hook],
      ['GET /webhooks', listed.body],
    ];
    for (const [name, answer] of checks) {
      assert.ok(doc.shapes.has(name), `docs/events.md marks the ${name} answer <!-- shape: ${name} -->`);
      assert.deepEqual(shapeProblems(doc.shapes.get(name), answer), [], name);
    }
  });

  it('the signature test vector of the doc verifies with the documented algorithm and matches the webhook.test sample', () => {
    const at = doc.text.indexOf('<!-- signature test vector -->');
    assert.ok(at >= 0, 'a signature test vector');
    const block = /```text\n([\s\S]*?)^```$/m.exec(doc.text.slice(at))![1]!;
    const vector = Object.fromEntries(block.trim().split('\n').map((line) => {
      const m = /^([a-z-]+):\s+(.*)$/.exec(line)!;
      return [m[1]!, m[2]!];
    }));
    assert.ok(verifyAsDocumented(vector.secret!, vector, vector.body!, null), 'the vector verifies');
    assert.ok(!verifyAsDocumented(vector.secret!, vector, vector.body!.replace('1053', '1054'), null), 'a changed body does not');
    assert.equal(vector['webhook-id'], doc.samples.get('webhook.test')!.envelope.id);
    assert.equal(vector.body, JSON.stringify(doc.samples.get('webhook.test')!.envelope), 'the vector body is the webhook.test sample, as sent');
  });

  it('real deliveries verify with the documented algorithm and with standardwebhooks, and are the bytes polling lists', async () => {
    const delivered = (r: ReceivedDelivery[]) => events.every((e) => r.some((d) => d.headers['webhook-id'] === e.id));
    await receiver.waitFor(delivered, 10_000, 'a delivery of every event');
    const verifier = new Webhook(hook.secret);
    for (const d of receiver.received) {
      const what = `${d.json?.type} ${d.headers['webhook-id']}`;
      assert.ok(verifyAsDocumented(hook.secret, d.headers, d.body), `${what}: verifies as documented`);
      assert.deepEqual(verifier.verify(d.body, d.headers), d.json, `${what}: verifies with standardwebhooks`);
      assert.equal(d.headers['webhook-id'], d.json.id, `${what}: webhook-id is the event id`);
      assert.equal(d.headers['content-type'], 'application/json');
      assert.equal(d.headers['user-agent'], 'Tandem-Webhooks/1');
      assert.ok(pollText.includes(d.body), `${what}: the delivered body is byte for byte the polled envelope`);

      assert.ok(!verifyAsDocumented(hook.secret, d.headers, d.body.replace('"sequence":', '"sequence": ')), `${what}: re-serialised body fails`);
      const otherSecret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
      assert.ok(!verifyAsDocumented(otherSecret, d.headers, d.body), `${what}: another secret fails`);
      assert.ok(!verifyAsDocumented(hook.secret, d.headers, d.body, Number(d.headers['webhook-timestamp']) + 301), `${what}: more than 5 minutes late fails`);
      assert.ok(!verifyAsDocumented(hook.secret, d.headers, d.body, Number(d.headers['webhook-timestamp']) - 301), `${what}: more than 5 minutes early fails`);
      assert.ok(verifyAsDocumented(hook.secret, d.headers, d.body, Number(d.headers['webhook-timestamp']) + 299), `${what}: within 5 minutes passes`);
    }
  });

  it('a retry carries the same webhook-id and body, signed again', async () => {
    const attempts = () => receiver.received.filter((d) => d.headers['webhook-id'] === testEventId);
    await receiver.waitFor(() => attempts().length >= 2, 10_000, 'the retry of the test event');
    const [first, second] = attempts();
    assert.equal(first!.json.type, 'webhook.test');
    assert.equal(second!.body, first!.body, 'the same body');
    assert.ok(verifyAsDocumented(hook.secret, second!.headers, second!.body), 'the retry verifies');
    assert.equal(second!.json.data.webhookId, hook.id, 'webhook.test names the webhook it was sent to');
  });
});
