// Bundle sizes of the built dist/ as an application's bundler sees it (bench/sizes.mjs): importing
// one hash must not bring the AEAD, ML-KEM, ML-DSA or X25519 code, and the whole store stays within
// its budget. Sizes are deterministic for a build, so they are asserted (speed lives in bench/).
import { describe, it, expect } from 'vitest';
// @ts-expect-error plain ESM script without types
import { bundleSize, exportOnly, FULL_STORE } from '../bench/sizes.mjs';

/** Budgets in bytes of gzip (level 9) output of a minified browser ESM bundle. */
const SHA384_ONLY_GZIP_MAX = 25_000;
// 124.5 kB before the persisted key directory, ranged reads, compaction and the migration's page
// passes (136.4 kB with them); 138.7 kB with the short-message AEAD paths (the AEAD module's two
// builds grew) and the synchronous record reads; 141.7 kB with the key directory's base in
// partitions that load on first use; 143.8 kB with the backup pin, the page stores' `supports`, the
// registered gates and the one apply path; 146.0 kB with the composition root and the declared
// contexts each engine module takes; 148.0 kB with the engine slot, the copy that gives way to writes
// and the `storage: 'opfs'` and `worker` choices (the OPFS store and the worker engine's page side
// load by dynamic import, as chunks of their own: not counted, a page on IndexedDB never loads them);
// 150.3 kB with `backupFile` and restores from a file (the file format itself a dynamic import, in
// a chunk of its own as every module loaded by import() is: scripts/build-wasm.mjs); 153.4 kB with
// history floors (the floor page, its chain check in the verifier, trees built in slices); 158.3 kB
// with schema versions, transactions that read, compare-and-set and secondary indexes with queries;
// 159.9 kB with those indexes sealed at checkpoints; 160.4 kB with schema upgrades that rewrite
// (their rewrite loop a chunk of its own).
const FULL_STORE_GZIP_MAX = 161_000;

type Size = { minBytes: number; gzipBytes: number; inputs: string[]; sources: string[] };

describe('bundle sizes (esbuild, browser, minified)', () => {
  it(`{ sha384 } from 'pqdb/crypto' takes only the SHA-2 module: ≤ ${SHA384_ONLY_GZIP_MAX} bytes gzip`, async () => {
    const s: Size = await bundleSize(exportOnly('sha384'));
    console.log(`sha384 only: ${s.minBytes} bytes minified, ${s.gzipBytes} gzip`);
    expect(s.gzipBytes).toBeLessThanOrEqual(SHA384_ONLY_GZIP_MAX);
    const files = s.sources.join('\n');
    expect(files).toMatch(/_sha2\.generated/);
    for (const other of [
      '_aead.generated',
      '_keccak.generated',
      '_mlkem.generated',
      '_mldsa.generated',
      '_x25519.generated',
      '@noble',
    ])
      expect(files, other).not.toContain(other);
  });

  it(`the full store (openStore + a collection) for the browser: ≤ ${FULL_STORE_GZIP_MAX} bytes gzip`, async () => {
    const s: Size = await bundleSize(FULL_STORE);
    console.log(`full store: ${s.minBytes} bytes minified, ${s.gzipBytes} gzip`);
    expect(s.gzipBytes).toBeLessThanOrEqual(FULL_STORE_GZIP_MAX);
    // It does need every kernel family, and the browser entry's IndexedDB store.
    const files = s.sources.join('\n');
    for (const family of ['sha2', 'aead', 'keccak', 'mlkem', 'mldsa', 'x25519'])
      expect(files).toContain(`_${family}.generated`);
    expect(files).toMatch(/indexeddb|idb/);
  });
});
