// The ML-KEM-1024 + X25519 hybrid KEM of pqdb (DESIGN §3): the X-Wing construction
// (draft-connolly-cfrg-xwing-kem) with ML-KEM-1024 instead of ML-KEM-768 and pqdb's own label,
// which comes last:
//   ss = SHA3-256(ss_MLKEM ‖ ss_X25519 ‖ ct_X25519 ‖ pk_X25519 ‖ "pqdb-MLKEM1024-X25519-v1").
// The secret key is one 32-byte seed, expanded with SHAKE256 to (d ‖ z) for ML-KEM and the X25519
// scalar, as X-Wing does. An all-zero X25519 result (a low-order point) is rejected.
// Every primitive comes from the provider (kem.ts): pqdb's WebAssembly kernels for X25519, ML-KEM,
// SHA3-256 and SHAKE256, or the noble provider's pure-JavaScript ones (@noble/curves' X25519 among
// them). Both give the same bytes. Every intermediate array made from the seed (its SHAKE256
// expansion, the ML-KEM secret key, the X25519 scalar) and every partial shared secret is wiped
// before a function returns or throws. The WebAssembly kernels zero their own memory; copies a
// JavaScript provider makes inside a call (byte arrays, BigInts) are out of reach and cannot be wiped.

import { bytes, copyBytes } from '../_args';
import { PqdbError } from '../errors';
import { ML_KEM1024_LENGTHS as M, randomBytes, type Kem } from '../kernels/mlkem';

export const HYBRID_LABEL = 'pqdb-MLKEM1024-X25519-v1';
const LABEL = new TextEncoder().encode(HYBRID_LABEL);
const X = 32;

/** The X25519 operations the hybrid uses (pqdb's facade and @noble/curves' x25519 both have them). */
export interface X25519Part {
  getPublicKey(secretKey: Uint8Array): Uint8Array;
  getSharedSecret(secretKey: Uint8Array, publicKey: Uint8Array): Uint8Array;
}

/** What the hybrid needs from a provider: ML-KEM-1024, X25519, SHA3-256 and SHAKE256. */
export interface HybridParts {
  mlkem: Kem;
  x25519: X25519Part;
  sha3_256(msg: Uint8Array): Uint8Array;
  shake256(msg: Uint8Array, opts: { dkLen: number }): Uint8Array;
}

export const ML_KEM1024_X25519_LENGTHS = /* @__PURE__ */ Object.freeze({
  secretKey: 32,
  publicKey: M.publicKey + X, // 1600
  cipherText: M.cipherText + X, // 1600
  seed: 32,
  msg: 64, // encapsulation randomness: ML-KEM message ‖ X25519 ephemeral scalar
  sharedSecret: 32,
});
const L = ML_KEM1024_X25519_LENGTHS;

interface Expanded {
  /** SHAKE256(seed, 96) = d ‖ z (ML-KEM) ‖ X25519 scalar: holds `xSecret`; wiped by `wipe`. */
  e: Uint8Array;
  mlkem: { publicKey: Uint8Array; secretKey: Uint8Array };
  /** A view of `e` (no copy of its own). */
  xSecret: Uint8Array;
  xPublic: Uint8Array;
}

function wipe(ex: Expanded): void {
  ex.e.fill(0);
  ex.mlkem.secretKey.fill(0);
}

/** Builds the hybrid over one provider's ML-KEM-1024, X25519, SHA3-256 and SHAKE256. */
export function makeHybrid(parts: HybridParts): Kem {
  const { x25519 } = parts;
  /** The seed's expansion; the caller wipes it (`wipe`). */
  function expand(seed: Uint8Array): Expanded {
    const e = parts.shake256(seed, { dkLen: 96 });
    let mlkem: Expanded['mlkem'] | undefined;
    try {
      mlkem = parts.mlkem.keygen(e.subarray(0, 64));
      const xSecret = e.subarray(64, 96);
      return { e, mlkem, xSecret, xPublic: x25519.getPublicKey(xSecret) };
    } catch (err) {
      e.fill(0);
      mlkem?.secretKey.fill(0);
      throw err;
    }
  }

  /** The public key of a seed (not copied; left as it is). */
  function publicKeyOf(seed: Uint8Array): Uint8Array {
    const ex = expand(seed);
    try {
      const publicKey = new Uint8Array(L.publicKey);
      publicKey.set(ex.mlkem.publicKey);
      publicKey.set(ex.xPublic, M.publicKey);
      return publicKey;
    } finally {
      wipe(ex);
    }
  }

  function x25519Shared(secret: Uint8Array, pub: Uint8Array): Uint8Array {
    let ss: Uint8Array;
    try {
      ss = x25519.getSharedSecret(secret, pub);
    } catch (cause) {
      // Either provider refuses a low-order point (pqdb's with INVALID_KEY, noble's with an Error).
      throw new PqdbError('INVALID_KEY', 'X25519 share is a low-order point', { cause });
    }
    let acc = 0; // a provider that returned the zeros instead
    for (const b of ss) acc |= b;
    if (acc === 0) throw new PqdbError('INVALID_KEY', 'X25519 share is a low-order point');
    return ss;
  }

  function combine(ssM: Uint8Array, ssX: Uint8Array, ctX: Uint8Array, pkX: Uint8Array): Uint8Array {
    const input = new Uint8Array(32 + 32 + 32 + 32 + LABEL.length);
    input.set(ssM, 0);
    input.set(ssX, 32);
    input.set(ctX, 64);
    input.set(pkX, 96);
    input.set(LABEL, 128);
    try {
      return parts.sha3_256(input);
    } finally {
      input.fill(0, 0, 64);
    }
  }

  /**
   * Key pair from a 32-byte seed (random when omitted): public key = ML-KEM-1024 key ‖ X25519 key.
   * @throws RangeError when the seed is not 32 bytes.
   */
  function keygen(seed?: Uint8Array): { publicKey: Uint8Array; secretKey: Uint8Array } {
    const sk = seed === undefined ? randomBytes(L.seed) : copyBytes(bytes('seed', seed, L.seed));
    try {
      return { publicKey: publicKeyOf(sk), secretKey: sk };
    } catch (err) {
      sk.fill(0);
      throw err;
    }
  }

  function getPublicKey(secretKey: Uint8Array): Uint8Array {
    return publicKeyOf(bytes('secretKey', secretKey, L.secretKey));
  }

  /**
   * Encapsulates to a hybrid public key; `msg` (64 bytes: ML-KEM message ‖ X25519 ephemeral scalar)
   * makes it deterministic for tests.
   * @throws RangeError for wrong lengths; PqdbError INVALID_KEY for a public key failing the ML-KEM
   * modulus check or an X25519 key of low order.
   */
  function encapsulate(publicKey: Uint8Array, msg?: Uint8Array): { cipherText: Uint8Array; sharedSecret: Uint8Array } {
    bytes('publicKey', publicKey, L.publicKey);
    const rnd = msg === undefined ? randomBytes(L.msg) : copyBytes(bytes('msg', msg, L.msg));
    let ssX: Uint8Array | undefined;
    let ssM: Uint8Array | undefined;
    try {
      const pkM = publicKey.subarray(0, M.publicKey);
      const pkX = publicKey.subarray(M.publicKey);
      const eph = rnd.subarray(32, 64);
      const ctX = x25519.getPublicKey(eph);
      ssX = x25519Shared(eph, pkX);
      const encapsulated = parts.mlkem.encapsulate(pkM, rnd.subarray(0, 32));
      ssM = encapsulated.sharedSecret;
      const cipherText = new Uint8Array(L.cipherText);
      cipherText.set(encapsulated.cipherText);
      cipherText.set(ctX, M.cipherText);
      return { cipherText, sharedSecret: combine(ssM, ssX, ctX, pkX) };
    } finally {
      rnd.fill(0);
      ssX?.fill(0);
      ssM?.fill(0);
    }
  }

  /**
   * Decapsulates a hybrid ciphertext with the 32-byte secret seed. A tampered ML-KEM half yields
   * ML-KEM's implicit-rejection secret, so the combined secret simply differs.
   * @throws RangeError for wrong lengths; PqdbError INVALID_KEY for a low-order X25519 share.
   */
  function decapsulate(cipherText: Uint8Array, secretKey: Uint8Array): Uint8Array {
    bytes('cipherText', cipherText, L.cipherText);
    bytes('secretKey', secretKey, L.secretKey);
    const ex = expand(secretKey);
    let ssX: Uint8Array | undefined;
    let ssM: Uint8Array | undefined;
    try {
      const ctX = cipherText.subarray(M.cipherText);
      ssX = x25519Shared(ex.xSecret, ctX);
      ssM = parts.mlkem.decapsulate(cipherText.subarray(0, M.cipherText), ex.mlkem.secretKey);
      return combine(ssM, ssX, ctX, ex.xPublic);
    } finally {
      wipe(ex);
      ssX?.fill(0);
      ssM?.fill(0);
    }
  }

  return Object.freeze({ lengths: ML_KEM1024_X25519_LENGTHS, keygen, getPublicKey, encapsulate, decapsulate });
}
