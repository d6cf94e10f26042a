// Hygiene: inputs are never modified, unaligned subarrays work, outputs are fresh arrays (never
// views into WebAssembly memory, never changed by later calls), and after every operation the
// kernel memory is exactly as instantiated: nothing but the constant tables is left non-zero.
import { describe, it, expect, beforeAll } from 'vitest';
import { createHash, createHmac, hkdfSync } from 'node:crypto';
import * as api from '../src/crypto';
import { allKernels } from '../src/wasm/builds';
import { Rng } from './cases/_util';
import { FLAVORS } from './support/vectors';
import { expectBytes } from './support/bytes';

const {
  sha256,
  sha384,
  sha512,
  hmac,
  hkdf,
  extract,
  expand,
  merkle,
  MerkleAppender,
  gcm,
  gcmsiv,
  sha3_256,
  sha3_512,
  shake128,
  shake256,
  ml_kem1024,
  ml_kem1024_x25519,
  ml_dsa87,
  x25519,
} = api;

type Op = [name: string, run: (a: Uint8Array, b: Uint8Array) => unknown];
/** `a` repeated to `n` bytes: inputs larger than the kernel's IN region take the streaming paths. */
const big = (a: Uint8Array, n: number) => {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += a.length) out.set(a.subarray(0, Math.min(a.length, n - i)), i);
  return out;
};
const OPS: Op[] = [
  ['sha256', (a) => sha256(a)],
  ['sha384', (a) => sha384(a)],
  ['sha512', (a) => sha512(a)],
  ['sha384.create', (a, b) => sha384.create().update(a).update(b).digest()],
  ['hmac sha384', (a, b) => hmac(sha384, a, b)],
  ['hmac sha256', (a, b) => hmac(sha256, a, b)],
  ['hkdf sha384', (a, b) => hkdf(sha384, a, b, a, 100)],
  ['hkdf sha256', (a, b) => hkdf(sha256, a, b, b, 33)],
  ['extract+expand', (a, b) => expand(sha512, extract(sha512, a, b), b, 130)],
  ['sha512 of 300 KB', (a) => sha512(big(a, 300_000))],
  ['hmac sha384, 200 KB key and 300 KB message', (a, b) => hmac(sha384, big(b, 200_000), big(a, 300_000))],
  ['hkdf sha512, 140 KB info', (a, b) => hkdf(sha512, a, b, big(b, 140_000), 64)],
  ['merkle.root', (a, b) => merkle.root([a, b, a])],
  ['merkle.root with a 200 KB leaf', (a, b) => merkle.root([a, big(b, 200_000), a])],
  ['merkle.inclusionProof', (a, b) => merkle.inclusionProof([a, b, a, b, a], 4)],
  [
    'merkle.verifyInclusion',
    (a, b) => merkle.verifyInclusion(b, 1, 3, merkle.inclusionProof([a, b, a], 1), merkle.root([a, b, a])),
  ],
  ['MerkleAppender', (a, b) => new MerkleAppender().appendMany([a, b, a]).root()],
  [
    'MerkleAppender.appendHashes',
    (a) =>
      new MerkleAppender()
        .appendHashes(merkle.leafHash(a))
        .appendHashes(new Uint8Array(96).fill(a[0] ?? 1))
        .root(),
  ],
  // AEAD: key = b[0, 32), nonce = b[32, 44), aad = b[44, 100), plaintext = a.
  [
    'gcm seal + open',
    (a, b) => {
      const c = gcm(b.subarray(0, 32), b.subarray(32, 44), b.subarray(44, 100));
      return c.decrypt(c.encrypt(a));
    },
  ],
  [
    'gcmsiv seal + open',
    (a, b) => {
      const c = gcmsiv(b.subarray(0, 32), b.subarray(32, 44), b.subarray(44, 100));
      return [c.encrypt(a), c.decrypt(c.encrypt(a))];
    },
  ],
  ['gcm with a 60-byte nonce', (a, b) => gcm(b.subarray(0, 32), b.subarray(40, 100)).encrypt(a)],
  [
    'gcmsiv keyed batch',
    (a, b) => {
      const k = gcmsiv.withKey(b.subarray(0, 32));
      const r = k.encryptBatch([
        { nonce: b.subarray(32, 44), data: a },
        { nonce: b.subarray(50, 62), data: b, aad: a },
      ]);
      const o = k.decryptBatch([{ nonce: b.subarray(32, 44), data: r[0] }]);
      k.destroy();
      return [...r, ...o];
    },
  ],
  [
    'gcm keyed encryptInto (one slot per record, one past the batch)',
    (a, b) => {
      const k = gcm.withKey(b.subarray(0, 32));
      const slots = new Uint8Array(a.length + b.length + 140_000 + 48);
      k.encryptInto([
        { nonce: b.subarray(32, 44), data: a, out: slots.subarray(0, a.length + 16) },
        { nonce: b.subarray(50, 62), data: b, aad: a, out: slots.subarray(a.length + 16, a.length + b.length + 32) },
        { nonce: b.subarray(60, 72), data: big(a, 140_000), out: slots.subarray(a.length + b.length + 32) },
      ]);
      k.destroy();
      return slots;
    },
  ],
  [
    'gcm of 300 KB (streamed)',
    (a, b) => gcm(b.subarray(0, 32), b.subarray(32, 44), big(b, 140_000)).encrypt(big(a, 300_000)),
  ],
  [
    'gcmsiv open of 300 KB (streamed)',
    (a, b) => {
      const c = gcmsiv(b.subarray(0, 32), b.subarray(32, 44));
      return c.decrypt(c.encrypt(big(a, 300_000)));
    },
  ],
  ['sha3_256 / sha3_512', (a, b) => [sha3_256(a), sha3_512(b)]],
  [
    'shake128 / shake256 (one-shot and streamed)',
    (a, b) => {
      const st = shake256.create().update(a);
      return [shake128(b, { dkLen: 300 }), st.xof(200), st.xof(5)];
    },
  ],
  ['shake256 of 300 KB', (a) => shake256(big(a, 300_000), { dkLen: 70_000 })],
  [
    'ML-KEM-1024 keygen/encapsulate/decapsulate',
    (a, b) => {
      const kp = ml_kem1024.keygen(big(a, 64));
      const e = ml_kem1024.encapsulate(kp.publicKey, b.subarray(0, 32));
      return [kp.publicKey, e.cipherText, ml_kem1024.decapsulate(e.cipherText, kp.secretKey)];
    },
  ],
  [
    'ML-KEM-1024 key checks',
    (a) => {
      const kp = ml_kem1024.keygen(big(a, 64));
      const bad = kp.secretKey.slice();
      bad[2000] ^= 1;
      return [ml_kem1024.checkPublicKey(kp.publicKey), ml_kem1024.checkSecretKey(bad)];
    },
  ],
  [
    'hybrid ML-KEM-1024 + X25519',
    (a, b) => {
      const kp = ml_kem1024_x25519.keygen(b.subarray(0, 32));
      const e = ml_kem1024_x25519.encapsulate(kp.publicKey, big(a, 64));
      return [e.cipherText, ml_kem1024_x25519.decapsulate(e.cipherText, kp.secretKey)];
    },
  ],
  [
    'ML-DSA-87 keygen/sign/verify',
    (a, b) => {
      const kp = ml_dsa87.keygen(b.subarray(0, 32));
      const sig = ml_dsa87.sign(a, kp.secretKey, { context: b.subarray(32, 40), extraEntropy: false });
      return [
        kp.publicKey,
        sig,
        ml_dsa87.verify(sig, a, kp.publicKey, { context: b.subarray(32, 40) }),
        ml_dsa87.verify(sig, b, kp.publicKey),
      ];
    },
  ],
  [
    'ML-DSA-87 pre-hash and external mu',
    (a, b) => {
      const kp = ml_dsa87.keygen(b.subarray(0, 32));
      const s1 = ml_dsa87.prehash.sign(a, kp.secretKey, 'SHA2-384', { extraEntropy: false });
      const s2 = ml_dsa87.internal.sign(big(b, 64), kp.secretKey, { externalMu: true, extraEntropy: false });
      return [s1, s2, ml_dsa87.prehash.verify(s1, a, kp.publicKey, 'SHA2-384')];
    },
  ],
  [
    'X25519 keys, shared secrets, one input as both arguments, a low-order refusal',
    (a, b) => {
      const k = b.subarray(0, 32);
      const pk = x25519.getPublicKey(k);
      let low: string;
      try {
        x25519.getSharedSecret(k, new Uint8Array(32));
        low = 'accepted';
      } catch (e) {
        low = (e as { code: string }).code;
      }
      return [
        pk,
        x25519.scalarMult(k, a.subarray(0, 32)),
        x25519.getSharedSecret(a.subarray(32, 64), pk),
        x25519.scalarMult(k, k),
        x25519.keygen(b.subarray(32, 64)),
        low,
      ];
    },
  ],
  [
    'gcmsiv failed open',
    (a, b) => {
      const c = gcmsiv(b.subarray(0, 32), b.subarray(32, 44));
      const ct = c.encrypt(a);
      ct[3] ^= 1;
      try {
        c.decrypt(ct);
        return 'opened';
      } catch (e) {
        return (e as { code: string }).code;
      }
    },
  ],
];

describe.each(FLAVORS)('hygiene (%s)', (flavor) => {
  let pristine: Uint8Array[];
  beforeAll(() => {
    api.setWasmFlavor(flavor);
    // Memory as instantiated holds only the constant tables (static data); capture every module's once.
    pristine = allKernels().map((k) => k.mem.slice());
    sha384(new Uint8Array(10));
    allKernels().forEach((k, m) => expectBytes(k.mem, pristine[m], `${k.module} kernel memory`));
  });

  const rng = new Rng(42);
  const base = rng.bytes(700);
  const key = rng.bytes(300);

  it.each(OPS)('%s: inputs unchanged, unaligned offsets 0-7 agree, kernel memory wiped', (_name, run) => {
    const want = JSON.stringify(run(base.slice(0, 200), key.slice(0, 150)), (_k, v) =>
      v instanceof Uint8Array ? [...v] : v,
    );
    for (let off = 0; off < 8; off++) {
      const bufA = new Uint8Array(1024);
      bufA.set(base.subarray(0, 200), off);
      const bufB = new Uint8Array(512);
      bufB.set(key.subarray(0, 150), off);
      const before = [bufA.slice(), bufB.slice()];
      const got = run(bufA.subarray(off, off + 200), bufB.subarray(off, off + 150));
      expect(JSON.stringify(got, (_k, v) => (v instanceof Uint8Array ? [...v] : v))).toBe(want);
      expect(bufA).toEqual(before[0]);
      expect(bufB).toEqual(before[1]);
      allKernels().forEach((k, m) => {
        expect(k.flavor).toBe(flavor);
        let dirty = -1;
        // memcmp first; the byte loop only finds where a dirty memory differs.
        if (!Buffer.from(k.mem.buffer, k.mem.byteOffset, k.mem.length).equals(pristine[m]))
          for (let i = 0; i < k.mem.length; i++)
            if (k.mem[i] !== pristine[m][i]) {
              dirty = i;
              break;
            }
        expect(dirty, `${k.module} kernel memory differs at offset ${dirty}`).toBe(-1);
      });
    }
  });

  it('outputs are fresh arrays, not views into kernel memory, and later calls leave them alone', () => {
    const buffers = allKernels().map((k) => k.x.memory.buffer);
    const a = sha384(base);
    const t = hmac(sha384, key, base);
    const k = hkdf(sha384, key, base, undefined, 64);
    const r = merkle.root([base]);
    const p = merkle.inclusionProof([base, key], 0);
    for (const out of [a, t, k, r, ...p]) expect(buffers).not.toContain(out.buffer);
    const copies = [a, t, k, r].map((x) => x.slice());
    sha384(key);
    hmac(sha384, base, key);
    hkdf(sha384, base, key, undefined, 64);
    merkle.root([key, key]);
    expect([a, t, k, r]).toEqual(copies);
  });

  it('aliasing: a Buffer over a shared ArrayBuffer, input and key being the same array', () => {
    const shared = Buffer.from(base.buffer, base.byteOffset, base.length);
    expect(sha384(shared)).toEqual(new Uint8Array(createHash('sha384').update(shared).digest()));
    expect(hmac(sha384, base, base)).toEqual(new Uint8Array(createHmac('sha384', base).update(base).digest()));
    expect(hkdf(sha256, base, base, base.subarray(0, 100), 64)).toEqual(
      new Uint8Array(hkdfSync('sha256', base, base, base.subarray(0, 100), 64)),
    );
    // A leaf that is a subarray of another leaf.
    expect(merkle.root([base, base.subarray(3, 50)])).toEqual(merkle.root([base.slice(), base.slice(3, 50)]));
  });

  it('streams refuse reuse after digest()', () => {
    const h = sha384.create();
    h.update(base);
    h.digest();
    expect(() => h.update(base)).toThrow(TypeError);
    expect(() => h.digest()).toThrow(TypeError);
  });
});
