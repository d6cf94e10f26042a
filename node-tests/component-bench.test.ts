// The component microbenchmark's shared core (bench/component-core.mjs) on a few operations, over
// the built dist/ (npm test builds first): both arms' ciphertexts are the article's 131 bytes and
// open back to the record, the envelope sizes are those of the objects (hybrid − classical = one
// ML-KEM-1024 ciphertext), the proof at 100,000 records is the RFC 9162 path of that tree, and every
// per-operation sample is kept. Speed is not asserted here: the figures live in bench/results/.
import { describe, it, expect } from 'vitest';
// @ts-expect-error: a plain ES module without type declarations
import * as component from '../bench/component-core.mjs';

const { loadPqdb, runComponent, hrtimeClock, summarize, formatReport, ARMS, VARIANTS } = component;

const dist = new URL('../dist/', import.meta.url);

describe('component microbenchmark (small)', () => {
  it('seals and opens the 115-byte record in both arms and accounts for every byte from real objects', async () => {
    const pq = await loadPqdb(dist);
    const ops = 24;
    const r = runComponent(pq, hrtimeClock(), {
      ops,
      warmup: 4,
      batch: 6,
      leaves: 100_000,
      syntheticLeaves: true,
      clockReads: 1000,
    });

    expect(r.method.recordBytes).toBe(115);
    expect(r.method.aadBytes).toBe(16 + 2 + 'records'.length + 2 + 'r000000'.length);
    expect(r.bytes.ciphertextPerRecord).toEqual({ classical: 131, pqc: 131, equal: true });
    expect(r.bytes.sealedRecord).toMatchObject({ classical: 147, pqc: 147 });

    const e = r.bytes.envelopePerRecipient;
    const M = pq.crypto.ml_kem1024.lengths;
    expect(e.pqc.mlKem1024Ciphertext).toBe(M.cipherText);
    expect(e.pqcMinusClassical).toBe(1568);
    expect(e.classical).toEqual({ total: 104, prefix: 24, x25519EphemeralPublicKey: 32, wrappedRoot: 48 });
    expect(e.pqc.total).toBe(24 + 1568 + 32 + 48);
    expect(e.pqc.mlKemCiphertextPlusWrappedRoot).toBe(1616);

    expect(r.bytes.signaturePerCheckpoint).toMatchObject({
      mlDsa87Signature: 4627,
      signedCheckpoint: 129 + 16 + 4627,
      verified: true,
    });
    // 100,000 leaves: leaf 0 lies in the perfect subtree of 2^16 leaves, then one sibling for the rest.
    expect(r.bytes.inclusionProof).toMatchObject({
      leaves: 100_000,
      hashes: 17,
      hashBytes: 48,
      bytes: 816,
      verified: true,
    });
    expect(r.bytes.inclusionProof.overAllLeaves.maxHashes).toBe(17);
    expect(r.bytes.sealedExport.verified).toBe(true);
    expect(r.bytes.perRecordAtLeaves.pqcMinusClassical).toBeCloseTo(1568 / 100_000, 9);

    for (const variant of VARIANTS)
      for (const arm of ARMS)
        for (const dir of ['encrypt', 'decrypt']) {
          const s = r.perOp[variant][arm][dir];
          expect(s.samplesNs).toHaveLength(ops);
          expect(s.n).toBe(ops);
          expect(s.median).toBeGreaterThan(0);
          expect(s.min).toBeLessThanOrEqual(s.median);
          expect(s.median).toBeLessThanOrEqual(s.p90);
          expect(s.p90).toBeLessThanOrEqual(s.max);
          expect(r.batched[variant][arm][dir].samplesNs).toHaveLength(ops / 6);
        }
    expect(r.clock.resolutionNs).toBeGreaterThan(0);
    expect(formatReport(r, 'test')).toContain('1,568 ML-KEM-1024 ciphertext');
  });

  it('summarize: median of an even count, nearest-rank p90', () => {
    expect(summarize([4, 1, 3, 2])).toMatchObject({ n: 4, median: 2.5, p90: 4, mean: 2.5, min: 1, max: 4 });
    expect(summarize(Array.from({ length: 10 }, (_, i) => i + 1))).toMatchObject({ median: 5.5, p90: 9 });
  });
});
