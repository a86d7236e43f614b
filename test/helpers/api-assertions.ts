import assert from 'node:assert/strict';
import type { ApiResponse } from './test-server.ts';

/**
 * Asserts an RFC 9457 problem body of the contract. A 422 `validation_failed` lists its
 * errors (and includes `pointer` when given); other problems carry no `errors`.
 * Returns the sorted, distinct pointers.
 */
export function assertProblem(res: ApiResponse, status: number, code: string, pointer?: string): string[] {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status} ${JSON.stringify(res.body)}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.type, 'about:blank');
  assert.equal(res.body.status, status);
  assert.equal(typeof res.body.title, 'string');
  assert.equal(typeof res.body.detail, 'string');
  assert.equal(res.body.code, code);
  assert.equal(typeof res.body.requestId, 'string');
  assert.ok(!('stack' in res.body), 'no stack trace');
  if (code !== 'validation_failed') {
    assert.equal(res.body.errors, undefined, 'only validation failures carry errors[]');
    return [];
  }
  const errors = res.body.errors as { pointer: string; detail: string }[];
  assert.ok(Array.isArray(errors) && errors.length > 0, 'validation failures list their errors');
  for (const e of errors) assert.ok(typeof e.pointer === 'string' && typeof e.detail === 'string');
  const pointers = [...new Set(errors.map((e) => e.pointer))].sort();
  if (pointer !== undefined) assert.ok(pointers.includes(pointer), `expected pointer ${pointer}, got ${pointers.join(', ')}`);
  return pointers;
}

/** Newest first: createdAt descending, then id descending. */
export function assertNewestFirst(items: { createdAt: string; id: string }[]): void {
  for (let i = 1; i < items.length; i++) {
    const a = items[i - 1]!;
    const b = items[i]!;
    assert.ok(a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.id > b.id), `item ${i} is out of order`);
  }
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
