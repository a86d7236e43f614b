import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import { openDatabase } from '../src/db/database.ts';

// The benchmark's baseline: a bare Fastify server over the same SQLite file, opened by the
// same code (so the same pragmas), doing only the one comparable operation per endpoint —
// no auth, no validation, no response schema. Its speed is the physical limit of the stack
// (see ../shared/BENCHMARKS.md); Tandem's gap to it is Tandem's overhead.
// The program is named by a `programId` query parameter instead of a bearer token.
//
// Run by bench/run.ts: PORT=… DATABASE_URL=sqlite:… node --import tsx bench/baseline-server.ts

const { db } = openDatabase({ databaseUrl: process.env.DATABASE_URL ?? '' });
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
    const row = {
      program_id: request.query.programId, affiliate_id: affiliateId, referral_id: referralId, link_id: null, promotional_code_id: null,
      external_id: externalId, external_invoice_id: '', name: '', email: '', total_earned: totalMinor, commission_rate: 200_000, commission,
      created_at: new Date().toISOString(),
    };
    const id = await db.transaction().execute(async (tx) => {
      const inserted = await tx.insertInto('sales').values(row).returning('id').executeTakeFirstOrThrow();
      await tx
        .updateTable('affiliates')
        .set((eb) => ({ total_commission_earned: eb('total_commission_earned', '+', commission) }))
        .where('id', '=', affiliateId)
        .execute();
      return inserted.id;
    });
    return reply.code(201).send({ ...row, id });
  },
);

app.post<{ Querystring: ProgramQuery; Body: { name: string; email: string; referredUserExternalId: string; affiliateId: string } }>(
  '/api/v1/referrals',
  async (request, reply) => {
    const body = request.body;
    const now = new Date().toISOString();
    const row = {
      id: randomUUID(), program_id: request.query.programId, affiliate_id: body.affiliateId, link_id: null, promotional_code_id: null,
      name: body.name, email: body.email, email_key: body.email.toLowerCase(), referred_user_external_id: body.referredUserExternalId,
      plan: '', status: 'active' as const, created_at: now, updated_at: now,
    };
    await db.transaction().execute(async (tx) => {
      await tx.insertInto('referrals').values(row).execute();
      await tx
        .updateTable('affiliates')
        .set((eb) => ({ number_of_referred_users: eb('number_of_referred_users', '+', 1) }))
        .where('id', '=', body.affiliateId)
        .execute();
    });
    return reply.code(201).send(row);
  },
);

// A lookup: one indexed select. A list: one indexed select of `limit` rows, newest first.
app.get<{ Querystring: ProgramQuery }>('/api/v1/affiliates', async (request, reply) => {
  const { programId, id, limit } = request.query;
  const q = db.selectFrom('affiliates').selectAll().where('program_id', '=', programId);
  if (id !== undefined) {
    const row = await q.where('id', '=', id).executeTakeFirst();
    return row ? row : reply.code(404).send({ status: 404 });
  }
  return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(Number(limit ?? 1000)).execute();
});

app.get<{ Querystring: ProgramQuery }>('/api/v1/promotional-codes', async (request, reply) => {
  const { programId, code = '' } = request.query;
  const row = await db
    .selectFrom('promotional_codes')
    .selectAll()
    .where('program_id', '=', programId)
    .where('code_key', '=', code.toLowerCase())
    .executeTakeFirst();
  return row ? row : reply.code(404).send({ status: 404 });
});

app.get<{ Querystring: ProgramQuery }>('/api/v1/sales', async (request) => {
  const { programId, limit } = request.query;
  return db
    .selectFrom('sales')
    .selectAll()
    .where('program_id', '=', programId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(Number(limit ?? 1000))
    .execute();
});

await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' });
const stop = () => void app.close().then(() => db.destroy()).then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
