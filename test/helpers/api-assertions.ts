import assert from 'node:assert/strict';
import type { ApiResponse } from './test-server.ts';

/** Asserts an RFC 9457 problem body of the contract; returns the sorted pointers of a 422. */
export function assertProblem(res: ApiResponse, status: number, code: string): string[] {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.type, 'about:blank');
  assert.equal(res.body.status, status);
  assert.equal(typeof res.body.title, 'string');
  assert.equal(typeof res.body.detail, 'string');
  assert.equal(res.body.code, code);
  assert.equal(typeof res.body.requestId, 'string');
  if (code !== 'validation_failed') return [];
  assert.ok(Array.isArray(res.body.errors) && res.body.errors.length > 0);
  return [...new Set((res.body.errors as { pointer: string }[]).map((e) => e.pointer))].sort();
}

/** The path (under /api/v1) of the `Link: rel="next"` header, or null on the last page. */
export function nextPath(res: ApiResponse): string | null {
  const header = res.headers.get('link');
  if (header === null) return null;
  const match = /^<([^>]+)>;\s*rel="next"$/.exec(header);
  assert.ok(match, header);
  const url = new URL(match[1]!);
  return url.pathname.slice('/api/v1'.length) + url.search;
}
