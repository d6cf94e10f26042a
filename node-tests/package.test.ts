// The published package: what `npm pack` ships, that its declarations resolve, what
// @arethetypeswrong/cli says of it, that dist/ imports only what `dependencies` lists plus the one
// optional peer dependency `pg` (only the PostgreSQL page store imports it), and that an app runs
// with nothing but the unpacked tarball (every other third-party package is bundled).
//
// What ships: dist/*.js (the entries, their shared chunks and dist/cli.js for the `pqdb` command),
// dist/node-chunks/*.js (the chunks of the Node build: `pqdb` and `pqdb/crypto` under Node, the command),
// dist/types/**/*.d.ts (without the CLI's), dist/THIRD-PARTY-NOTICES.txt, bin/, docs/*.md, README.md,
// LICENSE and package.json. What does not: source maps (they embed the whole source again, WASM
// base64 included, at about 1.4 MB; the source is in the repository), src/, assembly/, tests,
// benchmarks and their results (docs/bench/), scripts.
//
// pqdb is ESM only. attw runs with its `esm-only` profile: CommonJS under node16 is ignored, and the
// only problem it reports there is the expected CJSResolvesToESM (require() of an ES module; use
// import()). node10 resolution still finds the types: `types` for "pqdb", `typesVersions` for
// "pqdb/crypto" and "pqdb/postgres".

import { describe, it, expect, beforeAll } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import * as esbuild from 'esbuild';
import { REPO, packPackage, type Packed } from './support/packed';

interface PackageJson {
  main?: string;
  types?: string;
  bin: Record<string, string>;
  exports: unknown;
  typesVersions?: Record<string, Record<string, string[]>>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
}

const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as PackageJson;
const norm = (p: string) => posix.normalize(p).replace(/^\.\//, '');

/** Every path the exports map names, at any depth of conditions. */
function exportTargets(node: unknown): string[] {
  if (typeof node === 'string') return [norm(node)];
  if (node === null || typeof node !== 'object') return [];
  return Object.values(node).flatMap(exportTargets);
}

/**
 * The package names dist/*.js imports, by esbuild's parse of each file (node: built-ins apart), and
 * for each package the files that import it.
 */
async function distImports(): Promise<{
  bare: Set<string>;
  builtins: Set<string>;
  importers: Map<string, Set<string>>;
}> {
  const dist = join(REPO, 'dist');
  const entryPoints = readdirSync(dist)
    .filter((f) => f.endsWith('.js'))
    .map((f) => join(dist, f));
  const found: { spec: string; importer: string }[] = [];
  await esbuild.build({
    entryPoints,
    bundle: true,
    write: false,
    outdir: join(dist, 'unused'),
    format: 'esm',
    platform: 'neutral',
    logLevel: 'silent',
    plugins: [
      {
        name: 'record-bare',
        setup(build) {
          build.onResolve(
            { filter: /^[^./]/ },
            (args) => (found.push({ spec: args.path, importer: args.importer }), { path: args.path, external: true }),
          );
        },
      },
    ],
  });
  const bare = new Set<string>();
  const builtins = new Set<string>();
  const importers = new Map<string, Set<string>>();
  for (const { spec, importer } of found) {
    if (spec.startsWith('node:')) builtins.add(spec);
    else {
      const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
      bare.add(name);
      if (!importers.has(name)) importers.set(name, new Set());
      importers.get(name)!.add(importer);
    }
  }
  return { bare, builtins, importers };
}

describe('package', () => {
  let packed: Packed;
  beforeAll(() => {
    packed = packPackage();
  });

  it('npm pack ships every path the exports map, bin, main and types name, and nothing that should not ship', () => {
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: REPO,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const files = new Set((JSON.parse(out) as { files: { path: string }[] }[])[0].files.map((f) => f.path));
    const named = [
      ...exportTargets(pkg.exports),
      ...Object.values(pkg.bin).map(norm),
      norm(pkg.main!),
      norm(pkg.types!),
      ...Object.values(pkg.typesVersions?.['*'] ?? {}).flatMap((targets) => targets.map(norm)),
    ];
    expect(named).toContain('dist/types/node.d.ts');
    expect(named).toContain('dist/types/browser.d.ts');
    expect(named).toContain('dist/postgres.js');
    expect(named).toContain('dist/types/postgres.d.ts');
    for (const path of [
      ...named,
      'README.md',
      'LICENSE',
      'package.json',
      'dist/cli.js',
      'dist/THIRD-PARTY-NOTICES.txt',
    ])
      expect(files, path).toContain(path);
    // The bin script's own import (dist/cli.js) and the entries' chunks ship too.
    for (const file of files)
      if (file.startsWith('dist/') && file.endsWith('.js')) expect(file).toMatch(/^dist\/(node-chunks\/)?[^/]+\.js$/);
    expect([...files].filter((f) => f.startsWith('dist/node-chunks/')).length).toBeGreaterThan(0);
    const junk = [...files].filter((f) =>
      /\.map$|^(src|assembly|node-tests|browser-tests|bench|scripts|build|docs\/bench|dist\/types\/cli)\/|\.test\.|\.spec\./.test(
        f,
      ),
    );
    expect(junk).toEqual([]);
    expect(new Set(packed.files)).toEqual(files);
  });

  it('every relative import of the shipped declarations names a shipped file with its extension (node16)', () => {
    const files = new Set(packed.files);
    const declarations = packed.files.filter((f) => f.endsWith('.d.ts'));
    expect(declarations.length).toBeGreaterThan(20);
    for (const file of declarations) {
      const text = readFileSync(join(packed.app, 'node_modules/pqdb', file), 'utf8');
      for (const [, spec] of text.matchAll(/(?:from|import\()\s*'(\.{1,2}\/[^']*)'/g)) {
        expect(spec, `${file}: ${spec}`).toMatch(/\.js$/);
        expect(files, `${file}: ${spec}`).toContain(posix.join(posix.dirname(file), spec.replace(/\.js$/, '.d.ts')));
      }
    }
  });

  it('every relative import of the shipped JavaScript, static or dynamic, names a shipped file', () => {
    const files = new Set(packed.files);
    const scripts = packed.files.filter((f) => f.endsWith('.js'));
    let imports = 0;
    for (const file of scripts) {
      const text = readFileSync(join(packed.app, 'node_modules/pqdb', file), 'utf8');
      for (const [, spec] of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)"(\.{1,2}\/[^"]+)"/g)) {
        imports++;
        expect(files, `${file}: ${spec}`).toContain(posix.join(posix.dirname(file), spec));
      }
    }
    expect(imports).toBeGreaterThan(100);
  });

  it('attw (esm-only profile): no problem for node16 ESM, bundler or node10; CommonJS gets only CJSResolvesToESM', () => {
    const attw = join(REPO, 'node_modules/@arethetypeswrong/cli/dist/index.js');
    const run = spawnSync(process.execPath, [attw, packed.tarball, '--profile', 'esm-only', '--format', 'json'], {
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as {
      analysis: { entrypoints: Record<string, unknown>; problems: { kind: string; resolutionKind?: string }[] };
    };
    expect(Object.keys(report.analysis.entrypoints).sort()).toEqual([
      '.',
      './client',
      './crypto',
      './package.json',
      './postgres',
      './worker',
    ]);
    const problems = report.analysis.problems;
    expect(problems.filter((p) => p.resolutionKind !== 'node16-cjs')).toEqual([]);
    expect(new Set(problems.map((p) => p.kind))).toEqual(new Set(['CJSResolvesToESM']));
  });

  it('dist/*.js imports at run time only `dependencies` (none: all are bundled) and the optional peer `pg`, which only the postgres page store imports', async () => {
    const { bare, builtins, importers } = await distImports();
    expect(builtins.size).toBeGreaterThan(0); // the scan sees the node entry's imports of Node built-ins
    expect(pkg.peerDependencies).toEqual({ pg: expect.stringMatching(/^\^8\./) });
    expect(pkg.peerDependenciesMeta).toEqual({ pg: { optional: true } });
    expect(pkg.devDependencies).toHaveProperty('pg'); // for the tests
    expect([...bare].sort()).toEqual([...Object.keys(pkg.dependencies ?? {}), 'pg'].sort());
    const pgImporters = [...importers.get('pg')!].map((f) => posix.basename(f.split('\\').join('/')));
    expect(pgImporters).toContain('postgres.js'); // the Node build of pqdb/postgres
    for (const file of importers.get('pg')!)
      expect(readFileSync(file, 'utf8'), file).toMatch(/^\/\/ src\/storage\/postgres\.ts$/m); // the module itself, nothing else
    expect(readFileSync(join(REPO, 'dist/node.js'), 'utf8')).not.toMatch(/["']pg["']/);
    // What is bundled instead is a dev dependency, and its license ships in the notices.
    const notices = readFileSync(join(REPO, 'dist/THIRD-PARTY-NOTICES.txt'), 'utf8');
    const bundled = [...notices.matchAll(/^(@?[a-z0-9][\w.-]*(?:\/[\w.-]+)?)@(\d[^ ]*) \(/gm)].map((m) => m[1]);
    expect(bundled).toEqual(expect.arrayContaining(['@noble/curves', '@noble/hashes', 'idb']));
    for (const name of bundled) expect(pkg.devDependencies, name).toHaveProperty([name]);
    expect(bundled).not.toContain('pg');
  });

  it('an app with only the unpacked tarball in node_modules runs the node entry, pqdb/crypto and the command', () => {
    const app = packed.app;
    expect(readdirSync(join(app, 'node_modules'))).toEqual(['pqdb']);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    writeFileSync(
      join(app, 'main.js'),
      `import { openStore, generateRecipient, openNodeFsPageStore } from 'pqdb';
import { sha384, PqdbError as CryptoError } from 'pqdb/crypto';
import { PqdbError } from 'pqdb';
if (CryptoError !== PqdbError) throw new Error('pqdb and pqdb/crypto load two copies of the engine');
const r = generateRecipient();
const store = await openStore({ location: './data', create: true, recipients: [r.publicKey], unlock: r.secretKey });
const c = store.collection('c', { schema: { n: 'integer' } });
await c.put('a', { n: 7 });
const info = store.info();
await store.close();
const reopened = await openStore({ storage: await openNodeFsPageStore('./data'), unlock: r.secretKey });
const value = await reopened.collection('c', { schema: { n: 'integer' } }).get('a');
await reopened.close();
const postgres = await import('pqdb/postgres');
const missing = await postgres.openPostgresPageStore({ name: 's' }).then(() => 'opened', (e) => e.message);
console.log(JSON.stringify({ storage: info.storage, value, digest: sha384(new Uint8Array(0)).length, missing }));
`,
    );
    const out = execFileSync(process.execPath, ['main.js'], { cwd: app, encoding: 'utf8' });
    // pqdb/postgres loads without pg; opening a store says what to install.
    expect(JSON.parse(out)).toEqual({
      storage: 'node-fs',
      value: { n: 7 },
      digest: 48,
      missing: expect.stringMatching(/needs the "pg" package.*npm install pg/),
    });
    const bin = spawnSync(process.execPath, ['node_modules/pqdb/bin/pqdb.mjs', '--help'], {
      cwd: app,
      encoding: 'utf8',
    });
    expect(bin.status, bin.stderr).toBe(0);
    expect(bin.stdout).toMatch(/verify/);
  });

  it('the universal ("default") entry, as a neutral bundler picks it, refuses a location and opens memory or a PageStore', async () => {
    const app = packed.app;
    writeFileSync(
      join(app, 'universal.js'),
      `import { openStore, generateRecipient, openMemoryPageStore } from 'pqdb';
const r = generateRecipient();
const base = { create: true, recipients: [r.publicKey], unlock: r.secretKey };
const refused = [];
for (const extra of [{ location: './data' }, { storage: 'fs', location: './d' }, { storage: 'indexeddb' }, { storage: 'memory', location: 'x' }]) {
  try { await openStore({ ...base, ...extra }); refused.push('opened'); } catch (e) { refused.push(e.constructor.name + ': ' + e.message); }
}
const memory = await openStore(base);
const mine = await openStore({ ...base, storage: await openMemoryPageStore() });
const c = mine.collection('c', { schema: { s: 'string' } });
await c.put('a', { s: 'x' });
console.log(JSON.stringify({ refused, memory: memory.info().storage, mine: mine.info().storage, value: await c.get('a') }));
`,
    );
    const bundle = join(app, 'universal.bundle.js');
    await esbuild.build({
      entryPoints: [join(app, 'universal.js')],
      absWorkingDir: app,
      bundle: true,
      platform: 'neutral',
      format: 'esm',
      target: ['es2022'],
      outfile: bundle,
      logLevel: 'silent',
    });
    expect(readFileSync(bundle, 'utf8')).not.toMatch(/from\s*"node:/); // the default entry needs no Node built-in
    const { refused, memory, mine, value } = JSON.parse(execFileSync(process.execPath, [bundle], { encoding: 'utf8' }));
    expect(refused).toHaveLength(4);
    for (const r of refused) expect(r).toMatch(/^TypeError: .*"node" or "browser" export condition/);
    expect({ memory, mine, value }).toEqual({ memory: 'memory', mine: 'memory', value: { s: 'x' } });
  });

  it('LICENSE is the standard Apache License 2.0 text with the project copyright line', () => {
    const text = readFileSync(join(REPO, 'LICENSE'), 'utf8');
    expect(text).toMatch(/^ {3}Copyright 2026 The pqdb authors$/m);
    const standard = text.replace(
      /^ {3}Copyright 2026 The pqdb authors$/m,
      '   Copyright [yyyy] [name of copyright owner]',
    );
    // SHA-256 of https://www.apache.org/licenses/LICENSE-2.0.txt
    expect(createHash('sha256').update(standard).digest('hex')).toBe(
      'cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30',
    );
  });
});
