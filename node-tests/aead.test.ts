// AES-256-GCM and AES-256-GCM-SIV in Node, on both WebAssembly builds.
import { describe, it, expect, beforeAll } from 'vitest';
import { createCipheriv, randomBytes } from 'node:crypto';
import { gcm as nobleGcm, gcmsiv as nobleGcmsiv } from '@noble/ciphers/aes.js';
import * as api from '../src/crypto';
import { aeadWycheproof, aeadDifferential, aeadTampering, type AeadOracle } from './cases/aead';
import { FLAVORS, loadVector } from './support/vectors';
import { expectBytes } from './support/bytes';

const nodeGcm = (key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, pt: Uint8Array) => {
  const c = createCipheriv('aes-256-gcm', key, nonce);
  c.setAAD(aad);
  return new Uint8Array(Buffer.concat([c.update(pt), c.final(), c.getAuthTag()]));
};
const nodeOracle: AeadOracle = {
  name: 'node:crypto (GCM) / @noble/ciphers (GCM-SIV)',
  seal: (mode, key, nonce, aad, pt) =>
    mode === 'gcm' ? nodeGcm(key, nonce, aad, pt) : nobleGcmsiv(key, nonce, aad).encrypt(pt),
};
const nobleOracle: AeadOracle = {
  name: '@noble/ciphers',
  seal: (mode, key, nonce, aad, pt) =>
    (mode === 'gcm' ? nobleGcm(key, nonce, aad) : nobleGcmsiv(key, nonce, aad)).encrypt(pt),
};

describe.each(FLAVORS)('AEAD (%s)', (flavor) => {
  beforeAll(() => api.setWasmFlavor(flavor));

  it('Wycheproof aes_gcm_test.json and aes_gcm_siv_test.json: every case', () => {
    for (const [mode, file, aes256] of [
      ['gcm', 'aes_gcm_test.json', 105],
      ['gcmsiv', 'aes_gcm_siv_test.json', 103],
    ] as const) {
      const s = aeadWycheproof(loadVector(`wycheproof/${file}`), api, mode, file);
      console.log(`[${flavor}] ${s.name}: ${s.passed}/${s.total} AES-256 cases passed, ${s.skipped} unsupported`);
      expect(s.failures).toEqual([]);
      expect(s.total).toBe(aes256);
      expect(s.total + s.skipped).toBe(mode === 'gcm' ? 316 : 202);
    }
  });

  for (const mode of ['gcm', 'gcmsiv'] as const) {
    for (const oracle of [nodeOracle, nobleOracle]) {
      it(`${mode}: one-shot, keyed and batch forms vs ${oracle.name}`, () => {
        const s = aeadDifferential(api, oracle, mode, 3000 + (mode === 'gcm' ? 1 : 2));
        expect(s.failures.slice(0, 5)).toEqual([]);
        expect(s.total).toBeGreaterThan(1500);
      });
    }
    it(`${mode}: every single-bit change of tag, ciphertext, nonce or AAD fails with AUTH_FAILED`, () => {
      const s = aeadTampering(api, mode, 77);
      expect(s.failures).toEqual([]);
    });
    it(`${mode}: messages larger than the kernel buffers stream (300 KB, 1 MiB + 5)`, () => {
      for (const len of [300_000, (1 << 20) + 5]) {
        const key = randomBytes(32);
        const nonce = randomBytes(12);
        const aad = randomBytes(200_000);
        const pt = randomBytes(len);
        const want = nodeOracle.seal(mode, key, nonce, aad, pt);
        const ct = api[mode](key, nonce, aad).encrypt(pt);
        expect(Buffer.from(ct).equals(Buffer.from(want))).toBe(true);
        expect(Buffer.from(api[mode].withKey(key).decrypt(nonce, ct, aad)).equals(pt)).toBe(true);
        ct[len >> 1] ^= 1;
        expect(() => api[mode](key, nonce, aad).decrypt(ct)).toThrow(expect.objectContaining({ code: 'AUTH_FAILED' }));
      }
    });
    it(`${mode}: misuse throws RangeError/TypeError; short input is AUTH_FAILED; destroy() wipes`, () => {
      const key = new Uint8Array(32);
      const nonce = new Uint8Array(12);
      expect(() => api[mode](new Uint8Array(16), nonce)).toThrow(
        new RangeError('"key" expected Uint8Array of length 32, got length=16'),
      );
      expect(() => api[mode](key, new Uint8Array(0))).toThrow(RangeError);
      if (mode === 'gcmsiv') expect(() => api[mode](key, new Uint8Array(16))).toThrow(RangeError);
      expect(() => api[mode](key, nonce, 'aad' as unknown as Uint8Array)).toThrow(TypeError);
      expect(() => api[mode](key, nonce).decrypt(new Uint8Array(15))).toThrow(
        expect.objectContaining({ code: 'AUTH_FAILED' }),
      );
      const k = api[mode].withKey(key);
      k.destroy();
      expect(() => k.encrypt(nonce, new Uint8Array(1))).toThrow(TypeError);
      expect(() => api[mode].withKey(key).encryptBatch('x' as unknown as [])).toThrow(TypeError);
    });
  }

  it('caller-provided outputs: exact length, in place, never plaintext on failure', () => {
    for (const mode of ['gcm', 'gcmsiv'] as const) {
      for (const len of [0, 115, 300_000]) {
        const key = randomBytes(32);
        const nonce = randomBytes(12);
        const pt = randomBytes(len);
        const k = api[mode].withKey(key);
        const want = nodeOracle.seal(mode, key, nonce, new Uint8Array(0), pt);
        const out = new Uint8Array(len + 16);
        expect(k.encrypt(nonce, pt, undefined, out)).toBe(out);
        expectBytes(out, want);
        // In place: plaintext written over the ciphertext's own bytes.
        const buf = out.slice();
        expectBytes(k.decrypt(nonce, buf, undefined, buf.subarray(0, len)), pt);
        expect(() => k.encrypt(nonce, pt, undefined, new Uint8Array(len + 15))).toThrow(RangeError);
        const bad = want.slice();
        bad[bad.length - 1] ^= 1;
        const dst = new Uint8Array(len);
        expect(() => k.decrypt(nonce, bad, undefined, dst)).toThrow(expect.objectContaining({ code: 'AUTH_FAILED' }));
        expect(dst.every((b) => b === 0)).toBe(true);
      }
    }
  });

  it('a keyed form keeps working when the WebAssembly build changes under it', () => {
    const key = randomBytes(32);
    const nonce = randomBytes(12);
    const pt = randomBytes(115);
    const k = api.gcmsiv.withKey(key);
    const a = k.encrypt(nonce, pt);
    api.setWasmFlavor(flavor === 'simd' ? 'scalar' : 'simd');
    try {
      expect(k.encrypt(nonce, pt)).toEqual(a);
      expect(k.decrypt(nonce, a)).toEqual(new Uint8Array(pt));
    } finally {
      api.setWasmFlavor(flavor);
    }
    expect(k.decrypt(nonce, a)).toEqual(new Uint8Array(pt));
  });

  it('gcm accepts SP 800-38D nonces of other lengths (hashed into J0), as node:crypto does', () => {
    for (const n of [1, 8, 16, 60]) {
      const key = randomBytes(32);
      const nonce = randomBytes(n);
      const pt = randomBytes(100);
      expect(
        Buffer.from(api.gcm(key, nonce).encrypt(pt)).equals(Buffer.from(nodeGcm(key, nonce, new Uint8Array(0), pt))),
      ).toBe(true);
    }
  });
});
