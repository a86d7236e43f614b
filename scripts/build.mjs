#!/usr/bin/env node
// The production build: src/ compiled by tsc to dist/ (tsconfig.build.json), plus the static
// files the server serves from beside its code, then bundled with its dependencies into one
// file, dist/tandem.js, which bin/tandem runs. Run by `npm run build`, and by `prepare` on
// `npm ci`, so `npm ci && npm start` runs compiled JavaScript.
//
// Why one file: Node loads ~800 ES modules for the server otherwise (Kysely alone is 215),
// and each costs memory and start-up time of its own. Measured: importing the CLI took 0.57 s
// and 135 MB of peak RSS as separate files, 0.30 s and 119 MB as one (docs/performance.md).
import { spawnSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
rmSync('dist', { recursive: true, force: true });
const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
cpSync('src/web/assets', 'dist/web/assets', { recursive: true });

const { buildSync } = await import('esbuild');
buildSync({
  entryPoints: ['dist/cli/main.js'],
  outfile: 'dist/tandem.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
  // Left to load from node_modules: the native SQLite binding; pg's optional native driver;
  // Stripe's and nodemailer's packages, loaded on first use only; and the /docs packages, which
  // read their own files from beside their code.
  external: ['better-sqlite3', 'pg-native', 'stripe', 'nodemailer', '@fastify/swagger', '@fastify/swagger-ui'],
  // CommonJS dependencies inside an ES module still require Node's own modules.
  banner: { js: "import { createRequire as tandemCreateRequire } from 'node:module'; const require = tandemCreateRequire(import.meta.url);" },
});
