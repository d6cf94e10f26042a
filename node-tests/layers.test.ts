// The layers of src/ (DESIGN §2, docs/architecture.md): imports point down only. Every relative
// import of every file under src/ is read with TypeScript's own pre-parser (type-only imports and
// `export … from` included), and the test fails on
// - any import cycle (a strongly connected component of more than one file, or a file importing itself);
// - an import against the order of the top-level layers: shared helpers < wasm < kernels < crypto <
//   storage < engine < replication < worker < the package entries < cli (a user of the entries);
// - inside src/engine/, an import of a file of a higher row of the table below (a row may import
//   its own row and every row under it), and an engine file the table does not place;
// - a file over 600 lines.

import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import ts from 'typescript';

const src = resolve(__dirname, '../src');

/** Top-level layers, lowest first; a file may import its own layer and the ones before it. */
const LAYERS: [string, (file: string) => boolean][] = [
  ['shared', (f) => /^_[^/]+\.ts$/.test(f) || f === 'errors.ts' || f === 'version.ts'],
  ['wasm', (f) => f.startsWith('wasm/')],
  ['kernels', (f) => f.startsWith('kernels/')],
  ['crypto', (f) => f.startsWith('crypto/')],
  ['storage', (f) => f.startsWith('storage/')],
  ['engine', (f) => f.startsWith('engine/') || f === 'record-api.ts'],
  ['replication', (f) => f.startsWith('replication/')],
  ['worker', (f) => f.startsWith('worker/')],
  ['entries', (f) => !f.includes('/')],
  ['cli', (f) => f.startsWith('cli/')],
];

/**
 * src/engine/, top row first (DESIGN §2's table as built). A file matches the first pattern that
 * names it: a folder (`copies/`) takes every file in it.
 */
const ENGINE_ROWS: string[][] = [
  ['open.ts', 'restore.ts'],
  ['store.ts', 'engine-slot.ts', 'collection.ts', 'query.ts'],
  ['open-engine.ts', 'engine.ts'],
  [
    'copies.ts',
    'signed-cover.ts',
    'follower.ts',
    'followed-pages.ts',
    'follow.ts',
    'retire.ts',
    'compact.ts',
    'upgrade.ts',
    'posture.ts',
    'exports.ts',
    'migration/',
    'store-admin.ts',
    'store-options.ts',
    'changes.ts',
  ],
  ['rewrite.ts', 'writes.ts'],
  ['checkpoints.ts', 'lexical-store.ts', 'field-indexes.ts', 'gates.ts', 'authority.ts', 'directory/persistence.ts'],
  ['apply.ts', 'replay.ts'],
  ['commit.ts', 'pins.ts'],
  ['records.ts', 'verify/'],
  ['manifest/', 'directory/', 'merkle-log.ts', 'page-cache.ts'],
  ['lexical/', 'keys.ts', 'registry.ts', 'codec.ts', 'page-format.ts', 'history-floor.ts', 'field-index.ts'],
];

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

function imports(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  const out: string[] = [];
  for (const { fileName } of info.importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const base = resolve(dirname(file), fileName);
    const found = [`${base}.ts`, join(base, 'index.ts')].find((c) => existsSync(c));
    if (found === undefined) throw new Error(`${relative(src, file)} imports ${fileName}, which does not resolve`);
    out.push(found);
  }
  return out;
}

const all = files(src).filter((f) => !f.endsWith('.generated.ts'));
const graph = new Map(all.map((f) => [f, imports(f)] as const));
const rel = (f: string) => relative(src, f).split('\\').join('/');

function layerOf(f: string): number {
  const i = LAYERS.findIndex(([, m]) => m(rel(f)));
  if (i < 0) throw new Error(`no layer for ${rel(f)}`);
  return i;
}

function engineRow(f: string): number | undefined {
  const r = rel(f);
  if (!r.startsWith('engine/')) return undefined;
  const inEngine = r.slice('engine/'.length);
  for (let i = 0; i < ENGINE_ROWS.length; i++)
    for (const p of ENGINE_ROWS[i]) if (p.endsWith('/') ? inEngine.startsWith(p) : inEngine === p) return i;
  return -1;
}

/** Tarjan's strongly connected components of more than one file (or a file importing itself). */
function cycles(): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(rel(w));
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(scc.sort());
    }
  };
  for (const f of all) if (!index.has(f)) visit(f);
  return found;
}

describe('the layers of src/', () => {
  it('has no import cycle, type-only imports included', () => {
    expect(cycles()).toEqual([]);
  });

  it('imports point down the top-level layers', () => {
    const wrong: string[] = [];
    for (const [f, deps] of graph)
      for (const d of deps) if (layerOf(d) > layerOf(f)) wrong.push(`${rel(f)} → ${rel(d)}`);
    expect(wrong).toEqual([]);
  });

  it('only src/kernels imports src/wasm, and storage adapters import no engine or crypto module', () => {
    const wrong: string[] = [];
    for (const [f, deps] of graph)
      for (const d of deps) {
        const [from, to] = [rel(f), rel(d)];
        if (to.startsWith('wasm/') && !from.startsWith('kernels/') && !from.startsWith('wasm/'))
          wrong.push(`${from} → ${to}`);
        if (from.startsWith('storage/') && /^(engine|crypto|kernels)\//.test(to)) wrong.push(`${from} → ${to}`);
      }
    expect(wrong).toEqual([]);
  });

  it('every engine file has a row, and imports only its own row and the rows below it', () => {
    const unplaced = all.filter((f) => engineRow(f) === -1).map(rel);
    const wrong: string[] = [];
    for (const [f, deps] of graph) {
      const row = engineRow(f);
      if (row === undefined) continue;
      for (const d of deps) {
        const to = engineRow(d);
        if (to !== undefined && to < row) wrong.push(`${rel(f)} (row ${row}) → ${rel(d)} (row ${to})`);
      }
    }
    expect({ unplaced, wrong }).toEqual({ unplaced: [], wrong: [] });
  });

  it('no source file is over 600 lines', () => {
    const long = all
      .map((f) => [rel(f), readFileSync(f, 'utf8').split('\n').length - 1] as const)
      .filter(([, n]) => n > 600);
    expect(long).toEqual([]);
  });
});
