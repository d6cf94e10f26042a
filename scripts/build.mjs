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
const common = {
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  target: ['es2022', 'node20', 'chrome120'],
  // Only the Node entry's file store and replication import Node built-ins. `pg` is the one
  // third-party package left out of the bundles: the database driver is the application's choice,
  // a peer dependency that pqdb/postgres imports at run time.
  external: ['node:*', 'pg'],
  sourcemap: true,
  legalComments: 'none',
  logLevel: 'warning',
};
// For bundlers: one file per source module, so an application takes only what it imports.
await esbuild.build({
  ...common,
  entryPoints: {
    ...moduleEntryPoints(),
    index: 'src/index.ts',
    crypto: 'src/crypto.ts',
    browser: 'src/browser.ts',
    worker: 'src/worker.ts',
    client: 'src/client.ts',
  },
  platform: 'neutral',
});
// For Node (the `node` conditions of package.json, and the CLI): the same code in a few large
// files, since Node resolves and compiles every file it imports one by one (importing pqdb takes
// about a third of the time it takes from a hundred files). `pqdb` and `pqdb/crypto` come from one
// module graph, so they share one PqdbError class and one set of WebAssembly instances; so does
// `pqdb/postgres`.
await esbuild.build({
  ...common,
  entryPoints: {
    node: 'src/node.ts',
    'node-crypto': 'src/crypto.ts',
    postgres: 'src/postgres.ts',
    cli: 'src/cli/index.ts',
  },
  chunkNames: 'node-chunks/[name]-[hash]',
  platform: 'node',
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
