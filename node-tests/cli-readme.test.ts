// The README's command-line walkthrough, run as written: the first ```sh block after "A walkthrough"
// in the "Command line (`pqdb`)" section is taken from README.md unchanged and run by bash with
// `set -euo pipefail` in an empty temporary directory, `pqdb` on PATH being a shim that runs this
// checkout's built bin/pqdb.mjs. Any failing command fails the script; the test also checks what
// the walkthrough's commands print.
import { describe, it, expect, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const dir = mkdtempSync(join(tmpdir(), 'pqdb-cli-readme-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The walkthrough's shell block, exactly as README.md has it. */
function walkthrough(): string {
  const readme = readFileSync('README.md', 'utf8');
  const section = readme.indexOf('### Command line (`pqdb`)');
  expect(section).toBeGreaterThan(0);
  const intro = readme.indexOf('A walkthrough', section);
  expect(intro).toBeGreaterThan(section);
  const open = readme.indexOf('```sh\n', intro);
  const close = readme.indexOf('\n```\n', open);
  expect(open).toBeGreaterThan(intro);
  return readme.slice(open + '```sh\n'.length, close + 1);
}

describe("the README's walkthrough", () => {
  it('runs under bash -euo pipefail with this checkout as pqdb, and prints what it says', () => {
    const script = walkthrough();
    for (const verb of ['keygen', 'init', 'import', 'get', 'search', 'checkpoint', 'export', 'verify'])
      expect(script).toMatch(new RegExp(`^pqdb ${verb} `, 'm'));
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    const shim = join(bin, 'pqdb');
    writeFileSync(shim, `#!/bin/sh\nexec "${process.execPath}" "${resolve('bin/pqdb.mjs')}" "$@"\n`);
    chmodSync(shim, 0o755);
    const work = join(dir, 'work');
    mkdirSync(work);
    const r = spawnSync('bash', ['-c', `set -euo pipefail\n${script}`], {
      cwd: work,
      encoding: 'utf8',
      env: {
        ...process.env,
        PATH: `${bin}:${process.env.PATH}`,
        PQDB_UNLOCK: '',
        PQDB_SIGNER: '',
        PQDB_SIGNER_PUBLIC: '',
      },
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = r.stdout;
    expect(statSync(join(work, 'alice')).mode & 0o777).toBe(0o600);
    expect(statSync(join(work, 'signer')).mode & 0o777).toBe(0o600);
    expect(out).toMatch(/^pqdb init: created \.\/store: store [0-9a-f]{32}, suite gcmsiv-hkdf384, 1 recipient\(s\)$/m);
    expect(out).toMatch(/^pqdb import: 3 records into synsets in 1 commit\(s\)/m);
    expect(out).toContain('{"gloss":"feline mammal usually having thick soft fur","lemma":"cat"}\n');
    const hits = out
      .split('\n')
      .filter((l) => /^n\d{8}\t/.test(l))
      .map((l) => l.split('\t')[0]);
    expect(hits).toEqual(['n02121620', 'n02129165']);
    expect(out).toMatch(/^pqdb checkpoint: generation 1, size 3, hash [0-9a-f]{96}$/m);
    expect(out).toMatch(/^pqdb export: 3 sealed export\(s\) of synsets in exports/m);
    expect(out).toContain('pqdb verify --sealed exports: 3 of 3 sealed export(s) valid\n');
    expect(out).toMatch(/^OK: every check holds/m);
  });
});
