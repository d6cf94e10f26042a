// ML-KEM-1024 (FIPS 203) facade over the WebAssembly kernel, in the interface shape of
// @noble/post-quantum's ml_kem1024 so the two are interchangeable providers.
// Key generation and encapsulation draw randomness from crypto.getRandomValues unless a seed or
// message is given (deterministic use: known-answer tests, key derivation from a stored seed).

import { bytes, copyBytes } from '../_args';
import { PqdbError } from '../errors';
import { mlkemKernel, type MlkemKernel } from '../wasm/mlkem';

export const ML_KEM1024_LENGTHS = /* @__PURE__ */ Object.freeze({
  secretKey: 3168,
  publicKey: 1568,
  cipherText: 1568,
  seed: 64,
  msg: 32,
  msgRand: 32,
  sharedSecret: 32,
});
const L = ML_KEM1024_LENGTHS;

/** The KEM interface shared by ml_kem1024, the hybrid and the noble provider. */
export interface Kem {
  readonly lengths: {
    publicKey: number;
    secretKey: number;
    cipherText: number;
    seed: number;
    msg?: number;
    sharedSecret: number;
  };
  keygen(seed?: Uint8Array): { publicKey: Uint8Array; secretKey: Uint8Array };
  getPublicKey(secretKey: Uint8Array): Uint8Array;
  encapsulate(publicKey: Uint8Array, msg?: Uint8Array): { cipherText: Uint8Array; sharedSecret: Uint8Array };
  decapsulate(cipherText: Uint8Array, secretKey: Uint8Array): Uint8Array;
}

export function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  globalThis.crypto.getRandomValues(out);
  return out;
}

function take(k: MlkemKernel, at: number, len: number): Uint8Array {
  const out = k.mem.slice(k.OUT + at, k.OUT + at + len);
  k.mem.fill(0, k.OUT + at, k.OUT + at + len);
  return out;
}

function invalidKey(what: string): PqdbError {
  return new PqdbError('INVALID_KEY', what);
}

/**
 * ML-KEM.KeyGen (FIPS 203 Algorithm 19 over Algorithm 16) from a 64-byte seed d ‖ z (random when
 * omitted). The secret key is the 3,168-byte expanded form.
 * @throws RangeError when the seed is not 64 bytes.
 */
function keygen(seed?: Uint8Array): { publicKey: Uint8Array; secretKey: Uint8Array } {
  const s = seed === undefined ? randomBytes(L.seed) : bytes('seed', seed, L.seed);
  const k = mlkemKernel();
  k.mem.set(s, k.IN);
  if (seed === undefined) s.fill(0);
  k.x.mlkem_keygen();
  return { publicKey: take(k, 0, L.publicKey), secretKey: take(k, L.publicKey, L.secretKey) };
}

/** The encapsulation key held in an expanded secret key (after its hash check). */
function getPublicKey(secretKey: Uint8Array): Uint8Array {
  bytes('secretKey', secretKey, L.secretKey);
  if (!checkSecretKey(secretKey)) throw invalidKey('ML-KEM-1024 secret key fails its hash check (FIPS 203 §7.3)');
  return copyBytes(secretKey, 384 * 4, 384 * 4 + L.publicKey);
}

/**
 * ML-KEM.Encaps (Algorithm 20 over 17) with the §7.2 input check.
 * @throws RangeError for wrong lengths; PqdbError INVALID_KEY when the modulus check fails.
 */
function encapsulate(publicKey: Uint8Array, msg?: Uint8Array): { cipherText: Uint8Array; sharedSecret: Uint8Array } {
  bytes('publicKey', publicKey, L.publicKey);
  const m = msg === undefined ? randomBytes(L.msg) : bytes('msg', msg, L.msg);
  const k = mlkemKernel();
  k.mem.set(publicKey, k.IN);
  k.mem.set(m, k.IN + L.publicKey);
  if (msg === undefined) m.fill(0);
  if (k.x.mlkem_encaps() !== 1) throw invalidKey('ML-KEM-1024 public key fails the modulus check (FIPS 203 §7.2)');
  return { cipherText: take(k, 0, L.cipherText), sharedSecret: take(k, L.cipherText, 32) };
}

/**
 * ML-KEM.Decaps (Algorithm 21 over 18) with the §7.3 input checks. A wrong ciphertext of the
 * right length yields the implicit-rejection key, never an error.
 * @throws RangeError for wrong lengths; PqdbError INVALID_KEY when the secret key's hash check fails.
 */
function decapsulate(cipherText: Uint8Array, secretKey: Uint8Array): Uint8Array {
  bytes('cipherText', cipherText, L.cipherText);
  bytes('secretKey', secretKey, L.secretKey);
  const k = mlkemKernel();
  k.mem.set(cipherText, k.IN);
  k.mem.set(secretKey, k.IN + L.cipherText);
  if (k.x.mlkem_decaps() !== 1) throw invalidKey('ML-KEM-1024 secret key fails its hash check (FIPS 203 §7.3)');
  return take(k, 0, 32);
}

/** FIPS 203 §7.2 encapsulation key check (length and modulus). */
export function checkPublicKey(publicKey: Uint8Array): boolean {
  if (!(publicKey instanceof Uint8Array) || publicKey.length !== L.publicKey) return false;
  const k = mlkemKernel();
  k.mem.set(publicKey, k.IN);
  return k.x.mlkem_check_ek() === 1;
}

/** FIPS 203 §7.3 decapsulation key check (length and embedded hash). */
export function checkSecretKey(secretKey: Uint8Array): boolean {
  if (!(secretKey instanceof Uint8Array) || secretKey.length !== L.secretKey) return false;
  const k = mlkemKernel();
  k.mem.set(secretKey, k.IN);
  return k.x.mlkem_check_dk() === 1;
}

/**
 * ML-KEM-1024 (FIPS 203) in WebAssembly, interface-compatible with @noble/post-quantum.
 * @example
 * const { publicKey, secretKey } = ml_kem1024.keygen();
 * const { cipherText, sharedSecret } = ml_kem1024.encapsulate(publicKey);
 * ml_kem1024.decapsulate(cipherText, secretKey); // equals sharedSecret
 */
export const ml_kem1024: Kem & { checkPublicKey: typeof checkPublicKey; checkSecretKey: typeof checkSecretKey } =
  /* @__PURE__ */ Object.freeze({
    lengths: ML_KEM1024_LENGTHS,
    keygen,
    getPublicKey,
    encapsulate,
    decapsulate,
    checkPublicKey,
    checkSecretKey,
  });
