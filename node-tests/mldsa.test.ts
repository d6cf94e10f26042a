// ML-DSA-87 in Node, on both WebAssembly builds: ACVP and Wycheproof, and @noble/post-quantum.
import { describe, it, expect, beforeAll } from 'vitest';
import { ml_dsa87 as noble } from '@noble/post-quantum/ml-dsa.js';
import * as api from '../src/crypto';
import { allMldsaSuites, MLDSA_TOTALS, type DsaApi } from './cases/mldsa';
import { Rng } from './cases/_util';
import { FLAVORS, loadVector } from './support/vectors';
import { diffCases } from './support/diff-cases';

const { ml_dsa87 } = api;
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe.each(FLAVORS)('ML-DSA-87 (%s)', (flavor) => {
  beforeAll(() => api.setWasmFlavor(flavor));

  it('ACVP keyGen / sigGen (+tr1) / sigVer and Wycheproof sign/verify: every case', async () => {
    const suites = await allMldsaSuites(async (p) => loadVector(p), api as unknown as DsaApi);
    for (const s of suites) {
      console.log(`[${flavor}] ${s.name}: ${s.passed}/${s.total} passed, ${s.skipped} skipped`);
      expect(s.failures.slice(0, 5), s.name).toEqual([]);
      expect(s.total + s.skipped, s.name).toBe(MLDSA_TOTALS[s.name]);
    }
  });

  const cases = diffCases(96);
  it(`equals @noble/post-quantum on ${cases} random seeds: keys, deterministic signatures, cross-verification, mutations`, () => {
    const rng = new Rng(flavor === 'simd' ? 87 : 88);
    for (let i = 0; i < cases; i++) {
      const seed = rng.bytes(32);
      const msg = rng.bytes(rng.int(200));
      const context = rng.bytes(rng.int(3) === 0 ? 0 : rng.int(256));
      const a = ml_dsa87.keygen(seed);
      const b = noble.keygen(seed);
      expect(hex(a.publicKey)).toBe(hex(b.publicKey));
      expect(hex(a.secretKey)).toBe(hex(b.secretKey));
      const sig = ml_dsa87.sign(msg, a.secretKey, { context, extraEntropy: false });
      expect(hex(sig)).toBe(hex(noble.sign(msg, b.secretKey, { context, extraEntropy: false })));
      expect(noble.verify(sig, msg, a.publicKey, { context })).toBe(true);
      const hedged = ml_dsa87.sign(msg, a.secretKey, { context });
      expect(ml_dsa87.verify(hedged, msg, a.publicKey, { context })).toBe(true);
      expect(noble.verify(hedged, msg, b.publicKey, { context })).toBe(true);
      if (i % 3 === 0) {
        const bad = sig.slice();
        bad[rng.int(bad.length)] ^= 1 << rng.int(8);
        expect(ml_dsa87.verify(bad, msg, a.publicKey, { context })).toBe(
          noble.verify(bad, msg, b.publicKey, { context }),
        );
        const m2 = new Uint8Array([...msg, 1]);
        const c2 = new Uint8Array([...context.subarray(0, 254), 7]);
        expect(ml_dsa87.verify(sig, m2, a.publicKey, { context })).toBe(false);
        expect(noble.verify(sig, m2, b.publicKey, { context })).toBe(false);
        expect(ml_dsa87.verify(sig, msg, a.publicKey, { context: c2 })).toBe(false);
        expect(noble.verify(sig, msg, b.publicKey, { context: c2 })).toBe(false);
      }
    }
  });

  it('verify returns false (never throws) for wrong lengths and long contexts; misuse throws', () => {
    const { publicKey, secretKey } = ml_dsa87.keygen();
    const msg = new Uint8Array([1, 2, 3]);
    const sig = ml_dsa87.sign(msg, secretKey);
    expect(ml_dsa87.verify(sig, msg, publicKey)).toBe(true);
    expect(ml_dsa87.verify(sig.subarray(1), msg, publicKey)).toBe(false);
    expect(ml_dsa87.verify(sig, msg, publicKey.subarray(1))).toBe(false);
    expect(ml_dsa87.verify(sig, msg, publicKey, { context: new Uint8Array(256) })).toBe(false);
    expect(() => ml_dsa87.verify('x' as unknown as Uint8Array, msg, publicKey)).toThrow(TypeError);
    expect(() => ml_dsa87.sign(msg, secretKey, { context: new Uint8Array(256) })).toThrow(RangeError);
    expect(() => ml_dsa87.sign(msg, secretKey.subarray(1))).toThrow(RangeError);
    expect(() => ml_dsa87.keygen(new Uint8Array(31))).toThrow(RangeError);
    const outOfRange = secretKey.slice();
    outOfRange[128] = 0xff; // s1 coefficient field of 7 (> 2η)
    expect(() => ml_dsa87.sign(msg, outOfRange)).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
  });
});
