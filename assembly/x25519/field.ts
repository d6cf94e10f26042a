// Arithmetic in GF(p), p = 2^255 − 19, for the X25519 kernel (RFC 7748 §5).
//
// A field element is 10 signed limbs in i64 (80 bytes of linear memory), radix 2^25.5: limb i
// holds bits [POS_i, POS_i + W_i) with POS = 0, 26, 51, 77, 102, 128, 153, 179, 204, 230 and
// widths W alternating 26, 25. The value is Σ f_i·2^POS_i; limbs may be negative and the value need
// not be reduced below p, except in `feToBytes`, which produces the canonical encoding.
//
// Bounds (the invariant every function keeps). A *carried* element, as `carry` leaves it, has
// |f_i| ≤ 2^25 + 2^17 for every limb (even limbs |f_i| ≤ 2^25, odd limbs ≤ 2^24, except limb 1,
// which takes the last carry out of limb 0 and stays below 2^24 + 2^17). `feAdd`/`feSub` of two
// carried elements give limbs ≤ 2^26.01, which is the largest input `feMul` accepts. In `feMul`
// each of the 10 terms of an output limb is f_i·g_j·c with c ≤ 2·19 = 38, so
//   |h_k| ≤ 10 · 38 · (2^26.01)^2 < 2^8.58 · 2^52.02 = 2^60.6 < 2^63:
// no i64 overflows. `feMulSmall` multiplies a limb of at most 2^26.01 by a constant below 2^17 (2^43)
// and carries. `carry` accepts any limbs below 2^62 in magnitude (each carry is ≤ 2^62 / 2^25 = 2^37,
// and 19 times the last one, ≤ 2^42, fits easily into limb 0).
//
// Constant time: every loop bound, memory index and branch depends only on limb indices, never on
// limb values. Shifts of negative i64 are arithmetic (floor division), which the carries rely on.

/** Bytes of one field element (10 × i64). */
export const FE_BYTES: usize = 80;

/** Width in bits of limb i: 26 for even i, 25 for odd i. */
// @ts-ignore: decorator
@inline
function width(i: usize): i64 {
  return 26 - <i64>(i & 1);
}

/** Bit position of limb i: ⌈25.5·i⌉. */
// @ts-ignore: decorator
@inline
function position(i: usize): usize {
  return (51 * i + 1) >> 1;
}

// @ts-ignore: decorator
@inline
function limb(f: usize, i: usize): i64 {
  return load<i64>(f + (i << 3));
}

// @ts-ignore: decorator
@inline
function setLimb(f: usize, i: usize, v: i64): void {
  store<i64>(f + (i << 3), v);
}

/** h = 0. */
export function feZero(h: usize): void {
  memory.fill(h, 0, FE_BYTES);
}

/** h = 1. */
export function feOne(h: usize): void {
  memory.fill(h, 0, FE_BYTES);
  setLimb(h, 0, 1);
}

/** h = f (h may equal f). */
export function feCopy(h: usize, f: usize): void {
  memory.copy(h, f, FE_BYTES);
}

/** h = f + g, limb by limb (no carry: see the bounds above). h may alias f or g. */
export function feAdd(h: usize, f: usize, g: usize): void {
  for (let i: usize = 0; i < 10; i++) setLimb(h, i, limb(f, i) + limb(g, i));
}

/** h = f − g, limb by limb (no carry). h may alias f or g. */
export function feSub(h: usize, f: usize, g: usize): void {
  for (let i: usize = 0; i < 10; i++) setLimb(h, i, limb(f, i) - limb(g, i));
}

/**
 * Carries h in place so that every limb is within its width, rounding to the nearest (a limb of
 * width w ends in [−2^(w−1), 2^(w−1)]). The carry out of limb 9 has weight 2^255 ≡ 19, so it
 * re-enters limb 0 multiplied by 19; one more carry from limb 0 into limb 1 settles it.
 */
export function carry(h: usize): void {
  let c: i64 = 0;
  for (let i: usize = 0; i < 10; i += 2) {
    const v0 = limb(h, i) + c; // even limb: 26 bits
    c = (v0 + (<i64>1 << 25)) >> 26;
    setLimb(h, i, v0 - (c << 26));
    const v1 = limb(h, i + 1) + c; // odd limb: 25 bits
    c = (v1 + (<i64>1 << 24)) >> 25;
    setLimb(h, i + 1, v1 - (c << 25));
  }
  const v = limb(h, 0) + 19 * c;
  c = (v + (<i64>1 << 25)) >> 26;
  setLimb(h, 0, v - (c << 26));
  setLimb(h, 1, limb(h, 1) + c);
}

/** Bytes of working space `feMul` and `feSquare` need. */
export const PROD_BYTES: usize = 4 * 80;

/**
 * Folds the double-width product in `t` (limbs 0–18) into h and carries: limb 10 + k has weight
 * 2^(POS_k + 255) ≡ 19 · 2^POS_k, so it re-enters limb k multiplied by 19.
 */
function fold(h: usize, t: usize): void {
  for (let k: usize = 0; k < 9; k++) setLimb(h, k, limb(t, k) + 19 * limb(t, k + 10));
  setLimb(h, 9, limb(t, 9));
  carry(h);
}

/**
 * h = f·g mod p, carried. h may alias f or g (the inputs are copied to `t` first, PROD_BYTES).
 *
 * Schoolbook product by columns: limb k of the result gathers f_i·g_j for i + j ≡ k (mod 10).
 * f_i·g_j has weight 2^(POS_i + POS_j), which is 2^POS_(i+j) except when both i and j are odd:
 * then POS_i + POS_j = POS_(i+j) + 1 (two half bits) and the term counts twice; both are odd only
 * when i is odd and k even, so even columns read f with its odd limbs doubled (`fd`). A term with
 * i + j ≥ 10 has weight 2^255 · 2^POS_(i+j−10) ≡ 19 · 2^POS_(i+j−10) and reads g scaled by 19 (`g19`).
 * Bound: a column holds 10 terms, each at most 38·|f_i|·|g_j| ≤ 2^57.3, under 2^60.6 (file header).
 */
export function feMul(h: usize, f: usize, g: usize, t: usize): void {
  const fd = t; // f_i · (i odd ? 2 : 1)
  const fs = t + FE_BYTES; // f_i
  const g0 = t + 2 * FE_BYTES; // g_j
  const g19 = t + 3 * FE_BYTES; // 19 · g_j
  for (let i: usize = 0; i < 10; i++) {
    const fi = limb(f, i);
    const gi = limb(g, i);
    setLimb(fs, i, fi);
    setLimb(fd, i, fi << (<i64>(i & 1)));
    setLimb(g0, i, gi);
    setLimb(g19, i, 19 * gi);
  }
  for (let k: usize = 0; k < 10; k++) {
    const ff = k & 1 ? fs : fd;
    let acc: i64 = 0;
    for (let i: usize = 0; i <= k; i++) acc += limb(ff, i) * limb(g0, k - i);
    for (let i = k + 1; i < 10; i++) acc += limb(ff, i) * limb(g19, k + 10 - i);
    setLimb(h, k, acc);
  }
  carry(h);
}

/**
 * h = f², carried (h may alias f): feMul's columns with each f_i·f_j (i ≠ j) taken once and doubled,
 * and the squares f_i² (even columns only) once: 55 products instead of 100.
 */
export function feSquare(h: usize, f: usize, t: usize): void {
  const fd = t;
  const fs = t + FE_BYTES;
  const g19 = t + 3 * FE_BYTES;
  for (let i: usize = 0; i < 10; i++) {
    const fi = limb(f, i);
    setLimb(fs, i, fi);
    setLimb(fd, i, fi << (<i64>(i & 1)));
    setLimb(g19, i, 19 * fi);
  }
  for (let k: usize = 0; k < 10; k++) {
    const ff = k & 1 ? fs : fd;
    let acc: i64 = 0;
    for (let i: usize = 0; i << 1 < k; i++) acc += limb(ff, i) * limb(fs, k - i);
    for (let i = k + 1; i << 1 < k + 10; i++) acc += limb(ff, i) * limb(g19, k + 10 - i);
    acc <<= 1;
    if (!(k & 1)) {
      const d = k >> 1; // the squares f_d² and f_(d+5)² (the latter past 2^255)
      acc += limb(ff, d) * limb(fs, d) + limb(ff, d + 5) * limb(g19, d + 5);
    }
    setLimb(h, k, acc);
  }
  carry(h);
}

/** h = f squared n times (n ≥ 1, a public count), carried. */
export function feSquareTimes(h: usize, f: usize, n: i32, t: usize): void {
  feSquare(h, f, t);
  for (let i = 1; i < n; i++) feSquare(h, h, t);
}

/** h = f·c for a small constant 0 ≤ c < 2^17, carried (h may alias f). */
export function feMulSmall(h: usize, f: usize, c: i64): void {
  for (let i: usize = 0; i < 10; i++) setLimb(h, i, limb(f, i) * c);
  carry(h);
}

/**
 * Swaps f and g when `bit` is 1 and leaves them when it is 0, by masks (no branch on `bit`).
 * `bit` must be 0 or 1.
 */
export function feCswap(f: usize, g: usize, bit: i64): void {
  const mask = -bit; // all ones or all zeros
  for (let i: usize = 0; i < 10; i++) {
    const a = limb(f, i);
    const b = limb(g, i);
    const x = (a ^ b) & mask;
    setLimb(f, i, a ^ x);
    setLimb(g, i, b ^ x);
  }
}

/**
 * h = z^(p−2) = z^(2^255 − 21) = z^−1 (0 for z = 0), by a fixed chain of 254 squarings and 11
 * multiplications; `w` points at 4 field elements of working space, `t` at PROD_BYTES. h may alias z.
 */
export function feInvert(h: usize, z: usize, w: usize, t: usize): void {
  const t0 = w;
  const t1 = w + FE_BYTES;
  const t2 = w + 2 * FE_BYTES;
  const t3 = w + 3 * FE_BYTES;
  feSquare(t0, z, t); //                     z^2
  feSquareTimes(t1, t0, 2, t); //            z^8
  feMul(t1, t1, z, t); //                    z^9
  feMul(t0, t0, t1, t); //                   z^11
  feSquare(t2, t0, t); //                    z^22
  feMul(t1, t1, t2, t); //                   z^31 = z^(2^5 − 1)
  feSquareTimes(t2, t1, 5, t);
  feMul(t1, t2, t1, t); //                   z^(2^10 − 1)
  feSquareTimes(t2, t1, 10, t);
  feMul(t2, t2, t1, t); //                   z^(2^20 − 1)
  feSquareTimes(t3, t2, 20, t);
  feMul(t2, t3, t2, t); //                   z^(2^40 − 1)
  feSquareTimes(t2, t2, 10, t);
  feMul(t1, t2, t1, t); //                   z^(2^50 − 1)
  feSquareTimes(t2, t1, 50, t);
  feMul(t2, t2, t1, t); //                   z^(2^100 − 1)
  feSquareTimes(t3, t2, 100, t);
  feMul(t2, t3, t2, t); //                   z^(2^200 − 1)
  feSquareTimes(t2, t2, 50, t);
  feMul(t1, t2, t1, t); //                   z^(2^250 − 1)
  feSquareTimes(t1, t1, 5, t); //            z^(2^255 − 32)
  feMul(h, t1, t0, t); //                    z^(2^255 − 21)
}

/**
 * h = the 32 bytes at `s` as a little-endian integer with bit 255 masked (RFC 7748 §5 decodeUCoordinate).
 * Values in [p, 2^255) are accepted as they are: they are congruent to their reduction, which is
 * all the arithmetic needs. `pad` must be 40 bytes of working space (zeroed here after use).
 */
export function feFromBytes(h: usize, s: usize, pad: usize): void {
  memory.copy(pad, s, 32);
  memory.fill(pad + 32, 0, 8);
  for (let i: usize = 0; i < 10; i++) {
    const pos = position(i);
    const mask = (<i64>1 << width(i)) - 1; // limb 9 (width 25 from bit 230) drops bit 255
    setLimb(h, i, (load<i64>(pad + (pos >> 3)) >> (<i64>(pos & 7))) & mask);
  }
  memory.fill(pad, 0, 40);
}

/**
 * The canonical little-endian encoding of f (in [0, p)) at `s` (32 bytes); f is left carried, not
 * modified otherwise in value. `pad` must be 40 bytes of working space (zeroed here after use).
 *
 * After `carry`, limb 9 is in [−2^24, 2^24) and the lower limbs add up to less than 2^230 in
 * magnitude, so f ∈ (−2^254 − 2^230, 2^254 + 2^230) and q = ⌊f / p⌋ is 0 (f ≥ 0, then f_9 ≥ 0) or −1
 * (f < 0, then f_9 ≤ 0). It is computed without branching: q0 = ⌊(19·f_9 + 2^24) / 2^25⌋ ∈ [−10, 9]
 * estimates 19·f / 2^255 from the top limb (q0 ≥ 0 when f ≥ 0, q0 ≤ 0 when f < 0), and carrying
 * f + q0 through all limbs with floor carries gives q = ⌊(f + q0) / 2^255⌋. Writing f = m·p + r with
 * r ∈ [0, p): f + q0 = m·2^255 + (r − 19·m + q0), and 0 ≤ r − 19·m + q0 < 2^255 in both cases
 * (m = 0: r ≤ 2^254 + 2^230, q0 ≥ 0; m = −1: r + 19 + q0 ≥ 9 and ≤ r + 19 < 2^255), so q = m.
 * Then f − q·p = f + 19·q − q·2^255: add 19·q to limb 0, carry with floor carries (every limb
 * lands in [0, 2^w)), and drop the carry out of limb 9 (the −q·2^255).
 */
export function feToBytes(s: usize, f: usize, pad: usize): void {
  carry(f);
  carry(f);
  let q = (19 * limb(f, 9) + (<i64>1 << 24)) >> 25;
  for (let i: usize = 0; i < 10; i++) q = (limb(f, i) + q) >> width(i);
  setLimb(f, 0, limb(f, 0) + 19 * q);
  for (let i: usize = 0; i < 10; i++) {
    const w = width(i);
    const v = limb(f, i);
    const c = v >> w;
    setLimb(f, i, v - (c << w));
    if (i < 9) setLimb(f, i + 1, limb(f, i + 1) + c);
  }
  // Pack: limb i (now in [0, 2^W_i)) goes to bits [POS_i, POS_i + W_i); the limbs do not overlap.
  memory.fill(pad, 0, 40);
  for (let i: usize = 0; i < 10; i++) {
    const pos = position(i);
    const at = pad + (pos >> 3);
    store<i64>(at, load<i64>(at) | (limb(f, i) << (<i64>(pos & 7))));
  }
  memory.copy(s, pad, 32);
  memory.fill(pad, 0, 40);
}
