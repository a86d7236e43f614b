#!/usr/bin/env node
// The production build: src/ compiled by tsc to dist/ (tsconfig.build.json), plus the static
// files the server serves from beside its code. Run by `npm run build`, and by `prepare` on
// `npm ci`, so `npm ci && npm start` runs compiled JavaScript.
import { spawnSync } from 'node:child_process';
import { cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
rmSync('dist', { recursive: true, force: true });
const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
cpSync('src/web/assets', 'dist/web/assets', { recursive: true });
