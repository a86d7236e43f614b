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
