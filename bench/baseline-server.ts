import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { configureSqlite } from '../src/db/database.ts';

// The benchmark's baseline: a bare Fastify server on the raw driver over the same database —
// better-sqlite3 with the same pragmas (configureSqlite), or a pg pool with named prepared
// statements — doing only the one comparable operation per endpoint, each statement prepared
// once: no auth, no validation, no query builder, no response schema. Its speed is the
// physical limit of the stack (see ../shared/BENCHMARKS.md); Tandem's gap to it is Tandem's
// overhead. The program is named by a `programId` query parameter instead of a bearer token.
//
// Run by bench/run.ts: PORT=… DATABASE_URL=sqlite:…|postgres://… node --import tsx bench/baseline-server.ts

type Row = Record<string, unknown>;
/** Runs one statement by name with its values; the rows it returns. */
type Run = (name: keyof typeof SQL, values: unknown[]) => Promise<Row[]>;
/** Runs statements in one transaction. */
type InTransaction = (work: (run: Run) => Promise<unknown>) => Promise<void>;

// The statements, in PostgreSQL's numbered placeholders (each used once, in order); SQLite gets `?` in their place.
const SQL = {
  insertSale: `insert into sales (program_id, affiliate_id, referral_id, link_id, promotional_code_id, external_id, external_invoice_id, name, email,
    total_earned, commission_rate, commission, created_at) values ($1, $2, $3, null, null, $4, '', '', '', $5, 200000, $6, $7) returning id`,
  addCommission: 'update affiliates set total_commission_earned = total_commission_earned + $1 where id = $2',
  insertReferral: `insert into referrals (id, program_id, affiliate_id, link_id, promotional_code_id, name, email, email_key, referred_user_external_id,
    plan, status, created_at, updated_at) values ($1, $2, $3, null, null, $4, $5, $6, $7, '', 'active', $8, $9)`,
  addReferredUser: 'update affiliates set number_of_referred_users = number_of_referred_users + 1 where id = $1',
  affiliate: 'select * from affiliates where program_id = $1 and id = $2',
  affiliates: 'select * from affiliates where program_id = $1 order by created_at desc, id desc limit $2',
  promotionalCode: 'select * from promotional_codes where program_id = $1 and code_key = $2',
  sales: 'select * from sales where program_id = $1 order by created_at desc, id desc limit $2',
} as const;

function openDriver(url: string): { run: Run; inTransaction: InTransaction; close(): Promise<void> } {
  if (url.startsWith('sqlite:')) {
    const connection = new SqliteDatabase(url.slice('sqlite:'.length));
    configureSqlite(connection);
    const statements = new Map(Object.entries(SQL).map(([name, text]) => [name, connection.prepare(text.replace(/\$\d+/g, '?'))]));
    const runSync = (name: string, values: unknown[]): Row[] => {
      const statement = statements.get(name)!;
      if (statement.reader) return statement.all(...values) as Row[];
      statement.run(...values);
      return [];
    };
    const begin = connection.prepare('begin immediate');
    const commit = connection.prepare('commit');
    const rollback = connection.prepare('rollback');
    return {
      run: async (name, values) => runSync(name, values),
      inTransaction: async (work) => {
        begin.run();
        try {
          await work(async (name, values) => runSync(name, values));
          commit.run();
        } catch (error) {
          rollback.run();
          throw error;
        }
      },
      close: async () => {
        connection.close();
      },
    };
  }
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  const runOn = async (client: pg.Pool | pg.PoolClient, name: keyof typeof SQL, values: unknown[]) => (await client.query({ name, text: SQL[name], values })).rows as Row[];
  return {
    run: (name, values) => runOn(pool, name, values),
    inTransaction: async (work) => {
      const client = await pool.connect();
      try {
        await client.query('begin');
        await work((name, values) => runOn(client, name, values));
        await client.query('commit');
      } catch (error) {
        await client.query('rollback');
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

const db = openDriver(process.env.DATABASE_URL ?? '');
const app = Fastify({ logger: false });

type ProgramQuery = { programId: string; id?: string; code?: string; limit?: string };

app.get('/healthz', async () => ({ status: 'ok' }));

// A write: one insert plus one counter update, in one transaction.
app.post<{ Querystring: ProgramQuery; Body: { referralId: string; affiliateId: string; totalEarned: number; externalId?: string } }>(
  '/api/v1/sales',
  async (request, reply) => {
    const { referralId, affiliateId, totalEarned, externalId = '' } = request.body;
    const totalMinor = Math.round(totalEarned * 100);
    const commission = Math.round(totalMinor * 0.2);
    const createdAt = new Date().toISOString();
    let id: unknown;
    await db.inTransaction(async (run) => {
      [{ id }] = (await run('insertSale', [request.query.programId, affiliateId, referralId, externalId, totalMinor, commission, createdAt])) as [Row];
      await run('addCommission', [commission, affiliateId]);
    });
    return reply.code(201).send({ id, program_id: request.query.programId, affiliate_id: affiliateId, referral_id: referralId, external_id: externalId, total_earned: totalMinor, commission, created_at: createdAt });
  },
);

app.post<{ Querystring: ProgramQuery; Body: { name: string; email: string; referredUserExternalId: string; affiliateId: string } }>(
  '/api/v1/referrals',
  async (request, reply) => {
    const body = request.body;
    const row = {
      id: randomUUID(), program_id: request.query.programId, affiliate_id: body.affiliateId, name: body.name, email: body.email,
      email_key: body.email.toLowerCase(), referred_user_external_id: body.referredUserExternalId, status: 'active', created_at: new Date().toISOString(),
    };
    await db.inTransaction(async (run) => {
      await run('insertReferral', [row.id, row.program_id, row.affiliate_id, row.name, row.email, row.email_key, row.referred_user_external_id, row.created_at, row.created_at]);
      await run('addReferredUser', [row.affiliate_id]);
    });
    return reply.code(201).send(row);
  },
);

// A lookup: one indexed select. A list: one indexed select of `limit` rows, newest first.
app.get<{ Querystring: ProgramQuery }>('/api/v1/affiliates', async (request, reply) => {
  const { programId, id, limit } = request.query;
  if (id !== undefined) {
    const [row] = await db.run('affiliate', [programId, id]);
    return row ? row : reply.code(404).send({ status: 404 });
  }
  return db.run('affiliates', [programId, Number(limit ?? 1000)]);
});

app.get<{ Querystring: ProgramQuery }>('/api/v1/promotional-codes', async (request, reply) => {
  const { programId, code = '' } = request.query;
  const [row] = await db.run('promotionalCode', [programId, code.toLowerCase()]);
  return row ? row : reply.code(404).send({ status: 404 });
});

app.get<{ Querystring: ProgramQuery }>('/api/v1/sales', async (request) => {
  const { programId, limit } = request.query;
  return db.run('sales', [programId, Number(limit ?? 1000)]);
});

await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
const stop = () => void app.close().then(() => db.close()).then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
