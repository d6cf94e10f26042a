// ML-DSA-87 (FIPS 204): ML-DSA.KeyGen_internal (Algorithm 6), ML-DSA.Sign_internal (Algorithm 7)
// and ML-DSA.Verify_internal (Algorithm 8), parameter set ML-DSA-87 (Table 1): q = 8380417, d = 13,
// τ = 60, λ = 256 (c̃ is 64 bytes), γ1 = 2^19, γ2 = (q − 1)/32, (k, ℓ) = (8, 7), η = 2, β = 120,
// ω = 75; pk 2592 bytes, sk 4896 bytes, signature 4627 bytes.
//
// Sign and Verify take the message representative μ (64 bytes) instead of M′: the caller computes
// μ = H(tr ‖ M′, 64) (Algorithm 7 line 6, Algorithm 8 line 7), which covers pure ML-DSA, HashML-DSA
// and external-μ signing alike. H = SHAKE256, G = SHAKE128 (§3.7), over the Keccak kernel; the
// SHAKE128 streams of ExpandA and the SHAKE256 streams of ExpandS / ExpandMask are squeezed two at a
// time (keccakSqueezeBlocksX2: two permutations in one i64x2 pass in the SIMD build).
//
// Constant time: within one signing attempt nothing branches on or indexes memory by secret data.
// Every attempt computes all of its checks (‖z‖∞, ‖r0‖∞, ‖ct0‖∞, the hint count) and combines them
// into one accept bit, so only the number of attempts is revealed (as FIPS 204 allows), not which
// check rejected. Caveats: SampleInBall (Algorithm 29) branches and indexes on c̃, which is public for
// the accepted attempt and, for a rejected one, a hash of the secret commitment w1 that is never
// output; ExpandS's rejection sampling stops where the acceptance pattern of the nibbles says, which
// is independent of the accepted values (see rejEta). KeyGen is constant time apart from that
// stopping point. Verify works on public data only.
//
// Memory: static, in MLDSA_SCRATCH (zeroed by wipeMldsa; the exported operations call it).

import { keccakInit, keccakAbsorb, keccakSqueeze, keccakSqueezeBlocksX2 } from '../keccak/keccak';
import {
  POLY_BYTES, ntt, invNtt, pointwise, dotAcc, polyFreeze, polyCentre, polyAdd, polyAddReduce, polyShiftD,
  exceeds, power2Round, signRow, useHint, packHighBits, packPoly, unpackPoly, rejUniform, rejEta, unpackMask,
} from './poly';

export const K: usize = 8;
export const L: usize = 7;
const ETA: i32 = 2;
const TAU: usize = 60;
const BETA: i32 = 120;
const GAMMA1: i32 = 1 << 19;
const OMEGA: usize = 75;
const CT_BYTES: usize = 64; // λ/4

export const PK_BYTES: usize = 32 + 320 * K; // 2592
export const SK_BYTES: usize = 128 + 96 * (L + K) + 416 * K; // 4896
export const SIG_BYTES: usize = CT_BYTES + 640 * L + OMEGA + K; // 4627
export const MU_BYTES: usize = 64;
export const SEED_BYTES: usize = 32;
export const RND_BYTES: usize = 32;

// sk field offsets (skEncode, Algorithm 24).
const SK_K: usize = 32;
const SK_TR: usize = 64;
const SK_S1: usize = 128;
const SK_S2: usize = SK_S1 + 96 * L;
const SK_T0: usize = SK_S2 + 96 * K;
// signature field offsets (sigEncode, Algorithm 26).
const SIG_Z: usize = CT_BYTES;
const SIG_H: usize = SIG_Z + 640 * L;

const SHAKE128_RATE: u32 = 168;
const SHAKE256_RATE: u32 = 136;
const DS_SHAKE: u32 = 0x1f;
/** SHAKE128 blocks squeezed up front per ExpandA entry: 840 bytes ≥ 768 (256 three-byte draws). */
const A_BLOCKS: usize = 5;
/** SHAKE256 blocks per ExpandS entry: 544 nibbles for 256 accepted (15/16 each). */
const S_BLOCKS: usize = 2;
/** SHAKE256 blocks per ExpandMask entry: 680 ≥ 640 bytes. */
const Y_BLOCKS: usize = 5;
/** Attempts stop before κ + ℓ − 1 leaves 16 bits (ExpandMask's counter); ~9362 attempts, never reached. */
const KAPPA_MAX: u32 = 0x10000 - <u32>L;

// MLDSA_SCRATCH layout (byte offsets; the region is sized from the last one).
const MAT_O: usize = 0; //                         k·ℓ = 56 polys: Â, Â[r][s] at ℓr + s
const S1_O: usize = MAT_O + K * L * POLY_BYTES; //   ℓ polys: s1 / ŝ1 (ExpandS fills S1 then S2: contiguous)
const S2_O: usize = S1_O + L * POLY_BYTES; //        k polys: s2 / ŝ2
const T0_O: usize = S2_O + K * POLY_BYTES; //        k polys: t̂0
const Y_O: usize = T0_O + K * POLY_BYTES; //         ℓ polys: y, then z (Verify: ẑ)
const YH_O: usize = Y_O + L * POLY_BYTES; //         ℓ polys: ŷ (KeyGen: ŝ1)
const W_O: usize = YH_O + L * POLY_BYTES; //         k polys: w, then w − cs2 (Verify: w′)
const CH_O: usize = W_O + K * POLY_BYTES; //         ĉ
const TMP_O: usize = CH_O + POLY_BYTES; //           cs1 / cs2 / t / t1
const TMP2_O: usize = TMP_O + POLY_BYTES; //         ct0 / t0
const HINT_O: usize = TMP2_O + POLY_BYTES; //        k·256 hint bits as 0/1 bytes
const HBUF_O: usize = HINT_O + K * 256; //           μ ‖ w1Encode(w1): 64 + 1024 bytes
const CTX_A_O: usize = HBUF_O + 1152; //             two Keccak contexts (208 bytes each)
const CTX_B_O: usize = CTX_A_O + 256;
const XA_O: usize = CTX_B_O + 256; //                squeezed XOF output (≤ 5·168 = 840 bytes each)
const XB_O: usize = XA_O + 896;
const SEEDS_O: usize = XB_O + 896; //                KeyGen: ρ ‖ ρ′ ‖ K (128); Sign: ρ″ (64)
const CTILDE_O: usize = SEEDS_O + 128; //            c̃ (64)
const IDX_O: usize = CTILDE_O + 64; //               2-byte counters / KeyGen's k ‖ ℓ (16)
/** Bytes of ML-DSA scratch (about 110 KiB; Â alone is 56 KiB). */
export const MLDSA_SCRATCH_BYTES: usize = IDX_O + 16;
export const MLDSA_SCRATCH: usize = memory.data(<i32>MLDSA_SCRATCH_BYTES, 64);
const MAT: usize = MLDSA_SCRATCH + MAT_O;
const S1: usize = MLDSA_SCRATCH + S1_O;
const S2: usize = MLDSA_SCRATCH + S2_O;
const T0: usize = MLDSA_SCRATCH + T0_O;
const Y: usize = MLDSA_SCRATCH + Y_O;
const YH: usize = MLDSA_SCRATCH + YH_O;
const W: usize = MLDSA_SCRATCH + W_O;
const CH: usize = MLDSA_SCRATCH + CH_O;
const TMP: usize = MLDSA_SCRATCH + TMP_O;
const TMP2: usize = MLDSA_SCRATCH + TMP2_O;
const HINT: usize = MLDSA_SCRATCH + HINT_O;
const HBUF: usize = MLDSA_SCRATCH + HBUF_O;
const CTX_A: usize = MLDSA_SCRATCH + CTX_A_O;
const CTX_B: usize = MLDSA_SCRATCH + CTX_B_O;
const XA: usize = MLDSA_SCRATCH + XA_O;
const XB: usize = MLDSA_SCRATCH + XB_O;
const SEEDS: usize = MLDSA_SCRATCH + SEEDS_O;
const CTILDE: usize = MLDSA_SCRATCH + CTILDE_O;
const IDX: usize = MLDSA_SCRATCH + IDX_O;

/** Zeroes all ML-DSA scratch (seeds, secret polynomials, Keccak contexts). */
export function wipeMldsa(): void {
  memory.fill(MLDSA_SCRATCH, 0, MLDSA_SCRATCH_BYTES);
}

// ---- sampling (§7.3) ------------------------------------------------------------------------------

/** ctx = SHAKE(seed[0, len) ‖ b0 ‖ b1) for `rate`, ready to squeeze. */
function xofInit(ctx: usize, rate: u32, seed: usize, len: usize, b0: u8, b1: u8): void {
  keccakInit(ctx, rate, DS_SHAKE);
  keccakAbsorb(ctx, seed, len);
  store<u8>(IDX, b0);
  store<u8>(IDX + 1, b1);
  keccakAbsorb(ctx, IDX, 2);
}

/** RejNTTPoly (Algorithm 30) into `f`, from `A_BLOCKS` blocks already squeezed to `buf`. */
function finishUniform(f: usize, ctx: usize, buf: usize): void {
  let have = rejUniform(f, 0, buf, A_BLOCKS * SHAKE128_RATE);
  while (have < 256) {
    keccakSqueeze(ctx, buf, SHAKE128_RATE);
    have = rejUniform(f, have, buf, SHAKE128_RATE);
  }
}

/** ExpandA (Algorithm 32): Â[r][s] = RejNTTPoly(ρ ‖ s ‖ r) into MAT, two entries per pass. */
function expandA(rho: usize): void {
  for (let p: usize = 0; p < K * L; p += 2) {
    const q = p + 1;
    xofInit(CTX_A, SHAKE128_RATE, rho, 32, <u8>(p % L), <u8>(p / L));
    xofInit(CTX_B, SHAKE128_RATE, rho, 32, <u8>(q % L), <u8>(q / L));
    keccakSqueezeBlocksX2(CTX_A, CTX_B, XA, XB, A_BLOCKS);
    finishUniform(MAT + p * POLY_BYTES, CTX_A, XA);
    finishUniform(MAT + q * POLY_BYTES, CTX_B, XB);
  }
}

/** RejBoundedPoly (Algorithm 31) into `f`, from `S_BLOCKS` blocks already squeezed to `buf`. */
function finishEta(f: usize, ctx: usize, buf: usize): void {
  let have = rejEta(f, 0, buf, S_BLOCKS * SHAKE256_RATE);
  while (have < 256) {
    keccakSqueeze(ctx, buf, SHAKE256_RATE);
    have = rejEta(f, have, buf, SHAKE256_RATE);
  }
}

/** ExpandS (Algorithm 33): s1 (ℓ polys at S1) and s2 (k polys at S2), entry n from ρ′ ‖ n (2 bytes). */
function expandS(rhoPrime: usize): void {
  const total = L + K; // 15
  let n: usize = 0;
  for (; n + 1 < total; n += 2) {
    xofInit(CTX_A, SHAKE256_RATE, rhoPrime, 64, <u8>n, 0);
    xofInit(CTX_B, SHAKE256_RATE, rhoPrime, 64, <u8>(n + 1), 0);
    keccakSqueezeBlocksX2(CTX_A, CTX_B, XA, XB, S_BLOCKS);
    finishEta(S1 + n * POLY_BYTES, CTX_A, XA);
    finishEta(S1 + (n + 1) * POLY_BYTES, CTX_B, XB);
  }
  xofInit(CTX_A, SHAKE256_RATE, rhoPrime, 64, <u8>n, 0);
  keccakSqueeze(CTX_A, XA, S_BLOCKS * SHAKE256_RATE);
  finishEta(S1 + n * POLY_BYTES, CTX_A, XA);
}

/** ExpandMask (Algorithm 34): y[r] = BitUnpack(H(ρ″ ‖ (κ + r), 640), γ1 − 1, γ1) into Y. */
function expandMask(rhoPP: usize, kappa: u32): void {
  let r: usize = 0;
  for (; r + 1 < L; r += 2) {
    const a = kappa + <u32>r, b = a + 1;
    xofInit(CTX_A, SHAKE256_RATE, rhoPP, 64, <u8>a, <u8>(a >> 8));
    xofInit(CTX_B, SHAKE256_RATE, rhoPP, 64, <u8>b, <u8>(b >> 8));
    keccakSqueezeBlocksX2(CTX_A, CTX_B, XA, XB, Y_BLOCKS);
    unpackMask(Y + r * POLY_BYTES, XA);
    unpackMask(Y + (r + 1) * POLY_BYTES, XB);
  }
  const a = kappa + <u32>r;
  xofInit(CTX_A, SHAKE256_RATE, rhoPP, 64, <u8>a, <u8>(a >> 8));
  keccakSqueeze(CTX_A, XA, 640);
  unpackMask(Y + r * POLY_BYTES, XA);
}

/**
 * SampleInBall (Algorithm 29) of c̃ (64 bytes) into `c`: τ = 60 coefficients ±1. Branches and indexes
 * on c̃ (see the file comment).
 */
function sampleInBall(c: usize, ct: usize): void {
  keccakInit(CTX_A, SHAKE256_RATE, DS_SHAKE);
  keccakAbsorb(CTX_A, ct, CT_BYTES);
  keccakSqueeze(CTX_A, XA, SHAKE256_RATE);
  let signs = load<u64>(XA);
  let pos: usize = 8;
  memory.fill(c, 0, POLY_BYTES);
  for (let i: usize = 256 - TAU; i < 256; i++) {
    let j: usize;
    while (true) {
      if (pos == <usize>SHAKE256_RATE) {
        keccakSqueeze(CTX_A, XA, SHAKE256_RATE);
        pos = 0;
      }
      j = <usize>load<u8>(XA + pos++);
      if (j <= i) break;
    }
    store<i32>(c + (i << 2), load<i32>(c + (j << 2)));
    store<i32>(c + (j << 2), 1 - 2 * <i32>(signs & 1));
    signs >>= 1;
  }
}

/** H(src, len) → `outLen` bytes to `out`. */
function shake256(src: usize, len: usize, out: usize, outLen: usize): void {
  keccakInit(CTX_A, SHAKE256_RATE, DS_SHAKE);
  keccakAbsorb(CTX_A, src, len);
  keccakSqueeze(CTX_A, out, outLen);
}

// ---- ML-DSA internal algorithms ------------------------------------------------------------------

/** ML-DSA.KeyGen_internal(ξ) (Algorithm 6): pk (2592 bytes) to `pk`, sk (4896 bytes) to `sk`. */
export function mldsaKeyGen(xi: usize, pk: usize, sk: usize): void {
  // (ρ, ρ′, K) = H(ξ ‖ k ‖ ℓ, 128)
  xofInit(CTX_A, SHAKE256_RATE, xi, SEED_BYTES, <u8>K, <u8>L);
  keccakSqueeze(CTX_A, SEEDS, 128);
  const rho = SEEDS, rhoPrime = SEEDS + 32, key = SEEDS + 96;
  expandA(rho);
  expandS(rhoPrime);
  for (let j: usize = 0; j < L; j++) {
    const s = S1 + j * POLY_BYTES;
    packPoly(sk + SK_S1 + 96 * j, s, 3, -1, ETA);
    memory.copy(YH + j * POLY_BYTES, s, POLY_BYTES);
    ntt(YH + j * POLY_BYTES);
  }
  for (let i: usize = 0; i < K; i++) {
    packPoly(sk + SK_S2 + 96 * i, S2 + i * POLY_BYTES, 3, -1, ETA);
    // t = NTT^-1(Â ∘ ŝ1) + s2, then (t1, t0) = Power2Round(t).
    dotAcc(TMP, MAT + i * L * POLY_BYTES, YH, L, false, 0, 0);
    invNtt(TMP);
    polyAddReduce(TMP, TMP, S2 + i * POLY_BYTES);
    power2Round(TMP, TMP2);
    packPoly(pk + 32 + 320 * i, TMP, 10, 1, 0);
    packPoly(sk + SK_T0 + 416 * i, TMP2, 13, -1, 1 << 12);
  }
  memory.copy(pk, rho, 32);
  memory.copy(sk, rho, 32);
  memory.copy(sk + SK_K, key, 32);
  shake256(pk, PK_BYTES, sk + SK_TR, 64); // tr = H(pk, 64)
}

/**
 * ML-DSA.Sign_internal(sk, μ, rnd) (Algorithm 7, from line 7 on, μ given): the signature (4627
 * bytes) to `sig`. Returns 1, or 0 (nothing written) if the attempt counter ran out, which does not
 * happen for any key (the expected number of attempts is 3.85).
 */
export function mldsaSign(sk: usize, mu: usize, rnd: usize, sig: usize): i32 {
  // skDecode (Algorithm 25) and the NTTs of lines 2–4.
  for (let j: usize = 0; j < L; j++) {
    unpackPoly(S1 + j * POLY_BYTES, sk + SK_S1 + 96 * j, 3, -1, ETA);
    ntt(S1 + j * POLY_BYTES);
  }
  for (let i: usize = 0; i < K; i++) {
    unpackPoly(S2 + i * POLY_BYTES, sk + SK_S2 + 96 * i, 3, -1, ETA);
    ntt(S2 + i * POLY_BYTES);
    unpackPoly(T0 + i * POLY_BYTES, sk + SK_T0 + 416 * i, 13, -1, 1 << 12);
    ntt(T0 + i * POLY_BYTES);
  }
  expandA(sk);
  // ρ″ = H(K ‖ rnd ‖ μ, 64)
  keccakInit(CTX_A, SHAKE256_RATE, DS_SHAKE);
  keccakAbsorb(CTX_A, sk + SK_K, 32);
  keccakAbsorb(CTX_A, rnd, RND_BYTES);
  keccakAbsorb(CTX_A, mu, MU_BYTES);
  keccakSqueeze(CTX_A, SEEDS, 64);
  memory.copy(HBUF, mu, MU_BYTES);

  for (let kappa: u32 = 0; kappa < KAPPA_MAX; kappa += <u32>L) {
    expandMask(SEEDS, kappa);
    for (let j: usize = 0; j < L; j++) {
      memory.copy(YH + j * POLY_BYTES, Y + j * POLY_BYTES, POLY_BYTES);
      ntt(YH + j * POLY_BYTES);
    }
    // w = NTT^-1(Â ∘ ŷ), w1 = HighBits(w), c̃ = H(μ ‖ w1Encode(w1), 64).
    for (let i: usize = 0; i < K; i++) {
      const w = W + i * POLY_BYTES;
      dotAcc(w, MAT + i * L * POLY_BYTES, YH, L, false, 0, 0);
      invNtt(w);
      polyFreeze(w);
      packHighBits(HBUF + MU_BYTES + 128 * i, w);
    }
    shake256(HBUF, MU_BYTES + 128 * K, CTILDE, CT_BYTES);
    sampleInBall(CH, CTILDE);
    ntt(CH);
    // z = y + cs1 (in place of y), ‖z‖∞ < γ1 − β.
    let bad: i32 = 0;
    for (let j: usize = 0; j < L; j++) {
      pointwise(TMP, CH, S1 + j * POLY_BYTES);
      invNtt(TMP);
      polyCentre(TMP);
      polyAdd(Y + j * POLY_BYTES, Y + j * POLY_BYTES, TMP);
      bad |= exceeds(Y + j * POLY_BYTES, GAMMA1 - BETA);
    }
    // r = w − cs2, ‖LowBits(r)‖∞ < γ2 − β, ‖ct0‖∞ < γ2, h = MakeHint(−ct0, r + ct0), #h ≤ ω.
    let count: i32 = 0;
    for (let i: usize = 0; i < K; i++) {
      pointwise(TMP, CH, S2 + i * POLY_BYTES);
      invNtt(TMP);
      polyCentre(TMP);
      pointwise(TMP2, CH, T0 + i * POLY_BYTES);
      invNtt(TMP2);
      polyCentre(TMP2);
      const res = signRow(W + i * POLY_BYTES, TMP, TMP2, HINT + 256 * i, BETA);
      bad |= res >> 16;
      count += res & 0xffff;
    }
    bad |= (<i32>OMEGA - count) >>> 31;
    if (bad == 0) {
      // The public accept of this attempt: sigEncode (Algorithm 26).
      memory.copy(sig, CTILDE, CT_BYTES);
      for (let j: usize = 0; j < L; j++) packPoly(sig + SIG_Z + 640 * j, Y + j * POLY_BYTES, 20, -1, GAMMA1);
      hintBitPack(sig + SIG_H);
      return 1;
    }
  }
  return 0;
}

/** HintBitPack (Algorithm 20) of the hint bytes at HINT (at most ω ones: checked by the caller). */
function hintBitPack(y: usize): void {
  memory.fill(y, 0, OMEGA + K);
  let index: usize = 0;
  for (let i: usize = 0; i < K; i++) {
    for (let j: usize = 0; j < 256; j++) {
      if (load<u8>(HINT + 256 * i + j) != 0) store<u8>(y + index++, <u8>j);
    }
    store<u8>(y + OMEGA + i, <u8>index);
  }
}

/**
 * HintBitUnpack (Algorithm 21) into the hint bytes at HINT: 1, or 0 for a malformed encoding
 * (indices not strictly increasing within a poly, a count decreasing or above ω, non-zero padding).
 */
function hintBitUnpack(y: usize): i32 {
  memory.fill(HINT, 0, K * 256);
  let index: usize = 0;
  for (let i: usize = 0; i < K; i++) {
    const end = <usize>load<u8>(y + OMEGA + i);
    if (end < index || end > OMEGA) return 0;
    const first = index;
    while (index < end) {
      const at = <usize>load<u8>(y + index);
      if (index > first && <usize>load<u8>(y + index - 1) >= at) return 0;
      store<u8>(HINT + 256 * i + at, 1);
      index++;
    }
  }
  for (; index < OMEGA; index++) if (load<u8>(y + index) != 0) return 0;
  return 1;
}

/**
 * ML-DSA.Verify_internal(pk, μ, σ) (Algorithm 8, from line 8 on, μ given): 1 when σ is a valid
 * signature of μ under pk, else 0. Works on public data only.
 */
export function mldsaVerify(pk: usize, mu: usize, sig: usize): i32 {
  // sigDecode (Algorithm 27); line 4: h = ⊥ rejects.
  if (!hintBitUnpack(sig + SIG_H)) return 0;
  let bad: i32 = 0;
  for (let j: usize = 0; j < L; j++) {
    const z = Y + j * POLY_BYTES;
    unpackPoly(z, sig + SIG_Z + 640 * j, 20, -1, GAMMA1);
    bad |= exceeds(z, GAMMA1 - BETA); // line 13: ‖z‖∞ < γ1 − β
    ntt(z);
  }
  if (bad) return 0;
  expandA(pk);
  sampleInBall(CH, sig);
  ntt(CH);
  memory.copy(HBUF, mu, MU_BYTES);
  // w′_Approx = NTT^-1(Â ∘ NTT(z) − NTT(c) ∘ NTT(t1·2^d)), w1′ = UseHint(h, w′_Approx).
  for (let i: usize = 0; i < K; i++) {
    unpackPoly(TMP, pk + 32 + 320 * i, 10, 1, 0);
    polyShiftD(TMP);
    ntt(TMP);
    const w = W + i * POLY_BYTES;
    dotAcc(w, MAT + i * L * POLY_BYTES, Y, L, true, CH, TMP);
    invNtt(w);
    polyFreeze(w);
    useHint(w, HINT + 256 * i);
    packPoly(HBUF + MU_BYTES + 128 * i, w, 4, 1, 0);
  }
  shake256(HBUF, MU_BYTES + 128 * K, CTILDE, CT_BYTES);
  let d: u64 = 0;
  for (let i: usize = 0; i < CT_BYTES; i += 8) d |= load<u64>(CTILDE + i) ^ load<u64>(sig + i);
  return d == 0 ? 1 : 0;
}
