// ML-DSA-87 (FIPS 204) facade over the WebAssembly kernel, in the interface shape of
// @noble/post-quantum's ml_dsa87. The kernel signs and verifies a message representative μ; this
// module forms μ for the pure (§5.2), pre-hash (HashML-DSA, §5.4) and internal interfaces:
//   pure:      M′ = 0x00 ‖ |ctx| ‖ ctx ‖ M,               μ = SHAKE256(tr ‖ M′, 64)
//   pre-hash:  M′ = 0x01 ‖ |ctx| ‖ ctx ‖ OID ‖ PH(M),      μ = SHAKE256(tr ‖ M′, 64)
//   internal:  μ = SHAKE256(tr ‖ M, 64), or μ given (external μ)
// with tr = SHAKE256(pk, 64) (stored in the secret key). Signing is hedged by default (fresh 32-byte
// rnd); `extraEntropy: false` is deterministic (rnd = 0^32), a Uint8Array(32) supplies rnd.

import { sha224, sha512_224, sha512_256 } from '@noble/hashes/sha2.js';
import { sha3_224, sha3_384 } from '@noble/hashes/sha3.js';
import { bytes } from '../_args';
import { PqdbError } from '../errors';
import { mldsaKernel } from '../wasm/mldsa';
import { randomBytes } from './mlkem';
import { sha256, sha384, sha512 } from './sha2';
import { sha3_256, sha3_512, shake128, shake256 } from './sha3';

export const ML_DSA87_LENGTHS = /* @__PURE__ */ Object.freeze({
  publicKey: 2592,
  secretKey: 4896,
  signature: 4627,
  seed: 32,
  signRand: 32,
  mu: 64,
});
const L = ML_DSA87_LENGTHS;
const EMPTY = new Uint8Array(0);

/** Pre-hash functions of HashML-DSA (FIPS 204 §5.4.1) with their DER-encoded OIDs (2.16.840.1.101.3.4.2.x). */
type PreHash = { readonly oid: number; readonly hash: (m: Uint8Array) => Uint8Array };
const oidHash = (last: number, hash: (m: Uint8Array) => Uint8Array): PreHash => ({ oid: last, hash });
/** pqdb's WebAssembly hashes where it has them; the others (public data) from @noble/hashes. */
export const PRE_HASHES: Readonly<Record<string, PreHash>> = /* @__PURE__ */ Object.freeze({
  'SHA2-224': /* @__PURE__ */ oidHash(4, sha224),
  'SHA2-256': /* @__PURE__ */ oidHash(1, sha256),
  'SHA2-384': /* @__PURE__ */ oidHash(2, sha384),
  'SHA2-512': /* @__PURE__ */ oidHash(3, sha512),
  'SHA2-512/224': /* @__PURE__ */ oidHash(5, sha512_224),
  'SHA2-512/256': /* @__PURE__ */ oidHash(6, sha512_256),
  'SHA3-224': /* @__PURE__ */ oidHash(7, sha3_224),
  'SHA3-256': /* @__PURE__ */ oidHash(8, sha3_256),
  'SHA3-384': /* @__PURE__ */ oidHash(9, sha3_384),
  'SHA3-512': /* @__PURE__ */ oidHash(10, sha3_512),
  'SHAKE-128': /* @__PURE__ */ oidHash(11, (m) => shake128(m, { dkLen: 32 })),
  'SHAKE-256': /* @__PURE__ */ oidHash(12, (m) => shake256(m, { dkLen: 64 })),
});

export interface SignOpts {
  /** Up to 255 bytes (FIPS 204 §5.2). */
  context?: Uint8Array;
  /** Hedged by default; `false` = deterministic; 32 bytes = the given rnd. */
  extraEntropy?: Uint8Array | false;
}

function checkContext(ctx: unknown, forVerify: boolean): Uint8Array | undefined {
  if (ctx === undefined) return EMPTY;
  const c = bytes('context', ctx);
  if (c.length > 255) {
    if (forVerify) return undefined;
    throw new RangeError(`"context" expected at most 255 bytes, got length=${c.length}`);
  }
  return c;
}

function rndFor(opts: SignOpts | undefined): Uint8Array {
  const e = opts?.extraEntropy;
  if (e === false) return new Uint8Array(32);
  if (e === undefined) return randomBytes(32);
  return bytes('extraEntropy', e, 32);
}

/** μ = SHAKE256(tr ‖ prefix ‖ body, 64), streamed (messages of any size). */
function mu(tr: Uint8Array, prefix: Uint8Array, body: Uint8Array): Uint8Array {
  return shake256.create({ dkLen: 64 }).update(tr).update(prefix).update(body).digest();
}

function pureMu(tr: Uint8Array, msg: Uint8Array, ctx: Uint8Array): Uint8Array {
  const prefix = new Uint8Array(2 + ctx.length);
  prefix[1] = ctx.length;
  prefix.set(ctx, 2);
  return mu(tr, prefix, msg);
}

function preHashMu(tr: Uint8Array, msg: Uint8Array, ctx: Uint8Array, hashAlg: string): Uint8Array {
  const ph = PRE_HASHES[hashAlg];
  if (ph === undefined)
    throw new RangeError(
      `"hashAlg" expected one of ${Object.keys(PRE_HASHES).join(', ')}, got ${JSON.stringify(hashAlg)}`,
    );
  const digest = ph.hash(msg);
  const prefix = new Uint8Array(2 + ctx.length + 11);
  prefix[0] = 1;
  prefix[1] = ctx.length;
  prefix.set(ctx, 2);
  prefix.set([0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, ph.oid], 2 + ctx.length);
  return mu(tr, prefix, digest);
}

const trOfSecretKey = (sk: Uint8Array) => sk.subarray(64, 128);
const trOfPublicKey = (pk: Uint8Array) => shake256(pk, { dkLen: 64 });

/**
 * Checks that the secret key's s1 and s2 coefficients are in range (η − b with b ≤ 2η = 4, FIPS 204
 * Algorithm 25 BitUnpack on [−η, η]); the kernel assumes it. Public-length, branch-free over data.
 */
function secretKeyInRange(sk: Uint8Array): boolean {
  let bad = 0;
  const start = 128;
  const end = start + (7 + 8) * 96;
  for (let p = start; p < end; p += 3) {
    const v = sk[p] | (sk[p + 1] << 8) | (sk[p + 2] << 16);
    for (let j = 0; j < 24; j += 3) bad |= (4 - ((v >>> j) & 7)) >>> 31;
  }
  return bad === 0;
}

function keygen(seed?: Uint8Array): { publicKey: Uint8Array; secretKey: Uint8Array } {
  const s = seed === undefined ? randomBytes(L.seed) : bytes('seed', seed, L.seed);
  const k = mldsaKernel();
  k.mem.set(s, k.IN);
  if (seed === undefined) s.fill(0);
  k.x.mldsa_keygen();
  const publicKey = k.mem.slice(k.OUT, k.OUT + L.publicKey);
  const secretKey = k.mem.slice(k.OUT + L.publicKey, k.OUT + L.publicKey + L.secretKey);
  k.mem.fill(0, k.OUT, k.OUT + L.publicKey + L.secretKey);
  return { publicKey, secretKey };
}

function signMu(m: Uint8Array, secretKey: Uint8Array, rnd: Uint8Array): Uint8Array {
  if (!secretKeyInRange(secretKey))
    throw new PqdbError('INVALID_KEY', 'ML-DSA-87 secret key has s1/s2 coefficients out of range');
  const k = mldsaKernel();
  k.mem.set(secretKey, k.IN);
  k.mem.set(m, k.IN + L.secretKey);
  k.mem.set(rnd, k.IN + L.secretKey + 64);
  k.x.mldsa_sign();
  const sig = k.mem.slice(k.OUT, k.OUT + L.signature);
  k.mem.fill(0, k.OUT, k.OUT + L.signature);
  return sig;
}

function verifyMu(m: Uint8Array, publicKey: Uint8Array, sig: Uint8Array): boolean {
  const k = mldsaKernel();
  k.mem.set(publicKey, k.IN);
  k.mem.set(m, k.IN + L.publicKey);
  k.mem.set(sig, k.IN + L.publicKey + 64);
  return k.x.mldsa_verify() === 1;
}

/**
 * Pure ML-DSA signature of `msg` (FIPS 204 Algorithm 2).
 * @throws RangeError for a wrong key length or a context over 255 bytes; PqdbError INVALID_KEY for
 * a secret key with out-of-range coefficients.
 */
function sign(msg: Uint8Array, secretKey: Uint8Array, opts?: SignOpts): Uint8Array {
  bytes('msg', msg);
  bytes('secretKey', secretKey, L.secretKey);
  const ctx = checkContext(opts?.context, false)!;
  return signMu(pureMu(trOfSecretKey(secretKey), msg, ctx), secretKey, rndFor(opts));
}

/**
 * Verifies a pure ML-DSA signature (FIPS 204 Algorithm 3). Returns false for any wrong signature,
 * key or length of signature/key; throws TypeError only for arguments that are not byte arrays.
 */
function verify(sig: Uint8Array, msg: Uint8Array, publicKey: Uint8Array, opts?: { context?: Uint8Array }): boolean {
  bytes('sig', sig);
  bytes('msg', msg);
  bytes('publicKey', publicKey);
  const ctx = checkContext(opts?.context, true);
  if (ctx === undefined || sig.length !== L.signature || publicKey.length !== L.publicKey) return false;
  return verifyMu(pureMu(trOfPublicKey(publicKey), msg, ctx), publicKey, sig);
}

/** HashML-DSA (FIPS 204 Algorithms 4 and 5) with a named pre-hash. */
const prehash = /* @__PURE__ */ Object.freeze({
  sign(msg: Uint8Array, secretKey: Uint8Array, hashAlg: string, opts?: SignOpts): Uint8Array {
    bytes('msg', msg);
    bytes('secretKey', secretKey, L.secretKey);
    const ctx = checkContext(opts?.context, false)!;
    return signMu(preHashMu(trOfSecretKey(secretKey), msg, ctx, hashAlg), secretKey, rndFor(opts));
  },
  verify(
    sig: Uint8Array,
    msg: Uint8Array,
    publicKey: Uint8Array,
    hashAlg: string,
    opts?: { context?: Uint8Array },
  ): boolean {
    bytes('sig', sig);
    bytes('msg', msg);
    bytes('publicKey', publicKey);
    const ctx = checkContext(opts?.context, true);
    if (ctx === undefined || sig.length !== L.signature || publicKey.length !== L.publicKey) return false;
    return verifyMu(preHashMu(trOfPublicKey(publicKey), msg, ctx, hashAlg), publicKey, sig);
  },
});

/** ML-DSA.Sign_internal / Verify_internal (Algorithms 7, 8) on M′ directly, or on a given μ. */
const internal = /* @__PURE__ */ Object.freeze({
  sign(
    msg: Uint8Array,
    secretKey: Uint8Array,
    opts?: { extraEntropy?: Uint8Array | false; externalMu?: boolean },
  ): Uint8Array {
    bytes('msg', msg);
    bytes('secretKey', secretKey, L.secretKey);
    const m = opts?.externalMu ? bytes('mu', msg, L.mu) : mu(trOfSecretKey(secretKey), EMPTY, msg);
    return signMu(m, secretKey, rndFor(opts));
  },
  verify(sig: Uint8Array, msg: Uint8Array, publicKey: Uint8Array, opts?: { externalMu?: boolean }): boolean {
    bytes('sig', sig);
    bytes('msg', msg);
    bytes('publicKey', publicKey);
    if (sig.length !== L.signature || publicKey.length !== L.publicKey) return false;
    if (opts?.externalMu && msg.length !== L.mu) return false;
    const m = opts?.externalMu ? msg : mu(trOfPublicKey(publicKey), EMPTY, msg);
    return verifyMu(m, publicKey, sig);
  },
});

/**
 * ML-DSA-87 (FIPS 204) in WebAssembly, interface-compatible with @noble/post-quantum's ml_dsa87.
 * @example
 * const { publicKey, secretKey } = ml_dsa87.keygen();
 * const sig = ml_dsa87.sign(msg, secretKey, { context });
 * ml_dsa87.verify(sig, msg, publicKey, { context }); // true
 */
export const ml_dsa87 = /* @__PURE__ */ Object.freeze({
  lengths: ML_DSA87_LENGTHS,
  keygen,
  sign,
  verify,
  prehash,
  internal,
});
