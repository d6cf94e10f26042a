// Incremental SHA-256 / SHA-384 / SHA-512 (FIPS 180-4) over a context held in linear memory.
//
// Context layout (CTX_BYTES = 256, all fields native byte order):
//   [0, 64)    chaining state: 8 × u32 (SHA-256) or 8 × u64 (SHA-384/512)
//   [64, 192)  partial block buffer
//   [192, 200) total bytes absorbed (u64; messages are limited to 2^61 − 1 bytes)
//   [200, 204) bytes in the partial block buffer
//   [204, 208) algorithm id (ALG_SHA256 / ALG_SHA384 / ALG_SHA512)
// A context is plain bytes, so a facade can copy it out and back in to hash a stream across calls.

import { compress256 } from './sha256';
import { compress512 } from './sha512';
import { IV256, IV384, IV512 } from './_constants';

export const ALG_SHA256: u32 = 0;
export const ALG_SHA384: u32 = 1;
export const ALG_SHA512: u32 = 2;

const C_BUF: usize = 64;
const C_TOTAL: usize = 192;
const C_BUFLEN: usize = 200;
const C_ALG: usize = 204;

// @ts-ignore: decorator
@inline export function blockBytes(alg: u32): usize {
  return alg == ALG_SHA256 ? 64 : 128;
}

// @ts-ignore: decorator
@inline export function digestBytes(alg: u32): usize {
  return alg == ALG_SHA256 ? 32 : alg == ALG_SHA384 ? 48 : 64;
}

// @ts-ignore: decorator
@inline function compress(alg: u32, state: usize, block: usize, nblocks: usize): void {
  if (alg == ALG_SHA256) compress256(state, block, nblocks);
  else compress512(state, block, nblocks);
}

/** Resets the context at `ctx` to the initial hash value of `alg`. */
export function ctxInit(ctx: usize, alg: u32): void {
  memory.copy(ctx, alg == ALG_SHA256 ? IV256 : alg == ALG_SHA384 ? IV384 : IV512, alg == ALG_SHA256 ? 32 : 64);
  store<u64>(ctx, 0, C_TOTAL);
  store<u32>(ctx, 0, C_BUFLEN);
  store<u32>(ctx, alg, C_ALG);
}

/** Absorbs `len` bytes at `p`. Full blocks are compressed straight from the source. */
export function ctxUpdate(ctx: usize, p: usize, len: usize): void {
  if (len == 0) return;
  const alg = load<u32>(ctx, C_ALG);
  const bs = blockBytes(alg);
  const buf = ctx + C_BUF;
  let used = <usize>load<u32>(ctx, C_BUFLEN);
  store<u64>(ctx, load<u64>(ctx, C_TOTAL) + <u64>len, C_TOTAL);
  if (used > 0) {
    const take = bs - used < len ? bs - used : len;
    memory.copy(buf + used, p, take);
    used += take; p += take; len -= take;
    if (used < bs) { store<u32>(ctx, <u32>used, C_BUFLEN); return; }
    compress(alg, ctx, buf, 1);
    used = 0;
  }
  const full = len / bs;
  if (full > 0) {
    compress(alg, ctx, p, full);
    p += full * bs; len -= full * bs;
  }
  memory.copy(buf, p, len);
  store<u32>(ctx, <u32>len, C_BUFLEN);
}

/** Pads, writes the big-endian digest to `out` and zeroes the context. */
export function ctxFinal(ctx: usize, out: usize): void {
  const alg = load<u32>(ctx, C_ALG);
  const bs = blockBytes(alg);
  const buf = ctx + C_BUF;
  const used = <usize>load<u32>(ctx, C_BUFLEN);
  const bits = load<u64>(ctx, C_TOTAL) << 3;
  const lenBytes: usize = alg == ALG_SHA256 ? 8 : 16;
  store<u8>(buf + used, 0x80);
  if (used + 1 > bs - lenBytes) {
    memory.fill(buf + used + 1, 0, bs - used - 1);
    compress(alg, ctx, buf, 1);
    memory.fill(buf, 0, bs - 8);
  } else {
    memory.fill(buf + used + 1, 0, bs - 8 - used - 1);
  }
  store<u64>(buf + bs - 8, bswap<u64>(bits)); // high 64 bits of a 128-bit length are zero
  compress(alg, ctx, buf, 1);
  if (alg == ALG_SHA256) {
    for (let i: usize = 0; i < 32; i += 4) store<u32>(out + i, bswap<u32>(load<u32>(ctx + i)));
  } else {
    const n = digestBytes(alg);
    for (let i: usize = 0; i < n; i += 8) store<u64>(out + i, bswap<u64>(load<u64>(ctx + i)));
  }
  memory.fill(ctx, 0, 256);
}

/** One-shot digest of `len` bytes at `p` into `out`, using `ctx` as working space. */
export function digestInto(ctx: usize, alg: u32, p: usize, len: usize, out: usize): void {
  ctxInit(ctx, alg);
  ctxUpdate(ctx, p, len);
  ctxFinal(ctx, out);
}
