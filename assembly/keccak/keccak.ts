// Keccak sponge (FIPS 202 §4, §5.1 pad10*1, §6): SHA3-256, SHA3-512, SHAKE128 and SHAKE256, incremental,
// over a context the caller owns in linear memory (as assembly/sha2/hash.ts does for SHA-2).
//
// Context layout (KECCAK_CTX_BYTES = 208, all fields native = little-endian byte order):
//   [0, 200)    Keccak state, 25 u64 lanes (see _f1600.ts); message bytes are XORed straight into it
//   [200, 204)  u32 position: absorbing, bytes of the current block absorbed (0 ≤ pos < rate);
//               squeezing, bytes of the current output block already returned (0 ≤ pos ≤ rate; pos =
//               rate means the next output byte needs a permutation first)
//   [204, 206)  u16 rate in bytes (a multiple of 8, 8..192)
//   [206]       domain-separation byte: the suffix bits and the first padding bit, 0x06 for SHA-3,
//               0x1f for SHAKE (FIPS 202 §6.1, §6.2, with pad10*1's first 1 bit included)
//   [207]       flags: 1 once the message is padded (squeezing), 0 while absorbing
// A context is plain bytes: a facade may copy it out and back in to hash a stream across calls.
// KECCAK_CTX_BYTES fits the shared CTX / CTX2 regions of assembly/common/layout.ts (256 bytes).
//
// Example (ML-KEM's XOF, FIPS 203 §4.1: SHAKE128 over ρ ‖ j ‖ i, squeezed block by block):
//   keccakInit(ctx, SHAKE128_RATE, DS_SHAKE);
//   keccakAbsorb(ctx, seed, 34);
//   keccakSqueeze(ctx, buf, 3 * 168);   // … and again while SampleNTT needs more bytes
//   keccakWipeCtx(ctx);
// SHA3-256 in one call: keccakHash(SHA3_256_RATE, DS_SHA3, msg, msgLen, out, 32).
//
//   function       rate  ds     output
//   SHA3-256        136  0x06   32 bytes (keccakDigest with len 32)
//   SHA3-512         72  0x06   64 bytes
//   SHAKE128        168  0x1f   any length, squeezable across calls
//   SHAKE256        136  0x1f   any length, squeezable across calls
//
// Security caveats: timing depends on the lengths (absorbed, squeezed, and where calls split a
// stream), never on the bytes. The kernel does not check its arguments (the facade does): rate and
// ds must be one of the rows above (or another rate that is a multiple of 8 from 8 to 192), and
// keccakAbsorb must not be called after the first keccakSqueeze on a context. Contexts hold secret
// state (e.g. ML-KEM seeds): keccakDigest zeroes its context; after squeezing an XOF the caller
// zeroes the context (keccakWipeCtx). The kernel's only private memory is KECCAK_SCRATCH (one
// context for the one-shot keccakHash), zeroed before keccakHash returns and by wipeKeccak.

import { keccakF1600, keccakF1600x2 } from './_f1600';
export { keccakF1600, keccakF1600x2 };

/** Bytes a caller reserves for one context. */
export const KECCAK_CTX_BYTES: usize = 208;

export const SHA3_256_RATE: u32 = 136;
export const SHA3_512_RATE: u32 = 72;
export const SHAKE128_RATE: u32 = 168;
export const SHAKE256_RATE: u32 = 136;
/** Domain byte for SHA3-* (suffix 01, then the first padding bit). */
export const DS_SHA3: u32 = 0x06;
/** Domain byte for SHAKE* (suffix 1111, then the first padding bit). */
export const DS_SHAKE: u32 = 0x1f;

const C_POS: usize = 200;
const C_RATE: usize = 204;
const C_DS: usize = 206;
const C_FLAGS: usize = 207;

/** Kernel-private scratch: one context, used by keccakHash (208 bytes). */
export const KECCAK_SCRATCH_BYTES: usize = KECCAK_CTX_BYTES;
export const KECCAK_SCRATCH: usize = memory.data(<i32>KECCAK_SCRATCH_BYTES, 64);

/** Zeroes the Keccak kernel's private scratch. */
export function wipeKeccak(): void {
  memory.fill(KECCAK_SCRATCH, 0, KECCAK_SCRATCH_BYTES);
}

/** Zeroes the context at `ctx` (all KECCAK_CTX_BYTES). */
export function keccakWipeCtx(ctx: usize): void {
  for (let i: usize = 0; i < KECCAK_CTX_BYTES; i += 8) store<u64>(ctx + i, 0);
}

/** dst[0, len) ^= src[0, len): eight bytes at a time, then bytes. Unaligned pointers are fine. */
// @ts-ignore: decorator
@inline function xorInto(dst: usize, src: usize, len: usize): void {
  let i: usize = 0;
  for (; i + 8 <= len; i += 8) store<u64>(dst + i, load<u64>(dst + i) ^ load<u64>(src + i));
  for (; i < len; i++) store<u8>(dst + i, load<u8>(dst + i) ^ load<u8>(src + i));
}

/** dst[0, len) = src[0, len) for non-overlapping ranges: eight bytes at a time, then bytes. */
// @ts-ignore: decorator
@inline function copyOut(dst: usize, src: usize, len: usize): void {
  let i: usize = 0;
  for (; i + 8 <= len; i += 8) store<u64>(dst + i, load<u64>(src + i));
  for (; i < len; i++) store<u8>(dst + i, load<u8>(src + i));
}

/**
 * Resets `ctx` to absorb a new message for the sponge with `rateBytes` and domain byte `dsByte`
 * (see the table above; e.g. keccakInit(ctx, SHAKE128_RATE, DS_SHAKE)).
 */
export function keccakInit(ctx: usize, rateBytes: u32, dsByte: u32): void {
  for (let i: usize = 0; i < 200; i += 8) store<u64>(ctx + i, 0);
  store<u32>(ctx, 0, C_POS);
  store<u16>(ctx, <u16>rateBytes, C_RATE);
  store<u8>(ctx, <u8>dsByte, C_DS);
  store<u8>(ctx, 0, C_FLAGS);
}

/**
 * Absorbs `len` bytes at `src` (FIPS 202 §4 Algorithm 8 step 6, streamed). Any split of a message
 * over calls gives the same result. Input shorter than what is left of the current block (e.g. an
 * ML-KEM seed ‖ indices) is XORed into the state with no permutation; whole blocks are XORed and
 * permuted straight from `src`. Must not be called once squeezing has begun.
 */
export function keccakAbsorb(ctx: usize, src: usize, len: usize): void {
  const rate = <usize>load<u16>(ctx, C_RATE);
  const pos = <usize>load<u32>(ctx, C_POS);
  if (pos + len < rate) {
    xorInto(ctx + pos, src, len);
    store<u32>(ctx, <u32>(pos + len), C_POS);
    return;
  }
  if (pos > 0) {
    const take = rate - pos;
    xorInto(ctx + pos, src, take);
    keccakF1600(ctx);
    src += take;
    len -= take;
  }
  while (len >= rate) {
    for (let i: usize = 0; i < rate; i += 8) store<u64>(ctx + i, load<u64>(ctx + i) ^ load<u64>(src + i));
    keccakF1600(ctx);
    src += rate;
    len -= rate;
  }
  xorInto(ctx, src, len);
  store<u32>(ctx, <u32>len, C_POS);
}

/** pad10*1 with the domain byte: the last block is complete, the next output needs a permutation. */
// @ts-ignore: decorator
@inline function padIfAbsorbing(ctx: usize, rate: usize): void {
  if (load<u8>(ctx, C_FLAGS) == 0) {
    const pos = <usize>load<u32>(ctx, C_POS);
    store<u8>(ctx + pos, load<u8>(ctx + pos) ^ load<u8>(ctx, C_DS));
    store<u8>(ctx + rate - 1, load<u8>(ctx + rate - 1) ^ 0x80);
    store<u32>(ctx, <u32>rate, C_POS);
    store<u8>(ctx, 1, C_FLAGS);
  }
}

/**
 * Writes the next `len` output bytes to `dst` (FIPS 202 §4 Algorithm 8 steps 7–10). The first call
 * pads the message; later calls continue the output stream, so any split of an XOF's output over
 * calls gives the same bytes. Whole rate blocks go from the state straight into `dst`. `dst` must
 * not overlap `ctx`.
 */
export function keccakSqueeze(ctx: usize, dst: usize, len: usize): void {
  const rate = <usize>load<u16>(ctx, C_RATE);
  padIfAbsorbing(ctx, rate);
  let pos = <usize>load<u32>(ctx, C_POS);
  if (pos < rate) {
    const take = rate - pos < len ? rate - pos : len;
    copyOut(dst, ctx + pos, take);
    pos += take;
    dst += take;
    len -= take;
  }
  while (len >= rate) {
    keccakF1600(ctx);
    copyOut(dst, ctx, rate);
    dst += rate;
    len -= rate;
  }
  if (len > 0) {
    keccakF1600(ctx);
    copyOut(dst, ctx, len);
    pos = len;
  }
  store<u32>(ctx, <u32>pos, C_POS);
}

/** Squeezes `len` bytes to `dst` (as keccakSqueeze), then zeroes the context. */
export function keccakDigest(ctx: usize, dst: usize, len: usize): void {
  keccakSqueeze(ctx, dst, len);
  keccakWipeCtx(ctx);
}

/**
 * One shot: `outLen` bytes of the sponge (`rateBytes`, `dsByte`) over `len` bytes at `src`, to `dst`.
 * Works in KECCAK_SCRATCH and zeroes it. `dst` may equal `src` (the message is absorbed before any
 * output is written); other overlaps are not allowed.
 */
export function keccakHash(rateBytes: u32, dsByte: u32, src: usize, len: usize, dst: usize, outLen: usize): void {
  const ctx = KECCAK_SCRATCH;
  keccakInit(ctx, rateBytes, dsByte);
  keccakAbsorb(ctx, src, len);
  keccakDigest(ctx, dst, outLen);
}

/**
 * Squeezes `nblocks` whole rate blocks from each of two contexts: `nblocks` × rate bytes to `dstA`
 * and to `dstB` (e.g. ML-KEM's SampleNTT over SHAKE128 streams, or its CBD noise over SHAKE256).
 * Pads a context that is still absorbing. When both contexts have the same rate and stand at a block
 * boundary (just padded, or after whole-block squeezes) the two states are permuted together with
 * keccakF1600x2; otherwise this is keccakSqueeze on each (each with its own rate). The output is the
 * same either way. The contexts and destinations must not overlap one another.
 */
export function keccakSqueezeBlocksX2(ctxA: usize, ctxB: usize, dstA: usize, dstB: usize, nblocks: usize): void {
  const rate = <usize>load<u16>(ctxA, C_RATE);
  const rateB = <usize>load<u16>(ctxB, C_RATE);
  padIfAbsorbing(ctxA, rate);
  padIfAbsorbing(ctxB, rateB);
  if (rate != rateB || <usize>load<u32>(ctxA, C_POS) != rate || <usize>load<u32>(ctxB, C_POS) != rate) {
    keccakSqueeze(ctxA, dstA, nblocks * rate);
    keccakSqueeze(ctxB, dstB, nblocks * rateB);
    return;
  }
  for (let n: usize = 0; n < nblocks; n++) {
    keccakF1600x2(ctxA, ctxB);
    copyOut(dstA, ctxA, rate);
    copyOut(dstB, ctxB, rate);
    dstA += rate;
    dstB += rate;
  }
}
