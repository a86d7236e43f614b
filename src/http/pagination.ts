import { sql, type SelectQueryBuilder } from 'kysely';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { invalidField } from './errors.ts';
import { toIso } from '../domain/clock.ts';

// Lists are newest first and paged by keyset over (created_at, id), so a page costs the
// same at row 10 as at row 10 million. The cursor is the last row's position, opaque to clients.

export interface PageRequest {
  limit: number;
  after?: { createdAt: string; id: string | number };
  createdAfter?: string;
}

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

/** Adds the keyset conditions, order and limit (one extra row tells whether a next page exists). */
export function pageQuery<DB, TB extends keyof DB, O>(qb: SelectQueryBuilder<DB, TB, O>, table: string, page: PageRequest) {
  const createdAt = sql.ref(`${table}.created_at`);
  const id = sql.ref(`${table}.id`);
  let q = qb;
  if (page.createdAfter !== undefined) q = q.where(sql<boolean>`${createdAt} > ${page.createdAfter}`);
  if (page.after) q = q.where(sql<boolean>`(${createdAt}, ${id}) < (${page.after.createdAt}, ${page.after.id})`);
  return q.orderBy(sql`${createdAt} desc, ${id} desc`).limit(page.limit + 1);
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
  const url = new URL(request.url, siteUrl);
  url.searchParams.set('cursor', encodeCursor(items[items.length - 1]!));
  reply.header('link', `<${url.toString()}>; rel="next"`);
  return items;
}
