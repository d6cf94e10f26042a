// The README's samples run: every ```js block of README.md and of the pages its samples moved to
// (docs/api.md) is a whole program, run with node in a
// fresh temporary directory whose node_modules/pqdb links to this checkout, so `import 'pqdb'` and
// `'pqdb/crypto'` resolve to the built dist/ exactly as an installed package would. A block preceded
// by a `<!-- not-run: reason -->` line is skipped (a browser-only snippet; its example has its own
// test). Needs `npm run build` first.
import { describe, it, expect } from 'vitest';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('..', import.meta.url));

export interface Sample {
  /** 1-based line of the opening fence. */
  line: number;
  /** The heading the block sits under. */
  heading: string;
  code: string;
  /** The reason of a `<!-- not-run: … -->` line right above the fence. */
  skip?: string;
}

/** Every ```js block of a markdown text, with the heading above it and its not-run reason if any. */
export function jsBlocks(markdown: string): Sample[] {
  const lines = markdown.split('\n');
  const out: Sample[] = [];
  let heading = '';
  let previous = '';
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    if (/^#{1,6} /.test(l)) heading = l.replace(/^#+ /, '');
    const fence = /^(\s*)```(\S*)\s*$/.exec(l);
    if (fence === null) {
      if (l.trim() !== '') previous = l.trim();
      continue;
    }
    // Find the closing fence at the same indentation (blocks of other languages are skipped whole).
    let end = i + 1;
    while (end < lines.length && lines[end].trim() !== '```') end++;
    if (fence[2] === 'js') {
      const skip = /^<!-- not-run: (.+?) -->$/.exec(previous)?.[1];
      const indent = fence[1].length;
      const code = lines
        .slice(i + 1, end)
        .map((x) => x.slice(Math.min(indent, x.length - x.trimStart().length)))
        .join('\n');
      out.push({ line: i + 1, heading, code, ...(skip !== undefined ? { skip } : {}) });
    }
    previous = '';
    i = end;
  }
  return out;
}

/** Runs `code` as an ES module with node in a fresh directory that has pqdb installed (linked). */
function runSample(code: string): { status: number | null; stdout: string; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), 'pqdb-readme-'));
  try {
    mkdirSync(join(dir, 'node_modules'));
    symlinkSync(repo, join(dir, 'node_modules', 'pqdb'), 'dir');
    writeFileSync(join(dir, 'sample.mjs'), code);
    const r = spawnSync(process.execPath, ['sample.mjs'], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The pages whose ```js blocks are run: the README and the long API reference it links. */
export const SAMPLE_PAGES = ['README.md', 'docs/api.md'] as const;
const pages = SAMPLE_PAGES.map((page) => ({ page, blocks: jsBlocks(readFileSync(join(repo, page), 'utf8')) }));
const samples = pages[0].blocks;
const all = pages.flatMap(({ page, blocks }) => blocks.map((s) => ({ ...s, page })));

describe('README samples', () => {
  it('the extractor finds fences, headings and not-run markers', () => {
    const md = [
      '## A',
      '```js',
      'one();',
      '```',
      '<!-- not-run: browser only -->',
      '```js',
      'two();',
      '```',
      '```sh',
      'echo no',
      '```',
      '- item:',
      '',
      '  ```js',
      '  three();',
      '  ```',
    ].join('\n');
    expect(jsBlocks(md)).toEqual([
      { line: 2, heading: 'A', code: 'one();' },
      { line: 6, heading: 'A', code: 'two();', skip: 'browser only' },
      { line: 14, heading: 'A', code: 'three();' },
    ]);
  });

  it('the README has the store, keys and crypto samples, and skips few', () => {
    const headings = samples.map((s) => s.heading);
    expect(headings).toEqual(
      expect.arrayContaining(['`pqdb`: the store', 'Keys and where to keep them', '`pqdb/crypto`']),
    );
    expect(samples.length).toBeGreaterThanOrEqual(4);
    expect(all.length).toBeGreaterThanOrEqual(8);
    expect(samples.filter((s) => s.skip !== undefined).length).toBeLessThanOrEqual(1);
  });

  it('docs/api.md has the samples that moved there: migration, authority, replication, posture', () => {
    const api = pages[1].blocks.map((s) => s.code).join('\n');
    for (const name of ['store.migrate(', 'restoreStore', 'openReplica', 'store.posture()'])
      expect(api).toContain(name);
    expect(pages[1].blocks.filter((s) => s.skip !== undefined)).toEqual([]);
  });

  it('a failing sample is reported as a failure', () => {
    expect(runSample("import { openStore } from 'pqdb';\nawait openStore({ create: true });").status).not.toBe(0);
  });

  it.each(all.filter((s) => s.skip === undefined).map((s) => [`${s.page}:${s.line} (${s.heading})`, s] as const))(
    'sample at %s runs under node',
    (_, sample) => {
      const r = runSample(sample.code);
      expect(r.stderr, r.stdout).toBe('');
      expect(r.status).toBe(0);
    },
  );
});
