// SHA-256 compression function (FIPS 180-4 §6.2.2), used by SHA-256 and HKDF-SHA256.
// Branch-free and table-free apart from the public round constants. 64 rounds unrolled by eight;
// the schedule is expanded first into SCHEDULE256 (wiped by the caller's wipe routine).

import { SCHEDULE256 } from '../common/layout';
import { K256 } from './_constants';

// @ts-ignore: decorator
@inline export function load32be(p: usize): u32 {
  return bswap<u32>(load<u32>(p));
}

/**
 * Runs the compression function over `nblocks` consecutive 64-byte blocks at `block`,
 * updating the eight u32 words (native byte order) at `state`.
 */
export function compress256(state: usize, block: usize, nblocks: usize): void {
  let a = load<u32>(state, 0), b = load<u32>(state, 4), c = load<u32>(state, 8), d = load<u32>(state, 12);
  let e = load<u32>(state, 16), f = load<u32>(state, 20), g = load<u32>(state, 24), h = load<u32>(state, 28);
  const W = SCHEDULE256;
  for (let n: usize = 0; n < nblocks; n++, block += 64) {
    for (let t: usize = 0; t < 16; t++) store<u32>(W + (t << 2), load32be(block + (t << 2)));
    for (let t: usize = 16; t < 64; t++) {
      const p = W + (t << 2);
      const w15 = load<u32>(p - 60);
      const w2 = load<u32>(p - 8);
      const s0 = rotr<u32>(w15, 7) ^ rotr<u32>(w15, 18) ^ (w15 >> 3);
      const s1 = rotr<u32>(w2, 17) ^ rotr<u32>(w2, 19) ^ (w2 >> 10);
      store<u32>(p, load<u32>(p - 64) + s0 + load<u32>(p - 28) + s1);
    }
    for (let t: usize = 0; t < 64; t += 8) {
      const k = K256 + (t << 2);
      const w = W + (t << 2);
      h += (rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25)) + (g ^ (e & (f ^ g))) + load<u32>(k, 0) + load<u32>(w, 0);
      d += h;
      h += (rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22)) + ((a & b) | (c & (a | b)));
      g += (rotr<u32>(d, 6) ^ rotr<u32>(d, 11) ^ rotr<u32>(d, 25)) + (f ^ (d & (e ^ f))) + load<u32>(k, 4) + load<u32>(w, 4);
      c += g;
      g += (rotr<u32>(h, 2) ^ rotr<u32>(h, 13) ^ rotr<u32>(h, 22)) + ((h & a) | (b & (h | a)));
      f += (rotr<u32>(c, 6) ^ rotr<u32>(c, 11) ^ rotr<u32>(c, 25)) + (e ^ (c & (d ^ e))) + load<u32>(k, 8) + load<u32>(w, 8);
      b += f;
      f += (rotr<u32>(g, 2) ^ rotr<u32>(g, 13) ^ rotr<u32>(g, 22)) + ((g & h) | (a & (g | h)));
      e += (rotr<u32>(b, 6) ^ rotr<u32>(b, 11) ^ rotr<u32>(b, 25)) + (d ^ (b & (c ^ d))) + load<u32>(k, 12) + load<u32>(w, 12);
      a += e;
      e += (rotr<u32>(f, 2) ^ rotr<u32>(f, 13) ^ rotr<u32>(f, 22)) + ((f & g) | (h & (f | g)));
      d += (rotr<u32>(a, 6) ^ rotr<u32>(a, 11) ^ rotr<u32>(a, 25)) + (c ^ (a & (b ^ c))) + load<u32>(k, 16) + load<u32>(w, 16);
      h += d;
      d += (rotr<u32>(e, 2) ^ rotr<u32>(e, 13) ^ rotr<u32>(e, 22)) + ((e & f) | (g & (e | f)));
      c += (rotr<u32>(h, 6) ^ rotr<u32>(h, 11) ^ rotr<u32>(h, 25)) + (b ^ (h & (a ^ b))) + load<u32>(k, 20) + load<u32>(w, 20);
      g += c;
      c += (rotr<u32>(d, 2) ^ rotr<u32>(d, 13) ^ rotr<u32>(d, 22)) + ((d & e) | (f & (d | e)));
      b += (rotr<u32>(g, 6) ^ rotr<u32>(g, 11) ^ rotr<u32>(g, 25)) + (a ^ (g & (h ^ a))) + load<u32>(k, 24) + load<u32>(w, 24);
      f += b;
      b += (rotr<u32>(c, 2) ^ rotr<u32>(c, 13) ^ rotr<u32>(c, 22)) + ((c & d) | (e & (c | d)));
      a += (rotr<u32>(f, 6) ^ rotr<u32>(f, 11) ^ rotr<u32>(f, 25)) + (h ^ (f & (g ^ h))) + load<u32>(k, 28) + load<u32>(w, 28);
      e += a;
      a += (rotr<u32>(b, 2) ^ rotr<u32>(b, 13) ^ rotr<u32>(b, 22)) + ((b & c) | (d & (b | c)));

    }
    // The chaining value is kept in memory rather than in eight more locals (register pressure).
    a += load<u32>(state, 0); b += load<u32>(state, 4); c += load<u32>(state, 8); d += load<u32>(state, 12);
    e += load<u32>(state, 16); f += load<u32>(state, 20); g += load<u32>(state, 24); h += load<u32>(state, 28);
    store<u32>(state, a, 0); store<u32>(state, b, 4); store<u32>(state, c, 8); store<u32>(state, d, 12);
    store<u32>(state, e, 16); store<u32>(state, f, 20); store<u32>(state, g, 24); store<u32>(state, h, 28);
  }
}
