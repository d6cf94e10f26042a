// Bundle sizes: what an application ships when it imports part of pqdb. Bundles, with esbuild from
// the built dist/ (as an application's bundler sees the published package: `exports`, the browser
// condition, `"sideEffects": false`), every `pqdb/crypto` export alone and the full store (`pqdb`
// openStore with collection use), minified ESM for the browser, and prints minified and gzip sizes.
//
//   node bench/sizes.mjs [--out report.json]        (npm run bench:sizes builds first)
//
// Writes bench/results/sizes-<arch>[-emulated]-<runtime>-<date>[-n].json. A size is deterministic for one build: no repetitions.

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import { hostInfo, reportPath } from './harness.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** An application that uses the store: open, a collection with a text index, write, read, search. */
export const FULL_STORE = `
import { openStore, generateRecipient } from 'pqdb';
const r = generateRecipient();
const store = await openStore({ location: 'app', create: true, recipients: [r.publicKey], unlock: r.secretKey });
const notes = store.collection('notes', { schema: { title: 'string' }, index: { text: ['title'] } });
await notes.put('a', { title: 'hello world' });
console.log(await notes.get('a'), await notes.search('hello'));
await store.close();
`;

/** An application that imports one `pqdb/crypto` export and keeps it. */
export const exportOnly = (name) => `import { ${name} } from 'pqdb/crypto';\nglobalThis.__pqdb = ${name};\n`;

/**
 * Bundles `source` (resolved from the repository root, so `pqdb` is this package's dist/) for the
 * browser and returns its minified and gzip (level 9) sizes in bytes, the dist files it took and
 * the source modules those hold (esbuild marks each module in a chunk with a `// path` line).
 */
export async function bundleSize(source) {
  // Split as an app's bundler splits: what a dynamic import() loads (the worker engine's page side,
  // the OPFS store) is a chunk of its own, fetched only when used. Counted: the entry and the chunks
  // it imports statically, what a page loads before its first call.
  const result = await esbuild.build({
    stdin: { contents: source, resolveDir: root, loader: 'js', sourcefile: 'app.js' },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    conditions: ['browser'],
    target: ['es2022', 'chrome120'],
    splitting: true,
    outdir: '/out',
    write: false,
    metafile: true,
    logLevel: 'error',
  });
  const outputs = result.metafile.outputs;
  const entry = Object.keys(outputs).find((o) => outputs[o].entryPoint !== undefined);
  const loaded = new Set([entry]);
  for (const o of loaded)
    for (const i of outputs[o].imports) if (i.kind === 'import-statement' && outputs[i.path]) loaded.add(i.path);
  const files = result.outputFiles.filter((f) => loaded.has(relative(process.cwd(), f.path)));
  const code = Buffer.concat(files.map((f) => f.contents));
  const inputs = [...loaded].flatMap((o) => Object.keys(outputs[o].inputs)).filter((f) => f !== 'app.js');
  const sources = inputs.flatMap((f) =>
    [...readFileSync(join(root, f), 'utf8').matchAll(/^\/\/ ((?:src\/|\S*node_modules\/)\S+)$/gm)].map((m) =>
      m[1].replace(/^.*node_modules\//, ''),
    ),
  );
  return { minBytes: code.length, gzipBytes: gzipSync(code, { level: 9 }).length, inputs, sources };
}

/** The runtime exports of the built `pqdb/crypto`, in name order. */
export async function cryptoExports() {
  const mod = await import(pathToFileURL(join(root, 'dist', 'crypto.js')).href);
  return Object.keys(mod).sort();
}

async function main() {
  const args = process.argv.slice(2);
  const outArg = args.includes('--out') ? args[args.indexOf('--out') + 1] : undefined;
  const rows = [];
  for (const name of await cryptoExports()) {
    rows.push({ bundle: `{ ${name} } from 'pqdb/crypto'`, ...(await bundleSize(exportOnly(name))) });
  }
  rows.push({ bundle: "full store ('pqdb' openStore + collection)", ...(await bundleSize(FULL_STORE)) });
  rows.push({ bundle: "everything in 'pqdb/crypto'", ...(await bundleSize("export * from 'pqdb/crypto';")) });

  const kb = (n) => (n / 1000).toFixed(1); // kB = 1000 bytes, as the budgets in node-tests/bundle-size.test.ts
  console.log(
    `${'bundle (esbuild, browser, minified ESM)'.padEnd(56)} ${'min kB'.padStart(8)} ${'gzip kB'.padStart(9)}`,
  );
  for (const r of rows)
    console.log(`${r.bundle.padEnd(56)} ${kb(r.minBytes).padStart(8)} ${kb(r.gzipBytes).padStart(9)}`);

  const host = hostInfo();
  const out = outArg ?? reportPath('sizes', { host });
  mkdirSync(dirname(out), { recursive: true });
  const report = {
    host,
    esbuild: esbuild.version,
    options: { bundle: true, minify: true, format: 'esm', platform: 'browser', conditions: ['browser'], gzipLevel: 9 },
    results: rows.map(({ inputs, sources, ...r }) => ({ ...r, distFiles: inputs.length, sources })),
  };
  writeFileSync(out, JSON.stringify(report, null, 2) + '\n');
  console.log(`report: ${out}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
