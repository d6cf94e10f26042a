// POLYVAL (RFC 8452 §3) and GHASH (NIST SP 800-38D §6.3–6.4) over GF(2^128), constant time.
//
// WebAssembly has no carry-less multiply, so products are computed with ordinary integer
// multiplication "with holes": an operand is split into four interleaved bit groups (every 4th bit,
// masks 0x1111…, 0x2222…, 0x4444…, 0x8888…). Multiplying two such groups sums, in each result column,
// only bits of one residue class mod 4, and each column sum is small enough that its carries stay in
// the three "hole" bits above it; so after XOR-combining the 16 group products and masking each class,
// the kept bits are exactly the carry-less product. `i64.mul` yields only the low 64 bits of a
// product; the high 64 bits of a 64×64 carry-less product are obtained from the low bits of the
// product of the bit-reversed operands (rev(a)·rev(b) = rev(a·b) over 127 bits). One 128×128 product
// is three 64×64 products (Karatsuba), i.e. six "low half" products of 16 multiplications each.
// The 256-bit product is reduced Montgomery-style, which is exactly POLYVAL's dot(a, b) = a·b·x^-128
// modulo x^128 + x^127 + x^126 + x^121 + 1 (RFC 8452 §3).
//
// GHASH uses the relation of RFC 8452 Appendix A:
//   GHASH(H, X_1..X_n) = ByteReverse(POLYVAL(mulX_POLYVAL(ByteReverse(H)), ByteReverse(X_1), …)),
// so both share one kernel; the byte reversals cost one shuffle per block in the SIMD build.
//
// Constant time: only multiplications, shifts and bitwise operations on secret data; no secret-
// dependent branch or memory index (the SIMD nibble tables are used through i8x16.swizzle, a
// register shuffle, not a memory load). Running time depends only on the number of blocks. Caveats:
// this assumes the engine lowers i64.mul / i64x2.mul to multiplications whose latency does not
// depend on operand values — true on current x86-64 and AArch64 cores, not on some old or
// embedded CPUs (e.g. early ARM cores with early-terminating multipliers); and a JIT could in
// principle introduce data-dependent timing (see docs/kernels.md).
//
// Memory: static only. Key material and the accumulator live in POLY_SCRATCH[0, POLY_USED_BYTES);
// wipePoly() zeroes it. State persists between init/update/final calls by design (streaming); the
// caller wipes when done. POLYVAL and GHASH share that one state: one computation at a time.
// Pointers are trusted (no bounds checks; nothing here throws or traps for in-range pointers).
//
// Speed choices, measured with Node 20.20 (TurboFan) on x86-64 (AMD EPYC with AVX-512, shared
// 2-core host), medians of interleaved runs in one process, per 16-byte block:
// - Per block there are six 64×64 "low half" products of 16 multiplications: a0·h0, a1·h1, a2·h2
//   (Karatsuba, a2 = a0 ^ a1) and the same of the bit-reversed words. Scalar build: all six with
//   i64.mul, ~48 ns/block. SIMD build: V8 lowers i64x2.mul to 3 vpmuludq + 5 other instructions
//   (no vpmullq), so one vector-lane product costs more than one scalar imul: doing all six in
//   i64x2 lanes (three two-lane products) took 57 ns/block, four in lanes 50 ns, two in lanes (the
//   reversed a0·h0, a1·h1) with the other four on the integer units 38.5 ns. The integer and vector
//   units then work in parallel; the bit reversals in the SIMD build are byte shuffles plus a nibble
//   table applied with i8x16.swizzle (about ten instructions per two words; scalar rev64 is 26 per
//   word).
// - No key powers / aggregated reduction: the loop is throughput-bound, not latency-bound
//   (removing the S → S dependency entirely only gained 5%), the reduction is 16 of several hundred
//   instructions per block, and every power of H would add a field multiplication to init — the
//   POLYVAL key changes for every GCM-SIV record. Init is ~17 ns (key table of 24 words).
// - GHASH through the Appendix A relation runs at POLYVAL's speed within noise (one byte shuffle
//   per block in the SIMD build, two bswap in the scalar build).
// - Tried without gain: accumulating z_c ^= x_i·y_j group by group in bmul64 (fewer live values);
//   reordering the vector product after the scalar ones.

import { POLY_SCRATCH } from '../common/layout';

/** Accumulator S as two little-endian u64 words (lo = coefficients of x^0..x^63). */
const ACC: usize = POLY_SCRATCH;
/**
 * Key table, 192 bytes: with h0, h1 the words of H, h2 = h0 ^ h1 and r_i = rev64(h_i), for each bit
 * group j (0..3) the pairs (two u64 at +0 and +8)
 *   KEY +       16·j: [r0 & M_j, r1 & M_j]   (one v128 for the two-lane product in the SIMD build)
 *   KEY +  64 + 16·j: [h0 & M_j, h1 & M_j]
 *   KEY + 128 + 16·j: [h2 & M_j, r2 & M_j]
 * bmul64 reads one column of a block (stride 16), bmul64x2 reads whole pairs.
 */
const KEY: usize = POLY_SCRATCH + 64;
/** Bytes of POLY_SCRATCH this module uses (accumulator, padding, key table). */
export const POLY_USED_BYTES: usize = 256;

const M0: u64 = 0x1111111111111111;
const M1: u64 = 0x2222222222222222;
const M2: u64 = 0x4444444444444444;
const M3: u64 = 0x8888888888888888;

/** Reverses the 64 bits of `x` (masks and shifts only: no data-dependent timing). */
// @ts-ignore: decorator
@inline function rev64(x: u64): u64 {
  x = ((x >> 1) & 0x5555555555555555) | ((x & 0x5555555555555555) << 1);
  x = ((x >> 2) & 0x3333333333333333) | ((x & 0x3333333333333333) << 2);
  x = ((x >> 4) & 0x0f0f0f0f0f0f0f0f) | ((x & 0x0f0f0f0f0f0f0f0f) << 4);
  return bswap<u64>(x);
}

/**
 * Low 64 bits of the carry-less product x·y, where `k` points at y's four bit groups
 * (y & M_j at k + 16·j). Invariant making the holes sufficient: a column of x_i·y_j below bit 60
 * sums at most 15 one-bit products, so it fits in 4 bits and never reaches the next column of its
 * class; columns 60..63 may sum 16, whose carry lands at bit ≥ 64 and is discarded by i64.mul.
 */
// @ts-ignore: decorator
@inline function bmul64(x: u64, k: usize): u64 {
  const x0 = x & M0, x1 = x & M1, x2 = x & M2, x3 = x & M3;
  const y0 = load<u64>(k, 0), y1 = load<u64>(k, 16), y2 = load<u64>(k, 32), y3 = load<u64>(k, 48);
  const z0 = (x0 * y0) ^ (x1 * y3) ^ (x2 * y2) ^ (x3 * y1);
  const z1 = (x0 * y1) ^ (x1 * y0) ^ (x2 * y3) ^ (x3 * y2);
  const z2 = (x0 * y2) ^ (x1 * y1) ^ (x2 * y0) ^ (x3 * y3);
  const z3 = (x0 * y3) ^ (x1 * y2) ^ (x2 * y1) ^ (x3 * y0);
  return (z0 & M0) | (z1 & M1) | (z2 & M2) | (z3 & M3);
}

/** SIMD: bmul64 in both i64x2 lanes at once, lane l of `x` against lane l of the table at `k`. */
// @ts-ignore: decorator
@inline function bmul64x2(x: v128, k: usize): v128 {
  const m0 = i64x2.splat(M0), m1 = i64x2.splat(M1), m2 = i64x2.splat(M2), m3 = i64x2.splat(M3);
  const x0 = v128.and(x, m0), x1 = v128.and(x, m1), x2 = v128.and(x, m2), x3 = v128.and(x, m3);
  const y0 = v128.load(k, 0), y1 = v128.load(k, 16), y2 = v128.load(k, 32), y3 = v128.load(k, 48);
  const z0 = v128.xor(v128.xor(i64x2.mul(x0, y0), i64x2.mul(x1, y3)), v128.xor(i64x2.mul(x2, y2), i64x2.mul(x3, y1)));
  const z1 = v128.xor(v128.xor(i64x2.mul(x0, y1), i64x2.mul(x1, y0)), v128.xor(i64x2.mul(x2, y3), i64x2.mul(x3, y2)));
  const z2 = v128.xor(v128.xor(i64x2.mul(x0, y2), i64x2.mul(x1, y1)), v128.xor(i64x2.mul(x2, y0), i64x2.mul(x3, y3)));
  const z3 = v128.xor(v128.xor(i64x2.mul(x0, y3), i64x2.mul(x1, y2)), v128.xor(i64x2.mul(x2, y1), i64x2.mul(x3, y0)));
  return v128.or(v128.or(v128.and(z0, m0), v128.and(z1, m1)), v128.or(v128.and(z2, m2), v128.and(z3, m3)));
}

/**
 * SIMD: reverses the bits inside each byte (two 16-entry nibble tables applied with i8x16.swizzle;
 * indices are always < 16, so swizzle never takes its out-of-range path).
 */
// @ts-ignore: decorator
@inline function revBitsInBytes(x: v128): v128 {
  const lo = v128.and(x, i8x16.splat(0x0f));
  const hi = i8x16.shr_u(x, 4);
  // REV_HI[n] = bitrev4(n) << 4, REV_LO[n] = bitrev4(n).
  const REV_HI = i8x16(0x00, <i8>0x80, 0x40, <i8>0xc0, 0x20, <i8>0xa0, 0x60, <i8>0xe0, 0x10, <i8>0x90, 0x50, <i8>0xd0, 0x30, <i8>0xb0, 0x70, <i8>0xf0);
  const REV_LO = i8x16(0x0, 0x8, 0x4, 0xc, 0x2, 0xa, 0x6, 0xe, 0x1, 0x9, 0x5, 0xd, 0x3, 0xb, 0x7, 0xf);
  return v128.or(i8x16.swizzle(REV_HI, lo), i8x16.swizzle(REV_LO, hi));
}

/**
 * Stores the key table for POLYVAL key (h0, h1) (little-endian words) and zeroes the accumulator.
 */
// @ts-ignore: decorator
@inline function setKey(h0: u64, h1: u64): void {
  const h2 = h0 ^ h1;
  const r0 = rev64(h0), r1 = rev64(h1), r2 = r0 ^ r1;
  store<u64>(KEY, r0 & M0, 0); store<u64>(KEY, r1 & M0, 8);
  store<u64>(KEY, r0 & M1, 16); store<u64>(KEY, r1 & M1, 24);
  store<u64>(KEY, r0 & M2, 32); store<u64>(KEY, r1 & M2, 40);
  store<u64>(KEY, r0 & M3, 48); store<u64>(KEY, r1 & M3, 56);
  store<u64>(KEY, h0 & M0, 64); store<u64>(KEY, h1 & M0, 72);
  store<u64>(KEY, h0 & M1, 80); store<u64>(KEY, h1 & M1, 88);
  store<u64>(KEY, h0 & M2, 96); store<u64>(KEY, h1 & M2, 104);
  store<u64>(KEY, h0 & M3, 112); store<u64>(KEY, h1 & M3, 120);
  store<u64>(KEY, h2 & M0, 128); store<u64>(KEY, r2 & M0, 136);
  store<u64>(KEY, h2 & M1, 144); store<u64>(KEY, r2 & M1, 152);
  store<u64>(KEY, h2 & M2, 160); store<u64>(KEY, r2 & M2, 168);
  store<u64>(KEY, h2 & M3, 176); store<u64>(KEY, r2 & M3, 184);
  store<u64>(ACC, 0, 0);
  store<u64>(ACC, 0, 8);
}

/**
 * S = (S ⊕ X_i) · H · x^-128 for `nblocks` blocks at `src`. With `ghash` (a compile-time constant
 * after inlining) each block is byte-reversed first (RFC 8452 Appendix A).
 */
// @ts-ignore: decorator
@inline function blocks(src: usize, nblocks: usize, ghash: bool): void {
  let s0 = load<u64>(ACC, 0), s1 = load<u64>(ACC, 8);
  const end = src + (nblocks << 4);
  for (; src < end; src += 16) {
    let c0: u64, c1: u64, c2: u64, c3: u64;
    if (ASC_FEATURE_SIMD) {
      let x = v128.load(src);
      if (ghash) x = i8x16.shuffle(x, x, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
      x = v128.xor(x, i64x2.replace_lane(i64x2.splat(s0), 1, s1));
      const a0 = i64x2.extract_lane(x, 0), a1 = i64x2.extract_lane(x, 1);
      // rev64 per lane = bit reversal inside bytes, then byte reversal inside the lane (a shuffle).
      const b = revBitsInBytes(x);
      const xr = i8x16.shuffle(b, b, 7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8); // [rev a0, rev a1]
      // On the vector units, zr = [low64(rev a0 · rev h0), low64(rev a1 · rev h1)] (reversed high halves)…
      const zr = bmul64x2(xr, KEY);
      // … while the integer units do the other four (see the header for the measured split).
      const lo0 = bmul64(a0, KEY + 64), lo1 = bmul64(a1, KEY + 72), lo2 = bmul64(a0 ^ a1, KEY + 128) ^ lo0 ^ lo1;
      const mr = bmul64(i64x2.extract_lane(xr, 0) ^ i64x2.extract_lane(xr, 1), KEY + 136);
      // Karatsuba middle term of the reversed halves: mr ^ zr.lane0 ^ zr.lane1, in both lanes.
      const mm = v128.xor(v128.xor(zr, i8x16.shuffle(zr, zr, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7)), i64x2.splat(mr));
      // Undo the reversal: rev64(low64(rev a · rev h)) = bits 63..126 of a·h, hence the >> 1.
      const rh = i64x2.shr_u(revBitsInBytes(i8x16.shuffle(zr, zr, 7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8)), 1);
      const rm = i64x2.shr_u(revBitsInBytes(i8x16.shuffle(mm, mm, 7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8)), 1);
      // 256-bit product c3:c2:c1:c0 = lo + mid·x^64 + hi·x^128.
      c0 = lo0;
      c1 = i64x2.extract_lane(rh, 0) ^ lo2;
      c2 = lo1 ^ i64x2.extract_lane(rm, 0);
      c3 = i64x2.extract_lane(rh, 1);
    } else {
      let a0: u64, a1: u64;
      if (ghash) {
        a0 = s0 ^ bswap<u64>(load<u64>(src, 8));
        a1 = s1 ^ bswap<u64>(load<u64>(src, 0));
      } else {
        a0 = s0 ^ load<u64>(src, 0);
        a1 = s1 ^ load<u64>(src, 8);
      }
      // Low halves from the words, high halves from their bit reversals (rev64(low64(rev a · rev h))
      // = bits 63..126 of a·h, hence the >> 1); Karatsuba middle terms corrected by lo0 ^ lo1.
      const a2 = a0 ^ a1;
      const r0 = rev64(a0), r1 = rev64(a1), r2 = r0 ^ r1;
      const lo0 = bmul64(a0, KEY + 64), lo1 = bmul64(a1, KEY + 72), lo2 = bmul64(a2, KEY + 128) ^ lo0 ^ lo1;
      const hr0 = bmul64(r0, KEY), hr1 = bmul64(r1, KEY + 8), hr2 = bmul64(r2, KEY + 136) ^ hr0 ^ hr1;
      c0 = lo0;
      c1 = (rev64(hr0) >> 1) ^ lo2;
      c2 = lo1 ^ (rev64(hr2) >> 1);
      c3 = rev64(hr1) >> 1;
    }
    // Montgomery reduction by x^128 modulo P = x^128 + x^127 + x^126 + x^121 + 1: add c0·P, then
    // c1·x^64·P, which clears words 0 and 1 (P ≡ 1 mod x^64); the result is words 2, 3.
    c1 ^= (c0 << 63) ^ (c0 << 62) ^ (c0 << 57);
    c2 ^= c0 ^ (c0 >> 1) ^ (c0 >> 2) ^ (c0 >> 7);
    c2 ^= (c1 << 63) ^ (c1 << 62) ^ (c1 << 57);
    c3 ^= c1 ^ (c1 >> 1) ^ (c1 >> 2) ^ (c1 >> 7);
    s0 = c2;
    s1 = c3;
  }
  store<u64>(ACC, s0, 0);
  store<u64>(ACC, s1, 8);
}

/**
 * Starts POLYVAL with the 16-byte key H at `h` (RFC 8452 §3 byte order: a little-endian field
 * element): writes the key table to POLY_SCRATCH and sets S = 0. Reads `h` only; ~17 ns.
 * @throws nothing (pointers are trusted; the facade checks lengths).
 * @example polyvalInit(IN); polyvalUpdate(IN + 16, n); polyvalFinal(OUT); wipePoly();
 */
export function polyvalInit(h: usize): void {
  setKey(load<u64>(h, 0), load<u64>(h, 8));
}

/**
 * S = (S ⊕ X_i) · H · x^-128 for each of the `nblocks` 16-byte blocks X_i at `src` (RFC 8452 §3),
 * i.e. POLYVAL(H, X_1, …) continued across calls. Only whole blocks: the caller zero-pads a
 * partial one. `src` needs no alignment. Mutates the accumulator in POLY_SCRATCH only.
 * @throws nothing.
 * @example polyvalUpdate(aadPtr, aadBlocks); polyvalUpdate(msgPtr, msgBlocks); polyvalUpdate(lenBlock, 1);
 */
export function polyvalUpdate(src: usize, nblocks: usize): void {
  blocks(src, nblocks, false);
}

/**
 * Writes the 16-byte POLYVAL value S to `out` (mutates out[0, 16)). Does not wipe the key table:
 * call wipePoly() when done.
 * @throws nothing.
 * @example polyvalFinal(OUT); wipePoly();
 */
export function polyvalFinal(out: usize): void {
  store<u64>(out, load<u64>(ACC, 0), 0);
  store<u64>(out, load<u64>(ACC, 8), 8);
}

/**
 * Starts GHASH (SP 800-38D §6.4) with the 16-byte hash subkey H = E_K(0^128) at `h` (GCM's byte
 * and bit order). Internally POLYVAL with key mulX_POLYVAL(ByteReverse(H)) (RFC 8452 App. A).
 * Reads `h` only; sets Y = 0.
 * @throws nothing.
 * @example ghashInit(hPtr); ghashUpdate(aadAndCiphertextAndLengths, n); ghashFinal(OUT); wipePoly();
 */
export function ghashInit(h: usize): void {
  let g0 = bswap<u64>(load<u64>(h, 8)), g1 = bswap<u64>(load<u64>(h, 0));
  // mulX_POLYVAL: multiply by x; if x^128 appears, add P - x^128 = x^127 + x^126 + x^121 + 1.
  const mask = 0 - (g1 >> 63); // all ones iff the top bit is set (no branch)
  g1 = (g1 << 1) | (g0 >> 63);
  g0 = (g0 << 1) ^ (mask & 1);
  g1 ^= mask & 0xc200000000000000;
  setKey(g0, g1);
}

/**
 * Y = (Y ⊕ X_i) · H for each of the `nblocks` 16-byte blocks X_i at `src` (SP 800-38D §6.4 step 3),
 * continued across calls. The caller zero-pads A and C to whole blocks and appends
 * [len(A)]_64 ‖ [len(C)]_64 itself. `src` needs no alignment.
 * @throws nothing.
 * @example ghashUpdate(aadPtr, aadBlocks); ghashUpdate(ctPtr, ctBlocks); ghashUpdate(lenBlock, 1);
 */
export function ghashUpdate(src: usize, nblocks: usize): void {
  blocks(src, nblocks, true);
}

/**
 * Writes the 16-byte GHASH value Y to `out` (mutates out[0, 16)). Does not wipe: call wipePoly().
 * @throws nothing.
 * @example ghashFinal(OUT); // tag = E_K(J0) ⊕ OUT
 */
export function ghashFinal(out: usize): void {
  store<u64>(out, bswap<u64>(load<u64>(ACC, 8)), 0);
  store<u64>(out, bswap<u64>(load<u64>(ACC, 0)), 8);
}

/**
 * Zeroes POLY_SCRATCH[0, POLY_USED_BYTES): the key table and the accumulator.
 * @throws nothing.
 * @example wipePoly();
 */
export function wipePoly(): void {
  memory.fill(POLY_SCRATCH, 0, POLY_USED_BYTES);
}
