// The package as npm would publish it: `npm pack` of the built repository (run `npm run build`
// first; --ignore-scripts so packing does not rebuild), unpacked into a fresh directory outside the
// repository as node_modules/pqdb, so that nothing resolves through the repository's own node_modules.

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));

export interface Packed {
  /** The .tgz npm pack wrote. */
  tarball: string;
  /** Paths in the tarball, relative to the package root. */
  files: string[];
  /** A consumer project: `${app}/node_modules/pqdb` is the unpacked package. */
  app: string;
}

/** Packs the repository once and unpacks it into a new consumer directory. */
export function packPackage(): Packed {
  const out = mkdtempSync(join(tmpdir(), 'pqdb-pack-'));
  const json = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', out], {
    cwd: REPO,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const [info] = JSON.parse(json) as { filename: string; files: { path: string }[] }[];
  const tarball = join(out, info.filename);
  const app = join(out, 'app');
  const pkg = join(app, 'node_modules', 'pqdb');
  mkdirSync(pkg, { recursive: true });
  execFileSync('tar', ['xzf', tarball, '-C', pkg, '--strip-components=1']);
  return { tarball, files: info.files.map((f) => f.path), app };
}

/** Makes a dev package of the repository (e.g. @types/node) resolvable from the consumer project. */
export function linkDevPackage(app: string, name: string): void {
  const target = join(app, 'node_modules', name);
  mkdirSync(join(target, '..'), { recursive: true });
  symlinkSync(join(REPO, 'node_modules', name), target, 'dir');
}
