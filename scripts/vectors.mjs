// Reads the known-answer vector files for the scripts and the browser test server. By default they
// come from the repository's copy in test-data/vectors, stored gzip-compressed (`<path>.gz`, see
// test-data/vectors/README.md); --vectors DIR or $PQDB_VECTORS may name an uncompressed tree with the
// same layout (acvp/, wycheproof/, cyclonedx/) instead. node-tests/support/vectors.ts does the same for vitest.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The repository's compressed copy of the vectors. */
export const BUNDLED_VECTORS_DIR = join(repo, 'test-data', 'vectors');

/**
 * Where vectors are read from: `dir` (uncompressed) when given or $PQDB_VECTORS is set, else the
 * bundled compressed copy. `file(p)` is the path on disk holding vector `p` (with `.gz` when
 * compressed); `read(p)` returns its decompressed bytes and throws when it is absent or damaged.
 * @example const v = vectorSource(); JSON.parse(v.read('wycheproof/aes_gcm_test.json'));
 */
export function vectorSource(dir = process.env.PQDB_VECTORS || undefined) {
  const root = dir ?? BUNDLED_VECTORS_DIR;
  const compressed = dir === undefined;
  const file = (p) => join(root, compressed ? `${p}.gz` : p);
  const read = (p) => (compressed ? gunzipSync(readFileSync(file(p))) : readFileSync(file(p)));
  return { root, compressed, file, read };
}
