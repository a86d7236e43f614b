import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
  // "Now" comes from the injected clock (src/domain/clock.ts), so tests can move time.
  {
    files: ['src/**'],
    ignores: ['src/domain/clock.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']", message: 'Take the time from the injected clock (AppServices.clock, ProgramContext.clock).' },
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'Take the time from the injected clock (AppServices.clock, ProgramContext.clock).' },
      ],
    },
  },
  { files: ['src/config.ts', 'test/**', 'bench/**', 'scripts/**'], rules: { 'no-restricted-properties': 'off' } },
  // The floors of the house (ARCHITECTURE.md): imports run downward only. Each block names what
  // its files may not import; a later block for the same files replaces an earlier one's list.
  ...importBoundaries(),
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

function importBoundaries() {
  const rule = (patterns) => ({ '@typescript-eslint/no-restricted-imports': ['error', { patterns }] });
  const layer = (names, message) => ({ group: names.map((name) => `**/${name}/**`), message });
  const notHttp = { group: ['**/http/**', '!**/http/schemas.ts'], message: 'Services and repositories take plain input: the route resolves HTTP matters (http/schemas.ts types excepted).' };
  const notWeb = layer(['web'], 'Modules never import the web side.');
  // A module reads another module's data through that module's service, or through ledger/
  // (the one place that writes counters); the listed files are the downward reads that remain.
  const otherRepository = {
    group: ['../*/*.repository.ts', '!../ledger/ledger.repository.ts'],
    message: "A module's repository is imported only from its own folder or ledger/; call the other module's service.",
  };
  return [
    { files: ['src/domain/**'], rules: rule([layer(['db', 'http', 'modules', 'web'], 'domain/ holds pure rules: it imports nothing but itself.')]) },
    { files: ['src/http/**'], rules: rule([layer(['modules', 'web'], 'http/ imports no module: app.ts passes what it needs.')]) },
    { files: ['src/modules/**/*.service.ts', 'src/modules/**/*.repository.ts'], rules: rule([notHttp, notWeb, otherRepository]) },
    {
      // Downward reads of another module's rows, kept with the reason (see the middle-wing review):
      // reports/ is a read model over four tables; the rest read one row to act on it.
      files: [
        'src/modules/reports/overview.service.ts',
        'src/modules/sales/sale.service.ts',
        'src/modules/referrals/referral.service.ts',
        'src/modules/referrals/referral.repository.ts',
        'src/modules/tracking/click.service.ts',
        'src/modules/affiliates/affiliate.service.ts',
        'src/modules/tokens/token.service.ts',
        'src/modules/ledger/*.service.ts',
        'src/modules/payouts/*.service.ts',
        'src/modules/portal/*.service.ts',
      ],
      rules: rule([notHttp, notWeb]),
    },
    // Pages render what services return (domain objects, never rows): no repository, not even its types.
    { files: ['src/web/**'], rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [{ group: ['**/*.repository.ts'], message: 'Pages go through services, never repositories.' }] }] } },
  ];
}
