// Where login sends a browser back to (safeNextPath, src/web/safe-next-path.ts): a path on this site
// as the browser would resolve it, or /dashboard — never another origin, however it is
// spelled. Pure rule: no server, no database.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { safeNextPath } from '../../src/web/safe-next-path.ts';

describe('safeNextPath: paths on this site', () => {
  it('keeps a path with its query and fragment', () => {
    assert.equal(safeNextPath('/dashboard/programs/1?tab=sales#top'), '/dashboard/programs/1?tab=sales#top');
    assert.equal(safeNextPath('/'), '/');
    assert.equal(safeNextPath('/login?next=//evil.example'), '/login?next=//evil.example', 'a // in the query is only text');
  });

  it('gives the path as the browser resolves it: dot segments removed, characters escaped', () => {
    assert.equal(safeNextPath('/a/./b/../c'), '/a/c');
    assert.equal(safeNextPath('/a b'), '/a%20b');
    assert.equal(safeNextPath('/ü'), '/%C3%BC');
    assert.equal(safeNextPath('/%2F%2Fevil.example'), '/%2F%2Fevil.example', 'escaped slashes stay escaped, a path segment');
  });

  it('takes up to 2,000 characters', () => {
    const longest = `/${'a'.repeat(1999)}`;
    assert.equal(safeNextPath(longest), longest);
    assert.equal(safeNextPath(`/${'a'.repeat(2000)}`), '/dashboard');
  });
});

describe('safeNextPath: anything that could leave the site', () => {
  it('refuses other origins and protocol-relative URLs', () => {
    for (const next of ['https://evil.example', 'http://evil.example/dashboard', '//evil.example', '///evil.example', 'javascript:alert(1)', 'dashboard', ' /x']) {
      assert.equal(safeNextPath(next), '/dashboard', next);
    }
  });

  it('refuses backslashes, which browsers read as slashes', () => {
    for (const next of ['/\\evil.example', '/\\/evil.example', '/a\\b']) assert.equal(safeNextPath(next), '/dashboard', next);
  });

  it('refuses control characters, which browsers drop (/<tab>/evil.example is //evil.example)', () => {
    for (const next of ['/\t/evil.example', '/\n/evil.example', '/\r/evil.example', '/a\tb', '/a\nb', '/x\u0000', '/x\u001f', '/x\u007f']) assert.equal(safeNextPath(next), '/dashboard', JSON.stringify(next));
  });

  it('refuses paths that normalise to //host', () => {
    for (const next of ['/.//evil.example', '/a/..//evil.example', '/a/../..//evil.example', '/././/evil.example']) assert.equal(safeNextPath(next), '/dashboard', next);
  });

  it('refuses what is not text', () => {
    for (const next of [undefined, null, 5, ['/x'], { toString: () => '/x' }]) assert.equal(safeNextPath(next), '/dashboard', String(next));
  });
});
