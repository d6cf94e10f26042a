// Keccak-f[1600] (FIPS 202 §3.3, §3.4): the 24-round permutation of a 25 × u64 state, and a two-state
// variant that runs two independent permutations in the two i64x2 lanes of v128 values.
//
// State layout: lane A[x, y] (FIPS 202 §3.1.2) is the u64 at byte offset 8·(x + 5y), little-endian,
// which is FIPS 202's byte order (wasm loads are little-endian on every host), so a state is XORed
// with message bytes and read out as output bytes directly.
//
// Constant time: the rounds use only XOR, AND, OR, NOT and rotations by fixed amounts; there is no
// data-dependent branch or memory index. The only table is the public round constants, indexed by the
// round number. All intermediates live in wasm locals, never in linear memory.
//
// Round code: θ, then for each output row y' the five lanes b0..b4 = ρ(π(θ(A))) of that row, then χ
// (and ι on lane 0). π sends A[x, y] to B[y, 2x + 3y], so output lane (x', y') comes from
// A[3(y' − 3x') mod 5, x']; the ρ offsets are FIPS 202 Table 2. The lines were generated from those
// rules by a script, and both permutations are checked against node:crypto's SHA-3 and SHAKE.
//
// Performance choices, measured with TurboFan on x86-64 (AMD EPYC, family 26 = Zen 5, 2 cores shared
// with other work, so figures drift by ±30% between runs; each comparison below was made within one
// process, variants interleaved by bench/harness.mjs's measureInterleaved):
// - One round per loop iteration, the new lanes copied back into the same 25 locals at its end:
//   326–330 ns per permutation, against 342–350 ns for two rounds per iteration (A → E → A, the
//   "lane renaming" form), 380 ns for four, and 651 ns for all 24 rounds unrolled (a 14 KB function).
// - Lane complementing (lanes 1, 2, 8, 12, 17, 20 held inverted from before the first round to after
//   the last, so χ needs one NOT per row instead of five; wasm has no and-not on i64): 342–350 ns
//   against 372–376 ns without it in the two-round form; in the one-round form the gain is within
//   noise (330 vs 339 ns) but it never lost, so it is kept. Which χ operands are complemented was
//   found by exhaustive search over {b, ~b} × {&, |} per row (one NOT per row suffices).
// - Accumulating the next round's θ column parities inside χ ("prepare theta"): slower (382 vs 350).
// - Keeping the state in linear memory (ping-pong through a 200-byte buffer) instead of locals:
//   309 vs 330 ns on one run, 519 vs 502 ns on another: no consistent gain, and it would put secret
//   intermediate states in memory, so the rounds stay in locals.
// - keccakF1600x2 (SIMD build): 471 ns for the two permutations against 343 ns for one scalar
//   permutation (0.69× the time of two; 0.60× in an earlier run under load), so it is kept even though
//   every rotation costs shl + shr_u + or: χ is one v128.andnot + one xor per lane and each vector
//   instruction serves both states. One round per iteration again beat two (531 vs 648 ns); an
//   interleaved state in linear memory was slower (716 vs 614 ns); rotations by 8 and 56 as byte
//   shuffles rather than shifts, and the rotation by 1 as add + shr_u: within noise (shuffles kept).
//
// Both permutations return with the state in `s` (or `sa`, `sb`) updated in place.

/** ι round constants RC[0..23] (FIPS 202 §3.2.5, Algorithms 5 and 6). Public. */
const RC: usize = memory.data<u64>([
  0x0000000000000001, 0x0000000000008082, 0x800000000000808a, 0x8000000080008000,
  0x000000000000808b, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
  0x000000000000008a, 0x0000000000000088, 0x0000000080008009, 0x000000008000000a,
  0x000000008000808b, 0x800000000000008b, 0x8000000000008089, 0x8000000000008003,
  0x8000000000008002, 0x8000000000000080, 0x000000000000800a, 0x800000008000000a,
  0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
]);

/**
 * Keccak-f[1600] on the 200-byte state at `s` (25 little-endian u64 lanes), in place.
 * Lanes 1, 2, 8, 12, 17 and 20 are held complemented during the rounds ("lane complementing"), so χ
 * needs one NOT per row instead of five; they are restored before the state is stored.
 */
export function keccakF1600(s: usize): void {
  let a00 = load<u64>(s, 0), a01 = load<u64>(s, 8), a02 = load<u64>(s, 16), a03 = load<u64>(s, 24), a04 = load<u64>(s, 32);
  let a05 = load<u64>(s, 40), a06 = load<u64>(s, 48), a07 = load<u64>(s, 56), a08 = load<u64>(s, 64), a09 = load<u64>(s, 72);
  let a10 = load<u64>(s, 80), a11 = load<u64>(s, 88), a12 = load<u64>(s, 96), a13 = load<u64>(s, 104), a14 = load<u64>(s, 112);
  let a15 = load<u64>(s, 120), a16 = load<u64>(s, 128), a17 = load<u64>(s, 136), a18 = load<u64>(s, 144), a19 = load<u64>(s, 152);
  let a20 = load<u64>(s, 160), a21 = load<u64>(s, 168), a22 = load<u64>(s, 176), a23 = load<u64>(s, 184), a24 = load<u64>(s, 192);
  // Lane complementing: enter the complemented representation.
  a01 = ~a01; a02 = ~a02; a08 = ~a08; a12 = ~a12; a17 = ~a17; a20 = ~a20;
  let e00: u64, e01: u64, e02: u64, e03: u64, e04: u64, e05: u64, e06: u64, e07: u64, e08: u64, e09: u64;
  let e10: u64, e11: u64, e12: u64, e13: u64, e14: u64, e15: u64, e16: u64, e17: u64, e18: u64, e19: u64;
  let e20: u64, e21: u64, e22: u64, e23: u64, e24: u64;
  let b0: u64, b1: u64, b2: u64, b3: u64, b4: u64, d0: u64, d1: u64, d2: u64, d3: u64, d4: u64;
  let n0: u64, n1: u64, n2: u64, n3: u64, n4: u64;
  let c0: u64, c1: u64, c2: u64, c3: u64, c4: u64;
  // `r` = 8 × round index: the byte offset of RC[round].
  for (let r: usize = 0; r < 192; r += 8) {
    c0 = a00 ^ a05 ^ a10 ^ a15 ^ a20;
    c1 = a01 ^ a06 ^ a11 ^ a16 ^ a21;
    c2 = a02 ^ a07 ^ a12 ^ a17 ^ a22;
    c3 = a03 ^ a08 ^ a13 ^ a18 ^ a23;
    c4 = a04 ^ a09 ^ a14 ^ a19 ^ a24;
    d0 = c4 ^ rotl<u64>(c1, 1); d1 = c0 ^ rotl<u64>(c2, 1); d2 = c1 ^ rotl<u64>(c3, 1); d3 = c2 ^ rotl<u64>(c4, 1); d4 = c3 ^ rotl<u64>(c0, 1);
    b0 = a00 ^ d0; b1 = rotl<u64>(a06 ^ d1, 44); b2 = rotl<u64>(a12 ^ d2, 43); b3 = rotl<u64>(a18 ^ d3, 21); b4 = rotl<u64>(a24 ^ d4, 14);
    n2 = ~b2; e00 = b0 ^ (b1 | b2) ^ load<u64>(r, RC); e01 = b1 ^ (n2 | b3); e02 = b2 ^ (b3 & b4); e03 = b3 ^ (b4 | b0); e04 = b4 ^ (b0 & b1);
    b0 = rotl<u64>(a03 ^ d3, 28); b1 = rotl<u64>(a09 ^ d4, 20); b2 = rotl<u64>(a10 ^ d0, 3); b3 = rotl<u64>(a16 ^ d1, 45); b4 = rotl<u64>(a22 ^ d2, 61);
    n4 = ~b4; e05 = b0 ^ (b1 | b2); e06 = b1 ^ (b2 & b3); e07 = b2 ^ (b3 | n4); e08 = b3 ^ (b4 | b0); e09 = b4 ^ (b0 & b1);
    b0 = rotl<u64>(a01 ^ d1, 1); b1 = rotl<u64>(a07 ^ d2, 6); b2 = rotl<u64>(a13 ^ d3, 25); b3 = rotl<u64>(a19 ^ d4, 8); b4 = rotl<u64>(a20 ^ d0, 18);
    n3 = ~b3; e10 = b0 ^ (b1 | b2); e11 = b1 ^ (b2 & b3); e12 = b2 ^ (n3 & b4); e13 = n3 ^ (b4 | b0); e14 = b4 ^ (b0 & b1);
    b0 = rotl<u64>(a04 ^ d4, 27); b1 = rotl<u64>(a05 ^ d0, 36); b2 = rotl<u64>(a11 ^ d1, 10); b3 = rotl<u64>(a17 ^ d2, 15); b4 = rotl<u64>(a23 ^ d3, 56);
    n3 = ~b3; e15 = b0 ^ (b1 & b2); e16 = b1 ^ (b2 | b3); e17 = b2 ^ (n3 | b4); e18 = n3 ^ (b4 & b0); e19 = b4 ^ (b0 | b1);
    b0 = rotl<u64>(a02 ^ d2, 62); b1 = rotl<u64>(a08 ^ d3, 55); b2 = rotl<u64>(a14 ^ d4, 39); b3 = rotl<u64>(a15 ^ d0, 41); b4 = rotl<u64>(a21 ^ d1, 2);
    n1 = ~b1; e20 = b0 ^ (n1 & b2); e21 = n1 ^ (b2 | b3); e22 = b2 ^ (b3 & b4); e23 = b3 ^ (b4 | b0); e24 = b4 ^ (b0 & b1);
    a00 = e00; a01 = e01; a02 = e02; a03 = e03; a04 = e04; a05 = e05; a06 = e06; a07 = e07; a08 = e08; a09 = e09;
    a10 = e10; a11 = e11; a12 = e12; a13 = e13; a14 = e14; a15 = e15; a16 = e16; a17 = e17; a18 = e18; a19 = e19;
    a20 = e20; a21 = e21; a22 = e22; a23 = e23; a24 = e24;
  }
  // Leave it.
  a01 = ~a01; a02 = ~a02; a08 = ~a08; a12 = ~a12; a17 = ~a17; a20 = ~a20;
  store<u64>(s, a00, 0); store<u64>(s, a01, 8); store<u64>(s, a02, 16); store<u64>(s, a03, 24); store<u64>(s, a04, 32);
  store<u64>(s, a05, 40); store<u64>(s, a06, 48); store<u64>(s, a07, 56); store<u64>(s, a08, 64); store<u64>(s, a09, 72);
  store<u64>(s, a10, 80); store<u64>(s, a11, 88); store<u64>(s, a12, 96); store<u64>(s, a13, 104); store<u64>(s, a14, 112);
  store<u64>(s, a15, 120); store<u64>(s, a16, 128); store<u64>(s, a17, 136); store<u64>(s, a18, 144); store<u64>(s, a19, 152);
  store<u64>(s, a20, 160); store<u64>(s, a21, 168); store<u64>(s, a22, 176); store<u64>(s, a23, 184); store<u64>(s, a24, 192);
}

// SIMD build helpers for keccakF1600x2. wasm has no 64-bit vector rotate: shl + shr_u + or.
// @ts-ignore: decorator
@inline function rolv(x: v128, n: i32): v128 {
  return v128.or(i64x2.shl(x, n), i64x2.shr_u(x, 64 - n));
}
/** Rotate each u64 lane left by 8: one byte shuffle. */
// @ts-ignore: decorator
@inline function rol8v(x: v128): v128 {
  return i8x16.shuffle(x, x, 7, 0, 1, 2, 3, 4, 5, 6, 15, 8, 9, 10, 11, 12, 13, 14);
}
/** Rotate each u64 lane left by 56: one byte shuffle. */
// @ts-ignore: decorator
@inline function rol56v(x: v128): v128 {
  return i8x16.shuffle(x, x, 1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8);
}
/** χ for one lane: b0 ^ (~b1 & b2); v128.andnot(a, b) = a & ~b. */
// @ts-ignore: decorator
@inline function chiv(b0: v128, b1: v128, b2: v128): v128 {
  return v128.xor(b0, v128.andnot(b2, b1));
}

/** SIMD build: both permutations at once, state A in lane 0 and state B in lane 1 of each v128. */
function permuteX2(sa: usize, sb: usize): void {
  let a00 = v128.load64_lane(sb, v128.load64_zero(sa), 1);
  let a01 = v128.load64_lane(sb, v128.load64_zero(sa, 8), 1, 8);
  let a02 = v128.load64_lane(sb, v128.load64_zero(sa, 16), 1, 16);
  let a03 = v128.load64_lane(sb, v128.load64_zero(sa, 24), 1, 24);
  let a04 = v128.load64_lane(sb, v128.load64_zero(sa, 32), 1, 32);
  let a05 = v128.load64_lane(sb, v128.load64_zero(sa, 40), 1, 40);
  let a06 = v128.load64_lane(sb, v128.load64_zero(sa, 48), 1, 48);
  let a07 = v128.load64_lane(sb, v128.load64_zero(sa, 56), 1, 56);
  let a08 = v128.load64_lane(sb, v128.load64_zero(sa, 64), 1, 64);
  let a09 = v128.load64_lane(sb, v128.load64_zero(sa, 72), 1, 72);
  let a10 = v128.load64_lane(sb, v128.load64_zero(sa, 80), 1, 80);
  let a11 = v128.load64_lane(sb, v128.load64_zero(sa, 88), 1, 88);
  let a12 = v128.load64_lane(sb, v128.load64_zero(sa, 96), 1, 96);
  let a13 = v128.load64_lane(sb, v128.load64_zero(sa, 104), 1, 104);
  let a14 = v128.load64_lane(sb, v128.load64_zero(sa, 112), 1, 112);
  let a15 = v128.load64_lane(sb, v128.load64_zero(sa, 120), 1, 120);
  let a16 = v128.load64_lane(sb, v128.load64_zero(sa, 128), 1, 128);
  let a17 = v128.load64_lane(sb, v128.load64_zero(sa, 136), 1, 136);
  let a18 = v128.load64_lane(sb, v128.load64_zero(sa, 144), 1, 144);
  let a19 = v128.load64_lane(sb, v128.load64_zero(sa, 152), 1, 152);
  let a20 = v128.load64_lane(sb, v128.load64_zero(sa, 160), 1, 160);
  let a21 = v128.load64_lane(sb, v128.load64_zero(sa, 168), 1, 168);
  let a22 = v128.load64_lane(sb, v128.load64_zero(sa, 176), 1, 176);
  let a23 = v128.load64_lane(sb, v128.load64_zero(sa, 184), 1, 184);
  let a24 = v128.load64_lane(sb, v128.load64_zero(sa, 192), 1, 192);
  let e00: v128, e01: v128, e02: v128, e03: v128, e04: v128, e05: v128, e06: v128, e07: v128, e08: v128, e09: v128;
  let e10: v128, e11: v128, e12: v128, e13: v128, e14: v128, e15: v128, e16: v128, e17: v128, e18: v128, e19: v128;
  let e20: v128, e21: v128, e22: v128, e23: v128, e24: v128;
  let b0: v128, b1: v128, b2: v128, b3: v128, b4: v128, c0: v128, c1: v128, c2: v128, c3: v128, c4: v128;
  let d0: v128, d1: v128, d2: v128, d3: v128, d4: v128;
  for (let r: usize = 0; r < 192; r += 8) {
    c0 = v128.xor(v128.xor(v128.xor(a00, a05), v128.xor(a10, a15)), a20);
    c1 = v128.xor(v128.xor(v128.xor(a01, a06), v128.xor(a11, a16)), a21);
    c2 = v128.xor(v128.xor(v128.xor(a02, a07), v128.xor(a12, a17)), a22);
    c3 = v128.xor(v128.xor(v128.xor(a03, a08), v128.xor(a13, a18)), a23);
    c4 = v128.xor(v128.xor(v128.xor(a04, a09), v128.xor(a14, a19)), a24);
    d0 = v128.xor(c4, rolv(c1, 1)); d1 = v128.xor(c0, rolv(c2, 1)); d2 = v128.xor(c1, rolv(c3, 1)); d3 = v128.xor(c2, rolv(c4, 1)); d4 = v128.xor(c3, rolv(c0, 1));
    b0 = v128.xor(a00, d0); b1 = rolv(v128.xor(a06, d1), 44); b2 = rolv(v128.xor(a12, d2), 43); b3 = rolv(v128.xor(a18, d3), 21); b4 = rolv(v128.xor(a24, d4), 14);
    e00 = v128.xor(chiv(b0, b1, b2), v128.load64_splat(r, RC)); e01 = chiv(b1, b2, b3); e02 = chiv(b2, b3, b4); e03 = chiv(b3, b4, b0); e04 = chiv(b4, b0, b1);
    b0 = rolv(v128.xor(a03, d3), 28); b1 = rolv(v128.xor(a09, d4), 20); b2 = rolv(v128.xor(a10, d0), 3); b3 = rolv(v128.xor(a16, d1), 45); b4 = rolv(v128.xor(a22, d2), 61);
    e05 = chiv(b0, b1, b2); e06 = chiv(b1, b2, b3); e07 = chiv(b2, b3, b4); e08 = chiv(b3, b4, b0); e09 = chiv(b4, b0, b1);
    b0 = rolv(v128.xor(a01, d1), 1); b1 = rolv(v128.xor(a07, d2), 6); b2 = rolv(v128.xor(a13, d3), 25); b3 = rol8v(v128.xor(a19, d4)); b4 = rolv(v128.xor(a20, d0), 18);
    e10 = chiv(b0, b1, b2); e11 = chiv(b1, b2, b3); e12 = chiv(b2, b3, b4); e13 = chiv(b3, b4, b0); e14 = chiv(b4, b0, b1);
    b0 = rolv(v128.xor(a04, d4), 27); b1 = rolv(v128.xor(a05, d0), 36); b2 = rolv(v128.xor(a11, d1), 10); b3 = rolv(v128.xor(a17, d2), 15); b4 = rol56v(v128.xor(a23, d3));
    e15 = chiv(b0, b1, b2); e16 = chiv(b1, b2, b3); e17 = chiv(b2, b3, b4); e18 = chiv(b3, b4, b0); e19 = chiv(b4, b0, b1);
    b0 = rolv(v128.xor(a02, d2), 62); b1 = rolv(v128.xor(a08, d3), 55); b2 = rolv(v128.xor(a14, d4), 39); b3 = rolv(v128.xor(a15, d0), 41); b4 = rolv(v128.xor(a21, d1), 2);
    e20 = chiv(b0, b1, b2); e21 = chiv(b1, b2, b3); e22 = chiv(b2, b3, b4); e23 = chiv(b3, b4, b0); e24 = chiv(b4, b0, b1);
    a00 = e00; a01 = e01; a02 = e02; a03 = e03; a04 = e04; a05 = e05; a06 = e06; a07 = e07; a08 = e08; a09 = e09;
    a10 = e10; a11 = e11; a12 = e12; a13 = e13; a14 = e14; a15 = e15; a16 = e16; a17 = e17; a18 = e18; a19 = e19;
    a20 = e20; a21 = e21; a22 = e22; a23 = e23; a24 = e24;
  }
  v128.store64_lane(sa, a00, 0, 0); v128.store64_lane(sb, a00, 1, 0);
  v128.store64_lane(sa, a01, 0, 8); v128.store64_lane(sb, a01, 1, 8);
  v128.store64_lane(sa, a02, 0, 16); v128.store64_lane(sb, a02, 1, 16);
  v128.store64_lane(sa, a03, 0, 24); v128.store64_lane(sb, a03, 1, 24);
  v128.store64_lane(sa, a04, 0, 32); v128.store64_lane(sb, a04, 1, 32);
  v128.store64_lane(sa, a05, 0, 40); v128.store64_lane(sb, a05, 1, 40);
  v128.store64_lane(sa, a06, 0, 48); v128.store64_lane(sb, a06, 1, 48);
  v128.store64_lane(sa, a07, 0, 56); v128.store64_lane(sb, a07, 1, 56);
  v128.store64_lane(sa, a08, 0, 64); v128.store64_lane(sb, a08, 1, 64);
  v128.store64_lane(sa, a09, 0, 72); v128.store64_lane(sb, a09, 1, 72);
  v128.store64_lane(sa, a10, 0, 80); v128.store64_lane(sb, a10, 1, 80);
  v128.store64_lane(sa, a11, 0, 88); v128.store64_lane(sb, a11, 1, 88);
  v128.store64_lane(sa, a12, 0, 96); v128.store64_lane(sb, a12, 1, 96);
  v128.store64_lane(sa, a13, 0, 104); v128.store64_lane(sb, a13, 1, 104);
  v128.store64_lane(sa, a14, 0, 112); v128.store64_lane(sb, a14, 1, 112);
  v128.store64_lane(sa, a15, 0, 120); v128.store64_lane(sb, a15, 1, 120);
  v128.store64_lane(sa, a16, 0, 128); v128.store64_lane(sb, a16, 1, 128);
  v128.store64_lane(sa, a17, 0, 136); v128.store64_lane(sb, a17, 1, 136);
  v128.store64_lane(sa, a18, 0, 144); v128.store64_lane(sb, a18, 1, 144);
  v128.store64_lane(sa, a19, 0, 152); v128.store64_lane(sb, a19, 1, 152);
  v128.store64_lane(sa, a20, 0, 160); v128.store64_lane(sb, a20, 1, 160);
  v128.store64_lane(sa, a21, 0, 168); v128.store64_lane(sb, a21, 1, 168);
  v128.store64_lane(sa, a22, 0, 176); v128.store64_lane(sb, a22, 1, 176);
  v128.store64_lane(sa, a23, 0, 184); v128.store64_lane(sb, a23, 1, 184);
  v128.store64_lane(sa, a24, 0, 192); v128.store64_lane(sb, a24, 1, 192);
}

/**
 * Two independent Keccak-f[1600] permutations, of the states at `stateA` and `stateB` (each as for
 * keccakF1600), in place. The two states must not overlap. In the SIMD build they run together in
 * the two i64x2 lanes (0.6× the time of two single permutations, see PERF above); in the scalar build
 * this is two calls of keccakF1600. The result is the same in both builds.
 */
export function keccakF1600x2(stateA: usize, stateB: usize): void {
  if (ASC_FEATURE_SIMD) {
    permuteX2(stateA, stateB);
  } else {
    keccakF1600(stateA);
    keccakF1600(stateB);
  }
}
