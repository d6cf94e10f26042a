// HMAC (FIPS 198-1, RFC 2104) and HKDF (RFC 5869) over SHA-256 / SHA-384 / SHA-512.
// Keys live only in SCRATCH (pads, hashed keys, keyed context templates), which the exported
// operations zero before returning. Nothing branches on key or message bytes.

import { HMAC_I, HMAC_O, KEY_DIGEST, PAD, DIGEST, TMP_A, TMP_B, CTX_BYTES } from '../common/layout';
import { blockBytes, digestBytes, ctxInit, ctxUpdate, ctxFinal, digestInto } from './hash';

const IPAD: u64 = 0x3636363636363636;
const OPAD: u64 = 0x5c5c5c5c5c5c5c5c;

/**
 * Keys the inner context `ictx` and outer context `octx` with `key` (RFC 2104 §2): both have
 * absorbed one block of K0 ⊕ ipad / K0 ⊕ opad.
 */
export function hmacKey(alg: u32, key: usize, keyLen: usize, ictx: usize, octx: usize): void {
  const bs = blockBytes(alg);
  if (keyLen > bs) {
    digestInto(TMP_A, alg, key, keyLen, KEY_DIGEST);
    key = KEY_DIGEST;
    keyLen = digestBytes(alg);
  }
  // K0 = key zero-padded to the block; the pads are XORed a word at a time (16 ops, not 128).
  memory.fill(PAD, 0, bs);
  memory.copy(PAD, key, keyLen);
  for (let i: usize = 0; i < bs; i += 8) store<u64>(PAD + i, load<u64>(PAD + i) ^ IPAD);
  ctxInit(ictx, alg);
  ctxUpdate(ictx, PAD, bs);
  for (let i: usize = 0; i < bs; i += 8) store<u64>(PAD + i, load<u64>(PAD + i) ^ (IPAD ^ OPAD));
  ctxInit(octx, alg);
  ctxUpdate(octx, PAD, bs);
  memory.fill(PAD, 0, bs);
  memory.fill(KEY_DIGEST, 0, 64);
}

/** Finishes HMAC: out = H(K0 ⊕ opad ‖ H(K0 ⊕ ipad ‖ m)). Zeroes both contexts. */
export function hmacFinal(ictx: usize, octx: usize, out: usize): void {
  const n = digestBytes(load<u32>(ictx, 204));
  ctxFinal(ictx, DIGEST);
  ctxUpdate(octx, DIGEST, n);
  ctxFinal(octx, out);
  memory.fill(DIGEST, 0, 64);
}

/** One-shot HMAC of `msgLen` bytes at `msg` under `keyLen` bytes at `key`. */
export function hmacInto(alg: u32, key: usize, keyLen: usize, msg: usize, msgLen: usize, out: usize): void {
  hmacKey(alg, key, keyLen, TMP_A, TMP_B);
  ctxUpdate(TMP_A, msg, msgLen);
  hmacFinal(TMP_A, TMP_B, out);
}

/**
 * HKDF-Expand (RFC 5869 §2.3): writes `outLen` ≤ 255·HashLen bytes of OKM to `out`.
 * T(i) = HMAC(PRK, T(i−1) ‖ info ‖ i); the keyed contexts are computed once and copied per block.
 */
export function hkdfExpandInto(alg: u32, prk: usize, prkLen: usize, info: usize, infoLen: usize, out: usize, outLen: usize): void {
  const hl = digestBytes(alg);
  hmacKey(alg, prk, prkLen, HMAC_I, HMAC_O);
  let prev: usize = 0;
  let done: usize = 0;
  for (let i: u32 = 1; done < outLen; i++) {
    memory.copy(TMP_A, HMAC_I, CTX_BYTES);
    memory.copy(TMP_B, HMAC_O, CTX_BYTES);
    if (prev != 0) ctxUpdate(TMP_A, prev, hl);
    ctxUpdate(TMP_A, info, infoLen);
    store<u8>(PAD, <u8>i);
    ctxUpdate(TMP_A, PAD, 1);
    const rest = outLen - done;
    if (rest >= hl) {
      hmacFinal(TMP_A, TMP_B, out + done);
      prev = out + done;
      done += hl;
    } else {
      // Last, partial block: T(i) goes to PAD + 64 (hmacFinal itself uses DIGEST), then its prefix out.
      hmacFinal(TMP_A, TMP_B, PAD + 64);
      memory.copy(out + done, PAD + 64, rest);
      done = outLen;
    }
  }
  memory.fill(HMAC_I, 0, CTX_BYTES);
  memory.fill(HMAC_O, 0, CTX_BYTES);
}
