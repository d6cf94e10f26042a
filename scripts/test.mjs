// npm test: the formatting check, then every suite, in Node (vitest) and in Chromium (Playwright),
// both WebAssembly builds. Each runner prints its own closing line (`vitest: …`, `playwright: …`);
// the exit code is non-zero when the check or either runner failed. Run after `npm run build` (npm
// test does that first).

import { spawnSync } from 'node:child_process';

const run = (args) => spawnSync(process.execPath, args, { stdio: 'inherit', env: process.env }).status ?? 1;

const format = run(['node_modules/prettier/bin/prettier.cjs', '--check', '--log-level', 'warn', '.']);
console.log(
  format === 0 ? 'format: every file as prettier writes it' : 'format: files differ from prettier (npm run format)',
);
const node = run(['node_modules/vitest/vitest.mjs', 'run']);
const browser = run(['node_modules/@playwright/test/cli.js', 'test']);
process.exit(format !== 0 || node !== 0 || browser !== 0 ? 1 : 0);
