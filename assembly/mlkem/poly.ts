// ML-KEM polynomial arithmetic over R_q = Z_q[X]/(X^256 + 1), q = 3329 (FIPS 203 §4.3): the NTT
// and its inverse (Algorithms 9, 10), MultiplyNTTs (Algorithm 11), the byte encodings
// (Algorithms 5, 6), Compress/Decompress (§4.2.1) and the samplers' arithmetic.
//
// A polynomial is 256 coefficients stored as u16 in [0, q) (512 bytes). Reduction never branches:
// x mod q for 0 ≤ x < 2^26 is x − q·⌊x·M / 2^38⌋ with M = ⌈2^38 / q⌉ (exact on that range, checked
// by scripts/gen-mlkem-constants.mjs' companion test), and conditional subtractions are masks.
// Rounding divisions by q in Compress use the same multiply-shift, so secret coefficients
// (Decrypt's message bits) take data-independent time.

import { ZETAS, GAMMAS } from './_constants';

export const Q: i32 = 3329;
export const N: usize = 256;
export const POLY_BYTES: usize = 512;
/** ⌈2^38 / q⌉: ⌊x / q⌋ = (x · M) >> 38 for 0 ≤ x < 2^26. */
const M38: u64 = 82570715;

// @ts-ignore: decorator
@inline export function divq(x: u32): u32 {
  return <u32>((<u64>x * M38) >> 38);
}

// @ts-ignore: decorator
@inline export function modq(x: u32): i32 {
  return <i32>(x - <u32>Q * divq(x));
}

/** a − q if a ≥ q, for 0 ≤ a < 2q. */
// @ts-ignore: decorator
@inline function csubq(a: i32): i32 {
  a -= Q;
  return a + ((a >> 31) & Q);
}

// @ts-ignore: decorator
@inline function get(p: usize, i: usize): i32 {
  return <i32>load<u16>(p + (i << 1));
}

// @ts-ignore: decorator
@inline function set(p: usize, i: usize, v: i32): void {
  store<u16>(p + (i << 1), <u16>v);
}

/** In-place NTT (FIPS 203 Algorithm 9). */
export function ntt(f: usize): void {
  let k: usize = 1;
  for (let len: usize = 128; len >= 2; len >>= 1) {
    for (let start: usize = 0; start < 256; start += len << 1) {
      const zeta = <u32>load<i16>(ZETAS + (k << 1));
      k++;
      for (let j = start; j < start + len; j++) {
        const t = modq(zeta * <u32>get(f, j + len));
        const a = get(f, j);
        set(f, j + len, csubq(a - t + Q));
        set(f, j, csubq(a + t));
      }
    }
  }
}

/** In-place inverse NTT (FIPS 203 Algorithm 10), including the final scaling by 128^-1 = 3303. */
export function invNtt(f: usize): void {
  let k: usize = 127;
  for (let len: usize = 2; len <= 128; len <<= 1) {
    for (let start: usize = 0; start < 256; start += len << 1) {
      const zeta = <u32>load<i16>(ZETAS + (k << 1));
      k--;
      for (let j = start; j < start + len; j++) {
        const t = get(f, j);
        const u = get(f, j + len);
        set(f, j, csubq(t + u));
        set(f, j + len, modq(zeta * <u32>(u - t + Q)));
      }
    }
  }
  for (let j: usize = 0; j < 256; j++) set(f, j, modq(<u32>get(f, j) * 3303));
}

/** h = f ×_T g (MultiplyNTTs, Algorithm 11, with BaseCaseMultiply). `h` may alias neither. */
export function baseMul(h: usize, f: usize, g: usize): void {
  for (let i: usize = 0; i < 128; i++) {
    const a0 = <u32>get(f, 2 * i), a1 = <u32>get(f, 2 * i + 1);
    const b0 = <u32>get(g, 2 * i), b1 = <u32>get(g, 2 * i + 1);
    const gamma = <u32>load<i16>(GAMMAS + (i << 1));
    set(h, 2 * i, modq(a0 * b0 + <u32>modq(a1 * b1) * gamma));
    set(h, 2 * i + 1, modq(a0 * b1 + a1 * b0));
  }
}

/** h += f ×_T g. */
export function baseMulAcc(h: usize, f: usize, g: usize): void {
  for (let i: usize = 0; i < 128; i++) {
    const a0 = <u32>get(f, 2 * i), a1 = <u32>get(f, 2 * i + 1);
    const b0 = <u32>get(g, 2 * i), b1 = <u32>get(g, 2 * i + 1);
    const gamma = <u32>load<i16>(GAMMAS + (i << 1));
    set(h, 2 * i, modq(<u32>get(h, 2 * i) + a0 * b0 + <u32>modq(a1 * b1) * gamma));
    set(h, 2 * i + 1, modq(<u32>get(h, 2 * i + 1) + a0 * b1 + a1 * b0));
  }
}

/** r = a + b. */
export function polyAdd(r: usize, a: usize, b: usize): void {
  for (let i: usize = 0; i < 256; i++) set(r, i, csubq(get(a, i) + get(b, i)));
}

/** r = a − b. */
export function polySub(r: usize, a: usize, b: usize): void {
  for (let i: usize = 0; i < 256; i++) set(r, i, csubq(get(a, i) - get(b, i) + Q));
}

export function polyZero(r: usize): void {
  memory.fill(r, 0, POLY_BYTES);
}

/** ByteEncode_12 (Algorithm 5, d = 12): 384 bytes. */
export function encode12(out: usize, f: usize): void {
  for (let i: usize = 0; i < 128; i++) {
    const a = <u32>get(f, 2 * i), b = <u32>get(f, 2 * i + 1);
    store<u8>(out + 3 * i, <u8>a);
    store<u8>(out + 3 * i + 1, <u8>((a >> 8) | (b << 4)));
    store<u8>(out + 3 * i + 2, <u8>(b >> 4));
  }
}

/**
 * ByteDecode_12 (Algorithm 6, d = 12) reduced mod q as the standard requires for decoding; returns
 * 1 when every decoded value was already < q (the §7.2 modulus check), else 0, without branching.
 */
export function decode12(f: usize, src: usize): i32 {
  let bad: i32 = 0;
  for (let i: usize = 0; i < 128; i++) {
    const b0 = <i32>load<u8>(src + 3 * i), b1 = <i32>load<u8>(src + 3 * i + 1), b2 = <i32>load<u8>(src + 3 * i + 2);
    const a = b0 | ((b1 & 15) << 8);
    const b = (b1 >> 4) | (b2 << 4);
    bad |= ((Q - 1 - a) | (Q - 1 - b)) >> 31; // −1 when a ≥ q or b ≥ q
    set(f, 2 * i, csubq(a));
    set(f, 2 * i + 1, csubq(b));
  }
  return (bad & 1) ^ 1;
}

/** Compress_d then ByteEncode_d (d = 1, 5, 11): 32·d bytes, little-endian bit order. */
export function compressEncode(out: usize, f: usize, d: u32): void {
  let acc: u64 = 0;
  let bits: u32 = 0;
  let o = out;
  const mask: u32 = (1 << d) - 1;
  for (let i: usize = 0; i < 256; i++) {
    // round(2^d · x / q) mod 2^d = ⌊(x·2^d + ⌊q/2⌋) / q⌋ mod 2^d
    const y = divq((<u32>get(f, i) << d) + 1664) & mask;
    acc |= <u64>y << bits;
    bits += d;
    while (bits >= 8) {
      store<u8>(o++, <u8>acc);
      acc >>= 8;
      bits -= 8;
    }
  }
}

/** ByteDecode_d then Decompress_d (d = 1, 5, 11): round(q · y / 2^d). */
export function decodeDecompress(f: usize, src: usize, d: u32): void {
  let acc: u64 = 0;
  let bits: u32 = 0;
  let s = src;
  const mask: u64 = (<u64>1 << d) - 1;
  for (let i: usize = 0; i < 256; i++) {
    while (bits < d) {
      acc |= <u64>load<u8>(s++) << bits;
      bits += 8;
    }
    const y = <u32>(acc & mask);
    acc >>= d;
    bits -= d;
    set(f, i, <i32>((y * <u32>Q + (1 << (d - 1))) >> d));
  }
}

/**
 * SamplePolyCBD_η for η = 2 (Algorithm 8) from 128 bytes: f_i = (b0 + b1) − (b2 + b3) over each
 * nibble's bits, mod q.
 */
export function cbd2(f: usize, src: usize): void {
  for (let i: usize = 0; i < 32; i++) {
    const t = load<u32>(src + 4 * i) ;
    // Sum adjacent bit pairs: each 2-bit field holds b_{2j} + b_{2j+1}.
    const d = (t & 0x55555555) + ((t >> 1) & 0x55555555);
    for (let j: usize = 0; j < 8; j++) {
      const x = <i32>((d >> (4 * <u32>j)) & 3);
      const y = <i32>((d >> (4 * <u32>j + 2)) & 3);
      set(f, 8 * i + j, csubq(x - y + Q));
    }
  }
}

/**
 * SampleNTT's rejection step (Algorithm 7) over `len` bytes of XOF output at `buf`, filling `f`
 * from coefficient `have`; returns the new count (≤ 256). Runs on public data (ρ) only.
 */
export function rejectUniform(f: usize, have: usize, buf: usize, len: usize): usize {
  for (let p: usize = 0; p + 3 <= len && have < 256; p += 3) {
    const c0 = <i32>load<u8>(buf + p), c1 = <i32>load<u8>(buf + p + 1), c2 = <i32>load<u8>(buf + p + 2);
    const d1 = c0 | ((c1 & 15) << 8);
    const d2 = (c1 >> 4) | (c2 << 4);
    if (d1 < Q) set(f, have++, d1);
    if (d2 < Q && have < 256) set(f, have++, d2);
  }
  return have;
}
