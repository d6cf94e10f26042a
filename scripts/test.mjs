// npm test: the formatting check, then every suite, in Node (vitest), in Chromium (Playwright), in
// Firefox ESR (browser-tests/firefox.mjs, puppeteer-core) and in WebKitGTK (browser-tests/webkit.mjs,
// WebKitWebDriver under Xvfb), both WebAssembly builds. Each runner prints its own closing line
// (`vitest: …`, `playwright: …`, `firefox: …`, `webkit: …`); the exit code is
// non-zero when the check or any runner failed. Run after `npm run build` (npm test does that first).
//
// `--quick` (npm run test:quick, the edit loop's tier) runs vitest alone on a subset: it leaves out
// the formatting check (npm run format:check), the Chromium suites (npm run test:browser) and the
// vitest files listed in vitest.config.ts (QUICK_SKIPS: packaging and type checks, the CLI and
// document suites, the long kill and fuzz loops, PostgreSQL, benchmark shapes).
// Every check still runs in `npm test`, which CI runs.

import { spawnSync } from 'node:child_process';

const quick = process.argv.includes('--quick');
const run = (args, env = process.env) => spawnSync(process.execPath, args, { stdio: 'inherit', env }).status ?? 1;

if (quick) {
  const node = run(['node_modules/vitest/vitest.mjs', 'run'], { ...process.env, PQDB_TEST_TIER: 'quick' });
  console.log('test:quick: formatting, Chromium and the files vitest.config.ts lists as QUICK_SKIPS not run');
  process.exit(node !== 0 ? 1 : 0);
}

const format = run(['node_modules/prettier/bin/prettier.cjs', '--check', '--log-level', 'warn', '.']);
console.log(
  format === 0 ? 'format: every file as prettier writes it' : 'format: files differ from prettier (npm run format)',
);
const node = run(['node_modules/vitest/vitest.mjs', 'run'], { ...process.env, PQDB_TEST_TIER: 'full' });
const browser = run(['node_modules/@playwright/test/cli.js', 'test']);
const firefox = run(['browser-tests/firefox.mjs']);
const webkit = run(['browser-tests/webkit.mjs']);
process.exit(format !== 0 || node !== 0 || browser !== 0 || firefox !== 0 || webkit !== 0 ? 1 : 0);
