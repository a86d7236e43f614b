import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { nowIso, toIso } from '../domain/clock.ts';
import { isUniqueViolation } from '../db/errors.ts';
import type { Db } from '../db/transaction.ts';
import { ApiError } from './errors.ts';

// Idempotency-Key on POST and PUT (Stripe's model). The first request with a key claims it;
// its response (status < 500) is stored and replayed for retries with the same key and body
// for 24 hours. A retry while the first still runs gets 409; the key with another body, 422.
// A 5xx releases the key so the retry runs again. Claims are a unique insert, so this holds
// across any number of processes.

declare module 'fastify' {
  interface FastifyRequest {
    idempotencyKey: string | null;
  }
}

const KEPT_MS = 24 * 60 * 60 * 1000;
const MAX_KEY_LENGTH = 255;

type Claim =
  | { kind: 'claimed' }
  | { kind: 'running' }
  | { kind: 'mismatch' }
  | { kind: 'replay'; status: number; type: string; body: string };

async function claimKey(db: Db, programId: string, key: string, requestHash: string): Promise<Claim> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await db
        .insertInto('idempotency_keys')
        .values({ program_id: programId, key, request_hash: requestHash, state: 'running', response_status: null, response_type: null, response_body: null, created_at: nowIso() })
        .execute();
      return { kind: 'claimed' };
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
    }
    const row = await db.selectFrom('idempotency_keys').selectAll().where('program_id', '=', programId).where('key', '=', key).executeTakeFirst();
    if (!row) continue; // released or expired meanwhile: claim again
    const createdAt = toIso(row.created_at);
    if (Date.parse(createdAt) < Date.now() - KEPT_MS) {
      await db.deleteFrom('idempotency_keys').where('program_id', '=', programId).where('key', '=', key).where('created_at', '=', createdAt).execute();
      continue;
    }
    if (row.request_hash !== requestHash) return { kind: 'mismatch' };
    if (row.state === 'running') return { kind: 'running' };
    return { kind: 'replay', status: row.response_status!, type: row.response_type!, body: row.response_body! };
  }
  return { kind: 'running' };
}

/** Deletes expired keys now and then, so the table stays small without a scheduler. */
async function purgeExpiredKeys(db: Db): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('created_at', '<', new Date(Date.now() - KEPT_MS).toISOString()).execute();
}

/** What identifies "the same request" for a key: method, route and the parsed body. */
export function idempotencyRequestHash(method: string, route: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${route}\n${JSON.stringify(body ?? null)}`).digest('hex');
}

export function supportIdempotencyKeys(scope: FastifyInstance, db: Db): void {
  scope.decorateRequest('idempotencyKey', null);

  scope.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST' && request.method !== 'PUT') return;
    const header = request.headers['idempotency-key'];
    if (header === undefined) return;
    const key = Array.isArray(header) ? header[0]! : header;
    if (key.length === 0 || key.length > MAX_KEY_LENGTH) {
      throw new ApiError('validation_failed', `The Idempotency-Key header must be 1 to ${MAX_KEY_LENGTH} characters.`);
    }
    const requestHash = idempotencyRequestHash(request.method, request.routeOptions.url ?? request.url, request.body);
    if (Math.random() < 0.01) await purgeExpiredKeys(db);
    const claim = await claimKey(db, request.auth.program.id, key, requestHash);
    switch (claim.kind) {
      case 'claimed':
        request.idempotencyKey = key;
        return;
      case 'running':
        throw new ApiError('idempotency_conflict', 'A request with this Idempotency-Key is still being processed; retry later.');
      case 'mismatch':
        throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with a different request; use a new key.');
      case 'replay':
        return reply.code(claim.status).header('content-type', claim.type).header('idempotent-replayed', 'true').send(claim.body);
    }
  });

  scope.addHook('onSend', async (request, reply, payload) => {
    const key = request.idempotencyKey;
    if (key === null) return payload;
    request.idempotencyKey = null;
    const programId = request.auth.program.id;
    if (reply.statusCode >= 500 || typeof payload !== 'string') {
      await db.deleteFrom('idempotency_keys').where('program_id', '=', programId).where('key', '=', key).execute();
    } else {
      const type = String(reply.getHeader('content-type') ?? 'application/json');
      await db
        .updateTable('idempotency_keys')
        .set({ state: 'done', response_status: reply.statusCode, response_type: type, response_body: payload })
        .where('program_id', '=', programId)
        .where('key', '=', key)
        .execute();
    }
    return payload;
  });
}
