// npm run kat: every known-answer vector file for the algorithms pqdb implements, run against the
// built dist/ on both WebAssembly builds, with a table per build (passed / failed / skipped and the
// reason for each skip). Exit code 1 on any failure or missing case.
//
//   npm run kat [-- --vectors DIR] [--flavor simd|scalar] [--slow]
//   node scripts/kat.mjs --bundle-only FILE     write the bundled suites to FILE and stop
//   node scripts/kat.mjs --bundled FILE         run suites bundled before (no esbuild needed: for a
//                                               runtime esbuild has no binary for, e.g. arm64 Node
//                                               under qemu on an x64 host)
// Vectors: --vectors DIR or $PQDB_VECTORS (an uncompressed tree), else the repository's compressed
// copy in test-data/vectors.

import { existsSync, rmSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { tmpdir } from 'node:os';
import * as pqdb from '../dist/crypto.js';
import { vectorSource } from './vectors.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const source = vectorSource(opt('--vectors') ?? (process.env.PQDB_VECTORS || undefined));
const vectors = source.root;
const flavors = opt('--flavor') ? [opt('--flavor')] : ['simd', 'scalar'];
const slow = args.includes('--slow') || process.env.SLOW === '1';

if (!existsSync(vectors)) {
  console.error(`vectors not found at ${vectors}: pass --vectors DIR or set PQDB_VECTORS`);
  process.exit(2);
}

const bundleOnly = opt('--bundle-only');
const prebuilt = opt('--bundled');
const bundled = bundleOnly ?? prebuilt ?? join(tmpdir(), `pqdb-kat-${process.pid}.mjs`);
if (prebuilt === undefined) {
  const esbuild = await import('esbuild');
  await esbuild.build({
    entryPoints: [join(repo, 'node-tests/cases/kat.ts')],
    bundle: true,
    format: 'esm',
    platform: 'node',
    outfile: bundled,
    logLevel: 'warning',
  });
  if (bundleOnly !== undefined) {
    console.log(`bundled the known-answer suites into ${bundled}`);
    process.exit(0);
  }
}
const { allKatSuites, katProblems } = await import(pathToFileURL(bundled).href);
if (prebuilt === undefined) rmSync(bundled, { force: true });

const load = async (p) => JSON.parse(source.read(p).toString('utf8'));
let problems = 0;
for (const flavor of flavors) {
  pqdb.setWasmFlavor(flavor);
  const started = performance.now();
  const suites = await allKatSuites(load, pqdb, slow);
  console.log(
    `\nKnown-answer tests — ${flavor} build (${((performance.now() - started) / 1000).toFixed(1)} s), vectors: ${vectors}`,
  );
  console.log(
    `${'file'.padEnd(54)} ${'passed'.padStart(7)} ${'failed'.padStart(7)} ${'skipped'.padStart(8)}  skip reason`,
  );
  for (const s of suites) {
    console.log(
      `${s.name.padEnd(54)} ${String(s.passed).padStart(7)} ${String(s.failures.length).padStart(7)} ${String(s.skipped).padStart(8)}  ${s.note ?? ''}`,
    );
  }
  const p = katProblems(suites);
  for (const line of p.slice(0, 50)) console.log(`  FAIL ${line}`);
  problems += p.length;
}
const total = problems === 0 ? 'all known-answer tests passed' : `${problems} problems`;
console.log(`\n${total}`);
process.exit(problems === 0 ? 0 : 1);
