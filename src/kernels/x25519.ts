// X25519 (RFC 7748 §5, §6.1) facade over the WebAssembly kernel, in the interface shape of
// @noble/curves' `x25519` (getPublicKey, getSharedSecret, scalarMult, scalarMultBase, keygen,
// utils.randomSecretKey), so callers move between the two without change and get the same bytes.
//
// The kernel clamps the scalar, masks bit 255 of the u-coordinate and accepts a non-canonical u (it
// is reduced), as §5 asks; the ladder is constant time. `getSharedSecret` refuses an all-zero
// result (a low-order or small-subgroup public key: §6.1 "check … whether the result is all zero")
// with PqdbError INVALID_KEY; `scalarMult` is the bare function and returns the zeros.
// Secrets never outlive a call in WebAssembly memory: the kernel zeroes its scratch and the part of
// IN it read, and this facade zeroes OUT after copying the result out. Results are fresh arrays,
// never views into WebAssembly memory; inputs are not modified.

import { bytes } from '../_args';
import { PqdbError } from '../errors';
import { x25519Kernel, type X25519Kernel } from '../wasm/x25519';

export const X25519_LENGTHS = /* @__PURE__ */ Object.freeze({ secretKey: 32, publicKey: 32, seed: 32 });
const N = 32;

function take(k: X25519Kernel): Uint8Array {
  const out = k.mem.slice(k.OUT, k.OUT + N);
  k.mem.fill(0, k.OUT, k.OUT + N);
  return out;
}

function randomSecretKey(seed?: Uint8Array): Uint8Array {
  const out = new Uint8Array(N);
  if (seed === undefined) globalThis.crypto.getRandomValues(out);
  else out.set(bytes('seed', seed, N));
  return out;
}

/**
 * X25519(scalar, u) of RFC 7748 §5: the u-coordinate of the clamped scalar times the point with
 * u-coordinate `u`. Returns 32 zero bytes for a low-order `u` (it does not throw: see getSharedSecret).
 * @throws TypeError / RangeError unless both are 32-byte Uint8Arrays.
 * @example x25519.scalarMult(secretKey, peerPublicKey)
 */
function scalarMult(scalar: Uint8Array, u: Uint8Array): Uint8Array {
  return ladder(bytes('scalar', scalar, N), bytes('u', u, N)).out;
}

/** X25519(scalar, u) on checked inputs, and whether the result is not all zero. */
function ladder(scalar: Uint8Array, u: Uint8Array): { out: Uint8Array; nonzero: boolean } {
  const k = x25519Kernel();
  k.mem.set(scalar, k.IN);
  k.mem.set(u, k.IN + N);
  const nonzero = k.x.x25519_scalarmult() === 1;
  return { out: take(k), nonzero };
}

/**
 * X25519(scalar, 9): the public key of a secret scalar (§6.1).
 * @throws TypeError / RangeError unless `scalar` is a 32-byte Uint8Array.
 * @example x25519.scalarMultBase(secretKey)
 */
function scalarMultBase(scalar: Uint8Array): Uint8Array {
  bytes('scalar', scalar, N);
  const k = x25519Kernel();
  k.mem.set(scalar, k.IN);
  k.x.x25519_base();
  return take(k);
}

/**
 * The 32-byte public key of a 32-byte secret key (§6.1).
 * @throws TypeError / RangeError unless `secretKey` is a 32-byte Uint8Array.
 * @example const publicKey = x25519.getPublicKey(secretKey);
 */
function getPublicKey(secretKey: Uint8Array): Uint8Array {
  bytes('secretKey', secretKey, N);
  return scalarMultBase(secretKey);
}

/**
 * The Diffie–Hellman shared secret X25519(secretKey, publicKey) of §6.1, refusing the all-zero
 * result of a low-order public key.
 * @throws TypeError / RangeError for wrong types or lengths; PqdbError INVALID_KEY when the result
 * is all zero (a low-order point).
 * @example const shared = x25519.getSharedSecret(mySecretKey, theirPublicKey);
 */
function getSharedSecret(secretKey: Uint8Array, publicKey: Uint8Array): Uint8Array {
  const { out, nonzero } = ladder(bytes('secretKey', secretKey, N), bytes('publicKey', publicKey, N));
  if (!nonzero) throw new PqdbError('INVALID_KEY', 'X25519 public key is a low-order point');
  return out;
}

/**
 * A key pair: the secret key is `seed` (copied) or 32 random bytes.
 * @throws RangeError when `seed` is not 32 bytes.
 * @example const { secretKey, publicKey } = x25519.keygen();
 */
function keygen(seed?: Uint8Array): { secretKey: Uint8Array; publicKey: Uint8Array } {
  const secretKey = randomSecretKey(seed);
  return { secretKey, publicKey: getPublicKey(secretKey) };
}

/** The X25519 operations, as one frozen object. */
export interface X25519 {
  readonly lengths: typeof X25519_LENGTHS;
  getPublicKey(secretKey: Uint8Array): Uint8Array;
  getSharedSecret(secretKey: Uint8Array, publicKey: Uint8Array): Uint8Array;
  scalarMult(scalar: Uint8Array, u: Uint8Array): Uint8Array;
  scalarMultBase(scalar: Uint8Array): Uint8Array;
  keygen(seed?: Uint8Array): { secretKey: Uint8Array; publicKey: Uint8Array };
  readonly utils: { randomSecretKey(seed?: Uint8Array): Uint8Array };
}

/**
 * X25519 (RFC 7748) in constant-time WebAssembly, interface-compatible with @noble/curves' x25519.
 * @example
 * const alice = x25519.keygen(), bob = x25519.keygen();
 * x25519.getSharedSecret(alice.secretKey, bob.publicKey); // equals the same from bob's side
 */
export const x25519: X25519 = /* @__PURE__ */ Object.freeze({
  lengths: X25519_LENGTHS,
  getPublicKey,
  getSharedSecret,
  scalarMult,
  scalarMultBase,
  keygen,
  utils: Object.freeze({ randomSecretKey }),
});
