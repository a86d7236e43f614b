// ARCHITECTURE.md states the order of src/modules/ in one sentence; eslint checks the code
// against MODULE_ORDER (module-order.mjs). The two must say the same, so the document cannot
// drift from what lint enforces. The exceptions lint lets through must stay true as well: each
// names files that exist and an import that is still there, or it would let a new one through
// unnoticed. Plain reads of files: no server, no database.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { testDialect } from '../helpers/test-database.ts';

interface ImportException {
  from: string | string[];
  to: string[];
  typeOnly?: boolean;
  reason: string;
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const { MODULE_ORDER, IMPORT_EXCEPTIONS } = (await import(pathToFileURL(join(ROOT, 'module-order.mjs')).href)) as {
  MODULE_ORDER: string[][];
  IMPORT_EXCEPTIONS: ImportException[];
};

/** The floors named by ARCHITECTURE.md's "Modules import downward in this order …: a, b → c → … ." sentence, bottom first. */
function documentedOrder(): string[][] {
  const text = readFileSync(join(ROOT, 'ARCHITECTURE.md'), 'utf8');
  const sentence = /^Modules import downward in this order[^:\n]*: ([^.\n]+)\./m.exec(text);
  assert.ok(sentence, 'ARCHITECTURE.md has the sentence "Modules import downward in this order (…): a, b → c → … ."');
  return sentence[1]!.split('→').map((floor) => floor.split(',').map((name) => name.replaceAll('`', '').trim()));
}

/** A floor as it reads in the sentence (its folders in alphabetical order). */
const asText = (floors: string[][]) => floors.map((floor) => [...floor].sort().join(', ')).join(' → ');

/** The files that `file` imports (static imports and re-exports), as paths from the repository's root. */
function importsOf(file: string): Set<string> {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const specifiers = [...text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'/gm)].map((match) => match[1]!);
  return new Set(specifiers.filter((specifier) => specifier.startsWith('.')).map((specifier) => relative(ROOT, resolve(ROOT, dirname(file), specifier))));
}

describe('the module order of ARCHITECTURE.md', { skip: testDialect !== 'sqlite' && 'runs in the SQLite leg only' }, () => {
  it('is MODULE_ORDER, the list eslint checks the imports against', () => {
    assert.equal(asText(documentedOrder()), asText(MODULE_ORDER), 'ARCHITECTURE.md (actual) against module-order.mjs (expected)');
  });

  it('places every folder of src/modules/ on exactly one floor', () => {
    const folders = readdirSync(join(ROOT, 'src/modules'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    assert.deepEqual([...MODULE_ORDER.flat()].sort(), folders.sort());
  });

  it('lets through only imports that are still there, each with its reason', () => {
    const stale: string[] = [];
    for (const exception of IMPORT_EXCEPTIONS) {
      assert.ok(exception.reason.trim().length > 0, `an exception without a reason: ${JSON.stringify(exception)}`);
      for (const from of [exception.from].flat()) {
        if (!existsSync(join(ROOT, from))) {
          stale.push(`${from} does not exist`);
          continue;
        }
        const imports = importsOf(from);
        for (const to of exception.to) if (!imports.has(to)) stale.push(`${from} no longer imports ${to}`);
      }
    }
    assert.deepEqual(stale, [], 'remove these from IMPORT_EXCEPTIONS (module-order.mjs)');
  });
});
