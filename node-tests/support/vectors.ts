// Reads the known-answer vector files. By default they come from test-data/vectors, stored
// gzip-compressed (`<path>.gz`, see test-data/vectors/README.md); $PQDB_VECTORS may name an
// uncompressed tree with the same layout instead, whose files are read as they are. The vectors
// are part of the repository, so a missing or damaged file fails the suite that reads it.

import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The repository's compressed copy of the vectors. */
export const BUNDLED_VECTORS_DIR = join(repo, 'test-data', 'vectors');
/** Where the suites read vectors from: $PQDB_VECTORS (uncompressed) or the bundled copy. */
export const VECTORS_DIR = process.env.PQDB_VECTORS || BUNDLED_VECTORS_DIR;
const COMPRESSED = !process.env.PQDB_VECTORS;

/** The bytes of one vector file, e.g. `readVector('wycheproof/aes_gcm_test.json')`; throws if absent. */
export function readVector(path: string): Buffer {
  return COMPRESSED ? gunzipSync(readFileSync(join(VECTORS_DIR, `${path}.gz`))) : readFileSync(join(VECTORS_DIR, path));
}

/** One vector file parsed as JSON. */
export function loadVector(path: string): unknown {
  return JSON.parse(readVector(path).toString('utf8'));
}

export const FLAVORS = ['simd', 'scalar'] as const;
