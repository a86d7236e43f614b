import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.ts';
import type { Page, PagePosition, PageRequest } from '../db/keyset.ts';

// The HTTP side of lists (the query side is db/keyset.ts): the `limit`/`cursor`/`createdAfter`
// query parameters, and the `Link: rel="next"` header made from a page's `next`. A cursor is the
// last row's position, signed with the instance's cursor key and bound to the list it came from
// (the program and the path), so a forged, tampered or foreign cursor is a 400 invalid_cursor,
// never a query.

export interface PageQuery {
  limit?: number;
  cursor?: string;
  createdAfter?: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Signs list cursors; the same on every process of the instance (db/instance-keys.ts). */
    cursorKey: Buffer;
  }
}

/** What a cursor is bound to: the token's program (API) and the list's path (which names the program on the dashboard). */
function listOf(request: FastifyRequest): string {
  const programId = (request as { auth?: { program?: { id?: string } } }).auth?.program?.id ?? '';
  return `${programId}|${new URL(request.url, 'http://request.invalid').pathname}`;
}

function signature(request: FastifyRequest, payload: string): Buffer {
  return createHmac('sha256', request.server.cursorKey).update(`${listOf(request)}\n${payload}`).digest().subarray(0, 16);
}

const invalidCursor = () => new ApiError('invalid_cursor', 'The cursor is not one this list issued; start again without it.');

/** The page a list request asks for; `query` defaults to the request's own. */
export function parsePageRequest(request: FastifyRequest, query: PageQuery = request.query as PageQuery): PageRequest {
  const page: PageRequest = { limit: query.limit ?? 1000 };
  if (query.createdAfter !== undefined) page.createdAfter = new Date(query.createdAfter).toISOString();
  if (query.cursor !== undefined) {
    const [payload, mac] = query.cursor.split('.');
    if (!payload || !mac || !/^[A-Za-z0-9_-]+$/.test(payload + mac)) throw invalidCursor();
    const given = Buffer.from(mac, 'base64url');
    const expected = signature(request, payload);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalidCursor();
    // Signed by us for this list: the position is one we wrote.
    const [createdAt, id, value] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as [string, string | number, number | undefined];
    page.after = value === undefined ? { createdAt, id } : { createdAt, id, value };
  }
  return page;
}

/** The cursor of the page that starts after `position` (a page's `next`), for this request's list. */
export function encodeCursor(request: FastifyRequest, position: PagePosition): string {
  const { createdAt, id, value } = position;
  const payload = Buffer.from(JSON.stringify(value === undefined ? [createdAt, id] : [createdAt, id, value])).toString('base64url');
  return `${payload}.${signature(request, payload).toString('base64url')}`;
}

/** When more follow the page (a list's, or a file's), sets `Link: <…>; rel="next"` with the cursor of its `next`; returns the page. */
export function linkNextPage<P extends { next?: PagePosition }>(request: FastifyRequest, reply: FastifyReply, siteUrl: string, page: P): P {
  if (page.next !== undefined) setNextLink(request, reply, siteUrl, 'cursor', encodeCursor(request, page.next));
  return page;
}

/** A list page's items, its `Link` header set (linkNextPage). */
export function finishPage<T>(request: FastifyRequest, reply: FastifyReply, siteUrl: string, page: Page<T>): T[] {
  return linkNextPage(request, reply, siteUrl, page).items;
}

/**
 * `Link: <…>; rel="next"`: this request's path and query on SITE_URL's origin, with `param`
 * set to `value`. Only the path and query are taken from the request: an absolute-form request
 * line (`GET http://elsewhere/api/v1/… HTTP/1.1`) must not choose where the next page points.
 */
export function setNextLink(request: FastifyRequest, reply: FastifyReply, siteUrl: string, param: string, value: string): void {
  const { pathname, search } = new URL(request.url, 'http://request.invalid');
  const url = new URL(`${pathname}${search}`, siteUrl);
  url.searchParams.set(param, value);
  reply.header('link', `<${url.toString()}>; rel="next"`);
}
