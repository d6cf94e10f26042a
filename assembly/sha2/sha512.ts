// SHA-512 compression function (FIPS 180-4 §6.4.2), used by SHA-384 and SHA-512.
// Branch-free and table-free apart from the public round constants, so its timing does not depend
// on the data hashed (HMAC keys pass through it).
// The 80 rounds run unrolled by eight so the working variables never move between registers;
// the message schedule is expanded first into SCHEDULE512 (wiped by the caller's wipe routine).

import { SCHEDULE512 } from '../common/layout';
import { K512 } from './_constants';

/** Reads a big-endian u64. */
// @ts-ignore: decorator
@inline export function load64be(p: usize): u64 {
  return bswap<u64>(load<u64>(p));
}

/**
 * Runs the compression function over `nblocks` consecutive 128-byte blocks at `block`,
 * updating the eight u64 words (native byte order) at `state`.
 */
export function compress512(state: usize, block: usize, nblocks: usize): void {
  let a = load<u64>(state, 0), b = load<u64>(state, 8), c = load<u64>(state, 16), d = load<u64>(state, 24);
  let e = load<u64>(state, 32), f = load<u64>(state, 40), g = load<u64>(state, 48), h = load<u64>(state, 56);
  const W = SCHEDULE512;
  for (let n: usize = 0; n < nblocks; n++, block += 128) {
    for (let t: usize = 0; t < 16; t++) store<u64>(W + (t << 3), load64be(block + (t << 3)));
    for (let t: usize = 16; t < 80; t++) {
      const p = W + (t << 3);
      const w15 = load<u64>(p - 120);
      const w2 = load<u64>(p - 16);
      const s0 = rotr<u64>(w15, 1) ^ rotr<u64>(w15, 8) ^ (w15 >> 7);
      const s1 = rotr<u64>(w2, 19) ^ rotr<u64>(w2, 61) ^ (w2 >> 6);
      store<u64>(p, load<u64>(p - 128) + s0 + load<u64>(p - 56) + s1);
    }
    for (let t: usize = 0; t < 80; t += 8) {
      const k = K512 + (t << 3);
      const w = W + (t << 3);
      h += (rotr<u64>(e, 14) ^ rotr<u64>(e, 18) ^ rotr<u64>(e, 41)) + (g ^ (e & (f ^ g))) + load<u64>(k, 0) + load<u64>(w, 0);
      d += h;
      h += (rotr<u64>(a, 28) ^ rotr<u64>(a, 34) ^ rotr<u64>(a, 39)) + ((a & b) | (c & (a | b)));
      g += (rotr<u64>(d, 14) ^ rotr<u64>(d, 18) ^ rotr<u64>(d, 41)) + (f ^ (d & (e ^ f))) + load<u64>(k, 8) + load<u64>(w, 8);
      c += g;
      g += (rotr<u64>(h, 28) ^ rotr<u64>(h, 34) ^ rotr<u64>(h, 39)) + ((h & a) | (b & (h | a)));
      f += (rotr<u64>(c, 14) ^ rotr<u64>(c, 18) ^ rotr<u64>(c, 41)) + (e ^ (c & (d ^ e))) + load<u64>(k, 16) + load<u64>(w, 16);
      b += f;
      f += (rotr<u64>(g, 28) ^ rotr<u64>(g, 34) ^ rotr<u64>(g, 39)) + ((g & h) | (a & (g | h)));
      e += (rotr<u64>(b, 14) ^ rotr<u64>(b, 18) ^ rotr<u64>(b, 41)) + (d ^ (b & (c ^ d))) + load<u64>(k, 24) + load<u64>(w, 24);
      a += e;
      e += (rotr<u64>(f, 28) ^ rotr<u64>(f, 34) ^ rotr<u64>(f, 39)) + ((f & g) | (h & (f | g)));
      d += (rotr<u64>(a, 14) ^ rotr<u64>(a, 18) ^ rotr<u64>(a, 41)) + (c ^ (a & (b ^ c))) + load<u64>(k, 32) + load<u64>(w, 32);
      h += d;
      d += (rotr<u64>(e, 28) ^ rotr<u64>(e, 34) ^ rotr<u64>(e, 39)) + ((e & f) | (g & (e | f)));
      c += (rotr<u64>(h, 14) ^ rotr<u64>(h, 18) ^ rotr<u64>(h, 41)) + (b ^ (h & (a ^ b))) + load<u64>(k, 40) + load<u64>(w, 40);
      g += c;
      c += (rotr<u64>(d, 28) ^ rotr<u64>(d, 34) ^ rotr<u64>(d, 39)) + ((d & e) | (f & (d | e)));
      b += (rotr<u64>(g, 14) ^ rotr<u64>(g, 18) ^ rotr<u64>(g, 41)) + (a ^ (g & (h ^ a))) + load<u64>(k, 48) + load<u64>(w, 48);
      f += b;
      b += (rotr<u64>(c, 28) ^ rotr<u64>(c, 34) ^ rotr<u64>(c, 39)) + ((c & d) | (e & (c | d)));
      a += (rotr<u64>(f, 14) ^ rotr<u64>(f, 18) ^ rotr<u64>(f, 41)) + (h ^ (f & (g ^ h))) + load<u64>(k, 56) + load<u64>(w, 56);
      e += a;
      a += (rotr<u64>(b, 28) ^ rotr<u64>(b, 34) ^ rotr<u64>(b, 39)) + ((b & c) | (d & (b | c)));

    }
    // The chaining value is kept in memory rather than in eight more locals (register pressure).
    a += load<u64>(state, 0); b += load<u64>(state, 8); c += load<u64>(state, 16); d += load<u64>(state, 24);
    e += load<u64>(state, 32); f += load<u64>(state, 40); g += load<u64>(state, 48); h += load<u64>(state, 56);
    store<u64>(state, a, 0); store<u64>(state, b, 8); store<u64>(state, c, 16); store<u64>(state, d, 24);
    store<u64>(state, e, 32); store<u64>(state, f, 40); store<u64>(state, g, 48); store<u64>(state, h, 56);
  }
}
