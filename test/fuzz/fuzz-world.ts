import { sql, type Kysely } from 'kysely';
import type { Database } from '../../src/db/schema.ts';
import type { ApiClient, TestServer } from '../helpers/test-server.ts';
import { created, newAffiliate, newCode, newCoupon, newReferral, newSale, unique, uniqueEmail } from '../helpers/fixtures.ts';
import { Pick, RawBody, RawQuery, serialiseJson, type QueryValue, type RequestPlan } from './request-arbitraries.ts';

// The fuzzer's world: two tenants with a few real rows each (so generated ids often exist),
// sending a generated request against them, and snapshots of the program data to compare.

export interface Tenant {
  client: ApiClient;
  programId: string;
  domain: string;
  affiliates: { id: string; email: string; link: string }[];
  links: { id: string; link: string }[];
  referrals: { id: string; email: string; externalId: string }[];
  sales: { id: number; invoice: string }[];
  coupons: { id: string; externalId: string }[];
  codes: { id: string; code: string }[];
  webhooks: string[];
  /** Real cursors of this tenant's lists (affiliates, referrals, sales). */
  cursors: string[];
}

export interface World {
  a: Tenant;
  b: Tenant;
}

function cursorOf(link: string | null): string {
  const match = link ? /[?&]cursor=([^&>]+)/.exec(link) : null;
  return match ? decodeURIComponent(match[1]!) : '';
}

/** A tenant with affiliates, links, coupons, codes, referrals, sales, a refund and a webhook. */
export async function seedTenant(t: TestServer, currency: string): Promise<Tenant> {
  const label = unique('fuzz').toLowerCase();
  const domain = `${label}.example.com`;
  const client = await t.createTenant({ domain, currency });
  const affiliates = [];
  for (const fields of [{}, { affiliateLink: unique('link') }, { status: 'inactive' }]) {
    const a = await newAffiliate(client, fields);
    affiliates.push({ id: a.id as string, email: a.email as string, link: a.link as string });
  }
  const extra = await created(client.post('/links', { link: unique('extra'), affiliateId: affiliates[0]!.id }));
  const links = [{ id: extra.id as string, link: extra.link as string }];
  const percent = await newCoupon(client, { externalId: unique('cpn') });
  const flat = await newCoupon(client, { couponType: 'FLAT', percentOff: undefined, amountOff: 5, currency, duration: 'once', maxRedemptions: 3 });
  const coupons = [
    { id: percent.id as string, externalId: percent.externalId as string },
    { id: flat.id as string, externalId: '' },
  ];
  const codes = [];
  for (const [coupon, affiliate, fields] of [
    [percent, affiliates[0]!, {}],
    [flat, affiliates[1]!, { maxRedemptions: 1, minimumAmount: 10 }],
  ] as const) {
    const code = await newCode(client, { couponId: coupon.id, affiliateId: affiliate.id, ...fields });
    codes.push({ id: code.id as string, code: code.code as string });
  }
  const referrals = [];
  for (const affiliateId of [affiliates[0]!.id, affiliates[1]!.link, affiliates[0]!.id]) {
    const r = await newReferral(client, { affiliateId });
    referrals.push({ id: r.id as string, email: r.email as string, externalId: r.referredUserExternalId as string });
  }
  const sales = [];
  for (const fields of [{ referralId: referrals[0]!.id }, { email: referrals[1]!.email }, { promoCode: codes[0]!.code, email: uniqueEmail('promo') }]) {
    const s = await newSale(client, { externalInvoiceId: unique('inv'), ...fields });
    sales.push({ id: s.id as number, invoice: s.externalInvoiceId as string });
  }
  await created(client.post('/sales/refund', { saleId: sales[0]!.id, amount: 1 }));
  const hook = await created(client.post('/webhooks', { url: 'https://93.184.216.34/hook', events: ['*'] }));
  const cursors = [];
  for (const path of ['/affiliates?limit=1', '/referrals?limit=1', '/sales?limit=1']) {
    const res = await client.get(path);
    cursors.push(cursorOf(res.headers.get('link')));
  }
  return {
    client,
    programId: client.programId,
    domain,
    affiliates,
    links: [...affiliates.map((a) => ({ id: '', link: a.link })), ...links].filter((l) => l.link),
    referrals,
    sales,
    coupons,
    codes,
    webhooks: [hook.id as string],
    cursors: cursors.filter((c) => c !== ''),
  };
}

const EVENT_TYPE_QUERIES = ['sale.created', 'sale.created,referral.created', 'referral.created, affiliate.created', '*', 'webhook.test', 'sale.created,,', 'SALE.CREATED', 'payout.paid', ','];

const WEBHOOK_URLS = [
  'https://93.184.216.34/hook',
  'https://[2606:4700:4700::1111]/h?x=1',
  'https://127.0.0.1/x',
  'https://10.1.2.3/',
  'http://93.184.216.34/',
  'https://user:pw@93.184.216.34/',
  'https://93.184.216.34/#frag',
  'javascript:alert(1)',
  'https://localhost/',
  'https://169.254.169.254/latest/meta-data',
  'https://[::1]/',
  'https://0x7f000001/',
  'https://2130706433/',
  'https://[::ffff:127.0.0.1]/',
  'ftp://93.184.216.34/',
];

/** Flips one character in the middle: a tampered cursor. */
function tamper(cursor: string): string {
  if (cursor.length === 0) return 'AAAA';
  const i = Math.floor(cursor.length / 2);
  return cursor.slice(0, i) + (cursor[i] === 'A' ? 'B' : 'A') + cursor.slice(i + 1);
}

/**
 * The value a Pick stands for. Of 32 slots: 0–26 the actor's own rows, 27–28 the other
 * tenant's, 29 an unknown (or forged) value, 30 the actor's upper-cased, 31 the actor's padded.
 */
export function resolvePick(pick: Pick, world: World, actor: 'a' | 'b'): unknown {
  const slot = pick.n % 32;
  const index = Math.floor(pick.n / 32);
  const own = world[actor];
  const source = slot === 27 || slot === 28 ? world[actor === 'a' ? 'b' : 'a'] : own;
  const choose = <T>(values: T[], fallback: T): T => (values.length === 0 ? fallback : values[index % values.length]!);
  const unknownUuid = `ffffffff-ffff-4fff-bfff-${String(pick.n % 1e12).padStart(12, '0')}`;
  let value: unknown;
  if (slot === 29) {
    switch (pick.kind) {
      case 'saleId':
        return 2 ** 40 + index;
      case 'cursor':
        return choose([tamper(choose(own.cursors, '')), own.cursors.join(''), 'eyJpZCI6IngifQ', '', `${choose(own.cursors, 'x')}=`], '');
      case 'link':
      case 'code':
      case 'invoice':
      case 'referralExternalId':
      case 'couponExternalId':
        return `no-such-${index}`;
      case 'affiliateEmail':
      case 'customerEmail':
        return `nobody${index}@example.com`;
      case 'eventTypes':
        return 'no.such.type';
      case 'clickUrl':
        return choose(['https://evil.example/?ref=x', 'not a url', `https://${own.domain}.evil.example/?ref=x`, 'javascript:alert(1)'], '');
      case 'webhookUrl':
        return choose(WEBHOOK_URLS, '');
      default:
        return unknownUuid;
    }
  }
  switch (pick.kind) {
    case 'affiliateId':
      value = choose(source.affiliates.map((a) => a.id), unknownUuid);
      break;
    case 'affiliateRef':
      value = choose([...source.affiliates.map((a) => a.id), ...source.affiliates.map((a) => a.link)], unknownUuid);
      break;
    case 'affiliateEmail':
      value = choose(source.affiliates.map((a) => a.email), 'x@example.com');
      break;
    case 'customerEmail':
      value = choose(source.referrals.map((r) => r.email), 'x@example.com');
      break;
    case 'link':
      value = choose(source.links.map((l) => l.link), 'x');
      break;
    case 'linkId':
      value = choose(source.links.map((l) => l.id).filter(Boolean), unknownUuid);
      break;
    case 'referralId':
      value = choose(source.referrals.map((r) => r.id), unknownUuid);
      break;
    case 'saleReferral':
      value = choose([...source.referrals.map((r) => r.id), ...source.affiliates.map((a) => a.id), ...source.affiliates.map((a) => a.link)], unknownUuid);
      break;
    case 'referralExternalId':
      value = choose(source.referrals.map((r) => r.externalId), 'x');
      break;
    case 'saleId':
      value = choose(source.sales.map((s) => s.id), 1);
      break;
    case 'invoice':
      value = choose(source.sales.map((s) => s.invoice), 'x');
      break;
    case 'couponId':
      value = choose(source.coupons.map((c) => c.id), unknownUuid);
      break;
    case 'couponExternalId':
      value = choose(source.coupons.map((c) => c.externalId).filter(Boolean), 'x');
      break;
    case 'codeId':
      value = choose(source.codes.map((c) => c.id), unknownUuid);
      break;
    case 'code':
      value = choose(source.codes.map((c) => c.code), 'x');
      break;
    case 'webhookId':
      value = choose(source.webhooks, unknownUuid);
      break;
    case 'webhookUrl':
      value = choose(WEBHOOK_URLS, WEBHOOK_URLS[0]!);
      break;
    case 'cursor':
      value = choose(source.cursors, '');
      break;
    case 'programId':
      value = source.programId;
      break;
    case 'eventTypes':
      value = choose(EVENT_TYPE_QUERIES, 'sale.created');
      break;
    case 'clickUrl': {
      const link = choose(source.links.map((l) => l.link), 'x');
      value = choose([`https://${source.domain}/landing?ref=${link}`, `https://shop.${source.domain}/p?utm=1&ref=${link.toUpperCase()}`, `http://${source.domain}/?ref=`, `https://${source.domain}/?ref=${link}&ref=other`], '');
      break;
    }
  }
  if (typeof value === 'string' && slot === 30) return value.toUpperCase();
  if (typeof value === 'string' && slot === 31) return ` ${value} `;
  return value;
}

/** Replaces every Pick inside a body or query value. */
export function resolveDeep(value: unknown, world: World, actor: 'a' | 'b'): unknown {
  if (value instanceof Pick) return resolvePick(value, world, actor);
  if (Array.isArray(value)) return value.map((v) => resolveDeep(v, world, actor));
  const proto = value !== null && typeof value === 'object' ? Object.getPrototypeOf(value) : undefined;
  if (proto === Object.prototype || proto === null) {
    return Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, resolveDeep(v, world, actor)]));
  }
  return value;
}

/** encodeURIComponent that does not throw on a lone surrogate (sent as U+FFFD, as a browser would). */
function encode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return encodeURIComponent(Buffer.from(text, 'utf8').toString('utf8'));
  }
}

let addressCount = 0;
/** A distinct client address per request (the server trusts X-Forwarded-For from 127.0.0.1), so no per-address limit ends the run. */
export function nextAddress(): string {
  addressCount++;
  return `10.${(addressCount >> 16) & 255}.${(addressCount >> 8) & 255}.${addressCount & 255}`;
}

export interface SentRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
  status: number;
  responseText: string;
  responseHeaders: Headers;
}

let freshKeys = 0;

/** Resolves a plan against the world and sends it over real HTTP. */
export async function sendPlan(baseUrl: string, plan: RequestPlan, world: World): Promise<SentRequest> {
  const { operation: op, actor } = plan;
  const tenant = world[actor];
  const other = world[actor === 'a' ? 'b' : 'a'];
  const query = plan.query
    .map(([key, value]) => {
      const resolved = (value instanceof Pick ? resolvePick(value, world, actor) : value) as QueryValue;
      if (resolved instanceof RawQuery) return `${encode(key)}=${resolved.text}`;
      return `${encode(key)}=${encode(String(resolved))}`;
    })
    .join('&');
  const url = `${baseUrl}${op.path}${plan.pathSuffix}${query ? `?${query}` : ''}`;
  const headers: Record<string, string> = { 'x-forwarded-for': nextAddress() };
  if (op.path.startsWith('/api/v1')) {
    const token = tenant.client.token;
    const auth: Record<string, string | undefined> = {
      token: `Bearer ${token}`,
      none: undefined,
      'empty-bearer': 'Bearer ',
      'garbage-token': `Bearer tdm_${'A'.repeat(43)}`,
      'lowercase-scheme': `bearer ${token}`,
      'double-space': `Bearer  ${token}`,
      'no-scheme': token,
      'token-suffix': `Bearer ${token}x`,
      basic: `Basic ${Buffer.from(`${token}:`).toString('base64')}`,
      huge: `Bearer ${'x'.repeat(20_000)}`,
    };
    const value = auth[plan.auth];
    if (value !== undefined) headers.authorization = value;
  }
  if (plan.origin !== null) {
    headers.origin = {
      own: `https://${tenant.domain}`,
      subdomain: `https://shop.${tenant.domain}`,
      http: `http://${tenant.domain}`,
      'suffix-trick': `https://${tenant.domain}.evil.example`,
      'prefix-trick': `https://evil${tenant.domain}`,
      'other-program': `https://${other.domain}`,
      null: 'null',
      empty: '',
    }[plan.origin];
  }
  if (plan.idempotencyKey) {
    const key = plan.idempotencyKey;
    headers['idempotency-key'] = key.kind === 'fresh' ? `fuzz-${process.pid}-${++freshKeys}` : key.kind === 'shared' ? `fuzz-shared-${key.n}` : key.value;
  }
  let body: string | undefined;
  if (plan.body !== undefined && op.method !== 'GET') {
    body = plan.body instanceof RawBody ? plan.body.text : serialiseJson(resolveDeep(plan.body, world, actor));
    if (plan.contentType !== null) headers['content-type'] = plan.contentType;
  }
  const response = await fetch(url, { method: op.method, headers, body, redirect: 'manual' });
  return { method: op.method, url, headers, body, status: response.status, responseText: await response.text(), responseHeaders: response.headers };
}

/** Adds what a successful create returned to the tenant's pools, so later requests use it too. */
export function learnFrom(sent: SentRequest, path: string, tenant: Tenant): void {
  if (sent.method !== 'POST' || sent.status !== 201) return;
  let body: any;
  try {
    body = JSON.parse(sent.responseText);
  } catch {
    return;
  }
  switch (path) {
    case '/api/v1/affiliates':
      tenant.affiliates.push({ id: body.id, email: body.email, link: body.link });
      tenant.links.push({ id: '', link: body.link });
      break;
    case '/api/v1/links':
      tenant.links.push({ id: body.id, link: body.link });
      break;
    case '/api/v1/referrals':
      tenant.referrals.push({ id: body.id, email: body.email, externalId: body.referredUserExternalId });
      break;
    case '/api/v1/sales':
      tenant.sales.push({ id: body.id, invoice: body.externalInvoiceId });
      break;
    case '/api/v1/coupons':
      tenant.coupons.push({ id: body.id, externalId: body.externalId ?? '' });
      break;
    case '/api/v1/promotional-codes':
      tenant.codes.push({ id: body.id, code: body.code });
      break;
    case '/api/v1/webhooks':
      tenant.webhooks.push(body.id);
      break;
  }
}

/** A failing request, readable: what was sent (token hidden) and what came back. */
export function describeRequest(sent: { method: string; url: string; headers: Record<string, string>; body?: string; status?: number; responseText?: string }, plan?: RequestPlan): string {
  const headers = { ...sent.headers };
  if (headers.authorization) headers.authorization = headers.authorization.replace(/tdm_[A-Za-z0-9_-]+/, 'tdm_…').slice(0, 80);
  const cut = (text: string | undefined) => (text === undefined ? '(none)' : text.length > 2000 ? `${text.slice(0, 2000)}… (${text.length} chars)` : text);
  return [
    `${sent.method} ${cut(sent.url)}`,
    `headers: ${JSON.stringify(headers)}`,
    `body: ${cut(sent.body === undefined ? undefined : JSON.stringify(sent.body))}`,
    plan ? `mutations: ${plan.mutations.join('; ') || '(none: a valid request)'}` : '',
    sent.status === undefined ? '' : `answer: ${sent.status} ${cut(sent.responseText)}`,
  ]
    .filter(Boolean)
    .join('\n');
}

// ---------------------------------------------------------------- snapshots

/** The program data a 4xx must not change, compared row by row, all columns. */
export const COMPARED_TABLES = ['affiliates', 'affiliate_links', 'referrals', 'sales', 'sale_refunds', 'coupons', 'promotional_codes', 'clicks', 'click_days', 'events', 'webhooks'] as const;

export interface Snapshot {
  /** program id → table → its rows as JSON (events without their sequence). */
  programs: Record<string, Record<string, string>>;
  /** Event sequence numbers: given by GET /events (and the worker) to every program's events at once. */
  sequences: string;
}

export async function takeSnapshot(db: Kysely<Database>, programIds: string[]): Promise<Snapshot> {
  const rowsOf: Record<string, Record<string, unknown[]>> = Object.fromEntries(programIds.map((id) => [id, Object.fromEntries(COMPARED_TABLES.map((t) => [t, []]))]));
  const sequences: unknown[] = [];
  // In parallel: PostgreSQL answers them on several pooled connections (SQLite runs them in turn).
  const results = await Promise.all(
    COMPARED_TABLES.map((table) => sql<Record<string, unknown>>`select * from ${sql.table(table)} where program_id in (${sql.join(programIds)}) order by program_id, id`.execute(db)),
  );
  COMPARED_TABLES.forEach((table, i) => {
    for (const row of results[i]!.rows) {
      let kept = row;
      if (table === 'events') {
        const { sequence, ...rest } = row;
        sequences.push([row.id, sequence === null ? null : String(sequence)]);
        kept = rest;
      }
      rowsOf[String(row.program_id)]![table]!.push(kept);
    }
  });
  const programs = Object.fromEntries(Object.entries(rowsOf).map(([id, tables]) => [id, Object.fromEntries(Object.entries(tables).map(([t, rows]) => [t, JSON.stringify(rows)]))]));
  return { programs, sequences: JSON.stringify(sequences) };
}

/** What differs between two snapshots for the given programs: '' when nothing. */
export function snapshotDifference(before: Snapshot, after: Snapshot, programIds: string[], withSequences: boolean): string {
  const lines: string[] = [];
  for (const id of programIds) {
    for (const table of COMPARED_TABLES) {
      const [was, now] = [before.programs[id]?.[table] ?? '[]', after.programs[id]?.[table] ?? '[]'];
      if (was === now) continue;
      const wasRows = JSON.parse(was) as unknown[];
      const nowRows = JSON.parse(now) as unknown[];
      const wasSet = new Set(wasRows.map((r) => JSON.stringify(r)));
      const nowSet = new Set(nowRows.map((r) => JSON.stringify(r)));
      const gone = [...wasSet].filter((r) => !nowSet.has(r));
      const added = [...nowSet].filter((r) => !wasSet.has(r));
      lines.push(`program ${id}, table ${table}: ${wasRows.length} → ${nowRows.length} rows`, ...gone.slice(0, 3).map((r) => `  - ${r.slice(0, 600)}`), ...added.slice(0, 3).map((r) => `  + ${r.slice(0, 600)}`));
    }
  }
  if (withSequences && before.sequences !== after.sequences) lines.push('event sequence numbers changed');
  return lines.join('\n');
}
