// npm run build: compiles each AssemblyScript kernel family twice from one source (SIMD and scalar)
// and embeds the binaries (scripts/build-wasm.mjs), bundles the entries with esbuild into dist/
// (ESM, runs unchanged in Node 20 and Chromium) and emits .d.ts types with tsc.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
finishPackage();

logWasmSizes(wasmSizes);
console.log(`dist/ built in ${((Date.now() - started) / 1000).toFixed(1)} s`);

// What the published package needs beyond the bundles: declaration imports that resolve under
// moduleResolution node16/nodenext (tsc keeps the sources' extensionless specifiers, which only
// bundler resolution accepts), and the notices of the third-party code bundled into dist/.
function finishPackage() {
  const types = 'dist/types';
  for (const file of readdirSync(types, { recursive: true })) {
    if (!file.endsWith('.d.ts')) continue;
    const path = join(types, file);
    const text = readFileSync(path, 'utf8').replace(/((?:from|import\()\s*')(\.{1,2}\/[^']*)'/g, (_, head, spec) => {
      const base = join(dirname(path), spec);
      if (existsSync(`${base}.d.ts`)) return `${head}${spec}.js'`;
      if (existsSync(join(base, 'index.d.ts'))) return `${head}${spec}/index.js'`;
      throw new Error(`${path}: cannot resolve declaration import '${spec}'`);
    });
    writeFileSync(path, text);
  }
  // The bundled packages are those the source maps name under node_modules/.
  const bundled = new Set();
  for (const file of readdirSync('dist')) {
    if (!file.endsWith('.js.map')) continue;
    for (const source of JSON.parse(readFileSync(join('dist', file), 'utf8')).sources) {
      const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(source);
      if (m) bundled.add(m[1]);
    }
  }
  const notices = [...bundled].sort().map((name) => {
    const dir = join('node_modules', name);
    const { version, license } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const licenseFile = readdirSync(dir).find((f) => /^licen[sc]e/i.test(f));
    if (licenseFile === undefined) throw new Error(`${name} has no license file to bundle`);
    const text = readFileSync(join(dir, licenseFile), 'utf8').trim();
    return `${name}@${version} (${license})\n\n${text}\n`;
  });
  const header = 'pqdb bundles the following third-party packages into dist/. Their licenses follow.\n';
  writeFileSync('dist/THIRD-PARTY-NOTICES.txt', [header, ...notices].join(`\n${'-'.repeat(78)}\n\n`));
}
