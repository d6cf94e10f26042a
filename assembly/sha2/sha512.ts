// SHA-512 compression function (FIPS 180-4 §6.4.2), used by SHA-384 and SHA-512.
// Branch-free and table-free apart from the public round constants, so its timing does not depend
// on the data hashed (HMAC keys pass through it).
//
// Performance choices, measured with TurboFan (node --no-liftoff) on x86-64 (AMD Zen 5), SHA-384 of
// 1 MiB, best of 20+ alternating runs (before: 410 MiB/s in both builds):
// - Each round adds in dependency order: h += K[t] + W[t] (ready early), then Ch, then Σ1(e) last,
//   so the e → e' critical path is Σ1 + two adds (+14%). Maj reuses the previous round's a ^ b
//   (one op fewer per round; gain within noise).
// - The message schedule is expanded inside the round loop (W[t + 16] right after round t) instead of
//   in a separate pass first, so its independent work fills gaps in the round chain (+6%).
// - K and W are read at constant offsets from one loop counter (`load<u64>(q, K512 + 8·i)`), so the
//   loop carries one induction variable instead of two pointers (+9%).
// - SIMD build: the block is byte-swapped with i8x16.shuffle (+6% there).
// - SIMD build: the schedule is expanded two words at a time in i64x2 lanes (schedule2) and W + K is
//   stored alongside it (SCHEDULE512_WK), so the rounds keep the integer units and the schedule runs
//   on the vector units. Measured in one process, interleaved, against the scalar-schedule build:
//   SHA-384 of 1 MiB at 0.59 of node:crypto's speed instead of 0.51 when the host is loaded, and
//   0.58 instead of 0.61 when it is idle; chosen for the steadier figure.
// Tried and dropped (no gain within noise): nested Σ rotates rotr(rotr(rotr(e,23)^e,4)^e,14);
// unrolling by 16; full 80-round unrolling (faster on 1 MiB, 30% slower on Merkle's 1–2-block
// calls); precomputing W + K in the scalar build; a two-lane (i64x2) compression hashing two
// Merkle leaves at once (no faster than two scalar compressions: wasm has no 64-bit vector rotate).

import { SCHEDULE512, SCHEDULE512_WK } from '../common/layout';
import { K512 } from './_constants';

const WK = SCHEDULE512_WK;

/** Reads a big-endian u64. */
// @ts-ignore: decorator
@inline export function load64be(p: usize): u64 {
  return bswap<u64>(load<u64>(p));
}

/**
 * SIMD build: W[t+16], W[t+17] from W[t..t+17) in i64x2 lanes, for `p` = W + 8t (t even). Moves the
 * schedule's shifts and XORs from the integer units, which the rounds saturate, to the vector units.
 * rotr by 8 is one byte shuffle; other rotations are shr | shl (wasm has no vector rotate).
 */
// @ts-ignore: decorator
@inline function schedule2(p: usize): void {
  const w1 = v128.load(p, 8);
  const w14 = v128.load(p, 112);
  const s0 = v128.xor(
    v128.xor(v128.or(i64x2.shr_u(w1, 1), i64x2.shl(w1, 63)), i8x16.shuffle(w1, w1, 1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8)),
    i64x2.shr_u(w1, 7),
  );
  const s1 = v128.xor(
    v128.xor(v128.or(i64x2.shr_u(w14, 19), i64x2.shl(w14, 45)), v128.or(i64x2.shr_u(w14, 61), i64x2.shl(w14, 3))),
    i64x2.shr_u(w14, 6),
  );
  const w = i64x2.add(i64x2.add(v128.load(p), s0), i64x2.add(v128.load(p, 72), s1));
  v128.store(p, w, 128);
  const o = p - SCHEDULE512;
  v128.store(WK + o, i64x2.add(w, v128.load(K512 + o, 128)), 128);
}

/**
 * Runs the compression function over `nblocks` consecutive 128-byte blocks at `block`,
 * updating the eight u64 words (native byte order) at `state`. Uses SCHEDULE512 (80 words).
 */
export function compress512(state: usize, block: usize, nblocks: usize): void {
  let a = load<u64>(state, 0), b = load<u64>(state, 8), c = load<u64>(state, 16), d = load<u64>(state, 24);
  let e = load<u64>(state, 32), f = load<u64>(state, 40), g = load<u64>(state, 48), h = load<u64>(state, 56);
  // Maj(a, b, c) = ((a ^ b) & (b ^ c)) ^ b, where b ^ c is the previous round's a ^ b: x0/x1 carry it.
  let x0: u64 = 0, x1: u64 = 0;
  const W = SCHEDULE512;
  for (let n: usize = 0; n < nblocks; n++, block += 128) {
    // W[0..16) = big-endian block words. SIMD: one byte shuffle per two words instead of eleven i64
    // ops per word (wasm has no bswap): measured +6% on SHA-384 1 MiB in the SIMD build.
    if (ASC_FEATURE_SIMD) {
      for (let t: usize = 0; t < 128; t += 16) {
        const w = i8x16.shuffle(v128.load(block + t), v128.load(block + t), 7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
        v128.store(W + t, w);
        v128.store(WK + t, i64x2.add(w, v128.load(K512 + t)));
      }
    } else {
      for (let t: usize = 0; t < 16; t++) store<u64>(W + (t << 3), load64be(block + (t << 3)));
    }
    x1 = b ^ c;
    // Rounds 0..63, eight per iteration; after round t, W[t + 16] is expanded (it overwrites nothing:
    // W holds all 80 words). `q` = 8·t is the byte offset of the first round's K and W entries.
    for (let q: usize = 0; q < 512; q += 64) {
      h += ASC_FEATURE_SIMD ? load<u64>(q, WK) : load<u64>(q, K512) + load<u64>(q, W);
      h += g ^ (e & (f ^ g));
      h += (rotr<u64>(e, 14) ^ rotr<u64>(e, 18) ^ rotr<u64>(e, 41));
      d += h;
      h += (rotr<u64>(a, 28) ^ rotr<u64>(a, 34) ^ rotr<u64>(a, 39)) + (((x0 = a ^ b) & x1) ^ b);
      if (!ASC_FEATURE_SIMD)
      { const w15 = load<u64>(q, W + 8), w2 = load<u64>(q, W + 112);
        store<u64>(q, load<u64>(q, W) + (rotr<u64>(w15, 1) ^ rotr<u64>(w15, 8) ^ (w15 >> 7)) + load<u64>(q, W + 72) + (rotr<u64>(w2, 19) ^ rotr<u64>(w2, 61) ^ (w2 >> 6)), W + 128); }
      g += ASC_FEATURE_SIMD ? load<u64>(q, WK + 8) : load<u64>(q, K512 + 8) + load<u64>(q, W + 8);
      g += f ^ (d & (e ^ f));
      g += (rotr<u64>(d, 14) ^ rotr<u64>(d, 18) ^ rotr<u64>(d, 41));
      c += g;
      g += (rotr<u64>(h, 28) ^ rotr<u64>(h, 34) ^ rotr<u64>(h, 39)) + (((x1 = h ^ a) & x0) ^ a);
      if (ASC_FEATURE_SIMD) schedule2(q + W + 0);
      else
      { const w15 = load<u64>(q, W + 16), w2 = load<u64>(q, W + 120);
        store<u64>(q, load<u64>(q, W + 8) + (rotr<u64>(w15, 1) ^ rotr<u64>(w15, 8) ^ (w15 >> 7)) + load<u64>(q, W + 80) + (rotr<u64>(w2, 19) ^ rotr<u64>(w2, 61) ^ (w2 >> 6)), W + 136); }
      f += ASC_FEATURE_SIMD ? load<u64>(q, WK + 16) : load<u64>(q, K512 + 16) + load<u64>(q, W + 16);
      f += e ^ (c & (d ^ e));
      f += (rotr<u64>(c, 14) ^ rotr<u64>(c, 18) ^ rotr<u64>(c, 41));
      b += f;
      f += (rotr<u64>(g, 28) ^ rotr<u64>(g, 34) ^ rotr<u64>(g, 39)) + (((x0 = g ^ h) & x1) ^ h);
      if (!ASC_FEATURE_SIMD)
      { const w15 = load<u64>(q, W + 24), w2 = load<u64>(q, W + 128);
        store<u64>(q, load<u64>(q, W + 16) + (rotr<u64>(w15, 1) ^ rotr<u64>(w15, 8) ^ (w15 >> 7)) + load<u64>(q, W + 88) + (rotr<u64>(w2, 19) ^ rotr<u64>(w2, 61) ^ (w2 >> 6)), W + 144); }
      e += ASC_FEATURE_SIMD ? load<u64>(q, WK + 24) : load<u64>(q, K512 + 24) + load<u64>(q, W + 24);
      e += d ^ (b & (c ^ d));
      e += (rotr<u64>(b, 14) ^ rotr<u64>(b, 18) ^ rotr<u64>(b, 41));
      a += e;
      e += (rotr<u64>(f, 28) ^ rotr<u64>(f, 34) ^ rotr<u64>(f, 39)) + (((x1 = f ^ g) & x0) ^ g);
      if (ASC_FEATURE_SIMD) schedule2(q + W + 16);
      else
      { const w15 = load<u64>(q, W + 32), w2 = load<u64>(q, W + 136);
        store<u64>(q, load<u64>(q, W + 24) + (rotr<u64>(w15, 1) ^ rotr<u64>(w15, 8) ^ (w15 >> 7)) + load<u64>(q, W + 96) + (rotr<u64>(w2, 19) ^ rotr<u64>(w2, 61) ^ (w2 >> 6)), W + 152); }
      d += ASC_FEATURE_SIMD ? load<u64>(q, WK + 32) : load<u64>(q, K512 + 32) + load<u64>(q, W + 32);
      d += c ^ (a & (b ^ c));
      d += (rotr<u64>(a, 14) ^ rotr<u64>(a, 18) ^ rotr<u64>(a, 41));
      h += d;
      d += (rotr<u64>(e, 28) ^ rotr<u64>(e, 34) ^ rotr<u64>(e, 39)) + (((x0 = e ^ f) & x1) ^ f);
      if (!ASC_FEATURE_SIMD)
      { const w15 = load<u64>(q, W + 40), w2 = load<u64>(q, W + 144);
        store<u64>(q, load<u64>(q, W + 32) + (rotr<u64>(w15, 1) ^ rotr<u64>(w15, 8) ^ (w15 >> 7)) + load<u64>(q, W + 104) + (rotr<u64>(w2, 19) ^ rotr<u64>(w2, 61) ^ (w2 >> 6)), W + 160); }
      c += ASC_FEATURE_SIMD ? load<u64>(q, WK + 40) : load<u64>(q, K512 + 40) + load<u64>(q, W + 40);
      c += b ^ (h & (a ^ b));
      c += (rotr<u64>(h, 14) ^ rotr<u64>(h, 18) ^ rotr<u64>(h, 41));
      g += c;
      c += (rotr<u64>(d, 28) ^ rotr<u64>(d, 34) ^ rotr<u64>(d, 39)) + (((x1 = d ^ e) & x0) ^ e);
      if (ASC_FEATURE_SIMD) schedule2(q + W + 32);
      else
      { const w15 = load<u64>(q, W + 48), w2 = load<u64>(q, W + 152);
        store<u64>(q, load<u64>(q, W + 40) + (rotr<u64>(w15, 1) ^ rotr<u64>(w15, 8) ^ (w15 >> 7)) + load<u64>(q, W + 112) + (rotr<u64>(w2, 19) ^ rotr<u64>(w2, 61) ^ (w2 >> 6)), W + 168); }
      b += ASC_FEATURE_SIMD ? load<u64>(q, WK + 48) : load<u64>(q, K512 + 48) + load<u64>(q, W + 48);
      b += a ^ (g & (h ^ a));
      b += (rotr<u64>(g, 14) ^ rotr<u64>(g, 18) ^ rotr<u64>(g, 41));
      f += b;
      b += (rotr<u64>(c, 28) ^ rotr<u64>(c, 34) ^ rotr<u64>(c, 39)) + (((x0 = c ^ d) & x1) ^ d);
      if (!ASC_FEATURE_SIMD)
      { const w15 = load<u64>(q, W + 56), w2 = load<u64>(q, W + 160);
        store<u64>(q, load<u64>(q, W + 48) + (rotr<u64>(w15, 1) ^ rotr<u64>(w15, 8) ^ (w15 >> 7)) + load<u64>(q, W + 120) + (rotr<u64>(w2, 19) ^ rotr<u64>(w2, 61) ^ (w2 >> 6)), W + 176); }
      a += ASC_FEATURE_SIMD ? load<u64>(q, WK + 56) : load<u64>(q, K512 + 56) + load<u64>(q, W + 56);
      a += h ^ (f & (g ^ h));
      a += (rotr<u64>(f, 14) ^ rotr<u64>(f, 18) ^ rotr<u64>(f, 41));
      e += a;
      a += (rotr<u64>(b, 28) ^ rotr<u64>(b, 34) ^ rotr<u64>(b, 39)) + (((x1 = b ^ c) & x0) ^ c);
      if (ASC_FEATURE_SIMD) schedule2(q + W + 48);
      else
      { const w15 = load<u64>(q, W + 64), w2 = load<u64>(q, W + 168);
        store<u64>(q, load<u64>(q, W + 56) + (rotr<u64>(w15, 1) ^ rotr<u64>(w15, 8) ^ (w15 >> 7)) + load<u64>(q, W + 128) + (rotr<u64>(w2, 19) ^ rotr<u64>(w2, 61) ^ (w2 >> 6)), W + 184); }
    }
    // Rounds 64..79: the schedule is complete.
    for (let q: usize = 512; q < 640; q += 64) {
      h += ASC_FEATURE_SIMD ? load<u64>(q, WK) : load<u64>(q, K512) + load<u64>(q, W);
      h += g ^ (e & (f ^ g));
      h += (rotr<u64>(e, 14) ^ rotr<u64>(e, 18) ^ rotr<u64>(e, 41));
      d += h;
      h += (rotr<u64>(a, 28) ^ rotr<u64>(a, 34) ^ rotr<u64>(a, 39)) + (((x0 = a ^ b) & x1) ^ b);
      g += ASC_FEATURE_SIMD ? load<u64>(q, WK + 8) : load<u64>(q, K512 + 8) + load<u64>(q, W + 8);
      g += f ^ (d & (e ^ f));
      g += (rotr<u64>(d, 14) ^ rotr<u64>(d, 18) ^ rotr<u64>(d, 41));
      c += g;
      g += (rotr<u64>(h, 28) ^ rotr<u64>(h, 34) ^ rotr<u64>(h, 39)) + (((x1 = h ^ a) & x0) ^ a);
      f += ASC_FEATURE_SIMD ? load<u64>(q, WK + 16) : load<u64>(q, K512 + 16) + load<u64>(q, W + 16);
      f += e ^ (c & (d ^ e));
      f += (rotr<u64>(c, 14) ^ rotr<u64>(c, 18) ^ rotr<u64>(c, 41));
      b += f;
      f += (rotr<u64>(g, 28) ^ rotr<u64>(g, 34) ^ rotr<u64>(g, 39)) + (((x0 = g ^ h) & x1) ^ h);
      e += ASC_FEATURE_SIMD ? load<u64>(q, WK + 24) : load<u64>(q, K512 + 24) + load<u64>(q, W + 24);
      e += d ^ (b & (c ^ d));
      e += (rotr<u64>(b, 14) ^ rotr<u64>(b, 18) ^ rotr<u64>(b, 41));
      a += e;
      e += (rotr<u64>(f, 28) ^ rotr<u64>(f, 34) ^ rotr<u64>(f, 39)) + (((x1 = f ^ g) & x0) ^ g);
      d += ASC_FEATURE_SIMD ? load<u64>(q, WK + 32) : load<u64>(q, K512 + 32) + load<u64>(q, W + 32);
      d += c ^ (a & (b ^ c));
      d += (rotr<u64>(a, 14) ^ rotr<u64>(a, 18) ^ rotr<u64>(a, 41));
      h += d;
      d += (rotr<u64>(e, 28) ^ rotr<u64>(e, 34) ^ rotr<u64>(e, 39)) + (((x0 = e ^ f) & x1) ^ f);
      c += ASC_FEATURE_SIMD ? load<u64>(q, WK + 40) : load<u64>(q, K512 + 40) + load<u64>(q, W + 40);
      c += b ^ (h & (a ^ b));
      c += (rotr<u64>(h, 14) ^ rotr<u64>(h, 18) ^ rotr<u64>(h, 41));
      g += c;
      c += (rotr<u64>(d, 28) ^ rotr<u64>(d, 34) ^ rotr<u64>(d, 39)) + (((x1 = d ^ e) & x0) ^ e);
      b += ASC_FEATURE_SIMD ? load<u64>(q, WK + 48) : load<u64>(q, K512 + 48) + load<u64>(q, W + 48);
      b += a ^ (g & (h ^ a));
      b += (rotr<u64>(g, 14) ^ rotr<u64>(g, 18) ^ rotr<u64>(g, 41));
      f += b;
      b += (rotr<u64>(c, 28) ^ rotr<u64>(c, 34) ^ rotr<u64>(c, 39)) + (((x0 = c ^ d) & x1) ^ d);
      a += ASC_FEATURE_SIMD ? load<u64>(q, WK + 56) : load<u64>(q, K512 + 56) + load<u64>(q, W + 56);
      a += h ^ (f & (g ^ h));
      a += (rotr<u64>(f, 14) ^ rotr<u64>(f, 18) ^ rotr<u64>(f, 41));
      e += a;
      a += (rotr<u64>(b, 28) ^ rotr<u64>(b, 34) ^ rotr<u64>(b, 39)) + (((x1 = b ^ c) & x0) ^ c);
    }
    // The chaining value is kept in memory rather than in eight more locals (register pressure).
    a += load<u64>(state, 0); b += load<u64>(state, 8); c += load<u64>(state, 16); d += load<u64>(state, 24);
    e += load<u64>(state, 32); f += load<u64>(state, 40); g += load<u64>(state, 48); h += load<u64>(state, 56);
    store<u64>(state, a, 0); store<u64>(state, b, 8); store<u64>(state, c, 16); store<u64>(state, d, 24);
    store<u64>(state, e, 32); store<u64>(state, f, 40); store<u64>(state, g, 48); store<u64>(state, h, 56);
  }
}
