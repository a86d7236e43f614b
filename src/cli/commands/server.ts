import { pino } from 'pino';
import { loggerOptions } from '../../logging.ts';
import { openDatabase } from '../../db/database.ts';
import { migrateToLatest } from '../../db/migrate.ts';
import { copyData } from '../../db/copy-data.ts';
import { vacuumDatabase } from '../../db/upkeep.ts';
import { systemClock } from '../../domain/clock.ts';
import { closeOnSignals, startServer } from '../../server.ts';
import { startWorkers } from '../../workers.ts';
import { text, UsageError, withMigratedDatabase, type Command } from '../command.ts';

// Running Tandem: the server, the worker, the schema, and moving the data to another database.

export const serverCommands = {
  serve: {
    summary: 'serve the API, the dashboard and the portal (what npm start runs)',
    description: 'Serves HTTP on HOST:PORT over DATABASE_URL (migrated first); SIGTERM or SIGINT finish the requests in flight, then exit.',
    flags: {},
    example: 'tandem serve',
    async run(config) {
      const server = await startServer(config);
      closeOnSignals(server);
      await server.announce();
    },
  },
  worker: {
    summary: 'deliver webhooks and e-mail and purge expired rows, without HTTP',
    description: 'Runs the workers only (webhook delivery, mail, and the purge of expired rows), beside servers started with WORKER=off; run as many as you like, they share the queue safely.',
    flags: {},
    example: 'tandem worker',
    async run(config) {
      const database = openDatabase(config);
      await migrateToLatest(database.db as never);
      // The server's log settings: human lines on a terminal (LOG_FORMAT), JSON for machines.
      const { stream, ...options } = loggerOptions(config);
      const log = pino(options, stream);
      const workers = await startWorkers({ db: database.db, config, clock: systemClock, log });
      let stopping = false;
      const stop = (signal: NodeJS.Signals) => {
        if (stopping) process.exit(1);
        stopping = true;
        log.info({ signal }, 'worker stopping: finishing in-flight deliveries');
        workers
          .stop()
          .then(() => database.close())
          .then(
            () => process.exit(0),
            () => process.exit(1),
          );
      };
      process.on('SIGTERM', stop);
      process.on('SIGINT', stop);
      // Announced once a signal can stop it gracefully: a supervisor (or a test) that signals on
      // this line must not find the process without its handlers.
      log.info('Tandem webhook worker started');
    },
  },
  migrate: {
    summary: 'bring the database schema up to date (serve and worker also do on start)',
    description: 'Applies the migrations DATABASE_URL has not had yet and prints their names; safe to run from several hosts at once.',
    flags: {},
    example: 'tandem migrate',
    async run(config) {
      const database = openDatabase(config);
      try {
        const applied = await migrateToLatest(database.db as never);
        return { text: applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date', json: { applied } };
      } finally {
        await database.close();
      }
    },
  },
  vacuum: {
    summary: 'compact the database and let the worker give purged space back from then on',
    description:
      'SQLite: switches the file to incremental auto-vacuum and rewrites it compactly (VACUUM: writers wait until it is done, and it needs free disk space the size of the file), then refreshes the planner statistics. A file this version created gives purged space back by itself; an older one needs this once. PostgreSQL: VACUUM (ANALYZE), which blocks no one (docs/deploy.md).',
    flags: {},
    example: 'tandem vacuum',
    async run(config) {
      return withMigratedDatabase(config, async (database) => {
        const started = performance.now();
        await vacuumDatabase(database.db);
        const seconds = ((performance.now() - started) / 1000).toFixed(1);
        return { text: `vacuumed in ${seconds} s`, json: { seconds: Number(seconds) } };
      });
    },
  },
} satisfies Record<string, Command>;

export const dataCommands = {
  'migrate-data': {
    summary: 'copy every row from one database to another, empty one (SQLite to PostgreSQL)',
    description: 'Copies all data in one transaction into a migrated, empty target and verifies the row counts of every table (docs/deploy.md).',
    flags: {
      from: { value: 'URL', description: 'the database to copy from: sqlite:<path> or postgres://…', required: true },
      to: { value: 'URL', description: 'the empty database to copy into: sqlite:<path> or postgres://…', required: true },
    },
    example: 'tandem migrate-data --from sqlite:./data/tandem.db --to postgres://tandem@db.internal/tandem',
    async run(config, options) {
      const [fromUrl, toUrl] = [text(options, 'from'), text(options, 'to')];
      for (const url of [fromUrl, toUrl]) {
        if (!/^(sqlite:|postgres(ql)?:\/\/)/.test(url)) throw new UsageError(`--from and --to must be sqlite:<path> or postgres://… URLs, got "${url}"`);
      }
      if (fromUrl === toUrl) throw new UsageError('--from and --to name the same database');
      const from = openDatabase({ ...config, databaseUrl: fromUrl });
      const to = openDatabase({ ...config, databaseUrl: toUrl });
      try {
        const report = await copyData(from, to);
        const total = Object.values(report.tables).reduce((a, b) => a + b, 0);
        const lines = Object.entries(report.tables).map(([table, n]) => `  ${table}: ${n}`);
        return { text: `copied ${total} rows; counts verified:\n${lines.join('\n')}`, json: report };
      } finally {
        await Promise.all([from.close(), to.close()]);
      }
    },
  },
} satisfies Record<string, Command>;
