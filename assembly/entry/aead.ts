// The pqdb AES-256-GCM / AES-256-GCM-SIV (bitsliced and vperm AES, GHASH, POLYVAL) WebAssembly module: its exported operations and buffer offsets.
// ABI: `<kernel>_<op>(…lengths)`; inputs are placed at IN and the expanded key at AES_RK by the facade, results come back at
// OUT. Every operation zeroes the kernel scratch (and the part of IN it read) before it returns; the
// facade zeroes OUT and the expanded key at AES_RK after copying them out.

import { AES_RK, IN, OUT, wipeIn } from '../common/layout';
import { aes256EncryptBlocks, wipeAes } from '../aes/aes';
import { polyvalInit, polyvalUpdate, polyvalFinal, ghashInit, ghashUpdate, ghashFinal, wipePoly } from '../polyval-ghash/polyval';
import {
  KEY_BLOB_BYTES, KEY_BLOB, KEY_VP_ONLY, MODE_GCM, expandKeyBlob, expandKeyVpOnly, isShort, aeadSeal, aeadOpen, aeadBegin, aeadAbsorb, aeadTag, aeadSetTag, aeadCtr, aeadTagEquals, aeadWipe,
} from '../aes/aead';

export * from './_common';

// ---- AES-256-GCM / AES-256-GCM-SIV -------------------------------------------------------------
// Mode ids: 0 = GCM, 1 = GCM-SIV. The expanded key is placed at AES_RK by the facade before each
// operation (and zeroed by it afterwards). Records are laid out as nonce(12) ‖ aad ‖ data.

export const MEM_AES_RK: usize = AES_RK;
/** Bytes of the key blob (assembly/aes/aead.ts) the facade keeps per key and places at AES_RK. */
export const MEM_AES_RK_BYTES: usize = KEY_BLOB_BYTES;

/** OUT[0, MEM_AES_RK_BYTES) = the key blob of the 32-byte key at IN. */
export function aes_expand_key(): void {
  expandKeyBlob(IN, OUT, true);
  aeadWipe();
  wipeIn(32);
}

/**
 * Expands the one-shot key at IN into AES_RK in the form its message needs: vperm keys only for a
 * short message (SIMD build; GCM with a 12-byte nonce), else the blob (GCM-SIV: bitsliced keys only).
 */
function oneShotKey(mode: u32, nonceLen: usize, msgLen: usize): u32 {
  if (isShort(<u64>msgLen) && (mode != MODE_GCM || nonceLen == 12)) {
    expandKeyVpOnly(IN, AES_RK);
    return KEY_VP_ONLY;
  }
  expandKeyBlob(IN, AES_RK, mode == MODE_GCM);
  return KEY_BLOB;
}

/**
 * The one-shot form in one call: IN = key(32) ‖ nonce ‖ aad ‖ plaintext → OUT = ciphertext ‖ tag.
 * The key is expanded into AES_RK here (GCM-SIV: the bitsliced keys only), used and wiped with IN
 * and the scratch before returning: the expanded key never leaves the call.
 */
export function aead_seal_key(mode: u32, nonceLen: usize, aadLen: usize, ptLen: usize): void {
  const form = oneShotKey(mode, nonceLen, ptLen);
  const nonce = IN + 32;
  const aad = nonce + nonceLen;
  aeadSeal(mode, nonce, nonceLen, aad, aadLen, aad + aadLen, ptLen, OUT, form);
  memory.fill(AES_RK, 0, KEY_BLOB_BYTES);
  aeadWipe();
  wipeIn(32 + nonceLen + aadLen + ptLen);
}

/** The one-shot open in one call: IN = key(32) ‖ nonce ‖ aad ‖ ciphertext ‖ tag → OUT; as aead_open. */
export function aead_open_key(mode: u32, nonceLen: usize, aadLen: usize, ctLen: usize): i32 {
  const form = oneShotKey(mode, nonceLen, ctLen);
  const nonce = IN + 32;
  const aad = nonce + nonceLen;
  const ok = aeadOpen(mode, nonce, nonceLen, aad, aadLen, aad + aadLen, ctLen, OUT, form);
  memory.fill(AES_RK, 0, KEY_BLOB_BYTES);
  aeadWipe();
  wipeIn(32 + nonceLen + aadLen + ctLen + 16);
  return ok;
}

/** IN = nonce ‖ aad ‖ plaintext → OUT = ciphertext ‖ tag. */
export function aead_seal(mode: u32, nonceLen: usize, aadLen: usize, ptLen: usize): void {
  const aad = IN + nonceLen;
  aeadSeal(mode, IN, nonceLen, aad, aadLen, aad + aadLen, ptLen, OUT);
  aeadWipe();
  wipeIn(nonceLen + aadLen + ptLen);
}

/** IN = nonce ‖ aad ‖ ciphertext ‖ tag → OUT = plaintext; returns 1, or 0 with OUT zeroed. */
export function aead_open(mode: u32, nonceLen: usize, aadLen: usize, ctLen: usize): i32 {
  const aad = IN + nonceLen;
  const ok = aeadOpen(mode, IN, nonceLen, aad, aadLen, aad + aadLen, ctLen, OUT);
  aeadWipe();
  wipeIn(nonceLen + aadLen + ctLen + 16);
  return ok;
}

/** Batch seal: IN = (u32 aadLen, u32 ptLen) × n ‖ records → OUT = (ciphertext ‖ tag) × n. */
export function aead_seal_batch(mode: u32, n: usize): void {
  let p = IN + n * 8;
  let q = OUT;
  for (let i: usize = 0; i < n; i++) {
    const aadLen = <usize>load<u32>(IN + i * 8);
    const len = <usize>load<u32>(IN + i * 8 + 4);
    aeadSeal(mode, p, 12, p + 12, aadLen, p + 12 + aadLen, len, q);
    p += 12 + aadLen + len;
    q += len + 16;
  }
  aeadWipe();
  wipeIn(p - IN);
}

/**
 * Batch open: IN = (u32 aadLen, u32 ctLen + 16) × n ‖ records → OUT = plaintexts. Returns 0 when
 * every record verifies, else 1 + the index of the first that does not, with all of OUT zeroed.
 */
export function aead_open_batch(mode: u32, n: usize): i32 {
  let p = IN + n * 8;
  let q = OUT;
  let bad: i32 = 0;
  for (let i: usize = 0; i < n; i++) {
    const aadLen = <usize>load<u32>(IN + i * 8);
    const len = <usize>load<u32>(IN + i * 8 + 4) - 16;
    const ok = aeadOpen(mode, p, 12, p + 12, aadLen, p + 12 + aadLen, len, q);
    if (!ok && bad == 0) bad = <i32>i + 1;
    p += 12 + aadLen + len + 16;
    q += len;
  }
  if (bad != 0) memory.fill(OUT, 0, q - OUT);
  aeadWipe();
  wipeIn(p - IN);
  return bad;
}

/** Streaming: starts a message; IN = nonce. */
export function aead_begin(mode: u32, nonceLen: usize): void {
  aeadBegin(mode, IN, nonceLen);
  wipeIn(nonceLen);
}

/** Streaming: absorbs IN[0, len) (fromOut = 0) or OUT[0, len) (fromOut = 1) into the MAC. */
export function aead_absorb(len: usize, fromOut: u32): void {
  aeadAbsorb(fromOut ? OUT : IN, len);
}

/** Streaming: OUT[0, 16) = tag over everything absorbed; lengths in bytes. */
export function aead_tag(aadLen: f64, msgLen: f64): void {
  aeadTag(<u64>aadLen, <u64>msgLen, OUT);
}

/** Streaming, GCM-SIV opening: the counter starts from the received tag at IN. */
export function aead_set_tag(): void {
  aeadSetTag(IN);
}

/** Streaming: OUT[0, len) = IN[0, len) ⊕ keystream from block `blockOffset` of the message. */
export function aead_ctr(len: usize, blockOffset: u32): void {
  aeadCtr(IN, OUT, len, blockOffset);
}

/** Streaming: 1 when the received tag at IN equals the computed one (constant time). */
export function aead_check(): i32 {
  return aeadTagEquals(IN);
}

/** Streaming: zeroes all AEAD, AES and GHASH/POLYVAL state. */
export function aead_wipe(): void {
  aeadWipe();
  wipeIn(0);
}

// ---- raw primitives (known-answer tests, leakage measurements) ---------------------------------

/** OUT = AES-256 encryption of the n blocks at IN under the expanded key at AES_RK. */
export function aes_ecb(n: usize): void {
  aes256EncryptBlocks(AES_RK, IN, OUT, n);
  wipeAes();
  wipeIn(n << 4);
}

/** OUT[0, 16) = POLYVAL(H = IN[0, 16), blocks IN[16, 16 + 16n)). */
export function polyval_digest(n: usize): void {
  polyvalInit(IN);
  polyvalUpdate(IN + 16, n);
  polyvalFinal(OUT);
  wipePoly();
  wipeIn(16 + (n << 4));
}

/** OUT[0, 16) = GHASH(H = IN[0, 16), blocks IN[16, 16 + 16n)). */
export function ghash_digest(n: usize): void {
  ghashInit(IN);
  ghashUpdate(IN + 16, n);
  ghashFinal(OUT);
  wipePoly();
  wipeIn(16 + (n << 4));
}
