// X25519 (RFC 7748) on both WebAssembly builds: differential on seeded random inputs against
// @noble/curves and node:crypto (X25519 KeyObjects from PKCS#8 / SPKI DER), the misuse checks, the
// low-order refusal, and the hygiene rules of the kernels (unaligned inputs, inputs unchanged,
// fresh outputs, WebAssembly scratch, IN and OUT zero after every call). The Wycheproof and RFC
// vectors run in vectors.test.ts (and in Chromium) from cases/x25519.ts.
import { describe, it, expect, beforeAll } from 'vitest';
import * as nodeCrypto from 'node:crypto';
import { x25519 as nobleX25519 } from '@noble/curves/ed25519.js';
import * as api from '../src/crypto';
import { PqdbError } from '../src/errors';
import { x25519Kernel } from '../src/wasm/x25519';
import { x25519Differential, type X25519Oracle } from './cases/x25519';
import { Rng } from './cases/_util';
import { FLAVORS } from './support/vectors';
import { diffCases } from './support/diff-cases';

const { x25519 } = api;
// DER prefixes of RFC 8410: PKCS#8 PrivateKeyInfo and SubjectPublicKeyInfo for id-X25519 (1.3.101.110).
const PKCS8 = Buffer.from('302e020100300506032b656e04220420', 'hex');
const SPKI = Buffer.from('302a300506032b656e032100', 'hex');
const nodePrivate = (k: Uint8Array) =>
  nodeCrypto.createPrivateKey({ key: Buffer.concat([PKCS8, k]), format: 'der', type: 'pkcs8' });
const nodePublic = (u: Uint8Array) =>
  nodeCrypto.createPublicKey({ key: Buffer.concat([SPKI, u]), format: 'der', type: 'spki' });
const nodeOracle: X25519Oracle = {
  name: 'node:crypto',
  scalarMult: (k, u) =>
    new Uint8Array(nodeCrypto.diffieHellman({ privateKey: nodePrivate(k), publicKey: nodePublic(u) })),
  getPublicKey: (k) =>
    new Uint8Array(nodeCrypto.createPublicKey(nodePrivate(k)).export({ format: 'der', type: 'spki' }).subarray(12)),
};
const nobleOracle: X25519Oracle = { name: '@noble/curves', ...nobleX25519 };

/** Nonzero bytes left in the kernel's scratch, IN (the 64 bytes a call reads) and OUT (32). */
function residue(): number {
  const k = x25519Kernel();
  let n = 0;
  for (const [at, len] of [
    [k.SCRATCH, k.SCRATCH_BYTES],
    [k.IN, 64],
    [k.OUT, 32],
  ])
    for (let i = at; i < at + len; i++) n += k.mem[i] !== 0 ? 1 : 0;
  return n;
}

describe.each(FLAVORS)('X25519 (%s)', (flavor) => {
  beforeAll(() => api.setWasmFlavor(flavor));
  const seed = Number(process.env.PQDB_SEED ?? 20261202);

  // A multiple of 8: every input class the generator cycles through (by index mod 8) comes up as often.
  const cases = diffCases(160);
  for (const oracle of [nobleOracle, nodeOracle]) {
    it(`agrees with ${oracle.name} on ${cases} seeded random inputs (with bit 255 set, u ≥ p, unclamped scalars)`, () => {
      const s = x25519Differential(api, oracle, cases, seed);
      expect(s.failures).toEqual([]);
      expect(s.total).toBe(3 * cases);
    });
  }

  it('key agreement: both sides derive the same secret, as node:crypto does', () => {
    const rng = new Rng(seed + 1);
    for (let i = 0; i < 50; i++) {
      const a = x25519.keygen(rng.bytes(32));
      const b = x25519.keygen();
      const ab = x25519.getSharedSecret(a.secretKey, b.publicKey);
      expect(x25519.getSharedSecret(b.secretKey, a.publicKey)).toEqual(ab);
      expect(ab).toEqual(nodeOracle.scalarMult(a.secretKey, b.publicKey));
    }
  });

  it('a low-order public key: getSharedSecret throws INVALID_KEY, scalarMult returns zeros', () => {
    const k = new Rng(seed + 2).bytes(32);
    const p = (1n << 255n) - 19n;
    const le = (v: bigint) => Uint8Array.from({ length: 32 }, (_, i) => Number((v >> BigInt(8 * i)) & 0xffn));
    // u = 0, 1, p − 1 and their non-canonical forms u + p; and a point of order 8.
    const order8 = '5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157';
    const lows = [0n, 1n, p - 1n, p, p + 1n].map(le);
    lows.push(Uint8Array.from(Buffer.from(order8, 'hex')));
    for (const u of lows) {
      expect(x25519.scalarMult(k, u)).toEqual(new Uint8Array(32));
      expect(() => x25519.getSharedSecret(k, u)).toThrow(PqdbError);
      try {
        x25519.getSharedSecret(k, u);
      } catch (e) {
        expect((e as PqdbError).code).toBe('INVALID_KEY');
      }
      expect(residue()).toBe(0);
    }
  });

  it('misuse throws TypeError / RangeError in the message style', () => {
    const k = new Uint8Array(32);
    expect(() => x25519.getPublicKey(new Uint8Array(31))).toThrow(
      '"secretKey" expected Uint8Array of length 32, got length=31',
    );
    expect(() => x25519.getSharedSecret(k, new Uint8Array(33))).toThrow(RangeError);
    expect(() => x25519.scalarMult(k, [1, 2] as unknown as Uint8Array)).toThrow(TypeError);
    expect(() => x25519.scalarMultBase('x' as unknown as Uint8Array)).toThrow(TypeError);
    expect(() => x25519.keygen(new Uint8Array(16))).toThrow(RangeError);
    expect(() => x25519.utils.randomSecretKey(new Uint8Array(64))).toThrow(RangeError);
    expect(x25519.utils.randomSecretKey()).toHaveLength(32);
    expect(Object.isFrozen(x25519)).toBe(true);
  });

  it('unaligned subarrays at offsets 0–7 give the same bytes, and inputs are left unchanged', () => {
    const rng = new Rng(seed + 3);
    const k = rng.bytes(32);
    const u = x25519.getPublicKey(rng.bytes(32));
    const want = nobleX25519.scalarMult(k, u);
    const pub = nobleX25519.getPublicKey(k);
    for (let off = 0; off < 8; off++) {
      const buf = rng.bytes(80);
      buf.set(k, off);
      buf.set(u, off + 40);
      const before = buf.slice();
      const ks = buf.subarray(off, off + 32);
      const us = buf.subarray(off + 40, off + 72);
      expect(x25519.scalarMult(ks, us)).toEqual(want);
      expect(x25519.getSharedSecret(ks, us)).toEqual(want);
      expect(x25519.getPublicKey(ks)).toEqual(pub);
      expect(x25519.scalarMultBase(ks)).toEqual(pub);
      expect(buf).toEqual(before);
      // A Node.js Buffer is a Uint8Array too.
      expect(x25519.scalarMult(Buffer.from(ks), Buffer.from(us))).toEqual(want);
    }
  });

  it('outputs are fresh arrays: not views of WebAssembly memory or of an input, kept by the next call', () => {
    const rng = new Rng(seed + 4);
    const k = rng.bytes(32);
    const u = x25519.getPublicKey(rng.bytes(32));
    const mem = x25519Kernel().mem.buffer;
    const a = x25519.getSharedSecret(k, u);
    const copy = a.slice();
    for (const out of [a, x25519.scalarMult(k, u), x25519.getPublicKey(k), x25519.keygen().publicKey]) {
      expect(out.buffer).not.toBe(mem);
      expect(out.buffer).not.toBe(k.buffer);
      expect(out.buffer).not.toBe(u.buffer);
      expect(out.byteOffset).toBe(0);
      expect(out.buffer.byteLength).toBe(32);
    }
    x25519.getSharedSecret(rng.bytes(32), u);
    expect(a).toEqual(copy);
    // keygen copies a given seed: wiping the returned key leaves the caller's seed alone.
    const seedBytes = rng.bytes(32);
    const kp = x25519.keygen(seedBytes);
    kp.secretKey.fill(0);
    expect(seedBytes.some((b) => b !== 0)).toBe(true);
  });

  it('the kernel scratch (ladder state, scalar copy), IN and OUT are zero after every operation', () => {
    const rng = new Rng(seed + 5);
    const k = rng.bytes(32);
    const u = x25519.getPublicKey(rng.bytes(32));
    x25519Kernel().x.x25519_base(); // a raw kernel call leaves its result in OUT only
    expect(residue()).toBeGreaterThan(0);
    x25519Kernel().mem.fill(0, x25519Kernel().OUT, x25519Kernel().OUT + 32);
    for (const call of [
      () => x25519.getPublicKey(k),
      () => x25519.getSharedSecret(k, u),
      () => x25519.scalarMult(k, u),
      () => x25519.scalarMultBase(k),
      () => x25519.keygen(),
    ]) {
      call();
      expect(residue()).toBe(0);
    }
  });
});
