// Builds the notes app with esbuild (app.js and db-worker.js, each one minified file, pqdb taken
// from this repository's built package as an app takes it from node_modules) and serves it with
// the Content Security Policy the README documents. `npm run demo:browser` runs it and prints the
// URL; browser-tests/server.mjs mounts the same site under /examples/browser-app/.
//
// The policies: the page runs no WebAssembly (it imports pqdb/client only), so its policy leaves out
// 'wasm-unsafe-eval'; a dedicated worker's policy is the one its own script was served with, and
// the worker's needs 'wasm-unsafe-eval' for pqdb's kernels (compiled from bytes). With
// `wasm: false` the worker is served without it, to show what it is for.
// Usage: node examples/browser-app/serve.mjs [port]

import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..');

/** The built package's entries, as `pqdb`'s exports map resolves them in a browser bundle. */
const ENTRIES = { pqdb: 'browser.js', 'pqdb/client': 'client.js', 'pqdb/worker': 'worker.js' };

export const PAGE_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; worker-src 'self'; img-src 'self' data:; " +
  "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
export const WORKER_POLICY =
  "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; object-src 'none'; base-uri 'none'";

/** The app's two bundles, built in memory: { '/app.js': bytes, '/db-worker.js': bytes }. */
export async function buildDemo() {
  const result = await esbuild.build({
    entryPoints: { app: join(here, 'app.js'), 'db-worker': join(here, 'db-worker.js') },
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2022', 'chrome120', 'firefox115', 'safari16'],
    outdir: '/',
    write: false,
    logLevel: 'warning',
    // The package declares itself free of side effects, so the bare imports of its chunks are dropped.
    logOverride: { 'ignored-bare-import': 'silent' },
    plugins: [
      {
        name: 'pqdb-from-dist',
        setup(build) {
          build.onResolve({ filter: /^pqdb(\/client|\/worker)?$/ }, (a) => ({
            path: join(repo, 'dist', ENTRIES[a.path]),
          }));
        },
      },
    ],
  });
  return Object.fromEntries(result.outputFiles.map((f) => [f.path, f.contents]));
}

const TYPES = { '.html': 'text/html; charset=utf-8', '.css': 'text/css', '.js': 'text/javascript' };
const FILES = { '/': 'index.html', '/index.html': 'index.html', '/style.css': 'style.css' };

/**
 * A request handler for the site under `prefix` ('/' or '/examples/browser-app/'): answers and
 * returns true for the site's paths, false for any other.
 */
export async function demoSite({ prefix = '/', wasm = true } = {}) {
  const bundles = await buildDemo();
  return async (req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (!path.startsWith(prefix) && `${path}/` !== prefix) return false;
    const rel = `/${path.slice(prefix.length)}`;
    if (`${path}/` === prefix) {
      res.writeHead(301, { location: prefix }).end();
      return true;
    }
    let body = bundles[rel];
    if (body === undefined && FILES[rel] !== undefined) body = await readFile(join(here, FILES[rel]));
    if (body === undefined) return false;
    const ext = rel === '/' ? '.html' : rel.slice(rel.lastIndexOf('.'));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    const headers = {
      'content-type': TYPES[ext],
      'content-security-policy':
        rel === '/db-worker.js'
          ? wasm
            ? WORKER_POLICY
            : WORKER_POLICY.replace(" 'wasm-unsafe-eval'", '')
          : PAGE_POLICY,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-cache',
      etag,
    };
    if (req.headers['if-none-match'] === etag) res.writeHead(304, headers).end();
    else res.writeHead(200, headers).end(body);
    return true;
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const port = Number(process.argv[2] ?? process.env.PORT ?? 8080);
  const site = await demoSite();
  createServer((req, res) => {
    site(req, res).then(
      (served) => served || res.writeHead(404).end('not found'),
      () => res.writeHead(500).end('server error'),
    );
  }).listen(port, '127.0.0.1', () => {
    console.log(`pqdb notes: http://127.0.0.1:${port}/  (open it in two tabs; Ctrl-C stops)`);
  });
}
