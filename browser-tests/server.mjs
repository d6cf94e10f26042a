// Serves the browser test page from 127.0.0.1 (IndexedDB and fetch need a real origin):
//   /            browser-tests/page/index.html (the suites Playwright drives)
//   /kat         browser-tests/page/kat.html (the known-answer test page, readable by a person)
//   /storage     browser-tests/page/storage.html (the PageStore conformance suite over IndexedDB, and
//                over OPFS in the dedicated worker browser-tests/page/opfs-worker.ts)
//   /store       browser-tests/page/store.html (the shared store cases: proofs and search on IndexedDB)
//   /migration   browser-tests/page/migration.html (the live-migration evaluation, driven by
//                bench/migration-browser.mjs and browser-tests/migration.spec.mjs)
//   /worker      browser-tests/page/worker.html (a store in a dedicated worker: browser-tests/page/engine-worker.js
//                serves it from dist/worker.js)
//   /bench       browser-tests/page/bench.html (bench/browser.mjs: pqdb in its forms and the peers, the
//                page and its pqdb worker each bundled into one file as an app's bundler makes them;
//                sqlite-worker.js loads /vendor/sqlite-wasm/*, the @sqlite.org/sqlite-wasm package's files,
//                and wa-sqlite-worker.js /vendor/wa-sqlite/*, the wa-sqlite package's; both peer-seal.js)
//   /kill        browser-tests/page/kill.html: a store in a dedicated worker written to until the test
//                kills the page or its worker (browser-tests/kill-run.mjs), and read back after
//   /first       browser-tests/page/first.html: a page that only opens a store in its worker and reads
//                one record (the bench's first read after a page load), minified as shipped
//   /examples/browser-app/   the notes app (examples/browser-app/serve.mjs: built with esbuild, served
//                with the policies its README documents); /examples/no-wasm/ the same app with a
//                worker policy that leaves out 'wasm-unsafe-eval', to show what it is for
//   /page/*.js   the page bundles, built here with esbuild (pqdb/crypto stays external)
//   /dist/*      the built package, exactly as published
//   /vectors/*   the vector files: test-data/vectors/<path>.gz, sent with Content-Encoding: gzip (the
//                browser decompresses it), or <path> under $PQDB_VECTORS (an uncompressed tree)
// Usage: node browser-tests/server.mjs [port]

import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { dirname, join, normalize, extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import { vectorSource } from '../scripts/vectors.mjs';
import { demoSite } from '../examples/browser-app/serve.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..');
const vectors = vectorSource();
const port = Number(process.argv[2] ?? process.env.PQDB_TEST_PORT ?? 41731);

const bundle = await esbuild.build({
  entryPoints: {
    suite: join(here, 'page', 'suite.ts'),
    kat: join(here, 'page', 'kat.ts'),
    storage: join(here, 'page', 'storage.ts'),
    'opfs-worker': join(here, 'page', 'opfs-worker.ts'),
    store: join(here, 'page', 'store.ts'),
    migration: join(here, 'page', 'migration.ts'),
    worker: join(here, 'page', 'worker.ts'),
    bench: join(here, 'page', 'bench.ts'),
    kill: join(here, 'page', 'kill.ts'),
    'kill-worker': join(here, 'page', 'kill-worker.ts'),
  },
  bundle: true,
  format: 'esm',
  target: ['es2022', 'chrome120'],
  external: ['pqdb/crypto', 'pqdb/client', 'pqdb'],
  outdir: '/page',
  write: false,
  logLevel: 'warning',
});
// The bench's first-read page and its pqdb worker, minified as an app's production build ships them.
const shipped = await esbuild.build({
  entryPoints: { first: join(here, 'page', 'first.ts'), 'bench-worker': join(here, 'page', 'bench-worker.ts') },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2022', 'chrome120'],
  outdir: '/page',
  write: false,
  logLevel: 'warning',
});
const SHIPPED = new Set(shipped.outputFiles.map((f) => f.path));
const pages = Object.fromEntries([...bundle.outputFiles, ...shipped.outputFiles].map((f) => [f.path, f.contents]));

const sites = [
  await demoSite({ prefix: '/examples/browser-app/' }),
  await demoSite({ prefix: '/examples/no-wasm/', wasm: false }),
];

/** The bench page and its workers are cross-origin isolated: finer timers, and memory measurement. */
const ISOLATED = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' };
/** The bench's peer workers and what they share, served from browser-tests/page as they are. */
const PEER_FILES = new Set(['/page/sqlite-worker.js', '/page/wa-sqlite-worker.js', '/page/peer-seal.js']);

const TYPES = {
  '.js': 'text/javascript',
  '.json': 'application/json',
  '.html': 'text/html',
  '.map': 'application/json',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
};

function under(rootDir, rel) {
  const p = normalize(join(rootDir, rel));
  return p.startsWith(rootDir) ? p : undefined;
}

createServer(async (req, res) => {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  let body;
  let file;
  let headers = {};
  let type;
  let gzipped = false;
  if (url.pathname === '/') file = join(here, 'page', 'index.html');
  else if (url.pathname === '/kat') file = join(here, 'page', 'kat.html');
  else if (url.pathname === '/storage') file = join(here, 'page', 'storage.html');
  else if (url.pathname === '/store') file = join(here, 'page', 'store.html');
  else if (url.pathname === '/migration') file = join(here, 'page', 'migration.html');
  else if (url.pathname === '/worker') file = join(here, 'page', 'worker.html');
  else if (url.pathname === '/kill') file = join(here, 'page', 'kill.html');
  else if (url.pathname === '/bench') {
    file = join(here, 'page', 'bench.html');
    headers = ISOLATED;
  } else if (url.pathname === '/first') file = join(here, 'page', 'first.html');
  else if (url.pathname === '/page/engine-worker.js') file = join(here, 'page', 'engine-worker.js');
  else if (PEER_FILES.has(url.pathname)) {
    file = join(here, 'page', url.pathname.slice(6));
    headers = ISOLATED;
  } else if (url.pathname === '/page/bench-worker.js') {
    body = pages[url.pathname];
    headers = ISOLATED;
  } else if (url.pathname.startsWith('/vendor/sqlite-wasm/'))
    file = under(join(repo, 'node_modules', '@sqlite.org', 'sqlite-wasm', 'dist'), url.pathname.slice(20));
  else if (url.pathname.startsWith('/vendor/wa-sqlite/'))
    file = under(join(repo, 'node_modules', 'wa-sqlite'), url.pathname.slice(18));
  else if (url.pathname.startsWith('/examples/')) {
    for (const site of sites) if (await site(req, res)) return;
  } else if (pages[url.pathname] !== undefined) body = pages[url.pathname];
  else if (url.pathname.startsWith('/dist/')) file = under(join(repo, 'dist'), url.pathname.slice(6));
  else if (url.pathname.startsWith('/vectors/')) {
    const rel = decodeURIComponent(url.pathname.slice(9));
    file = under(vectors.root, vectors.compressed ? `${rel}.gz` : rel);
    type = TYPES[extname(rel)];
    gzipped = vectors.compressed;
  }
  try {
    if (body === undefined && file !== undefined) body = await readFile(file);
    if (body === undefined) throw Object.assign(new Error('not found'), { code: 'ENOENT' });
    headers = {
      'content-type': type ?? TYPES[extname(file ?? url.pathname)] ?? 'application/octet-stream',
      ...headers,
    };
    if (gzipped && /\bgzip\b/.test(req.headers['accept-encoding'] ?? '')) headers['content-encoding'] = 'gzip';
    else if (gzipped) body = gunzipSync(body);
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    headers.etag = etag;
    // Revalidated on every load, except the bench's shipped bundles, which a browser keeps as an
    // app's hashed production assets are kept (and compiles from its code cache on a warm load).
    headers['cache-control'] = SHIPPED.has(url.pathname) ? 'max-age=3600' : 'no-cache';
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, headers).end();
      return;
    }
    res.writeHead(200, headers);
    res.end(body);
  } catch {
    res.writeHead(404).end('not found');
  }
}).listen(port, '127.0.0.1', () => console.log(`pqdb test page on http://127.0.0.1:${port}/`));
