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
// Memory: static, in MLKEM_SCRATCH (wiped by wipeMlkem).

import { keccakInit, keccakAbsorb, keccakSqueeze, KECCAK_CTX_BYTES } from '../keccak/keccak';
import {
  POLY_BYTES, ntt, invNtt, baseMul, baseMulAcc, polyAdd, polySub, encode12, decode12,
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
const SCRATCH_BYTES: usize = 24 * 1024;
export const MLKEM_SCRATCH: usize = memory.data(<i32>SCRATCH_BYTES, 64);
const MAT: usize = MLKEM_SCRATCH; //            16 polys: Â (row-major, Â[i][j] at 4i + j)
const VA: usize = MAT + 16 * POLY_BYTES; //      4 polys: ŝ / ŷ
const VB: usize = VA + 4 * POLY_BYTES; //        4 polys: e / e1 / u
const VT: usize = VB + 4 * POLY_BYTES; //        4 polys: t̂ / û
const P1: usize = VT + 4 * POLY_BYTES; //        polys: v, e2, μ, w
const P2: usize = P1 + POLY_BYTES;
const P3: usize = P2 + POLY_BYTES;
const CTX: usize = P3 + POLY_BYTES; //           Keccak context
const XOF: usize = CTX + 512; //                 3 SHAKE128 blocks (504 bytes)
const PRF_OUT: usize = XOF + 512; //             128 bytes
const SEED_IN: usize = PRF_OUT + 128; //         64 bytes: inputs of G, PRF, XOF
const G_OUT: usize = SEED_IN + 64; //            64 bytes: (ρ, σ) or (K, r)
const HASH: usize = G_OUT + 64; //               32 bytes: H(ek), m', J output
const CPRIME: usize = HASH + 64; //              re-encrypted ciphertext (1568 bytes)
const USED: usize = CPRIME + CT_BYTES - MLKEM_SCRATCH;

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

/** PRF_2(s, b) = SHAKE256(s ‖ b, 128), s at `seed` (32 bytes). */
function prf(seed: usize, b: u8, out: usize): void {
  memory.copy(SEED_IN, seed, 32);
  store<u8>(SEED_IN + 32, b);
  keccakInit(CTX, <u32>SHAKE256_RATE, DS_SHAKE);
  keccakAbsorb(CTX, SEED_IN, 33);
  keccakSqueeze(CTX, out, 128);
}

/** J(z ‖ c) = SHAKE256(z ‖ c, 32). */
function hashJ(z: usize, c: usize, out: usize): void {
  keccakInit(CTX, <u32>SHAKE256_RATE, DS_SHAKE);
  keccakAbsorb(CTX, z, 32);
  keccakAbsorb(CTX, c, CT_BYTES);
  keccakSqueeze(CTX, out, 32);
}

// ---- sampling ----------------------------------------------------------------------------------

/** SampleNTT(ρ ‖ j ‖ i) (Algorithm 7) into `f`. */
function sampleNtt(f: usize, rho: usize, j: u8, i: u8): void {
  memory.copy(SEED_IN, rho, 32);
  store<u8>(SEED_IN + 32, j);
  store<u8>(SEED_IN + 33, i);
  keccakInit(CTX, <u32>SHAKE128_RATE, DS_SHAKE);
  keccakAbsorb(CTX, SEED_IN, 34);
  keccakSqueeze(CTX, XOF, 3 * SHAKE128_RATE);
  let have = rejectUniform(f, 0, XOF, 3 * SHAKE128_RATE);
  while (have < 256) {
    keccakSqueeze(CTX, XOF, SHAKE128_RATE);
    have = rejectUniform(f, have, XOF, SHAKE128_RATE);
  }
}

/** Â (transposed when `transpose`): Â[i][j] = SampleNTT(ρ ‖ j ‖ i) stored at MAT + 4i + j. */
function expandMatrix(rho: usize, transpose: bool): void {
  for (let i: usize = 0; i < K; i++) {
    for (let j: usize = 0; j < K; j++) {
      const dst = MAT + (i * K + j) * POLY_BYTES;
      if (transpose) sampleNtt(dst, rho, <u8>i, <u8>j);
      else sampleNtt(dst, rho, <u8>j, <u8>i);
    }
  }
}

/** Fills `count` polys at `vec` with SamplePolyCBD_2(PRF_2(seed, n0 + t)). Returns the next n. */
function sampleNoise(vec: usize, count: usize, seed: usize, n0: u8): u8 {
  let n = n0;
  for (let t: usize = 0; t < count; t++) {
    prf(seed, n++, PRF_OUT);
    cbd2(vec + t * POLY_BYTES, PRF_OUT);
  }
  return n;
}

/** r = Σ_j M[row][j] ×_T v[j] over the matrix rows at MAT. */
function matRowMul(r: usize, row: usize, v: usize): void {
  baseMul(r, MAT + row * K * POLY_BYTES, v);
  for (let j: usize = 1; j < K; j++) baseMulAcc(r, MAT + (row * K + j) * POLY_BYTES, v + j * POLY_BYTES);
}

/** r = Σ_j a[j] ×_T b[j]. */
function dot(r: usize, a: usize, b: usize): void {
  baseMul(r, a, b);
  for (let j: usize = 1; j < K; j++) baseMulAcc(r, a + j * POLY_BYTES, b + j * POLY_BYTES);
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
  for (let i: usize = 0; i < K; i++) {
    const t = VT + i * POLY_BYTES;
    matRowMul(t, i, VA);
    polyAdd(t, t, VB + i * POLY_BYTES);
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
  // u = NTT^-1(Âᵀ ∘ ŷ) + e1, compressed into c1.
  for (let i: usize = 0; i < K; i++) {
    matRowMul(P1, i, VA);
    invNtt(P1);
    polyAdd(P1, P1, VB + i * POLY_BYTES);
    compressEncode(c + 352 * i, P1, DU);
  }
  // v = NTT^-1(t̂ᵀ ∘ ŷ) + e2 + Decompress_1(m), compressed into c2.
  dot(P1, VT, VA);
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
  decodeDecompress(P2, c + 352 * K, DV);
  dot(P1, VA, VB);
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
