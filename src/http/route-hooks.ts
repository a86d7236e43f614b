import type { FastifyInstance, RouteOptions } from 'fastify';

// Hooks that only some routes need are added to those routes when they are declared, instead
// of running for every request of a scope and returning at once for most: a hook costs a call
// (and an async one a promise) on every request it is attached to.

type RouteHookName = 'onRequest' | 'preValidation' | 'preHandler' | 'onSend' | 'onResponse';

/** Methods whose requests may carry a body. */
export const BODY_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function methodsOf(route: RouteOptions): string[] {
  return Array.isArray(route.method) ? route.method : [route.method];
}

/** The hooks added here, told apart from a route's own. */
const added = new WeakSet<object>();

/**
 * For every route of `scope` (declared after this call) answering one of `methods`: `hook`
 * runs as its `name` hook after the scope's and those added here before it, and before the
 * route's own — the order scope-wide hooks would have had.
 */
export function addRouteHook(scope: FastifyInstance, methods: ReadonlySet<string>, name: RouteHookName, hook: (...args: never[]) => unknown): void {
  added.add(hook);
  scope.addHook('onRoute', (route) => {
    if (!methodsOf(route).some((method) => methods.has(method))) return;
    const current = route[name] as unknown;
    const list: unknown[] = current === undefined ? [] : Array.isArray(current) ? [...current] : [current];
    let at = 0;
    while (at < list.length && added.has(list[at] as object)) at++;
    list.splice(at, 0, hook);
    (route as unknown as Record<string, unknown>)[name] = list;
  });
}
