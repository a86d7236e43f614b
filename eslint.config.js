import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';
import { readdirSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import { IMPORT_EXCEPTIONS, MODULE_ORDER } from './module-order.mjs';

const CLOCK_SYNTAX = [
  { selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']", message: 'Take the time from the injected clock (AppServices.clock, ProgramContext.clock).' },
  { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'Take the time from the injected clock (AppServices.clock, ProgramContext.clock).' },
];

/** Each billing provider's folder under src/modules/billing/providers/ and the npm packages of its SDK. */
const PROVIDER_SDKS = {
  stripe: ['stripe'],
  paddle: ['@paddle/paddle-node-sdk'],
  lemonsqueezy: ['@lemonsqueezy/lemonsqueezy.js'],
  polar: ['@polar-sh/sdk'],
  chargebee: ['chargebee'],
};
const escapeRegex = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
/** The packages (and their subpaths) of `providers`' SDKs, as an import pattern: `^(stripe|…)(/…)?$`. */
const sdkRegex = (providers) => `^(${providers.flatMap((name) => PROVIDER_SDKS[name]).map(escapeRegex).join('|')})(\\/.*)?$`;
const SDK_MESSAGE = "A billing provider's SDK is imported only by its module (src/modules/billing/providers/<provider>/): the rest of Tandem speaks billing-provider.ts's actions.";
const sdkGroup = (providers) => ({ regex: sdkRegex(providers), message: SDK_MESSAGE });
const PROVIDER_SDK_IMPORT_EXPRESSION = { selector: `ImportExpression[source.value=/${sdkRegex(Object.keys(PROVIDER_SDKS))}/]`, message: SDK_MESSAGE };

export default tseslint.config(
  { ignores: ['node_modules', 'data', 'docs', 'dist', 'integrations/*/node_modules'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly', fetch: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration through src/config.ts only.' }],
    },
  },
  // "Now" comes from the injected clock (src/domain/clock.ts), so tests can move time; and no
  // billing provider's SDK is loaded outside its own module, even lazily (the rule below).
  {
    files: ['src/**'],
    ignores: ['src/domain/clock.ts'],
    rules: { 'no-restricted-syntax': ['error', ...CLOCK_SYNTAX, PROVIDER_SDK_IMPORT_EXPRESSION] },
  },
  { files: ['src/modules/billing/providers/**'], rules: { 'no-restricted-syntax': ['error', ...CLOCK_SYNTAX] } },
  // Only a billing provider's module (src/modules/billing/providers/<name>/) imports its SDK or
  // reads its wire: everything else speaks the neutral actions of billing-provider.ts (issue 32).
  { files: ['src/**'], ignores: ['src/modules/billing/providers/*/**'], rules: { 'no-restricted-imports': ['error', { patterns: [sdkGroup(Object.keys(PROVIDER_SDKS))] }] } },
  ...Object.keys(PROVIDER_SDKS).map((name) => ({
    files: [`src/modules/billing/providers/${name}/**`],
    rules: { 'no-restricted-imports': ['error', { patterns: [sdkGroup(Object.keys(PROVIDER_SDKS).filter((other) => other !== name))] }] },
  })),
  { files: ['src/config.ts', 'test/**', 'bench/**', 'scripts/**'], rules: { 'no-restricted-properties': 'off' } },
  // The floors of the house and the module order (ARCHITECTURE.md, module-order.mjs): imports
  // run downward only, checked on every file of src/.
  ...importBoundaries(),
  // No import circles in src/, inside a folder either (the rules above see only across folders).
  // import-x follows value imports; `import type` is erased at run time and not followed.
  {
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js', '.mjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createNodeResolver()],
    },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  // The tracking script merchants include: plain browser JavaScript with the browser's globals. It
  // runs on merchants' pages, where the time is the visitor's, not an injected clock.
  {
    files: ['src/web/assets/tracker.js'],
    languageOptions: { sourceType: 'script', globals: { window: 'readonly', document: 'readonly', location: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', CustomEvent: 'readonly', AbortController: 'readonly', Uint8Array: 'readonly' } },
    rules: { '@typescript-eslint/no-unused-vars': ['error', { caughtErrors: 'none' }], 'no-restricted-syntax': 'off' },
  },
  // Tests read arbitrary JSON bodies; typing every one would add noise, not safety.
  { files: ['test/**'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },
);

/**
 * The import rules, one `no-restricted-imports` list per folder, for every file of it:
 * - the floors of the house: domain/ imports nothing of db/, http/, modules/ or web/; db/ nothing
 *   of http/, modules/ or web/; http/ no module and no page; modules/ no page; nothing below them
 *   imports app.ts, server.ts, workers.ts or cli/;
 * - src/modules/ by MODULE_ORDER: a module imports only modules on floors below its own, and
 *   another module's repository only from ledger/ (or ledger's repository, from anywhere);
 * - services and repositories take plain input: nothing of http/ but its shared schemas;
 * - pages (web/) import no repository;
 * - the imports in IMPORT_EXCEPTIONS, each with its reason, are let through for their file alone.
 * A later block for the same file replaces an earlier one's list, so each block carries the
 * whole list of its files.
 */
function importBoundaries() {
  const modulesDir = new URL('./src/modules/', import.meta.url);
  const folders = readdirSync(modulesDir, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  const floorOf = new Map(MODULE_ORDER.flatMap((floor, index) => floor.map((name) => [name, index])));
  const unplaced = folders.filter((name) => !floorOf.has(name));
  const absent = [...floorOf.keys()].filter((name) => !folders.includes(name));
  if (unplaced.length > 0 || absent.length > 0 || floorOf.size !== MODULE_ORDER.flat().length) {
    throw new Error(`module-order.mjs: every folder of src/modules/ on exactly one floor (not placed: ${unplaced.join(', ') || 'none'}; not a folder: ${absent.join(', ') || 'none'})`);
  }

  const layer = (names, message) => ({ group: names.map((name) => `**/${name}/**`), message });
  const TOP = { group: ['**/app.ts', '**/server.ts', '**/workers.ts', '**/cli/**'], message: 'app.ts, server.ts, workers.ts and cli/ are the top of the house: nothing below them imports them.' };
  const notHttp = { group: ['**/http/**', '!**/http/schemas.ts'], message: 'Services and repositories take plain input: the route resolves HTTP matters (http/schemas.ts types excepted).' };
  const noRepository = (message) => ({ group: ['**/*.repository.ts'], message });
  const floorName = (index) => `floor ${index + 1} of ${MODULE_ORDER.length}`;

  /** The whole list for a file of `area` (domain, db, http, web, or modules/<name>); `role`: service or repository. */
  function restrictions(area, role) {
    if (area === 'domain') return [layer(['db', 'http', 'modules', 'web'], 'domain/ holds pure rules: it imports nothing of db/, http/, modules/ or web/.'), TOP];
    if (area === 'db') return [layer(['http', 'modules', 'web'], 'db/ is below http/ and the modules: it imports none of them.'), TOP];
    if (area === 'http') return [layer(['modules', 'web'], 'http/ imports no module and no page: app.ts passes what it needs.'), TOP];
    if (area === 'web') return [noRepository('Pages go through services, never repositories.'), TOP];
    const name = area.slice('modules/'.length);
    const floor = floorOf.get(name);
    const above = [...floorOf].filter(([other, otherFloor]) => other !== name && otherFloor >= floor);
    return [
      layer(['web'], 'Modules never import the web side.'),
      TOP,
      ...above.map(([other, otherFloor]) =>
        layer([other], `modules/${name} (${floorName(floor)}) imports only modules on lower floors; ${other} is on ${floorName(otherFloor)} (MODULE_ORDER, module-order.mjs).`),
      ),
      ...(name === 'ledger'
        ? []
        : [{ group: ['**/*.repository.ts', '!./*.repository.ts', '!**/ledger/ledger.repository.ts'], message: `A module's repository is imported only from its own folder or ledger/: call the other module's service.` }]),
      ...(role ? [notHttp] : []),
    ];
  }

  const rule = (groups) => ({ '@typescript-eslint/no-restricted-imports': ['error', { patterns: groups }] });
  const blocks = [
    ...['domain', 'db', 'http', 'web'].map((area) => ({ files: [`src/${area}/**`], rules: rule(restrictions(area)) })),
    ...folders.flatMap((name) => [
      { files: [`src/modules/${name}/**`], rules: rule(restrictions(`modules/${name}`)) },
      { files: [`src/modules/${name}/**/*.service.ts`, `src/modules/${name}/**/*.repository.ts`], rules: rule(restrictions(`modules/${name}`, 'service or repository')) },
    ]),
  ];

  // An excepted import stays refused for every other file, and for its file every other import
  // stays checked: the exception re-allows its targets in each group (a `!` pattern), and a
  // types-only exception keeps the target in a group of its own that allows type imports.
  const exceptionsOf = new Map();
  for (const exception of IMPORT_EXCEPTIONS) {
    for (const from of [exception.from].flat()) exceptionsOf.set(from, [...(exceptionsOf.get(from) ?? []), exception]);
  }
  for (const [from, exceptions] of exceptionsOf) {
    const area = /^src\/(modules\/[^/]+|domain|db|http|web)\//.exec(from)?.[1];
    if (!area) throw new Error(`module-order.mjs: an exception from ${from}, outside the folders the import rules cover`);
    const role = /\.(service|repository)\.ts$/.test(from) ? 'service or repository' : undefined;
    const specifier = (to) => {
      const path = relative(dirname(from), to);
      return path.startsWith('.') ? path : `./${path}`;
    };
    const allowed = exceptions.flatMap((exception) => exception.to.map(specifier));
    const groups = restrictions(area, role).map((group) => ({ ...group, group: [...group.group, ...allowed.map((path) => `!${path}`)] }));
    for (const exception of exceptions.filter((exception) => exception.typeOnly)) {
      groups.push({ group: exception.to.map(specifier), allowTypeImports: true, message: `Only the types of this file may be imported here (IMPORT_EXCEPTIONS: ${exception.reason}).` });
    }
    blocks.push({ files: [from], rules: rule(groups) });
  }
  return blocks;
}
