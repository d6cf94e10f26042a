// npm run build: compiles each AssemblyScript kernel family twice from one source (SIMD and scalar)
// and embeds the binaries (scripts/build-wasm.mjs), bundles the entries with esbuild into dist/
// (ESM, runs unchanged in Node 20 and Chromium) and emits .d.ts types with tsc.

import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { buildWasm, logWasmSizes, moduleEntryPoints } from './build-wasm.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
process.chdir(root); // asc reads ./asconfig.json
const started = Date.now();

const wasmSizes = await buildWasm();

rmSync('dist', { recursive: true, force: true });
await esbuild.build({
  entryPoints: {
    ...moduleEntryPoints(),
    index: 'src/index.ts',
    crypto: 'src/crypto.ts',
    node: 'src/node.ts',
    browser: 'src/browser.ts',
    cli: 'src/cli/index.ts',
  },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'neutral',
  target: ['es2022', 'node20', 'chrome120'],
  external: ['node:*'], // only the node entry's file store imports Node built-ins
  sourcemap: true,
  legalComments: 'none',
  logLevel: 'warning',
});
execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], { stdio: 'inherit' });

logWasmSizes(wasmSizes);
console.log(`dist/ built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
