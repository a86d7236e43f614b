import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { addRouteHook } from './route-hooks.ts';
import { toIso, type Clock } from '../domain/clock.ts';
import { isUniqueViolation } from '../db/errors.ts';
import { withBeforeCommit, type Db, type Tx } from '../db/transaction.ts';
import { ApiError } from '../domain/errors.ts';

// Idempotency-Key on POST and PUT (Stripe's model, made crash-safe as Brandur Leach describes).
// The first request with a key claims it (a unique insert, so this holds across processes).
// Its response is stored in the same transaction as the work it answers, so a request that
// committed is always replayable, even if its process died before answering. A request that
// fails before committing stores its 4xx afterwards; a 5xx releases the key. A key still
// "running" after the lease belongs to a request that died before committing: the next retry
// takes it over and does the work (once). While a request genuinely runs, retries get 409;
// the key with another request, 422. Responses are kept 24 hours.

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: { key: string; stored: string | null } | null;
  }
  interface FastifyContextConfig {
    /** Top-level fields of the answer stored as null for a replay: secrets shown once (a webhook's signing secret). */
    idempotencyOmits?: string[];
  }
}

/** How long a stored Idempotency-Key answer is replayed (docs/api.md); the worker's purge deletes older ones. */
export const IDEMPOTENCY_KEPT_MS = 24 * 60 * 60 * 1000;

const MAX_KEY_LENGTH = 255;
const JSON_TYPE = 'application/json; charset=utf-8';

type Claim =
  | { kind: 'claimed' }
  | { kind: 'running' }
  | { kind: 'mismatch' }
  | { kind: 'replay'; status: number; type: string; body: string };

async function claimKey(db: Db, clock: Clock, programId: string, key: string, requestHash: string, leaseMs: number): Promise<Claim> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const nowMs = clock().getTime();
    const now = new Date(nowMs).toISOString();
    try {
      await db
        .insertInto('idempotency_keys')
        .values({ program_id: programId, key, request_hash: requestHash, state: 'running', response_status: null, response_type: null, response_body: null, created_at: now, locked_at: now })
        .execute();
      return { kind: 'claimed' };
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
    }
    const row = await db.selectFrom('idempotency_keys').selectAll().where('program_id', '=', programId).where('key', '=', key).executeTakeFirst();
    if (!row) continue; // released or expired meanwhile: claim again
    const createdAt = toIso(row.created_at);
    if (Date.parse(createdAt) < nowMs - IDEMPOTENCY_KEPT_MS) {
      await db.deleteFrom('idempotency_keys').where('program_id', '=', programId).where('key', '=', key).where('created_at', '=', createdAt).execute();
      continue;
    }
    if (row.request_hash !== requestHash) return { kind: 'mismatch' };
    if (row.state === 'done') return { kind: 'replay', status: row.response_status!, type: row.response_type!, body: row.response_body! };
    const lockedAt = toIso(row.locked_at ?? row.created_at);
    if (Date.parse(lockedAt) > nowMs - leaseMs) return { kind: 'running' };
    // Its request died before committing (a committed one would be "done"): take the key over,
    // conditionally, so that of several retries exactly one runs.
    const taken = await db
      .updateTable('idempotency_keys')
      .set({ locked_at: now })
      .where('program_id', '=', programId)
      .where('key', '=', key)
      .where('state', '=', 'running')
      .where((eb) => (row.locked_at === null || row.locked_at === undefined ? eb('locked_at', 'is', null) : eb('locked_at', '=', lockedAt)))
      .executeTakeFirst();
    if (taken.numUpdatedRows > 0n) return { kind: 'claimed' };
  }
  return { kind: 'running' };
}

/** The answer as it is kept for replays: the route's shown-once fields set to null. */
function storedForm(body: string, omits: string[] | undefined): string {
  if (omits === undefined) return body;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return body;
  const record = parsed as Record<string, unknown>;
  for (const field of omits) if (field in record) record[field] = null;
  return JSON.stringify(record);
}

function storeResponse(db: Db | Tx, programId: string, key: string, status: number, type: string, body: string) {
  return db
    .updateTable('idempotency_keys')
    .set({ state: 'done', response_status: status, response_type: type, response_body: body })
    .where('program_id', '=', programId)
    .where('key', '=', key)
    .execute();
}

/** JSON with object keys sorted at every level: the same body whatever order its fields came in. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).filter((key) => record[key] !== undefined).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * What identifies "the same request" for a key: method, route and the parsed body, its fields
 * in any order (a PUT's target may come in the query, merged into the body, or in the body).
 */
export function idempotencyRequestHash(method: string, route: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${route}\n${canonicalJson(body)}`).digest('hex');
}

/** The success status of a write route: 201 for POST (every POST of the API creates), 200 for PUT. */
function successStatus(reply: FastifyReply): number {
  return reply.request.method === 'POST' ? 201 : 200;
}

/** The methods an Idempotency-Key applies to: the API's writes that create or change. */
const KEYED_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT']);

export function supportIdempotencyKeys(scope: FastifyInstance, db: Db, leaseMs: number): void {
  scope.decorateRequest('idempotency', null);

  // Only POST and PUT routes get these hooks (route-hooks.ts): reads never pay for them.
  addRouteHook(scope, KEYED_METHODS, 'preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    const header = request.headers['idempotency-key'];
    if (header === undefined) return;
    const key = Array.isArray(header) ? header[0]! : header;
    if (key.length === 0 || key.length > MAX_KEY_LENGTH) {
      throw new ApiError('validation_failed', `The Idempotency-Key header must be 1 to ${MAX_KEY_LENGTH} characters.`);
    }
    const requestHash = idempotencyRequestHash(request.method, request.routeOptions.url ?? request.url, request.body);
    const claim = await claimKey(db, request.auth.program.clock, request.auth.program.id, key, requestHash, leaseMs);
    switch (claim.kind) {
      case 'claimed':
        request.idempotency = { key, stored: null };
        return;
      case 'running':
        throw new ApiError('idempotency_conflict', 'A request with this Idempotency-Key is still being processed; retry later.');
      case 'mismatch':
        throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used with a different request; use a new key.');
      case 'replay':
        return reply.code(claim.status).header('content-type', claim.type).header('idempotent-replayed', 'true').send(claim.body);
    }
  });

  // For a claimed key, the handler runs inside withBeforeCommit, so every transaction it opens
  // stores the response in that transaction. Callback style, synchronous: `done` continues the
  // lifecycle (the handler) within the hook's async context.
  addRouteHook(scope, KEYED_METHODS, 'preHandler', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const state = request.idempotency;
    if (state === null) return done();
    const programId = request.auth.program.id;
    const beforeCommit = async (tx: Tx, result: unknown) => {
      reply.code(successStatus(reply));
      let body: string;
      try {
        body = String(reply.serialize(result));
      } catch {
        // This transaction's result is not the route's answer (a step of larger work): the
        // answer is stored when it is sent (onSend, below).
        return;
      }
      state.stored = body;
      await storeResponse(tx, programId, state.key, reply.statusCode, JSON_TYPE, storedForm(body, request.routeOptions.config.idempotencyOmits));
    };
    withBeforeCommit(beforeCommit, () => done());
  });

  // What the transaction did not store: a client error (nothing committed), a response other
  // than the transaction's result, or a route without a transaction. A 5xx releases the key,
  // unless its work committed (state done): a retry must then replay, not do it again.
  addRouteHook(scope, KEYED_METHODS, 'onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const state = request.idempotency;
    if (state === null) return payload;
    request.idempotency = null;
    const programId = request.auth.program.id;
    if (reply.statusCode >= 500 || typeof payload !== 'string') {
      await db.deleteFrom('idempotency_keys').where('program_id', '=', programId).where('key', '=', state.key).where('state', '=', 'running').execute();
    } else if (payload !== state.stored || reply.statusCode !== successStatus(reply)) {
      const stored = storedForm(payload, request.routeOptions.config.idempotencyOmits);
      await storeResponse(db, programId, state.key, reply.statusCode, String(reply.getHeader('content-type') ?? JSON_TYPE), stored);
    }
    return payload;
  });
}
