// Configuration is read from the environment once, validated, and frozen.
// Nothing else in the codebase reads process.env (enforced by eslint).
import { isIP } from 'node:net';

/** The log's shape (logging.ts): short lines for a person at a terminal, or pino's JSON lines. */
export type LogFormat = 'pretty' | 'json';

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly databaseUrl: string;
  readonly siteUrl: string;
  /** Requests per program (all its tokens together) per minute; 0 disables the limit. */
  readonly rateLimitPerMinute: number;
  readonly logLevel: string;
  /** pretty: a short line per request, for a terminal; json: pino's JSON lines. */
  readonly logFormat: LogFormat;
  /** Largest accepted request body, in bytes. */
  readonly bodyLimit: number;
  /** PostgreSQL only: connections per process. */
  readonly databasePoolSize: number;
  /** PostgreSQL only: statements running longer are cancelled. */
  readonly databaseStatementTimeoutMs: number;
  /** PostgreSQL only: TLS to the server — off, require (encrypt), or verify (encrypt and check the certificate). */
  readonly databaseSsl: 'off' | 'require' | 'verify';
  /**
   * PostgreSQL only: the request path's compiled queries run as named prepared statements, parsed
   * and planned once per connection. Off behind a pooler that cannot carry them (PgBouncer
   * before 1.21 in transaction mode).
   */
  readonly databasePreparedStatements: boolean;
  /** Run the webhook delivery worker inside `tandem serve` (WORKER=off leaves it to `tandem worker`). */
  readonly worker: boolean;
  /** Delay before each retry of a failed delivery, in ms; its length is the number of retries. */
  readonly webhookRetrySchedule: readonly number[];
  /** Allow webhook URLs on private, loopback and link-local addresses, and plain http (development, tests). */
  readonly webhookAllowPrivateUrls: boolean;
  /** A delivery attempt that has not answered within this many ms fails. */
  readonly webhookTimeoutMs: number;
  /** An endpoint whose every attempt failed for this long is disabled. */
  readonly webhookDisableAfterMs: number;
  /** A webhook host name not resolved within this many ms fails (subscribe: 422; delivery: a failed attempt). */
  readonly webhookDnsTimeoutMs: number;
  /** DNS servers for webhook host names ("ip" or "ip:port"); empty: the system's (/etc/resolv.conf). */
  readonly webhookDnsServers: readonly string[];
  /** Webhook host-name lookups one program may have running at once; more wait in its own queue. */
  readonly webhookDnsLookupsPerProgram: number;
  /** Pending deliveries a program may have before its new events wait for fan-out. */
  readonly webhookMaxPendingPerProgram: number;
  /** Events (and their deliveries) older than this many days are purged by the worker. */
  readonly eventRetentionDays: number;
  /** Clicks a program may have counted per minute, over every process; 0: no ceiling. */
  readonly clickProgramLimitPerMinute: number;
  /** Raw click rows older than this many UTC days are purged by the worker (the daily counts stay). */
  readonly clickRetentionDays: number;
  /** A running Idempotency-Key not completed within this many ms is taken over by a retry. */
  readonly idempotencyLeaseMs: number;
  /** A valid bearer token's lookup is reused this many ms (0: every request looks it up). */
  readonly tokenCacheMs: number;
  /**
   * Which proxies in front of Tandem to believe about the client's address (X-Forwarded-For):
   * false (none, the default), a hop count, or a list of addresses and CIDR ranges.
   */
  readonly trustProxy: false | number | readonly string[];
  /** The whole request, headers and body, must arrive within this many ms, or it gets 408 and the connection closes. */
  readonly requestTimeoutMs: number;
  /** The request's headers must arrive within this many ms (at most requestTimeoutMs). */
  readonly headersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this many ms (Node adds a second of grace). */
  readonly keepAliveTimeoutMs: number;
  /** Where e-mail goes (smtp:// or smtps://, credentials in the URL); null: each message is written to the log instead. */
  readonly smtpUrl: string | null;
  /** The From of every message. */
  readonly mailFrom: string;
  /** Who may create an account: open, closed, or null (unset: open only while the instance has no user). */
  readonly signup: 'open' | 'closed' | null;
  /** Delay before each retry of a message the SMTP server refused or could not take, in ms; its length is the number of retries. */
  readonly mailRetrySchedule: readonly number[];
}

export class ConfigError extends Error {}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function sslMode(raw: string | undefined): Config['databaseSsl'] {
  if (raw === undefined || raw === '') return 'off';
  if (raw === 'off' || raw === 'require' || raw === 'verify') return raw;
  throw new ConfigError(`DATABASE_SSL must be off, require or verify, got "${raw}"`);
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "5s,5m,30m,2h" → [5000, 300000, 1800000, 7200000]. */
export function parseDurations(name: string, raw: string): number[] {
  const parts = raw.split(',').map((p) => p.trim());
  if (parts.length > 50) throw new ConfigError(`${name} may list at most 50 durations`);
  return parts.map((part) => {
    const match = /^(\d{1,9})(ms|s|m|h|d)$/.exec(part);
    if (!match) throw new ConfigError(`${name} must be comma-separated durations such as 5s,5m,2h (units ms, s, m, h, d), got "${part}"`);
    return Number(match[1]) * DURATION_UNITS[match[2]!]!;
  });
}

function onOff(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'on', 'true', 'yes'].includes(raw)) return true;
  if (['0', 'off', 'false', 'no'].includes(raw)) return false;
  throw new ConfigError(`${name} must be on or off (or 1 / 0), got "${raw}"`);
}

const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function isAddressOrCidr(entry: string): boolean {
  const [address = '', prefix, extra] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}

/** TRUST_PROXY: off (default), a hop count (1 = the one balancer in front), or addresses/CIDRs. */
export function parseTrustProxy(raw: string | undefined): Config['trustProxy'] {
  if (raw === undefined || raw === '' || raw === 'off' || raw === 'false' || raw === '0') return false;
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  const entries = raw.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    if (!isAddressOrCidr(entry) && !PROXY_RANGE_NAMES.includes(entry)) {
      throw new ConfigError(`TRUST_PROXY must be off, a hop count, or addresses/CIDRs separated by commas (or ${PROXY_RANGE_NAMES.join(', ')}), got "${entry}"`);
    }
  }
  return Object.freeze(entries);
}

/** Webhook DNS without WEBHOOK_DNS_* set: the system's servers, 2 s, 4 lookups at once per program. */
export const WEBHOOK_DNS_DEFAULTS = Object.freeze({ webhookDnsTimeoutMs: 2000, webhookDnsServers: Object.freeze([]) as readonly string[], webhookDnsLookupsPerProgram: 4 });

/** WEBHOOK_DNS_SERVERS: "1.1.1.1,9.9.9.9:53,[2606:4700::1111]:53"; empty: the system's servers. */
export function parseDnsServers(raw: string | undefined): readonly string[] {
  if (raw === undefined || raw.trim() === '') return WEBHOOK_DNS_DEFAULTS.webhookDnsServers;
  const entries = raw.split(',').map((entry) => entry.trim());
  if (entries.length > 8) throw new ConfigError('WEBHOOK_DNS_SERVERS may list at most 8 servers');
  for (const entry of entries) {
    // An IPv6 address with a port goes in brackets; an IPv4 address takes ":port" as is.
    const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry);
    const ipv4 = /^([\d.]+)(?::(\d{1,5}))?$/.exec(entry);
    const [address, port] = bracketed ? [bracketed[1]!, bracketed[2]] : ipv4 ? [ipv4[1]!, ipv4[2]] : [entry, undefined];
    const family = isIP(address);
    if (family === 0 || (bracketed !== null && family !== 6) || address.includes('%') || (port !== undefined && (Number(port) < 1 || Number(port) > 65535))) {
      throw new ConfigError(`WEBHOOK_DNS_SERVERS must be addresses with an optional port (1.1.1.1, 1.1.1.1:53, [::1]:53), separated by commas, got "${entry}"`);
    }
  }
  return Object.freeze(entries);
}

/** 11 retries over about 3 days (73.6 h), as the contract asks. */
export const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,10h,10h,12h,12h,12h';
export const DEFAULT_MAIL_RETRY_SCHEDULE = '30s,2m,10m,30m,2h,6h';

function parseSmtpUrl(raw: string | undefined): string | null {
  if (!raw) return null;
  try {
    const url = new URL(raw);
    if (url.protocol === 'smtp:' || url.protocol === 'smtps:') return raw;
  } catch {
    // reported below
  }
  throw new ConfigError('SMTP_URL must be an smtp:// or smtps:// URL, such as smtps://user:password@smtp.example.com:465');
}

function parseMailFrom(raw: string | undefined, siteUrl: string): string {
  const from = raw || `Tandem <no-reply@${new URL(siteUrl).hostname}>`;
  if (from.length > 320 || /[\r\n]/.test(from) || !/@/.test(from)) throw new ConfigError('MAIL_FROM must be an e-mail address, optionally with a name: Acme Partners <partners@acme.com>');
  return from;
}

function parseSignup(raw: string | undefined): Config['signup'] {
  if (raw === undefined || raw === '') return null;
  if (raw === 'open' || raw === 'closed') return raw;
  throw new ConfigError(`SIGNUP must be open or closed, got "${raw}"`);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** LOG_FORMAT: pretty or json; unset, pretty when stdout is a terminal (a person reads it), else json. */
export function parseLogFormat(raw: string | undefined, stdoutIsTty: boolean): LogFormat {
  if (raw === undefined || raw === '') return stdoutIsTty ? 'pretty' : 'json';
  if (raw === 'pretty' || raw === 'json') return raw;
  throw new ConfigError(`LOG_FORMAT must be pretty or json, got "${raw}"`);
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const port = overrides.port ?? integer(env, 'PORT', 3000, 0, 65535);
  const databaseUrl = overrides.databaseUrl ?? (env.DATABASE_URL || 'sqlite:./data/tandem.db');
  if (!/^(sqlite:|postgres(ql)?:\/\/)/.test(databaseUrl)) {
    throw new ConfigError(`DATABASE_URL must start with sqlite: or postgres://, got "${databaseUrl.replace(/\/\/[^@]*@/, '//***@')}"`);
  }
  const siteUrl = (overrides.siteUrl ?? (env.SITE_URL || `http://localhost:${port}`)).replace(/\/+$/, '');
  try {
    const parsed = new URL(siteUrl);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('protocol');
  } catch {
    throw new ConfigError(`SITE_URL must be an http(s) URL, got "${siteUrl}"`);
  }
  // A slow client (a body trickled in a byte at a time) must not hold a connection forever.
  const requestTimeoutMs = overrides.requestTimeoutMs ?? integer(env, 'REQUEST_TIMEOUT_MS', 30_000, 1000, 3_600_000);
  const headersTimeoutMs = overrides.headersTimeoutMs ?? integer(env, 'HEADERS_TIMEOUT_MS', Math.min(10_000, requestTimeoutMs), 1000, 3_600_000);
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(`HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not be above REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  }
  const logLevel = overrides.logLevel ?? (env.LOG_LEVEL || 'info');
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  return Object.freeze({
    port,
    host: overrides.host ?? (env.HOST || '127.0.0.1'),
    databaseUrl,
    siteUrl,
    rateLimitPerMinute: overrides.rateLimitPerMinute ?? integer(env, 'RATE_LIMIT_PER_MINUTE', 6000, 0, 1_000_000_000),
    logLevel,
    logFormat: overrides.logFormat ?? parseLogFormat(env.LOG_FORMAT, process.stdout.isTTY === true),
    bodyLimit: overrides.bodyLimit ?? 1024 * 1024,
    databasePoolSize: overrides.databasePoolSize ?? integer(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
    databaseStatementTimeoutMs: overrides.databaseStatementTimeoutMs ?? integer(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 10_000, 0, 3_600_000),
    databaseSsl: overrides.databaseSsl ?? sslMode(env.DATABASE_SSL),
    databasePreparedStatements: overrides.databasePreparedStatements ?? onOff(env, 'DATABASE_PREPARED_STATEMENTS', true),
    worker: overrides.worker ?? onOff(env, 'WORKER', true),
    webhookRetrySchedule: Object.freeze(overrides.webhookRetrySchedule ?? parseDurations('WEBHOOK_RETRY_SCHEDULE', env.WEBHOOK_RETRY_SCHEDULE || DEFAULT_RETRY_SCHEDULE)),
    webhookAllowPrivateUrls: overrides.webhookAllowPrivateUrls ?? onOff(env, 'WEBHOOK_ALLOW_PRIVATE_URLS', false),
    webhookTimeoutMs: overrides.webhookTimeoutMs ?? integer(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
    webhookDisableAfterMs: overrides.webhookDisableAfterMs ?? parseDurations('WEBHOOK_DISABLE_AFTER', env.WEBHOOK_DISABLE_AFTER || '5d')[0]!,
    webhookDnsTimeoutMs: overrides.webhookDnsTimeoutMs ?? integer(env, 'WEBHOOK_DNS_TIMEOUT_MS', WEBHOOK_DNS_DEFAULTS.webhookDnsTimeoutMs, 100, 30_000),
    webhookDnsServers: overrides.webhookDnsServers ?? parseDnsServers(env.WEBHOOK_DNS_SERVERS),
    webhookDnsLookupsPerProgram: overrides.webhookDnsLookupsPerProgram ?? integer(env, 'WEBHOOK_DNS_LOOKUPS_PER_PROGRAM', WEBHOOK_DNS_DEFAULTS.webhookDnsLookupsPerProgram, 1, 64),
    webhookMaxPendingPerProgram: overrides.webhookMaxPendingPerProgram ?? integer(env, 'WEBHOOK_MAX_PENDING_PER_PROGRAM', 10_000, 100, 1_000_000),
    eventRetentionDays: overrides.eventRetentionDays ?? integer(env, 'EVENT_RETENTION_DAYS', 30, 30, 3650),
    clickProgramLimitPerMinute: overrides.clickProgramLimitPerMinute ?? integer(env, 'CLICK_PROGRAM_LIMIT_PER_MINUTE', 600, 0, 1_000_000_000),
    clickRetentionDays: overrides.clickRetentionDays ?? integer(env, 'CLICK_RETENTION_DAYS', 30, 1, 3650),
    idempotencyLeaseMs: overrides.idempotencyLeaseMs ?? integer(env, 'IDEMPOTENCY_LEASE_MS', 30_000, 1000, 3_600_000),
    tokenCacheMs: overrides.tokenCacheMs ?? integer(env, 'TOKEN_CACHE_MS', 5000, 0, 60_000),
    trustProxy: overrides.trustProxy ?? parseTrustProxy(env.TRUST_PROXY),
    requestTimeoutMs,
    headersTimeoutMs,
    keepAliveTimeoutMs: overrides.keepAliveTimeoutMs ?? integer(env, 'KEEP_ALIVE_TIMEOUT_MS', 5000, 1000, 3_600_000),
    smtpUrl: overrides.smtpUrl !== undefined ? overrides.smtpUrl : parseSmtpUrl(env.SMTP_URL),
    mailFrom: overrides.mailFrom ?? parseMailFrom(env.MAIL_FROM, siteUrl),
    signup: overrides.signup !== undefined ? overrides.signup : parseSignup(env.SIGNUP),
    mailRetrySchedule: Object.freeze(overrides.mailRetrySchedule ?? parseDurations('MAIL_RETRY_SCHEDULE', env.MAIL_RETRY_SCHEDULE || DEFAULT_MAIL_RETRY_SCHEDULE)),
  });
}
