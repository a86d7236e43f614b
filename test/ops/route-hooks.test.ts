// Hooks added only to the routes that need them (src/http/route-hooks.ts) keep the order that
// scope-wide hooks had: the idempotency layer's claim must run before the hook that makes the
// handler's transaction store the answer, and both before the route's own.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { addRouteHook, BODY_METHODS } from '../../src/http/route-hooks.ts';

describe('addRouteHook', () => {
  it('runs added hooks in the order added, before the route’s own, and only on the methods named', async () => {
    const app = Fastify();
    const ran: string[] = [];
    const mark = (name: string) => (_request: FastifyRequest, _reply: FastifyReply, done: () => void) => {
      ran.push(name);
      done();
    };
    await app.register(async (scope) => {
      addRouteHook(scope, BODY_METHODS, 'preHandler', mark('first'));
      addRouteHook(scope, BODY_METHODS, 'preHandler', mark('second'));
      scope.post('/write', { preHandler: mark('own') }, async () => ({ ok: true }));
      scope.get('/read', async () => ({ ok: true }));
    });
    assert.equal((await app.inject({ method: 'POST', url: '/write', payload: {} })).statusCode, 200);
    assert.deepEqual(ran, ['first', 'second', 'own']);
    ran.length = 0;
    assert.equal((await app.inject({ method: 'GET', url: '/read' })).statusCode, 200);
    assert.deepEqual(ran, [], 'a GET route has none of them');
    await app.close();
  });
});
