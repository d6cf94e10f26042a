// ML-KEM-1024 (FIPS 203): K-PKE (Algorithms 13–15) and the internal ML-KEM algorithms
// (Algorithms 16–18), parameter set k = 4, η1 = η2 = 2, du = 11, dv = 5 (Table 2).
//
// Hash functions (§4.1): H = SHA3-256, J = SHAKE256 (32 bytes), G = SHA3-512, XOF = SHAKE128,
// PRF_η = SHAKE256 (64·η bytes), all over the Keccak kernel. The input checks of §7.2 (encapsulation
// key modulus check) and §7.3 (decapsulation key hash check) are exposed separately and run by the
// exported operations. Decapsulation compares the re-encrypted ciphertext and selects the implicit
// rejection key without branching on secret data. Rejection sampling (SampleNTT) runs on the public
// seed ρ only.
//
// Memory: static, in MLKEM_SCRATCH (wiped by wipeMlkem). Nothing is kept across calls (the hygiene
// tests require memory to return to its instantiation state), so Â is sampled once per operation,
// which is already the minimum: Decaps needs Â only in its re-encryption.
//
// Performance (measured, see poly.ts for the arithmetic): matrix entries and noise polynomials are
// sampled two at a time with keccakSqueezeBlocksX2 (two permutations in i64x2 lanes in the SIMD
// build): keygen / encaps / decaps 37 / 39 / 48 → 32 / 36 / 45 µs. The vector multiplied by Â (or
// by t̂ᵀ, ŝᵀ) is turned into MultiplyNTTs caches once (mulCache) and reused by every row.

import { keccakInit, keccakAbsorb, keccakSqueeze, keccakSqueezeBlocksX2 } from '../keccak/keccak';
import {
  POLY_BYTES, CACHE_BYTES, ntt, invNtt, mulCache, dotCache, polyAdd, polySub, encode12, decode12,
  compressEncode, decodeDecompress, cbd2, rejectUniform,
} from './poly';

export const K: usize = 4;
export const EK_BYTES: usize = 384 * K + 32; // 1568
export const DK_BYTES: usize = 768 * K + 96; // 3168
export const CT_BYTES: usize = 32 * (11 * K + 5); // 1568
export const SS_BYTES: usize = 32;
const DU: u32 = 11;
const DV: u32 = 5;

const SHA3_256_RATE: usize = 136;
const SHA3_512_RATE: usize = 72;
const SHAKE128_RATE: usize = 168;
const SHAKE256_RATE: usize = 136;
const DS_SHA3: u8 = 0x06;
const DS_SHAKE: u8 = 0x1f;

// MLKEM_SCRATCH layout (bytes).
const SCRATCH_BYTES: usize = 28 * 1024;
export const MLKEM_SCRATCH: usize = memory.data(<i32>SCRATCH_BYTES, 64);
const MAT: usize = MLKEM_SCRATCH; //            16 polys: Â (row-major, Â[i][j] at 4i + j)
const VA: usize = MAT + 16 * POLY_BYTES; //      4 polys: ŝ / ŷ
const VB: usize = VA + 4 * POLY_BYTES; //        4 polys: e / e1 / u
const VT: usize = VB + 4 * POLY_BYTES; //        4 polys: t̂ / û
const P1: usize = VT + 4 * POLY_BYTES; //        polys: v, e2, μ, w
const P2: usize = P1 + POLY_BYTES;
const P3: usize = P2 + POLY_BYTES;
const CTX: usize = P3 + POLY_BYTES; //           Keccak context (208 bytes)
const CTX2: usize = CTX + 256; //                second Keccak context (paired sampling)
const XOF: usize = CTX2 + 256; //                3 SHAKE128 blocks (504 bytes)
const XOF2: usize = XOF + 512; //                the same for the second context
const PRF_OUT: usize = XOF2 + 512; //            one SHAKE256 block (136 bytes, 128 used)
const PRF_OUT2: usize = PRF_OUT + 144; //        the same for the second context
const SEED_IN: usize = PRF_OUT2 + 144; //        64 bytes: inputs of G, PRF, XOF
const G_OUT: usize = SEED_IN + 64; //            64 bytes: (ρ, σ) or (K, r)
const HASH: usize = G_OUT + 64; //               32 bytes: H(ek), m', J output
const CPRIME: usize = HASH + 64; //              re-encrypted ciphertext (1568 bytes)
const CACHE: usize = CPRIME + CT_BYTES + 32; //  MultiplyNTTs caches of 4 polys (4 KiB)
const USED: usize = CACHE + K * CACHE_BYTES - MLKEM_SCRATCH;

/** Zeroes all ML-KEM scratch (keys, seeds, polynomials). */
export function wipeMlkem(): void {
  memory.fill(MLKEM_SCRATCH, 0, USED);
}

// ---- hash functions (§4.1) ---------------------------------------------------------------------

function sha3(rate: usize, src: usize, len: usize, out: usize, outLen: usize): void {
  keccakInit(CTX, <u32>rate, DS_SHA3);
  keccakAbsorb(CTX, src, len);
  keccakSqueeze(CTX, out, outLen);
}

/** H(src) = SHA3-256. */
function hashH(src: usize, len: usize, out: usize): void {
  sha3(SHA3_256_RATE, src, len, out, 32);
}

/** G(src) = SHA3-512. */
function hashG(src: usize, len: usize, out: usize): void {
  sha3(SHA3_512_RATE, src, len, out, 64);
}

/** J(z ‖ c) = SHAKE256(z ‖ c, 32). */
function hashJ(z: usize, c: usize, out: usize): void {
  keccakInit(CTX, <u32>SHAKE256_RATE, DS_SHAKE);
  keccakAbsorb(CTX, z, 32);
  keccakAbsorb(CTX, c, CT_BYTES);
  keccakSqueeze(CTX, out, 32);
}

// ---- sampling ----------------------------------------------------------------------------------

/** Starts SHAKE128(ρ ‖ j ‖ i) (the XOF of SampleNTT, Algorithm 7) in `ctx`. */
function xofStart(ctx: usize, rho: usize, j: u8, i: u8): void {
  memory.copy(SEED_IN, rho, 32);
  store<u8>(SEED_IN + 32, j);
  store<u8>(SEED_IN + 33, i);
  keccakInit(ctx, <u32>SHAKE128_RATE, DS_SHAKE);
  keccakAbsorb(ctx, SEED_IN, 34);
}

/**
 * SampleNTT (Algorithm 7) of two matrix entries at once, SampleNTT(ρ ‖ ja ‖ ia) into `fa` and
 * SampleNTT(ρ ‖ jb ‖ ib) into `fb`, the two SHAKE128 streams squeezed together with
 * keccakSqueezeBlocksX2 (two permutations in the i64x2 lanes in the SIMD build). Three blocks give
 * 336 candidates, almost always ≥ 256 accepted; further blocks are squeezed in pairs while either
 * entry is short (the spare block of the other is discarded: ρ is public, branching on it is fine).
 */
function sampleNttX2(fa: usize, fb: usize, rho: usize, ja: u8, ia: u8, jb: u8, ib: u8): void {
  xofStart(CTX, rho, ja, ia);
  xofStart(CTX2, rho, jb, ib);
  keccakSqueezeBlocksX2(CTX, CTX2, XOF, XOF2, 3);
  let ha = rejectUniform(fa, 0, XOF, 3 * SHAKE128_RATE);
  let hb = rejectUniform(fb, 0, XOF2, 3 * SHAKE128_RATE);
  while (ha < 256 || hb < 256) {
    keccakSqueezeBlocksX2(CTX, CTX2, XOF, XOF2, 1);
    ha = rejectUniform(fa, ha, XOF, SHAKE128_RATE);
    hb = rejectUniform(fb, hb, XOF2, SHAKE128_RATE);
  }
}

/** Â (transposed when `transpose`): Â[i][j] = SampleNTT(ρ ‖ j ‖ i) stored at MAT + 4i + j. */
function expandMatrix(rho: usize, transpose: bool): void {
  for (let i: usize = 0; i < K; i++) {
    for (let j: usize = 0; j < K; j += 2) {
      const dst = MAT + (i * K + j) * POLY_BYTES;
      if (transpose) sampleNttX2(dst, dst + POLY_BYTES, rho, <u8>i, <u8>j, <u8>i, <u8>(j + 1));
      else sampleNttX2(dst, dst + POLY_BYTES, rho, <u8>j, <u8>i, <u8>(j + 1), <u8>i);
    }
  }
}

/** Starts PRF_2(s, b) = SHAKE256(s ‖ b) in `ctx`, s at `seed` (32 bytes). */
function prfStart(ctx: usize, seed: usize, b: u8): void {
  memory.copy(SEED_IN, seed, 32);
  store<u8>(SEED_IN + 32, b);
  keccakInit(ctx, <u32>SHAKE256_RATE, DS_SHAKE);
  keccakAbsorb(ctx, SEED_IN, 33);
}

/**
 * Fills `count` polys at `vec` with SamplePolyCBD_2(PRF_2(seed, n0 + t)), two PRF streams at a time
 * (one SHAKE256 block each covers the 128 bytes). Returns the next n.
 */
function sampleNoise(vec: usize, count: usize, seed: usize, n0: u8): u8 {
  let n = n0;
  let t: usize = 0;
  for (; t + 2 <= count; t += 2) {
    prfStart(CTX, seed, n++);
    prfStart(CTX2, seed, n++);
    keccakSqueezeBlocksX2(CTX, CTX2, PRF_OUT, PRF_OUT2, 1);
    cbd2(vec + t * POLY_BYTES, PRF_OUT);
    cbd2(vec + (t + 1) * POLY_BYTES, PRF_OUT2);
  }
  if (t < count) {
    prfStart(CTX, seed, n++);
    keccakSqueeze(CTX, PRF_OUT, 128);
    cbd2(vec + t * POLY_BYTES, PRF_OUT);
  }
  return n;
}

/** r = Σ_j Â[row][j] ×_T v̂[j] for the vector v̂ whose caches are at CACHE. */
function matRowMul(r: usize, row: usize): void {
  dotCache(r, MAT + row * K * POLY_BYTES, CACHE, K);
}

// ---- K-PKE -------------------------------------------------------------------------------------

/** K-PKE.KeyGen(d) (Algorithm 13): ek_PKE (1568 bytes) to `ek`, dk_PKE (1536 bytes) to `dkPke`. */
function pkeKeyGen(d: usize, ek: usize, dkPke: usize): void {
  memory.copy(SEED_IN, d, 32);
  store<u8>(SEED_IN + 32, <u8>K);
  hashG(SEED_IN, 33, G_OUT); // (ρ, σ)
  const rho = G_OUT;
  const sigma = G_OUT + 32;
  expandMatrix(rho, false);
  let n = sampleNoise(VA, K, sigma, 0); // s
  n = sampleNoise(VB, K, sigma, n); // e
  for (let i: usize = 0; i < K; i++) {
    ntt(VA + i * POLY_BYTES);
    ntt(VB + i * POLY_BYTES);
  }
  mulCache(CACHE, VA, K);
  for (let i: usize = 0; i < K; i++) {
    const t = VT + i * POLY_BYTES;
    matRowMul(t, i);
    polyAdd(t, t, VB + i * POLY_BYTES); // |t| < q + 8q

    encode12(ek + 384 * i, t);
    encode12(dkPke + 384 * i, VA + i * POLY_BYTES);
  }
  memory.copy(ek + 384 * K, rho, 32);
}

/**
 * K-PKE.Encrypt(ek, m, r) (Algorithm 14) into `c`. t̂ is decoded from ek (the caller has run the
 * modulus check where the standard requires it).
 */
function pkeEncrypt(ek: usize, m: usize, r: usize, c: usize): void {
  for (let i: usize = 0; i < K; i++) decode12(VT + i * POLY_BYTES, ek + 384 * i);
  expandMatrix(ek + 384 * K, true);
  let n = sampleNoise(VA, K, r, 0); // y
  n = sampleNoise(VB, K, r, n); // e1
  sampleNoise(P2, 1, r, n); // e2
  for (let i: usize = 0; i < K; i++) ntt(VA + i * POLY_BYTES);
  mulCache(CACHE, VA, K);
  // u = NTT^-1(Âᵀ ∘ ŷ) + e1, compressed into c1.
  for (let i: usize = 0; i < K; i++) {
    matRowMul(P1, i);
    invNtt(P1);
    polyAdd(P1, P1, VB + i * POLY_BYTES);
    compressEncode(c + 352 * i, P1, DU);
  }
  // v = NTT^-1(t̂ᵀ ∘ ŷ) + e2 + Decompress_1(m), compressed into c2.
  dotCache(P1, VT, CACHE, K);
  invNtt(P1);
  polyAdd(P1, P1, P2);
  decodeDecompress(P3, m, 1);
  polyAdd(P1, P1, P3);
  compressEncode(c + 352 * K, P1, DV);
}

/** K-PKE.Decrypt(dk_PKE, c) (Algorithm 15): the 32-byte message to `m`. */
function pkeDecrypt(dkPke: usize, c: usize, m: usize): void {
  for (let i: usize = 0; i < K; i++) {
    decodeDecompress(VB + i * POLY_BYTES, c + 352 * i, DU);
    ntt(VB + i * POLY_BYTES);
    decode12(VA + i * POLY_BYTES, dkPke + 384 * i);
  }
  mulCache(CACHE, VB, K);
  decodeDecompress(P2, c + 352 * K, DV);
  dotCache(P1, VA, CACHE, K);
  invNtt(P1);
  polySub(P1, P2, P1); // w = v' − NTT^-1(ŝᵀ ∘ NTT(u'))
  compressEncode(m, P1, 1);
}

// ---- ML-KEM (internal algorithms) ---------------------------------------------------------------

/** ML-KEM.KeyGen_internal(d, z) (Algorithm 16): ek (1568) and dk (3168). */
export function mlkemKeyGen(d: usize, z: usize, ek: usize, dk: usize): void {
  pkeKeyGen(d, ek, dk);
  memory.copy(dk + 384 * K, ek, EK_BYTES);
  hashH(ek, EK_BYTES, dk + 384 * K + EK_BYTES);
  memory.copy(dk + 384 * K + EK_BYTES + 32, z, 32);
}

/** The §7.2 modulus check: ByteEncode_12(ByteDecode_12(ek)) = ek, i.e. every coefficient < q. */
export function mlkemCheckEk(ek: usize): i32 {
  let ok: i32 = 1;
  for (let i: usize = 0; i < K; i++) ok &= decode12(P1, ek + 384 * i);
  return ok;
}

/** The §7.3 hash check: H(dk[384k : 768k + 32]) = dk[768k + 32 : 768k + 64]. */
export function mlkemCheckDk(dk: usize): i32 {
  hashH(dk + 384 * K, EK_BYTES, HASH);
  const h = dk + 384 * K + EK_BYTES;
  let d: u64 = 0;
  for (let i: usize = 0; i < 32; i += 8) d |= load<u64>(HASH + i) ^ load<u64>(h + i);
  return <i32>(((d | (0 - d)) >> 63) ^ 1);
}

/** ML-KEM.Encaps_internal(ek, m) (Algorithm 17): ciphertext to `c`, shared secret to `ss`. */
export function mlkemEncaps(ek: usize, m: usize, c: usize, ss: usize): void {
  memory.copy(SEED_IN, m, 32);
  hashH(ek, EK_BYTES, SEED_IN + 32);
  hashG(SEED_IN, 64, G_OUT); // (K, r)
  memory.copy(HASH, G_OUT, 32); // K: G_OUT is reused below by nothing, but keep K aside
  pkeEncrypt(ek, m, G_OUT + 32, c);
  memory.copy(ss, HASH, 32);
}

/**
 * ML-KEM.Decaps_internal(dk, c) (Algorithm 18): shared secret to `ss`; on a mismatch of the
 * re-encryption the implicit-rejection key J(z ‖ c) is selected, without branching on secrets.
 */
export function mlkemDecaps(dk: usize, c: usize, ss: usize): void {
  const dkPke = dk;
  const ek = dk + 384 * K;
  const h = ek + EK_BYTES;
  const z = h + 32;
  pkeDecrypt(dkPke, c, SEED_IN); // m' into SEED_IN[0, 32)
  memory.copy(SEED_IN + 32, h, 32);
  hashG(SEED_IN, 64, G_OUT); // (K', r')
  memory.copy(HASH, SEED_IN, 32); // m' (SEED_IN is overwritten by the PRF calls below)
  pkeEncrypt(ek, HASH, G_OUT + 32, CPRIME);
  // Constant-time comparison c = c'.
  let diff: u64 = 0;
  for (let i: usize = 0; i < CT_BYTES; i += 8) diff |= load<u64>(c + i) ^ load<u64>(CPRIME + i);
  const mask: u64 = 0 - ((diff | (0 - diff)) >> 63); // all ones when c ≠ c'
  hashJ(z, c, HASH); // K̄
  for (let i: usize = 0; i < 32; i += 8) {
    const good = load<u64>(G_OUT + i);
    const bad = load<u64>(HASH + i);
    store<u64>(ss + i, good ^ ((good ^ bad) & mask));
  }
}
