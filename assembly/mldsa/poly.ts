// ML-DSA polynomial arithmetic over R_q = Z_q[X]/(X^256 + 1), q = 8380417 (FIPS 204 §7.5): the NTT
// and its inverse (Algorithms 41, 42), pointwise products in T_q (Algorithms 45, 46, fused into
// multiply–accumulate), the rounding functions of §7.4 (Power2Round, Decompose, HighBits, LowBits,
// MakeHint, UseHint — Algorithms 35–40), infinity-norm checks and the bit packings of §7.1
// (SimpleBitPack / BitPack and their inverses, Algorithms 16–19).
//
// A polynomial is 256 coefficients stored as i32 (1024 bytes). Multiplication mod q is Montgomery
// multiplication with R = 2^32 (64-bit products): mont(a) = (a − q·(a·q^-1 mod 2^32)) / 2^32, |mont(a)|
// < q for |a| < 2^31·q. The NTT tables hold ζ·R, so NTT and inverse NTT map representatives to
// representatives of the exact transform; a pointwise product leaves a factor R^-1, removed by the
// inverse NTT's final scaling by 256^-1·R² (F_MONT). Reduction is lazy; the bounds are:
//   NTT:        input |a| < q → output |a| < 9q (each of the 8 layers adds at most q).
//   pointwise:  |a|, |b| < 9q (81·q² < 2^31·q) → |mont| < q; dotAcc sums ℓ = 7 products with |a| < q
//               (Â) and |b| < 9q in i64, plus at most one 81·q² term (≤ 144·q² < 2^31·q) → |mont| < q.
//   inverse:    input |a| < q → |a| < 256·q < 2^31 before the scaling → output |a| < q.
//
// Two flavours from one source: when ASC_FEATURE_SIMD is set, the NTTs, products and the per-coefficient
// maps of the signing loop (freeze, centre, add, norm checks, signRow) run on i32x4 vectors (the
// Montgomery high half comes from i64x2.extmul_{low,high}_i32x4_s and one i32x4 shuffle);
// otherwise the scalar loops below run and the module holds no v128 instruction. Both give the same
// representatives, bit for bit.
//
// Constant time: nothing here branches on or indexes memory by coefficient values, except
// rejUniform (public ρ only) and rejEta's stopping point (see there); the packers' loop counts depend
// on the field width only. UseHint runs on public data but is branch-free anyway.

import { QINV, F_MONT, F_MONT_QINV, ZETAS, ZETAS_QINV, ZETAS_INV, ZETAS_INV_QINV } from './_constants';

export const Q: i32 = 8380417;
export const N: usize = 256;
export const POLY_BYTES: usize = 1024;
/** γ2 = (q − 1)/32 (ML-DSA-87). */
export const GAMMA2: i32 = 261888;
/** d = 13: bits dropped from t (Power2Round). */
export const D: i32 = 13;

// ---- scalar Montgomery helpers ------------------------------------------------------------------

/** Montgomery reduction of |a| < 2^31·q: a·2^-32 mod q, in (−q, q). */
// @ts-ignore: decorator
@inline export function montReduce(a: i64): i32 {
  const t = <i32>a * QINV;
  return <i32>((a - <i64>t * <i64>Q) >> 32);
}

/** a − q·[a ≥ q] + q·[a < 0] for a in (−q, q): the representative in [0, q). */
// @ts-ignore: decorator
@inline export function freeze(a: i32): i32 {
  return a + ((a >> 31) & Q);
}

/** The representative in [0, q) of a in (−2q, 2q). */
// @ts-ignore: decorator
@inline export function reduceFull(a: i32): i32 {
  a += (a >> 31) & Q;
  a += (a >> 31) & Q; // [0, 2q)
  a -= Q;
  return a + ((a >> 31) & Q);
}

/** The centred representative in [−(q−1)/2, (q−1)/2] of a in (−q, q). */
// @ts-ignore: decorator
@inline export function centre(a: i32): i32 {
  a += (a >> 31) & Q; // [0, q)
  return a - ((((Q - 1) >> 1) - a) >> 31 & Q);
}

// @ts-ignore: decorator
@inline function get(p: usize, i: usize): i32 {
  return load<i32>(p + (i << 2));
}

// @ts-ignore: decorator
@inline function set(p: usize, i: usize, v: i32): void {
  store<i32>(p + (i << 2), v);
}

// ---- SIMD Montgomery helpers --------------------------------------------------------------------

/** The high 32-bit halves of the four i64 products (lo: lanes 0, 1; hi: lanes 2, 3) minus t·q. */
// @ts-ignore: decorator
@inline function montFinishV(lo: v128, hi: v128, t: v128): v128 {
  const qv = i32x4.splat(Q);
  const dl = i64x2.sub(lo, i64x2.extmul_low_i32x4_s(t, qv));
  const dh = i64x2.sub(hi, i64x2.extmul_high_i32x4_s(t, qv));
  return i32x4.shuffle(dl, dh, 1, 3, 5, 7);
}

/** Lanewise mont(a·z) for a constant z with zq = z·q^-1 mod 2^32 (|a·z| < 2^31·q). */
// @ts-ignore: decorator
@inline function montMulConstV(a: v128, z: v128, zq: v128): v128 {
  return montFinishV(i64x2.extmul_low_i32x4_s(a, z), i64x2.extmul_high_i32x4_s(a, z), i32x4.mul(a, zq));
}

/** Lanewise mont(a·b). */
// @ts-ignore: decorator
@inline function montMulV(a: v128, b: v128): v128 {
  const t = i32x4.mul(i32x4.mul(a, b), i32x4.splat(QINV));
  return montFinishV(i64x2.extmul_low_i32x4_s(a, b), i64x2.extmul_high_i32x4_s(a, b), t);
}

/** Lanewise mont of the i64 sums lo (coefficients 0, 1) and hi (2, 3). */
// @ts-ignore: decorator
@inline function montReduceV(lo: v128, hi: v128): v128 {
  const t = i32x4.mul(i32x4.shuffle(lo, hi, 0, 2, 4, 6), i32x4.splat(QINV));
  return montFinishV(lo, hi, t);
}

/** Lanewise freeze: (−q, q) → [0, q). */
// @ts-ignore: decorator
@inline function freezeV(a: v128): v128 {
  return i32x4.add(a, v128.and(i32x4.shr_s(a, 31), i32x4.splat(Q)));
}

/** Lanewise reduceFull: (−2q, 2q) → [0, q). */
// @ts-ignore: decorator
@inline function reduceFullV(a: v128): v128 {
  const qv = i32x4.splat(Q);
  a = i32x4.add(a, v128.and(i32x4.shr_s(a, 31), qv));
  a = i32x4.sub(i32x4.add(a, v128.and(i32x4.shr_s(a, 31), qv)), qv);
  return i32x4.add(a, v128.and(i32x4.shr_s(a, 31), qv));
}

/** Lanewise centre: (−q, q) → [−(q−1)/2, (q−1)/2]. */
// @ts-ignore: decorator
@inline function centreV(a: v128): v128 {
  a = freezeV(a);
  return i32x4.sub(a, v128.and(i32x4.shr_s(i32x4.sub(i32x4.splat((Q - 1) >> 1), a), 31), i32x4.splat(Q)));
}

/** Lanewise all-ones where |a| ≥ bound. */
// @ts-ignore: decorator
@inline function exceedsV(a: v128, bound: i32): v128 {
  return i32x4.shr_s(i32x4.sub(i32x4.splat(bound - 1), i32x4.abs(a)), 31);
}

/** Lanewise decomposeHi (see the scalar form below). */
// @ts-ignore: decorator
@inline function decomposeHiV(r: v128): v128 {
  const y = i32x4.add(i32x4.shr_s(i32x4.add(r, i32x4.splat(GAMMA2 - 1)), 9), i32x4.splat(1));
  return i32x4.shr_s(i32x4.mul(y, i32x4.splat(1025)), 20);
}

// ---- NTT (Algorithm 41) and inverse (Algorithm 42) ------------------------------------------------

/** In-place NTT (FIPS 204 Algorithm 41); input |a| < q, output |a| < 9q, standard (bit-reversed) order. */
export function ntt(p: usize): void {
  if (ASC_FEATURE_SIMD) {
    nttSimd(p);
    return;
  }
  let m: usize = 0;
  for (let len: usize = 128; len >= 1; len >>= 1) {
    for (let start: usize = 0; start < 256; start += len << 1) {
      m++;
      const z = <i64>load<i32>(ZETAS + (m << 2));
      for (let j = start; j < start + len; j++) {
        const t = montReduce(z * <i64>get(p, j + len));
        const a = get(p, j);
        set(p, j + len, a - t);
        set(p, j, a + t);
      }
    }
  }
}

function nttSimd(p: usize): void {
  let m: usize = 0;
  // Layers len = 128 … 4: butterflies between whole vectors.
  for (let len: usize = 128; len >= 4; len >>= 1) {
    for (let start: usize = 0; start < 256; start += len << 1) {
      m++;
      const z = i32x4.splat(load<i32>(ZETAS + (m << 2)));
      const zq = i32x4.splat(load<i32>(ZETAS_QINV + (m << 2)));
      const end = p + ((start + len) << 2);
      const off = len << 2;
      for (let a = p + (start << 2); a < end; a += 16) {
        const x = v128.load(a);
        const t = montMulConstV(v128.load(a + off), z, zq);
        v128.store(a + off, i32x4.sub(x, t));
        v128.store(a, i32x4.add(x, t));
      }
    }
  }
  // Layers len = 2 and len = 1 on blocks of 8 coefficients (zetas 64 + 2b, 65 + 2b; 128 + 4b … 131 + 4b).
  for (let b: usize = 0; b < 32; b++) {
    const a = p + (b << 5);
    const v0 = v128.load(a), v1 = v128.load(a, 16);
    // len = 2: pairs (a0,a2), (a1,a3) with zetas[64+2b]; (a4,a6), (a5,a7) with zetas[65+2b].
    const x = i64x2.shuffle(v0, v1, 0, 2); // a0 a1 a4 a5
    const y = i64x2.shuffle(v0, v1, 1, 3); // a2 a3 a6 a7
    const zp = v128.load(ZETAS + ((64 + (b << 1)) << 2));
    const zqp = v128.load(ZETAS_QINV + ((64 + (b << 1)) << 2));
    const t = montMulConstV(y, i32x4.shuffle(zp, zp, 0, 0, 1, 1), i32x4.shuffle(zqp, zqp, 0, 0, 1, 1));
    const x2 = i32x4.add(x, t), y2 = i32x4.sub(x, t);
    // len = 1: pairs (a0,a1), (a2,a3), (a4,a5), (a6,a7).
    const c = i32x4.shuffle(x2, y2, 0, 4, 2, 6); // a0 a2 a4 a6
    const d = i32x4.shuffle(x2, y2, 1, 5, 3, 7); // a1 a3 a5 a7
    const u = montMulConstV(d, v128.load(ZETAS + ((128 + (b << 2)) << 2)), v128.load(ZETAS_QINV + ((128 + (b << 2)) << 2)));
    const c2 = i32x4.add(c, u), d2 = i32x4.sub(c, u);
    v128.store(a, i32x4.shuffle(c2, d2, 0, 4, 1, 5));
    v128.store(a, i32x4.shuffle(c2, d2, 2, 6, 3, 7), 16);
  }
}

/**
 * In-place inverse NTT (FIPS 204 Algorithm 42) including the scaling by 256^-1, and removing one
 * factor R^-1 left by a pointwise product: input |a| < q, output |a| < q.
 */
export function invNtt(p: usize): void {
  if (ASC_FEATURE_SIMD) {
    invNttSimd(p);
    return;
  }
  let k: usize = 0;
  for (let len: usize = 1; len < 256; len <<= 1) {
    for (let start: usize = 0; start < 256; start += len << 1) {
      const z = <i64>load<i32>(ZETAS_INV + (k << 2));
      k++;
      for (let j = start; j < start + len; j++) {
        const a = get(p, j);
        const b = get(p, j + len);
        set(p, j, a + b);
        set(p, j + len, montReduce(z * <i64>(b - a)));
      }
    }
  }
  const f = <i64>F_MONT;
  for (let j: usize = 0; j < 256; j++) set(p, j, montReduce(f * <i64>get(p, j)));
}

function invNttSimd(p: usize): void {
  // Layers len = 1 and len = 2 on blocks of 8 coefficients (ZETAS_INV 4b … 4b + 3; 128 + 2b, 129 + 2b).
  for (let b: usize = 0; b < 32; b++) {
    const a = p + (b << 5);
    const v0 = v128.load(a), v1 = v128.load(a, 16);
    const c = i32x4.shuffle(v0, v1, 0, 2, 4, 6); // a0 a2 a4 a6
    const d = i32x4.shuffle(v0, v1, 1, 3, 5, 7); // a1 a3 a5 a7
    const c2 = i32x4.add(c, d);
    const d2 = montMulConstV(i32x4.sub(d, c), v128.load(ZETAS_INV + (b << 4)), v128.load(ZETAS_INV_QINV + (b << 4)));
    const x = i32x4.shuffle(c2, d2, 0, 4, 2, 6); // a0 a1 a4 a5
    const y = i32x4.shuffle(c2, d2, 1, 5, 3, 7); // a2 a3 a6 a7
    const zp = v128.load(ZETAS_INV + ((128 + (b << 1)) << 2));
    const zqp = v128.load(ZETAS_INV_QINV + ((128 + (b << 1)) << 2));
    const x2 = i32x4.add(x, y);
    const y2 = montMulConstV(i32x4.sub(y, x), i32x4.shuffle(zp, zp, 0, 0, 1, 1), i32x4.shuffle(zqp, zqp, 0, 0, 1, 1));
    v128.store(a, i64x2.shuffle(x2, y2, 0, 2));
    v128.store(a, i64x2.shuffle(x2, y2, 1, 3), 16);
  }
  let k: usize = 192;
  for (let len: usize = 4; len < 256; len <<= 1) {
    for (let start: usize = 0; start < 256; start += len << 1) {
      const z = i32x4.splat(load<i32>(ZETAS_INV + (k << 2)));
      const zq = i32x4.splat(load<i32>(ZETAS_INV_QINV + (k << 2)));
      k++;
      const end = p + ((start + len) << 2);
      const off = len << 2;
      for (let a = p + (start << 2); a < end; a += 16) {
        const x = v128.load(a);
        const y = v128.load(a + off);
        v128.store(a, i32x4.add(x, y));
        v128.store(a + off, montMulConstV(i32x4.sub(y, x), z, zq));
      }
    }
  }
  const f = i32x4.splat(F_MONT);
  const fq = i32x4.splat(F_MONT_QINV);
  for (let a = p; a < p + POLY_BYTES; a += 16) v128.store(a, montMulConstV(v128.load(a), f, fq));
}

// ---- products in T_q ------------------------------------------------------------------------------

/** r = mont(a ∘ b) lanewise (|a|, |b| < 9q). `r` may alias `a` or `b`. */
export function pointwise(r: usize, a: usize, b: usize): void {
  if (ASC_FEATURE_SIMD) {
    for (let i: usize = 0; i < POLY_BYTES; i += 16) v128.store(r + i, montMulV(v128.load(a + i), v128.load(b + i)));
    return;
  }
  for (let i: usize = 0; i < 256; i++) set(r, i, montReduce(<i64>get(a, i) * <i64>get(b, i)));
}

/**
 * r = mont(Σ_{j<n} a_j ∘ b_j − [sub]·(c ∘ e)) with the a_j, b_j consecutive polys, summed exactly in
 * i64. Needs |a_j| < q, |b_j|, |c|, |e| < 9q and n ≤ 19 (n·9·q² + 81·q² < 2^31·q). With sub = 0,
 * `c` and `e` are not read.
 */
export function dotAcc(r: usize, a: usize, b: usize, n: usize, sub: bool, c: usize, e: usize): void {
  if (ASC_FEATURE_SIMD) {
    for (let i: usize = 0; i < POLY_BYTES; i += 16) {
      let lo = i64x2.splat(0), hi = i64x2.splat(0);
      for (let j: usize = 0; j < n; j++) {
        const x = v128.load(a + j * POLY_BYTES + i), y = v128.load(b + j * POLY_BYTES + i);
        lo = i64x2.add(lo, i64x2.extmul_low_i32x4_s(x, y));
        hi = i64x2.add(hi, i64x2.extmul_high_i32x4_s(x, y));
      }
      if (sub) {
        const x = v128.load(c + i), y = v128.load(e + i);
        lo = i64x2.sub(lo, i64x2.extmul_low_i32x4_s(x, y));
        hi = i64x2.sub(hi, i64x2.extmul_high_i32x4_s(x, y));
      }
      v128.store(r + i, montReduceV(lo, hi));
    }
    return;
  }
  for (let i: usize = 0; i < POLY_BYTES; i += 4) {
    let acc: i64 = 0;
    for (let j: usize = 0; j < n; j++) acc += <i64>load<i32>(a + j * POLY_BYTES + i) * <i64>load<i32>(b + j * POLY_BYTES + i);
    if (sub) acc -= <i64>load<i32>(c + i) * <i64>load<i32>(e + i);
    store<i32>(r + i, montReduce(acc));
  }
}

// ---- coefficient maps -------------------------------------------------------------------------------

/** Every coefficient to [0, q) (from (−q, q)). */
export function polyFreeze(p: usize): void {
  if (ASC_FEATURE_SIMD) {
    for (let a = p; a < p + POLY_BYTES; a += 16) v128.store(a, freezeV(v128.load(a)));
    return;
  }
  for (let i: usize = 0; i < 256; i++) set(p, i, freeze(get(p, i)));
}

/** Every coefficient to its centred representative (from (−q, q)). */
export function polyCentre(p: usize): void {
  if (ASC_FEATURE_SIMD) {
    for (let a = p; a < p + POLY_BYTES; a += 16) v128.store(a, centreV(v128.load(a)));
    return;
  }
  for (let i: usize = 0; i < 256; i++) set(p, i, centre(get(p, i)));
}

/** r = a + b (exact; no reduction). */
export function polyAdd(r: usize, a: usize, b: usize): void {
  if (ASC_FEATURE_SIMD) {
    for (let i: usize = 0; i < POLY_BYTES; i += 16) v128.store(r + i, i32x4.add(v128.load(a + i), v128.load(b + i)));
    return;
  }
  for (let i: usize = 0; i < 256; i++) set(r, i, get(a, i) + get(b, i));
}

/** r = (a + b) mod q in [0, q), for |a + b| < 2q. */
export function polyAddReduce(r: usize, a: usize, b: usize): void {
  for (let i: usize = 0; i < 256; i++) set(r, i, reduceFull(get(a, i) + get(b, i)));
}

/** p = p·2^d (t1 → t1·2^d of Verify_internal line 9; values stay < q). */
export function polyShiftD(p: usize): void {
  for (let i: usize = 0; i < 256; i++) set(p, i, get(p, i) << D);
}

/** 1 when some |coefficient| ≥ bound, else 0 (centred inputs; no branch on the values). */
export function exceeds(p: usize, bound: i32): i32 {
  if (ASC_FEATURE_SIMD) {
    let badV = i32x4.splat(0);
    for (let a = p; a < p + POLY_BYTES; a += 16) badV = v128.or(badV, exceedsV(v128.load(a), bound));
    return <i32>v128.any_true(badV);
  }
  let bad: i32 = 0;
  for (let i: usize = 0; i < 256; i++) {
    const x = get(p, i);
    const s = x >> 31;
    bad |= (bound - 1 - ((x ^ s) - s)) >> 31;
  }
  return bad & 1;
}

// ---- rounding (§7.4) --------------------------------------------------------------------------------

/** Power2Round (Algorithm 35) of r in [0, q): r1 = ⌊(r + 2^12 − 1) / 2^13⌋, so r0 = r − r1·2^13 ∈ (−2^12, 2^12]. */
// @ts-ignore: decorator
@inline function power2Round1(r: i32): i32 {
  return (r + (1 << (D - 1)) - 1) >> D;
}

/** Power2Round over a poly in [0, q): t1 (in place of `t`) and t0 into `t0`. */
export function power2Round(t: usize, t0: usize): void {
  for (let i: usize = 0; i < 256; i++) {
    const r = get(t, i);
    const r1 = power2Round1(r);
    set(t0, i, r - (r1 << D));
    set(t, i, r1);
  }
}

/**
 * ⌊(r + γ2 − 1) / 2γ2⌋ for r in [0, q): the unreduced high part r1′ ∈ [0, 16] of Decompose
 * (Algorithm 36). 2γ2 = 512·1023, and ⌊y/1023⌋ = ((y + 1)·1025) >> 20 for 0 ≤ y < 2^15, so r1 = r1′ mod 16
 * and r0 = r − r1′·2γ2 − [r1′ = 16] (checked exhaustively over [0, q) against Algorithm 36; a suite test
 * should keep that check).
 */
// @ts-ignore: decorator
@inline function decomposeHi(r: i32): i32 {
  return ((((r + GAMMA2 - 1) >> 9) + 1) * 1025) >> 20;
}

/** HighBits (Algorithm 37) of r in [0, q): r1 ∈ [0, 15]. */
// @ts-ignore: decorator
@inline export function highBits(r: i32): i32 {
  return decomposeHi(r) & 15;
}

/** LowBits (Algorithm 38) of r in [0, q): r0 ∈ [−γ2, γ2]. */
// @ts-ignore: decorator
@inline export function lowBits(r: i32): i32 {
  const h = decomposeHi(r);
  // r1′ = 16 exactly when r − r0 = q − 1: then r1 = 0 and r0 = r0 − 1 (Algorithm 36, lines 3–5).
  return r - h * (2 * GAMMA2) - (h >> 4);
}

/**
 * Sign_internal lines 21–28 for one row, branch-free: `w` holds w_i in [0, q) and becomes
 * r = w_i − cs2 mod q; `cs2` and `ct0` are centred. Writes the hint bits (0/1 bytes) of
 * MakeHint(−ct0, r + ct0) (Algorithm 39) to `hint`. Returns (bad << 16) | popcount(hint) where bad
 * = 1 when ‖LowBits(r)‖∞ ≥ γ2 − β or ‖ct0‖∞ ≥ γ2.
 */
export function signRow(w: usize, cs2: usize, ct0: usize, hint: usize, beta: i32): i32 {
  if (ASC_FEATURE_SIMD) return signRowSimd(w, cs2, ct0, hint, beta);
  let bad: i32 = 0;
  let count: i32 = 0;
  for (let i: usize = 0; i < 256; i++) {
    const r = reduceFull(get(w, i) - get(cs2, i));
    set(w, i, r);
    const r0 = lowBits(r);
    const s0 = r0 >> 31;
    bad |= (GAMMA2 - beta - 1 - ((r0 ^ s0) - s0)) >> 31;
    const c = get(ct0, i);
    const sc = c >> 31;
    bad |= (GAMMA2 - 1 - ((c ^ sc) - sc)) >> 31;
    // MakeHint(−ct0, r + ct0): HighBits(r + ct0) ≠ HighBits(r); |ct0| < q so one freeze suffices.
    const v = reduceFull(r + c);
    const diff = highBits(v) ^ highBits(r);
    const h = ((diff | -diff) >>> 31);
    store<u8>(hint + i, <u8>h);
    count += h;
  }
  return ((bad & 1) << 16) | count;
}

function signRowSimd(w: usize, cs2: usize, ct0: usize, hint: usize, beta: i32): i32 {
  let badV = i32x4.splat(0);
  let cntV = i32x4.splat(0);
  const fifteen = i32x4.splat(15);
  for (let i: usize = 0; i < 256; i += 4) {
    const o = i << 2;
    const r = reduceFullV(i32x4.sub(v128.load(w + o), v128.load(cs2 + o)));
    v128.store(w + o, r);
    const h = decomposeHiV(r);
    const r0 = i32x4.sub(i32x4.sub(r, i32x4.mul(h, i32x4.splat(2 * GAMMA2))), i32x4.shr_s(h, 4));
    const c = v128.load(ct0 + o);
    badV = v128.or(badV, v128.or(exceedsV(r0, GAMMA2 - beta), exceedsV(c, GAMMA2)));
    const hv = v128.and(decomposeHiV(reduceFullV(i32x4.add(r, c))), fifteen);
    const m = v128.not(i32x4.eq(hv, v128.and(h, fifteen))); // all ones where the high bits differ
    cntV = i32x4.sub(cntV, m);
    const bytes = i8x16.shuffle(m, m, 0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    store<u32>(hint + i, <u32>i32x4.extract_lane(v128.and(bytes, i32x4.splat(0x01010101)), 0));
  }
  const count = i32x4.extract_lane(cntV, 0) + i32x4.extract_lane(cntV, 1) + i32x4.extract_lane(cntV, 2) + i32x4.extract_lane(cntV, 3);
  return ((<i32>v128.any_true(badV)) << 16) | count;
}

/**
 * UseHint (Algorithm 40) over a poly in [0, q), in place, with hint bits (0/1 bytes) at `hint`:
 * the result is w1′ ∈ [0, 15]. Verification only (public data), but branch-free anyway.
 */
export function useHint(p: usize, hint: usize): void {
  for (let i: usize = 0; i < 256; i++) {
    const r = get(p, i);
    const h = <i32>load<u8>(hint + i);
    const r1 = highBits(r);
    const r0 = lowBits(r);
    // h = 1: r1 + 1 if r0 > 0 else r1 − 1, mod 16.
    const up = ((-r0) >>> 31); // 1 when r0 > 0
    set(p, i, (r1 + h * ((up << 1) - 1)) & 15);
  }
}

/** p = HighBits(p) (from [0, q)). */
export function polyHighBits(p: usize): void {
  for (let i: usize = 0; i < 256; i++) set(p, i, highBits(get(p, i)));
}

/** w1Encode of one poly (Algorithm 28 with SimpleBitPack, 4 bits): HighBits of p in [0, q), 128 bytes. */
export function packHighBits(out: usize, p: usize): void {
  for (let i: usize = 0; i < 128; i++) {
    store<u8>(out + i, <u8>(highBits(get(p, 2 * i)) | (highBits(get(p, 2 * i + 1)) << 4)));
  }
}

// ---- bit packing (§7.1) -------------------------------------------------------------------------------

/**
 * Packs the 256 values mul·f_i + add (each in [0, 2^bits)) little-endian into 32·bits bytes:
 * SimpleBitPack (Algorithm 16) with mul = 1, add = 0; BitPack(w, a, b) (Algorithm 17) with mul = −1,
 * add = b. Loop counts depend on `bits` only.
 */
export function packPoly(out: usize, f: usize, bits: u32, mul: i32, add: i32): void {
  let acc: u64 = 0;
  let n: u32 = 0;
  let o = out;
  const mask: u32 = (1 << bits) - 1;
  for (let i: usize = 0; i < 256; i++) {
    acc |= <u64>(<u32>(mul * get(f, i) + add) & mask) << n;
    n += bits;
    while (n >= 8) {
      store<u8>(o++, <u8>acc);
      acc >>= 8;
      n -= 8;
    }
  }
}

/**
 * Inverse of packPoly: f_i = mul·v_i + add for the bits-wide fields v_i (SimpleBitUnpack, BitUnpack,
 * Algorithms 18, 19, with the same mul/add as packing).
 */
export function unpackPoly(f: usize, src: usize, bits: u32, mul: i32, add: i32): void {
  let acc: u64 = 0;
  let n: u32 = 0;
  let s = src;
  const mask: u64 = (<u64>1 << bits) - 1;
  for (let i: usize = 0; i < 256; i++) {
    while (n < bits) {
      acc |= <u64>load<u8>(s++) << n;
      n += 8;
    }
    set(f, i, mul * <i32>(acc & mask) + add);
    acc >>= bits;
    n -= bits;
  }
}

// ---- sampling (§7.3) ------------------------------------------------------------------------------

/**
 * RejNTTPoly's inner loop (Algorithm 30 with CoeffFromThreeBytes, Algorithm 14) over `len` bytes
 * of SHAKE128 output at `buf`, filling `f` from `have`; returns the new count. Public data (ρ) only.
 */
export function rejUniform(f: usize, have: usize, buf: usize, len: usize): usize {
  for (let p: usize = 0; p + 3 <= len && have < 256; p += 3) {
    const z = <i32>load<u8>(buf + p) | (<i32>load<u8>(buf + p + 1) << 8) | ((<i32>load<u8>(buf + p + 2) & 0x7f) << 16);
    if (z < Q) set(f, have++, z);
  }
  return have;
}

/**
 * RejBoundedPoly's inner loop for η = 2 (Algorithm 31 with CoeffFromHalfByte, Algorithm 15) over
 * `len` bytes at `buf`: nibble b < 15 gives 2 − (b mod 5). Secret data: the value is computed
 * without branching (b mod 5 = b − 5·⌊205·b / 1024⌋ for b < 16) and written unconditionally to slot
 * `have`, which advances by the acceptance bit; only the acceptance pattern, which is
 * independent of the accepted values, decides where the loop stops.
 */
export function rejEta(f: usize, have: usize, buf: usize, len: usize): usize {
  for (let p: usize = 0; p < len && have < 256; p++) {
    const byte = <i32>load<u8>(buf + p);
    for (let s: i32 = 0; s < 8; s += 4) {
      const b = (byte >> s) & 15;
      const ok = <usize>((b - 15) >>> 31); // 1 when b < 15
      set(f, have, 2 - (b - 5 * ((b * 205) >> 10))); // have < 256 here
      have += ok;
      if (have >= 256) break;
    }
  }
  return have;
}

/**
 * ExpandMask's BitUnpack(v, γ1 − 1, γ1) for γ1 = 2^19 (Algorithm 34 line 4, Algorithm 19): 640 bytes →
 * 256 coefficients γ1 − v_i, two per 5 bytes.
 */
export function unpackMask(f: usize, buf: usize): void {
  for (let i: usize = 0; i < 128; i++) {
    const b = buf + 5 * i;
    const lo = load<u32>(b); // bytes 0..3
    const b4 = <u32>load<u8>(b + 4);
    const v0 = lo & 0xfffff;
    const v1 = (lo >>> 20) | (b4 << 12);
    set(f, 2 * i, (1 << 19) - <i32>v0);
    set(f, 2 * i + 1, (1 << 19) - <i32>v1);
  }
}
