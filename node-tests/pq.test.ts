// Keccak (SHA3-256/512, SHAKE128/256), ML-KEM-1024 and the ML-KEM-1024 + X25519 hybrid, in Node,
// on both WebAssembly builds.
import { describe, it, expect, beforeAll } from 'vitest';
import { createHash, randomBytes } from 'node:crypto';
import { ml_kem1024 as nobleKem } from '@noble/post-quantum/ml-kem.js';
import { x25519 } from '@noble/curves/ed25519.js';
import { sha3_256 as nSha3_256 } from '@noble/hashes/sha3.js';
import * as api from '../src/crypto';
import { allPqSuites, PQ_TOTALS, type PqApi } from './cases/pq';
import { Rng } from './cases/_util';
import { FLAVORS, loadVector } from './support/vectors';
import { diffCases } from './support/diff-cases';

const { ml_kem1024, ml_kem1024_x25519 } = api;
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe.each(FLAVORS)('post-quantum (%s)', (flavor) => {
  beforeAll(() => api.setWasmFlavor(flavor));

  it('ACVP SHA3-256 / SHAKE / ML-KEM and Wycheproof ML-KEM: every case', async () => {
    const suites = await allPqSuites(async (p) => loadVector(p), api as unknown as PqApi, process.env.SLOW === '1');
    for (const s of suites) {
      console.log(
        `[${flavor}] ${s.name}: ${s.passed}/${s.total} passed, ${s.skipped} skipped${s.note ? ` (${s.note})` : ''}`,
      );
      expect(s.failures, s.name).toEqual([]);
      expect(s.total + s.skipped, s.name).toBe(PQ_TOTALS[s.name]);
      expect(s.total, s.name).toBeGreaterThan(0);
    }
  });

  it('SHA3-256/512 and SHAKE128/256 match node:crypto across rate boundaries, one-shot and streamed', () => {
    const rng = new Rng(202);
    for (const len of [0, 1, 71, 72, 73, 135, 136, 137, 167, 168, 169, 300, 1000, 140_000]) {
      const m = rng.bytes(len);
      expect(hex(api.sha3_256(m))).toBe(createHash('sha3-256').update(m).digest('hex'));
      expect(hex(api.sha3_512(m))).toBe(createHash('sha3-512').update(m).digest('hex'));
      for (const out of [0, 1, 32, 167, 168, 169, 500, 70_000]) {
        expect(hex(api.shake128(m, { dkLen: out }))).toBe(
          createHash('shake128', { outputLength: out }).update(m).digest('hex'),
        );
        expect(hex(api.shake256(m, { dkLen: out }))).toBe(
          createHash('shake256', { outputLength: out }).update(m).digest('hex'),
        );
      }
      const st = api.shake256.create();
      for (let o = 0; o < len; o += 50) st.update(m.subarray(o, o + 50));
      const want = createHash('shake256', { outputLength: 400 }).update(m).digest('hex');
      expect(hex(st.xof(100)) + hex(st.xof(300))).toBe(want);
      expect(() => st.update(m)).toThrow(TypeError);
    }
    expect(() => api.sha3_256.create().xof(3)).toThrow(TypeError);
  });

  const kemCases = diffCases(240);
  it(`ML-KEM-1024 equals @noble/post-quantum on ${kemCases} random seeds and messages, including implicit rejection`, () => {
    const rng = new Rng(flavor === 'simd' ? 1 : 2);
    for (let i = 0; i < kemCases; i++) {
      const seed = rng.bytes(64);
      const msg = rng.bytes(32);
      const a = ml_kem1024.keygen(seed);
      const b = nobleKem.keygen(seed);
      expect(hex(a.publicKey)).toBe(hex(b.publicKey));
      expect(hex(a.secretKey)).toBe(hex(b.secretKey));
      const ea = ml_kem1024.encapsulate(a.publicKey, msg);
      const eb = nobleKem.encapsulate(b.publicKey, msg);
      expect(hex(ea.cipherText)).toBe(hex(eb.cipherText));
      expect(hex(ea.sharedSecret)).toBe(hex(eb.sharedSecret));
      expect(hex(ml_kem1024.decapsulate(ea.cipherText, a.secretKey))).toBe(hex(ea.sharedSecret));
      // A mutated or random ciphertext: both give the same implicit-rejection secret.
      const bad = i % 2 ? ea.cipherText.slice() : rng.bytes(1568);
      if (i % 2) bad[rng.int(1568)] ^= 1 << rng.int(8);
      const ra = ml_kem1024.decapsulate(bad, a.secretKey);
      expect(hex(ra)).toBe(hex(nobleKem.decapsulate(bad, b.secretKey)));
      expect(hex(ra)).not.toBe(hex(ea.sharedSecret));
    }
  });

  it('ML-KEM-1024: lengths, key checks and randomness', () => {
    const { publicKey, secretKey } = ml_kem1024.keygen();
    const { cipherText, sharedSecret } = ml_kem1024.encapsulate(publicKey);
    expect(ml_kem1024.decapsulate(cipherText, secretKey)).toEqual(sharedSecret);
    expect(ml_kem1024.getPublicKey(secretKey)).toEqual(publicKey);
    expect(ml_kem1024.keygen().publicKey).not.toEqual(publicKey);
    expect(() => ml_kem1024.keygen(new Uint8Array(63))).toThrow(RangeError);
    expect(() => ml_kem1024.encapsulate(publicKey.subarray(1))).toThrow(RangeError);
    expect(() => ml_kem1024.encapsulate(publicKey, new Uint8Array(31))).toThrow(RangeError);
    expect(() => ml_kem1024.decapsulate(cipherText.subarray(1), secretKey)).toThrow(RangeError);
    expect(() => ml_kem1024.decapsulate(cipherText, secretKey.subarray(1))).toThrow(RangeError);
    // Unreduced coefficient (0xFFF in the first 12 bits): the §7.2 modulus check.
    const unreduced = publicKey.slice();
    unreduced[0] = 0xff;
    unreduced[1] |= 0x0f;
    expect(ml_kem1024.checkPublicKey(unreduced)).toBe(false);
    expect(() => ml_kem1024.encapsulate(unreduced)).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
    // Corrupted embedded ek: the §7.3 hash check.
    const corrupt = secretKey.slice();
    corrupt[1536 + 5] ^= 1;
    expect(ml_kem1024.checkSecretKey(corrupt)).toBe(false);
    expect(() => ml_kem1024.decapsulate(cipherText, corrupt)).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
  });

  it('hybrid ML-KEM-1024 + X25519: round trips, the combiner, mismatched keys, low-order points, tampered halves', () => {
    const H = ml_kem1024_x25519;
    expect(H.lengths).toMatchObject({ publicKey: 1600, secretKey: 32, cipherText: 1600, sharedSecret: 32 });
    const seed = randomBytes(32);
    const seedCopy = Buffer.from(seed);
    const { publicKey, secretKey } = H.keygen(seed);
    expect(seed.equals(seedCopy)).toBe(true); // a Buffer seed is never wiped or changed
    const rnd = randomBytes(64);
    const { cipherText, sharedSecret } = H.encapsulate(publicKey, rnd);
    expect(H.decapsulate(cipherText, secretKey)).toEqual(sharedSecret);
    // The combiner, recomputed from its parts with independent code.
    const ex = api.shake256(secretKey, { dkLen: 96 });
    const mk = nobleKem.keygen(ex.subarray(0, 64));
    const pkX = x25519.getPublicKey(ex.subarray(64));
    expect(publicKey).toEqual(new Uint8Array([...mk.publicKey, ...pkX]));
    const ssM = nobleKem.decapsulate(cipherText.subarray(0, 1568), mk.secretKey);
    const ctX = cipherText.subarray(1568);
    const ssX = x25519.getSharedSecret(ex.subarray(64), ctX);
    const label = new TextEncoder().encode('pqdb-MLKEM1024-X25519-v1');
    expect(sharedSecret).toEqual(nSha3_256(new Uint8Array([...ssM, ...ssX, ...ctX, ...pkX, ...label])));
    // Deterministic with the same randomness; noble provider gives identical bytes.
    expect(H.encapsulate(publicKey, rnd)).toEqual({ cipherText, sharedSecret });
    const N = api.kemProvider('noble').ml_kem1024_x25519;
    expect(N.encapsulate(publicKey, rnd)).toEqual({ cipherText, sharedSecret });
    expect(N.decapsulate(cipherText, secretKey)).toEqual(sharedSecret);
    // A different recipient key gives a different secret (no error: ML-KEM rejects implicitly).
    expect(H.decapsulate(cipherText, H.keygen().secretKey)).not.toEqual(sharedSecret);
    // Tampered ML-KEM half: implicit rejection; tampered X25519 half: a different secret.
    const t1 = cipherText.slice();
    t1[100] ^= 1;
    expect(H.decapsulate(t1, secretKey)).not.toEqual(sharedSecret);
    const t2 = cipherText.slice();
    t2[1568 + 3] ^= 1;
    expect(H.decapsulate(t2, secretKey)).not.toEqual(sharedSecret);
    // Low-order X25519 points (0 and 1) in the public key or the ciphertext are rejected.
    for (const point of [new Uint8Array(32), new Uint8Array([1, ...new Uint8Array(31)])]) {
      const pk = publicKey.slice();
      pk.set(point, 1568);
      expect(() => H.encapsulate(pk)).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
      const ct = cipherText.slice();
      ct.set(point, 1568);
      expect(() => H.decapsulate(ct, secretKey)).toThrow(expect.objectContaining({ code: 'INVALID_KEY' }));
    }
    expect(() => H.keygen(new Uint8Array(31))).toThrow(RangeError);
    expect(() => H.encapsulate(publicKey.subarray(1))).toThrow(RangeError);
    expect(() => H.decapsulate(cipherText, new Uint8Array(33))).toThrow(RangeError);
    expect(() => api.kemProvider('liboqs' as 'wasm')).toThrow(RangeError);
  });
});
