import { loadConfig, type Config } from '../../src/config.ts';
import type { AppOptions } from '../../src/app-services.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { createUser } from '../../src/modules/users/user.service.ts';
import { createProgram, findUserProgram, getProgram, toProgramContext, updateProgram } from '../../src/modules/programs/program.service.ts';
import type { ProgramContext } from '../../src/domain/program-context.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { issueToken } from '../../src/modules/tokens/token.service.ts';
import { createTestDatabase, testDialect, type TestDatabase, type TestDialect } from './test-database.ts';

// Every test file gets a real server on a real port over a fresh database of the dialect
// under test (a SQLite file, or a PostgreSQL database created for it and dropped after).

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface ApiClient {
  readonly token: string;
  readonly programId: string;
  request<T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  get<T = any>(path: string): Promise<ApiResponse<T>>;
  post<T = any>(path: string, body: unknown): Promise<ApiResponse<T>>;
  put<T = any>(path: string, body: unknown): Promise<ApiResponse<T>>;
}

export interface TestServer {
  url: string;
  server: RunningServer;
  config: Config;
  dir: string;
  database: TestDatabase;
  /** A new user, program and API key; the client calls /api/v1 with that key. */
  createTenant(options?: { currency?: string; commissionRate?: number; name?: string; domain?: string }): Promise<ApiClient>;
  close(): Promise<void>;
}

let tenantCount = 0;

/**
 * `options.clock` lets a test move time (expiring codes) without waiting; `dialect` picks a
 * database other than the leg's (the fuzzer's SQLite run inside the PostgreSQL leg).
 */
export async function startTestServer(overrides: Partial<Config> = {}, options: AppOptions = {}, dialect: TestDialect = testDialect): Promise<TestServer> {
  const database = await createTestDatabase(dialect);
  const config = loadConfig(
    {},
    { port: 0, host: '127.0.0.1', databaseUrl: database.url, logLevel: 'silent', siteUrl: 'http://tandem.test', signup: 'open', ...overrides },
  );
  let server: RunningServer;
  try {
    server = await startServer(config, options);
  } catch (error) {
    await database.drop();
    throw error;
  }
  const db = server.database.db;
  return {
    url: server.url,
    server,
    config,
    dir: database.dir,
    database,
    async createTenant(options = {}) {
      const n = ++tenantCount;
      const user = await createUser(db, { email: `owner${n}-${Date.now()}@example.com`, password: 'a long password' });
      const program = await createProgram(db, {
        ownerUserId: user.id,
        name: options.name ?? `Program ${n}`,
        domain: options.domain ?? `program${n}.example.com`,
        currency: options.currency,
        commissionRate: options.commissionRate,
      });
      const { token } = await issueToken(db, { programId: program.id, name: 'test', kind: 'api_key' });
      return apiClient(server.url, token, program.id);
    },
    async close() {
      await server.close();
      await database.drop();
    },
  };
}

export function apiClient(baseUrl: string, token: string, programId: string): ApiClient {
  const request = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${baseUrl}/api/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: keep the text
    }
    return { status: response.status, headers: response.headers, body: parsed as any };
  };
  return {
    token,
    programId,
    request,
    get: (path) => request('GET', path),
    post: (path, body) => request('POST', path, body),
    put: (path, body) => request('PUT', path, body),
  };
}

/** Reads one row straight from the database, to assert stored state. */
export function rawDb(test: TestServer) {
  return test.server.database.db;
}

/** Changes a program's default commission rate the way the dashboard's settings form does. */
export async function setProgramCommissionRate(test: TestServer, programId: string, commissionRate: number): Promise<void> {
  const db = rawDb(test);
  const { owner_user_id: userId } = await db.selectFrom('programs').select('owner_user_id').where('id', '=', programId).executeTakeFirstOrThrow();
  const program = (await findUserProgram(db, userId, programId))!;
  await updateProgram(db, userId, programId, { ...program, commissionRate });
}

/** What the API's services take for a program, for tests that call a service directly. */
export async function programContext(t: TestServer, programId: string): Promise<ProgramContext> {
  return toProgramContext(await getProgram(t.server.database.db, programId), systemClock);
}
