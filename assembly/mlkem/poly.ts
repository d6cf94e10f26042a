// ML-KEM polynomial arithmetic over R_q = Z_q[X]/(X^256 + 1), q = 3329 (FIPS 203 §4.3): the NTT
// and its inverse (Algorithms 9, 10), MultiplyNTTs (Algorithm 11), the byte encodings
// (Algorithms 5, 6), Compress/Decompress (§4.2.1) and the samplers' arithmetic. Each hot function has
// a scalar form and an i16x8 form (SIMD build, chosen by the compile-time constant ASC_FEATURE_SIMD;
// the scalar build holds no v128 instruction). Both compute the same values bit for bit.
//
// Representation: a polynomial is 256 coefficients stored as i16 (512 bytes), any representative
// of its class mod q inside a bound that each function states; only the encoders (encode12,
// compressEncode) bring coefficients to [0, q). Bounds (all far below 2^15 = 9.8q):
//   cbd2 |x| ≤ 2; decode12 [0, q); decodeDecompress [0, q]; ntt in |x| ≤ q, out |x| ≤ 8q (lazy:
//   no reduction between layers); mulCache any i16 in, |x| ≤ q out; dotCache out |x| < q;
//   invNtt in |x| ≤ q, out |x| ≤ q (Barrett reductions after the 3rd and 6th layers' sums).
// Arithmetic (see scripts/gen-mlkem-constants.mjs): multiplication by a known constant z is the
// Barrett multiplication a·z − q·round(a·z'/2^15), exact mod q and within [−q, q] for every i16 a
// (i16x8.mul + i16x8.q15mulr_sat_s + i16x8.mul + sub: four instructions for eight coefficients);
// MultiplyNTTs sums i16 × i16 products in i32 (i32x4.dot_i16x8_s) against a per-vector cache of
// (b0·R, b1·γ·R, b1·R, b0·R) and ends with one Montgomery reduction per coefficient.
//
// Constant time: no branch or memory index depends on coefficients; the reductions are
// multiply-shift-subtract and sign masks. Only rejectUniform (public ρ) branches on data.
//
// Measured (Node 20 TurboFan, x86-64, 2 shared cores, bench/run.mjs --only pq --quick, medians;
// liboqs-js ~90–99 µs in the same runs): the previous form (u16 in [0, q), a 64-bit multiply-shift
// `mod q` plus two conditional subtractions per butterfly, four reductions per base-multiplied pair)
// took 83 / 97 / 121 µs for keygen / encaps / decaps in both builds. This lazy form took the scalar
// build to 52 / 57 / 75 µs and, with the i16x8 forms, the SIMD build to 37 / 39 / 48 µs; after that
// the NTTs, caches and dot products are ~8% of a decapsulation profile (Keccak ~50%). The encoders
// below (eight coefficients per step) and the branch-free rejectUniform took ~25% together before.
//
import {
  QINV, BARRETT_V, R_MONT, R_MONT_P, F_INV, F_INV_P, F_ZETA1, F_ZETA1_P,
  ZETAS, NTT_L4, NTT_L2, INV_L2, INV_L4, BM_RG,
} from './_constants';

export const Q: i32 = 3329;
export const N: usize = 256;
export const POLY_BYTES: usize = 512;
/** One polynomial's MultiplyNTTs cache: per 8 coefficients, B0 (8 × i16) then B1 (8 × i16). */
export const CACHE_BYTES: usize = 1024;
/** ⌈2^38 / q⌉: ⌊x / q⌋ = (x · M) >> 38 for 0 ≤ x < 2^26. */
const M38: u64 = 82570715;
/** Byte offset of z' after a table of 128 constants z (see _constants.ts). */
const P128: usize = 256;

// ---- scalar arithmetic ---------------------------------------------------------------------------

// @ts-ignore: decorator
@inline export function divq(x: u32): u32 {
  return <u32>((<u64>x * M38) >> 38);
}

/** a·z mod q within [−q, q] for any i16 a (Barrett multiplication by the constant z, z' its partner). */
// @ts-ignore: decorator
@inline function fqmul(a: i32, z: i32, zp: i32): i32 {
  return a * z - ((a * zp + 0x4000) >> 15) * Q;
}

/** a mod q within [−0.65q, 0.65q] for any i16 a. */
// @ts-ignore: decorator
@inline function barrett(a: i32): i32 {
  return a - ((a * BARRETT_V + 0x4000) >> 15) * Q;
}

/** The representative in [0, q) of any i16 a. */
// @ts-ignore: decorator
@inline function canon(a: i32): i32 {
  const r = barrett(a);
  return r + ((r >> 31) & Q);
}

/** p·2^−16 mod q within (−q, q) for |p| < 2^15·q (Montgomery reduction). */
// @ts-ignore: decorator
@inline function montReduce(p: i32): i32 {
  const t = (p * QINV) << 16 >> 16;
  return (p - t * Q) >> 16;
}

/** a − q if a ≥ q, for 0 ≤ a < 2q. */
// @ts-ignore: decorator
@inline function csubq(a: i32): i32 {
  a -= Q;
  return a + ((a >> 31) & Q);
}

// @ts-ignore: decorator
@inline function get(p: usize, i: usize): i32 {
  return <i32>load<i16>(p + (i << 1));
}

// @ts-ignore: decorator
@inline function set(p: usize, i: usize, v: i32): void {
  store<i16>(p + (i << 1), <i16>v);
}

// ---- SIMD arithmetic (SIMD build only) ------------------------------------------------------------

// @ts-ignore: decorator
@inline function fqmul8(a: v128, z: v128, zp: v128): v128 {
  return i16x8.sub(i16x8.mul(a, z), i16x8.mul(i16x8.q15mulr_sat_s(a, zp), i16x8.splat(<i16>Q)));
}

// @ts-ignore: decorator
@inline function barrett8(a: v128): v128 {
  return i16x8.sub(a, i16x8.mul(i16x8.q15mulr_sat_s(a, i16x8.splat(<i16>BARRETT_V)), i16x8.splat(<i16>Q)));
}

/** Montgomery reduction of four i32 sums, left as r·2^16 (the low half is zero). */
// @ts-ignore: decorator
@inline function montHigh4(p: v128): v128 {
  const t = i32x4.shr_s(i32x4.mul(p, i32x4.splat(QINV << 16)), 16);
  return i32x4.sub(p, i32x4.mul(t, i32x4.splat(Q)));
}

// ---- NTT -----------------------------------------------------------------------------------------

/** In-place NTT (FIPS 203 Algorithm 9). In |x| ≤ q, out |x| ≤ 8q (each layer adds at most q). */
export function ntt(f: usize): void {
  if (ASC_FEATURE_SIMD) nttSimd(f);
  else nttScalar(f);
}

function nttScalar(f: usize): void {
  let k: usize = 1;
  for (let len: usize = 128; len >= 2; len >>= 1) {
    for (let start: usize = 0; start < 256; start += len << 1) {
      const z = <i32>load<i16>(ZETAS + (k << 1));
      const zp = <i32>load<i16>(ZETAS + P128 + (k << 1));
      k++;
      for (let j = start; j < start + len; j++) {
        const t = fqmul(get(f, j + len), z, zp);
        const a = get(f, j);
        set(f, j + len, a - t);
        set(f, j, a + t);
      }
    }
  }
}

function nttSimd(f: usize): void {
  // Layers len = 128 … 16 through memory, one zeta per block.
  let k: usize = 1;
  for (let len: usize = 128; len >= 16; len >>= 1) {
    for (let start: usize = 0; start < 256; start += len << 1) {
      const z = i16x8.splat(load<i16>(ZETAS + (k << 1)));
      const zp = i16x8.splat(load<i16>(ZETAS + P128 + (k << 1)));
      k++;
      for (let j = start; j < start + len; j += 8) {
        const pa = f + (j << 1);
        const pb = pa + (len << 1);
        const a = v128.load(pa);
        const t = fqmul8(v128.load(pb), z, zp);
        v128.store(pa, i16x8.add(a, t));
        v128.store(pb, i16x8.sub(a, t));
      }
    }
  }
  // Layers len = 8, 4, 2 in registers, per 16-coefficient chunk c (lane orders: see the generator).
  for (let c: usize = 0; c < 16; c++) {
    const p = f + (c << 5);
    const v0 = v128.load(p);
    const v1 = v128.load(p, 16);
    let t = fqmul8(v1, i16x8.splat(load<i16>(ZETAS + ((16 + c) << 1))), i16x8.splat(load<i16>(ZETAS + P128 + ((16 + c) << 1))));
    let a = i16x8.add(v0, t); // f0..f7
    let b = i16x8.sub(v0, t); // f8..f15
    const a4 = i64x2.shuffle(a, b, 0, 2); // f0..f3, f8..f11
    const b4 = i64x2.shuffle(a, b, 1, 3); // f4..f7, f12..f15
    t = fqmul8(b4, v128.load(NTT_L4 + (c << 4)), v128.load(NTT_L4 + P128 + (c << 4)));
    a = i16x8.add(a4, t);
    b = i16x8.sub(a4, t);
    const a2 = i32x4.shuffle(a, b, 0, 2, 4, 6); // f0 f1, f8 f9, f4 f5, f12 f13
    const b2 = i32x4.shuffle(a, b, 1, 3, 5, 7); // f2 f3, f10 f11, f6 f7, f14 f15
    t = fqmul8(b2, v128.load(NTT_L2 + (c << 4)), v128.load(NTT_L2 + P128 + (c << 4)));
    a = i16x8.add(a2, t);
    b = i16x8.sub(a2, t);
    const lo = i32x4.shuffle(a, b, 0, 4, 1, 5); // f0 f1, f2 f3, f8 f9, f10 f11
    const hi = i32x4.shuffle(a, b, 2, 6, 3, 7); // f4 f5, f6 f7, f12 f13, f14 f15
    v128.store(p, i64x2.shuffle(lo, hi, 0, 2));
    v128.store(p, i64x2.shuffle(lo, hi, 1, 3), 16);
  }
}

/**
 * In-place inverse NTT (FIPS 203 Algorithm 10) including the scaling by 128^−1 (folded into the
 * last layer). In |x| ≤ q, out |x| ≤ q.
 */
export function invNtt(f: usize): void {
  if (ASC_FEATURE_SIMD) invNttSimd(f);
  else invNttScalar(f);
}

function invNttScalar(f: usize): void {
  let k: usize = 127;
  for (let len: usize = 2; len <= 64; len <<= 1) {
    const reduce = len == 8 || len == 64; // sums reach 8q there
    for (let start: usize = 0; start < 256; start += len << 1) {
      const z = <i32>load<i16>(ZETAS + (k << 1));
      const zp = <i32>load<i16>(ZETAS + P128 + (k << 1));
      k--;
      for (let j = start; j < start + len; j++) {
        const a = get(f, j);
        const b = get(f, j + len);
        const s = a + b;
        set(f, j, reduce ? barrett(s) : s);
        set(f, j + len, fqmul(b - a, z, zp));
      }
    }
  }
  for (let j: usize = 0; j < 128; j++) {
    const a = get(f, j);
    const b = get(f, j + 128);
    set(f, j, fqmul(a + b, F_INV, F_INV_P));
    set(f, j + 128, fqmul(b - a, F_ZETA1, F_ZETA1_P));
  }
}

function invNttSimd(f: usize): void {
  // Layers len = 2, 4, 8 in registers, per 16-coefficient chunk c.
  for (let c: usize = 0; c < 16; c++) {
    const p = f + (c << 5);
    const v0 = v128.load(p);
    const v1 = v128.load(p, 16);
    const a2 = i32x4.shuffle(v0, v1, 0, 2, 4, 6); // f0 f1, f4 f5, f8 f9, f12 f13
    const b2 = i32x4.shuffle(v0, v1, 1, 3, 5, 7); // f2 f3, f6 f7, f10 f11, f14 f15
    let a = i16x8.add(a2, b2);
    let b = fqmul8(i16x8.sub(b2, a2), v128.load(INV_L2 + (c << 4)), v128.load(INV_L2 + P128 + (c << 4)));
    const lo = i32x4.shuffle(a, b, 0, 4, 1, 5); // f0..f7
    const hi = i32x4.shuffle(a, b, 2, 6, 3, 7); // f8..f15
    const a4 = i64x2.shuffle(lo, hi, 0, 2); // f0..f3, f8..f11
    const b4 = i64x2.shuffle(lo, hi, 1, 3); // f4..f7, f12..f15
    a = i16x8.add(a4, b4);
    b = fqmul8(i16x8.sub(b4, a4), v128.load(INV_L4 + (c << 4)), v128.load(INV_L4 + P128 + (c << 4)));
    const a8 = i64x2.shuffle(a, b, 0, 2); // f0..f7
    const b8 = i64x2.shuffle(a, b, 1, 3); // f8..f15
    const k: usize = 31 - c;
    v128.store(p, barrett8(i16x8.add(a8, b8)));
    v128.store(p, fqmul8(i16x8.sub(b8, a8), i16x8.splat(load<i16>(ZETAS + (k << 1))), i16x8.splat(load<i16>(ZETAS + P128 + (k << 1)))), 16);
  }
  // Layers len = 16, 32, 64 through memory (the len-64 sums are reduced).
  let k: usize = 15;
  for (let len: usize = 16; len <= 64; len <<= 1) {
    for (let start: usize = 0; start < 256; start += len << 1) {
      const z = i16x8.splat(load<i16>(ZETAS + (k << 1)));
      const zp = i16x8.splat(load<i16>(ZETAS + P128 + (k << 1)));
      k--;
      for (let j = start; j < start + len; j += 8) {
        const pa = f + (j << 1);
        const pb = pa + (len << 1);
        const a = v128.load(pa);
        const b = v128.load(pb);
        const s = i16x8.add(a, b);
        v128.store(pa, len == 64 ? barrett8(s) : s);
        v128.store(pb, fqmul8(i16x8.sub(b, a), z, zp));
      }
    }
  }
  const fz = i16x8.splat(<i16>F_INV);
  const fzp = i16x8.splat(<i16>F_INV_P);
  const gz = i16x8.splat(<i16>F_ZETA1);
  const gzp = i16x8.splat(<i16>F_ZETA1_P);
  for (let j: usize = 0; j < 256; j += 16) {
    const pa = f + j;
    const a = v128.load(pa);
    const b = v128.load(pa, 256);
    v128.store(pa, fqmul8(i16x8.add(a, b), fz, fzp));
    v128.store(pa, fqmul8(i16x8.sub(b, a), gz, gzp), 256);
  }
}

// ---- MultiplyNTTs (Algorithm 11) -------------------------------------------------------------------

/**
 * Writes the MultiplyNTTs caches of `count` polys at `v` (any i16 coefficients) to `cache`
 * (CACHE_BYTES each): per 8 coefficients (4 pairs b0, b1 with γ_i = ζ^(2·BitRev7(i)+1)),
 * B0 = (b0·R, b1·γ_i·R, …) and B1 = (b1·R, b0·R, …), all mod q within [−q, q].
 */
export function mulCache(cache: usize, v: usize, count: usize): void {
  if (ASC_FEATURE_SIMD) mulCacheSimd(cache, v, count);
  else mulCacheScalar(cache, v, count);
}

function mulCacheScalar(cache: usize, v: usize, count: usize): void {
  for (let n: usize = 0; n < count; n++) {
    const f = v + n * POLY_BYTES;
    const c = cache + n * CACHE_BYTES;
    for (let i: usize = 0; i < 256; i += 2) {
      const b0 = get(f, i), b1 = get(f, i + 1);
      const o = c + ((i >> 3) << 5) + ((i & 7) << 1);
      const g = BM_RG + ((i + 1) << 1);
      store<i16>(o, <i16>fqmul(b0, R_MONT, R_MONT_P));
      store<i16>(o, <i16>fqmul(b1, <i32>load<i16>(g), <i32>load<i16>(g, 2 * N)), 2);
      store<i16>(o, <i16>fqmul(b1, R_MONT, R_MONT_P), 16);
      store<i16>(o, <i16>fqmul(b0, R_MONT, R_MONT_P), 18);
    }
  }
}

function mulCacheSimd(cache: usize, v: usize, count: usize): void {
  const r = i16x8.splat(<i16>R_MONT);
  const rp = i16x8.splat(<i16>R_MONT_P);
  for (let n: usize = 0; n < count; n++) {
    const f = v + n * POLY_BYTES;
    const c = cache + n * CACHE_BYTES;
    for (let g: usize = 0; g < 32; g++) {
      const b = v128.load(f + (g << 4));
      const gz = BM_RG + (g << 4);
      const b0 = fqmul8(b, v128.load(gz), v128.load(gz, 2 * N));
      const br = fqmul8(b, r, rp);
      v128.store(c + (g << 5), b0);
      v128.store(c + (g << 5), i8x16.shuffle(br, br, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13), 16);
    }
  }
}

/**
 * r = Σ_{j<k} a_j ×_T b_j (MultiplyNTTs summed), the k polys a_j consecutive at `a` (|x| < q each:
 * [0, q) inputs or Montgomery outputs), b_j given by their caches at `cache`. Out |x| < q: the i32
 * sum of 2k products is below 8q^2 < 2^15·q, Montgomery's bound, for k ≤ 4. `r` may alias a_0.
 */
export function dotCache(r: usize, a: usize, cache: usize, k: usize): void {
  if (ASC_FEATURE_SIMD) dotCacheSimd(r, a, cache, k);
  else dotCacheScalar(r, a, cache, k);
}

function dotCacheScalar(r: usize, a: usize, cache: usize, k: usize): void {
  for (let i: usize = 0; i < 256; i += 2) {
    const o = ((i >> 3) << 5) + ((i & 7) << 1);
    let c0: i32 = 0, c1: i32 = 0;
    for (let j: usize = 0; j < k; j++) {
      const ap = a + j * POLY_BYTES + (i << 1);
      const a0 = <i32>load<i16>(ap), a1 = <i32>load<i16>(ap, 2);
      const cp = cache + j * CACHE_BYTES + o;
      c0 += a0 * <i32>load<i16>(cp) + a1 * <i32>load<i16>(cp, 2);
      c1 += a0 * <i32>load<i16>(cp, 16) + a1 * <i32>load<i16>(cp, 18);
    }
    set(r, i, montReduce(c0));
    set(r, i + 1, montReduce(c1));
  }
}

function dotCacheSimd(r: usize, a: usize, cache: usize, k: usize): void {
  for (let g: usize = 0; g < 32; g++) {
    let acc0 = i32x4.splat(0);
    let acc1 = i32x4.splat(0);
    for (let j: usize = 0; j < k; j++) {
      const x = v128.load(a + j * POLY_BYTES + (g << 4));
      const cp = cache + j * CACHE_BYTES + (g << 5);
      acc0 = i32x4.add(acc0, i32x4.dot_i16x8_s(x, v128.load(cp)));
      acc1 = i32x4.add(acc1, i32x4.dot_i16x8_s(x, v128.load(cp, 16)));
    }
    // Lane i: low half c0 of pair i, high half c1 (montHigh4 leaves r·2^16 with a zero low half).
    v128.store(r + (g << 4), v128.or(i32x4.shr_u(montHigh4(acc0), 16), montHigh4(acc1)));
  }
}

// ---- addition ------------------------------------------------------------------------------------

/** r = a + b (no reduction: the caller keeps the sum within i16). */
export function polyAdd(r: usize, a: usize, b: usize): void {
  if (ASC_FEATURE_SIMD) {
    for (let i: usize = 0; i < POLY_BYTES; i += 16) v128.store(r + i, i16x8.add(v128.load(a + i), v128.load(b + i)));
  } else {
    for (let i: usize = 0; i < 256; i++) set(r, i, get(a, i) + get(b, i));
  }
}

/** r = a − b (no reduction). */
export function polySub(r: usize, a: usize, b: usize): void {
  if (ASC_FEATURE_SIMD) {
    for (let i: usize = 0; i < POLY_BYTES; i += 16) v128.store(r + i, i16x8.sub(v128.load(a + i), v128.load(b + i)));
  } else {
    for (let i: usize = 0; i < 256; i++) set(r, i, get(a, i) - get(b, i));
  }
}

export function polyZero(r: usize): void {
  memory.fill(r, 0, POLY_BYTES);
}

// ---- encodings -----------------------------------------------------------------------------------

/** ByteEncode_12 (Algorithm 5, d = 12) of the [0, q) representatives of any i16 coefficients: 384 bytes. */
export function encode12(out: usize, f: usize): void {
  for (let i: usize = 0; i < 128; i++) {
    const a = <u32>canon(get(f, 2 * i)), b = <u32>canon(get(f, 2 * i + 1));
    store<u8>(out + 3 * i, <u8>a);
    store<u8>(out + 3 * i + 1, <u8>((a >> 8) | (b << 4)));
    store<u8>(out + 3 * i + 2, <u8>(b >> 4));
  }
}

/**
 * ByteDecode_12 (Algorithm 6, d = 12) reduced mod q as the standard requires for decoding; returns
 * 1 when every decoded value was already < q (the §7.2 modulus check), else 0, without branching.
 * Four coefficients per six bytes (one u32 and one u16 load).
 */
export function decode12(f: usize, src: usize): i32 {
  let bad: i32 = 0;
  for (let i: usize = 0; i < 64; i++) {
    const w = <u64>load<u32>(src + 6 * i) | (<u64>load<u16>(src + 6 * i + 4) << 32);
    const a = <i32>w & 0xfff;
    const b = <i32>(w >> 12) & 0xfff;
    const c = <i32>(w >> 24) & 0xfff;
    const d = <i32>(w >> 36) & 0xfff;
    bad |= ((Q - 1 - a) | (Q - 1 - b) | (Q - 1 - c) | (Q - 1 - d)) >> 31; // −1 when one is ≥ q
    const o = f + (i << 3);
    store<i16>(o, <i16>csubq(a));
    store<i16>(o, <i16>csubq(b), 2);
    store<i16>(o, <i16>csubq(c), 4);
    store<i16>(o, <i16>csubq(d), 6);
  }
  return (bad & 1) ^ 1;
}

/** Compress_d(x) = round(2^d · x / q) mod 2^d = ⌊(x·2^d + ⌊q/2⌋) / q⌋ mod 2^d, x any i16. */
// @ts-ignore: decorator
@inline function compress(x: i32, d: u32): u64 {
  return <u64>(divq((<u32>canon(x) << d) + 1664) & ((1 << d) - 1));
}

/**
 * Compress_d then ByteEncode_d (d = 1, 5, 11) of any i16 coefficients (reduced to [0, q) first):
 * 32·d bytes, little-endian bit order. Eight coefficients make d whole bytes, packed in registers
 * (measured: the bit-accumulator loop with a data-length `while` took ~9% of decapsulation).
 */
export function compressEncode(out: usize, f: usize, d: u32): void {
  let o = out;
  for (let i: usize = 0; i < 256; i += 8) {
    const p = f + (i << 1);
    const c0 = compress(load<i16>(p), d), c1 = compress(load<i16>(p, 2), d);
    const c2 = compress(load<i16>(p, 4), d), c3 = compress(load<i16>(p, 6), d);
    const c4 = compress(load<i16>(p, 8), d), c5 = compress(load<i16>(p, 10), d);
    const c6 = compress(load<i16>(p, 12), d), c7 = compress(load<i16>(p, 14), d);
    if (d == 11) {
      store<u64>(o, c0 | (c1 << 11) | (c2 << 22) | (c3 << 33) | (c4 << 44) | (c5 << 55));
      const hi = (c5 >> 9) | (c6 << 2) | (c7 << 13); // 24 bits
      store<u16>(o, <u16>hi, 8);
      store<u8>(o, <u8>(hi >> 16), 10);
    } else if (d == 5) {
      const w = c0 | (c1 << 5) | (c2 << 10) | (c3 << 15) | (c4 << 20) | (c5 << 25) | (c6 << 30) | (c7 << 35);
      store<u32>(o, <u32>w);
      store<u8>(o, <u8>(w >> 32), 4);
    } else {
      store<u8>(o, <u8>(c0 | (c1 << 1) | (c2 << 2) | (c3 << 3) | (c4 << 4) | (c5 << 5) | (c6 << 6) | (c7 << 7)));
    }
    o += d;
  }
}

/** Decompress_d(y) = round(q · y / 2^d). */
// @ts-ignore: decorator
@inline function decompress(y: u64, d: u32): i16 {
  return <i16>((<u32>y * <u32>Q + (1 << (d - 1))) >> d);
}

/**
 * ByteDecode_d then Decompress_d (d = 1, 5, 11): round(q · y / 2^d), in [0, q]. Eight coefficients
 * from d bytes per step, read with loads that stay inside those bytes.
 */
export function decodeDecompress(f: usize, src: usize, d: u32): void {
  let s = src;
  const mask: u64 = (<u64>1 << d) - 1;
  for (let i: usize = 0; i < 256; i += 8) {
    let lo: u64, hi: u64; // coefficients 0–4 from lo, 5–7 from hi
    if (d == 11) {
      lo = load<u64>(s); // bits 0..63
      hi = load<u64>(s, 3) >> 31; // bits 24..87, shifted so coefficient 5 (bit 55) is at bit 0
    } else if (d == 5) {
      lo = <u64>load<u32>(s) | (<u64>load<u8>(s, 4) << 32);
      hi = lo >> 25;
    } else {
      lo = <u64>load<u8>(s);
      hi = lo >> 5;
    }
    const p = f + (i << 1);
    store<i16>(p, decompress(lo & mask, d));
    store<i16>(p, decompress((lo >> d) & mask, d), 2);
    store<i16>(p, decompress((lo >> (2 * d)) & mask, d), 4);
    store<i16>(p, decompress((lo >> (3 * d)) & mask, d), 6);
    store<i16>(p, decompress((lo >> (4 * d)) & mask, d), 8);
    store<i16>(p, decompress(hi & mask, d), 10);
    store<i16>(p, decompress((hi >> d) & mask, d), 12);
    store<i16>(p, decompress((hi >> (2 * d)) & mask, d), 14);
    s += d;
  }
}

/**
 * SamplePolyCBD_η for η = 2 (Algorithm 8) from 128 bytes: f_i = (b0 + b1) − (b2 + b3) over each
 * nibble's bits, in [−2, 2].
 */
export function cbd2(f: usize, src: usize): void {
  for (let i: usize = 0; i < 32; i++) {
    const t = load<u32>(src + 4 * i);
    // Sum adjacent bit pairs: each 2-bit field holds b_{2j} + b_{2j+1}.
    const d = (t & 0x55555555) + ((t >> 1) & 0x55555555);
    for (let j: usize = 0; j < 8; j++) {
      const x = <i32>((d >> (4 * <u32>j)) & 3);
      const y = <i32>((d >> (4 * <u32>j + 2)) & 3);
      set(f, 8 * i + j, x - y);
    }
  }
}

/**
 * SampleNTT's rejection step (Algorithm 7) over `len` bytes of XOF output at `buf`, filling `f`
 * from coefficient `have`; returns the new count (≤ 256). Runs on public data (ρ) only. While at
 * least four slots are free, six bytes (four candidates, one u64 load) are handled without branches:
 * each candidate is stored at f[have] and `have` advances when it is < q. Measured: the branchy
 * byte loop took ~10% of decapsulation (a mispredicted branch for about one candidate in five).
 */
export function rejectUniform(f: usize, have: usize, buf: usize, len: usize): usize {
  let p: usize = 0;
  // The u64 load reads two bytes past the six used: p + 8 ≤ len keeps it inside the block.
  while (have <= 252 && p + 8 <= len) {
    const w = load<u64>(buf + p);
    const d0 = <u32>w & 0xfff;
    const d1 = <u32>(w >> 12) & 0xfff;
    const d2 = <u32>(w >> 24) & 0xfff;
    const d3 = <u32>(w >> 36) & 0xfff;
    store<u16>(f + (have << 1), <u16>d0);
    have += <usize>(d0 < <u32>Q);
    store<u16>(f + (have << 1), <u16>d1);
    have += <usize>(d1 < <u32>Q);
    store<u16>(f + (have << 1), <u16>d2);
    have += <usize>(d2 < <u32>Q);
    store<u16>(f + (have << 1), <u16>d3);
    have += <usize>(d3 < <u32>Q);
    p += 6;
  }
  for (; p + 3 <= len && have < 256; p += 3) {
    const c0 = <i32>load<u8>(buf + p), c1 = <i32>load<u8>(buf + p + 1), c2 = <i32>load<u8>(buf + p + 2);
    const d1 = c0 | ((c1 & 15) << 8);
    const d2 = (c1 >> 4) | (c2 << 4);
    if (d1 < Q) set(f, have++, d1);
    if (d2 < Q && have < 256) set(f, have++, d2);
  }
  return have;
}
