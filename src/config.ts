// Configuration is read from the environment once, validated, and frozen.
// Nothing else in the codebase reads process.env (enforced by eslint).

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly databaseUrl: string;
  readonly siteUrl: string;
  /** Requests per token per minute; 0 disables the limit. */
  readonly rateLimitPerMinute: number;
  readonly logLevel: string;
  /** Largest accepted request body, in bytes. */
  readonly bodyLimit: number;
  /** PostgreSQL only: connections per process. */
  readonly databasePoolSize: number;
  /** PostgreSQL only: statements running longer are cancelled. */
  readonly databaseStatementTimeoutMs: number;
  /** PostgreSQL only: TLS to the server — off, require (encrypt), or verify (encrypt and check the certificate). */
  readonly databaseSsl: 'off' | 'require' | 'verify';
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

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

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
  const logLevel = overrides.logLevel ?? (env.LOG_LEVEL || 'info');
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  return Object.freeze({
    port,
    host: overrides.host ?? (env.HOST || '127.0.0.1'),
    databaseUrl,
    siteUrl,
    rateLimitPerMinute: overrides.rateLimitPerMinute ?? integer(env, 'RATE_LIMIT_PER_MINUTE', 6000, 0, 1_000_000_000),
    logLevel,
    bodyLimit: overrides.bodyLimit ?? 1024 * 1024,
    databasePoolSize: overrides.databasePoolSize ?? integer(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
    databaseStatementTimeoutMs: overrides.databaseStatementTimeoutMs ?? integer(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 10_000, 0, 3_600_000),
    databaseSsl: overrides.databaseSsl ?? sslMode(env.DATABASE_SSL),
  });
}
