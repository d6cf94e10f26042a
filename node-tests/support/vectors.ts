// Locates ../shared/vectors (or $PQDB_VECTORS). Missing vectors skip the suites locally but fail
// under CI=true: a green CI run must have run every known-answer case.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export const VECTORS_DIR = process.env.PQDB_VECTORS ?? join(repo, '..', 'shared', 'vectors');
export const HAVE_VECTORS = existsSync(join(VECTORS_DIR, 'README.md'));

if (!HAVE_VECTORS && process.env.CI === 'true') {
  throw new Error(`test vectors not found at ${VECTORS_DIR} (set PQDB_VECTORS); CI must run them`);
}

export function loadVector(path: string): unknown {
  return JSON.parse(readFileSync(join(VECTORS_DIR, path), 'utf8'));
}

export const FLAVORS = ['simd', 'scalar'] as const;
