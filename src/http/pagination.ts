import type { FastifyReply, FastifyRequest } from 'fastify';
import { invalidField } from '../domain/errors.ts';
import { toIso } from '../domain/clock.ts';
import type { PageRequest } from '../db/keyset.ts';

// The HTTP side of lists (the query side is db/keyset.ts): the `limit`/`cursor`/`createdAfter`
// query parameters, and the `Link: rel="next"` header. The cursor is the last row's position,
// opaque to clients.

export function parsePageRequest(query: { limit?: number; cursor?: string; createdAfter?: string }): PageRequest {
  const page: PageRequest = { limit: query.limit ?? 1000 };
  if (query.createdAfter !== undefined) page.createdAfter = new Date(query.createdAfter).toISOString();
  if (query.cursor !== undefined) {
    try {
      const [createdAt, id] = JSON.parse(Buffer.from(query.cursor, 'base64url').toString('utf8')) as [unknown, unknown];
      if (typeof createdAt !== 'string' || Number.isNaN(Date.parse(createdAt))) throw new Error('createdAt');
      if (typeof id !== 'string' && typeof id !== 'number') throw new Error('id');
      page.after = { createdAt, id };
    } catch {
      throw invalidField('#/cursor', 'is not a cursor this service issued');
    }
  }
  return page;
}

/** The cursor of the page that starts after `row`. */
export function encodeCursor(row: { created_at: string | Date; id: string | number }): string {
  return Buffer.from(JSON.stringify([toIso(row.created_at), row.id])).toString('base64url');
}

/** Trims the extra row and, when more rows exist, sets `Link: <…>; rel="next"`. */
export function finishPage<R extends { created_at: string | Date; id: string | number }>(
  request: FastifyRequest,
  reply: FastifyReply,
  siteUrl: string,
  rows: R[],
  page: PageRequest,
): R[] {
  if (rows.length <= page.limit) return rows;
  const items = rows.slice(0, page.limit);
  // SITE_URL's origin, the route's path and the query only: an absolute-form request line
  // (`GET http://elsewhere/api/v1/… HTTP/1.1`) must not choose where the next page points.
  const { pathname, search } = new URL(request.url, 'http://request.invalid');
  const url = new URL(`${pathname}${search}`, siteUrl);
  url.searchParams.set('cursor', encodeCursor(items[items.length - 1]!));
  reply.header('link', `<${url.toString()}>; rel="next"`);
  return items;
}
