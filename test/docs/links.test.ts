// Every relative link of the README and the docs leads to a file of this repository, and every
// #anchor to a heading of its page: documentation read on GitHub or in a checkout never points
// outside the repository or at nothing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { testDialect } from '../helpers/test-database.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PAGES = ['README.md', 'ARCHITECTURE.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Markdown without its code blocks (their brackets are not links). */
const prose = (file: string) => readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');

/** GitHub's anchor of a heading: lowercase, punctuation dropped, spaces to hyphens; repeats get -1, -2. */
function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, heading] of prose(file).matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading!.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

describe('documentation links', { skip: testDialect !== 'sqlite' && 'runs in the SQLite leg only' }, () => {
  it('every relative link resolves to a file of the repository, and every anchor to a heading', () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      const path = join(ROOT, page);
      for (const [, target] of prose(path).matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!)) continue; // https:, mailto: — outside by intent
        const [file = '', anchor] = target!.split('#');
        const resolved = file === '' ? path : resolve(dirname(path), file);
        if (relative(ROOT, resolved).startsWith('..')) broken.push(`${page}: ${target} is outside the repository`);
        else if (!existsSync(resolved)) broken.push(`${page}: ${target} does not exist`);
        else if (anchor && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) broken.push(`${page}: ${target} names no heading`);
      }
    }
    assert.deepEqual(broken, []);
  });
});
