import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import type { AppOptions } from './app-services.ts';
import type { Config } from './config.ts';
import { openDatabase, type DatabaseHandle } from './db/database.ts';
import { migrateToLatest, pendingMigrations } from './db/migrate.ts';
import { systemClock } from './domain/clock.ts';
import { startWorkers, type RunningWorkers } from './workers.ts';

export interface RunningServer {
  app: FastifyInstance;
  database: DatabaseHandle;
  /** The URL the server listens on (the real port when PORT=0). */
  url: string;
  /** Logs where Tandem serves, its dashboard, and the next step: sign up (no account yet) or log in. */
  announce(): Promise<void>;
  /** Stops accepting, finishes in-flight requests, closes the database. */
  close(): Promise<void>;
}

/**
 * The start lines: the addresses, then what to do next — the first account's sign-up on a
 * fresh instance (it becomes the operator), else the login. Links use SITE_URL, the address
 * people open (its port taken from the socket when PORT=0).
 */
export async function startLines(database: DatabaseHandle, config: Config, url: string): Promise<string[]> {
  const site = new URL(config.siteUrl).port === '0' ? url : config.siteUrl;
  const someone = await database.db.selectFrom('users').select('id').limit(1).executeTakeFirst();
  return [
    `Tandem is serving on ${url} (site URL ${config.siteUrl}); dashboard at ${site}/dashboard, API docs at ${site}/docs`,
    someone
      ? `Next: log in at ${site}/login`
      : `Next: open ${site}/signup to create the first account (it becomes this Tandem's operator), or run: tandem user create --email you@example.com --password '…'`,
  ];
}

/** Connections of the workers' own pool (PostgreSQL). */
const WORKER_POOL_SIZE = 3;

/** Opens and migrates the database, then serves the app. */
export async function startServer(config: Config, options: AppOptions = {}): Promise<RunningServer> {
  const database = openDatabase(config);
  let app: FastifyInstance | undefined;
  let workerDatabase: DatabaseHandle | null = null;
  try {
    // Only take the migration lock when there is work: servers behind PgBouncer (transaction
    // pooling, where a session lock could outlive its connection) then never take it.
    if ((await pendingMigrations(database.db as never)).length > 0) await migrateToLatest(database.db as never);
    app = await buildApp(config, database, options);
    // Requests still running when close() is called finish before the database closes:
    // Fastify stops accepting at once, but a handler may still be awaiting a query. Counted on
    // the HTTP server itself, so every request counts once whatever answers it (a hook that
    // replies early, a 404, an aborted connection): its response's `close` always follows.
    let inFlight = 0;
    let drained: (() => void) | null = null;
    app.server.on('request', (_request, response) => {
      inFlight++;
      response.once('close', () => {
        if (--inFlight === 0) drained?.();
      });
    });
    const waitForInFlight = () =>
      inFlight === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, 10_000); // never hang a shutdown forever
            drained = () => {
              clearTimeout(timer);
              resolve();
            };
          });
    // The workers (src/workers.ts) share the process unless WORKER=off; a committed write wakes
    // them, so an event leaves within milliseconds instead of at the next poll.
    // On PostgreSQL the workers have a small pool of their own, so their statements never queue
    // behind the requests' (nor take their connections); SQLite has one writer anyway.
    workerDatabase = config.worker && database.dialect === 'postgres' ? openDatabase({ ...config, databasePoolSize: WORKER_POOL_SIZE }) : null;
    let workers: RunningWorkers | null = null;
    if (config.worker) {
      // Hooks must be added before listening; the workers start once the port is taken.
      // Mail wakes its worker itself when queued (mail.repository.ts): most writes queue none.
      app.addHook('onResponse', (request, reply, done) => {
        if (request.method !== 'GET' && reply.statusCode < 400) workers?.wake();
        done();
      });
    }
    await app.listen({ port: config.port, host: config.host });
    if (config.worker) workers = await startWorkers({ db: (workerDatabase ?? database).db, config, clock: options.clock ?? systemClock, log: app.log });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    let closing: Promise<void> | undefined;
    const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
    return {
      app,
      database,
      url,
      async announce() {
        for (const line of await startLines(database, config, url)) app!.log.info(line);
        // Out now, not with the next block of lines (JSON logs are written in blocks).
        (app!.log as { flush?: () => void }).flush?.();
      },
      close: () =>
        (closing ??= (async () => {
          await app!.close();
          await waitForInFlight();
          await workers?.stop();
          await workerDatabase?.close();
          await database.close();
        })()),
    };
  } catch (error) {
    // A port in use (say): nothing may stay open, or the process would not exit.
    await app?.close();
    await workerDatabase?.close();
    await database.close();
    throw error;
  }
}

/** Closes the server on SIGTERM/SIGINT; a second signal exits at once. */
export function closeOnSignals(server: RunningServer): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    server.app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        server.app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
