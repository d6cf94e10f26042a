// AES-256-GCM (NIST SP 800-38D) and AES-256-GCM-SIV (RFC 8452) built from the constant-time AES
// core (./aes) and GHASH/POLYVAL (../polyval-ghash/polyval), 12-byte nonces and 16-byte tags only.
//
// Two forms share this code:
//   - one-shot seal/open of a record held wholly in kernel memory (the per-record path, also batched);
//   - a stream of calls for messages larger than IN: begin → absorb… → tag / set-tag → ctr… → check,
//     all inside one synchronous facade call (the state lives in AEAD_SCRATCH between the calls and
//     is wiped by aeadWipe at the end).
// Opening never releases plaintext that failed authentication: GCM verifies before decrypting;
// GCM-SIV (which authenticates the plaintext) decrypts, verifies, and zeroes the output on failure.
// Tags are compared without data-dependent branches; only the public verdict is branched on.

import { AES_RK, AES_RK_BYTES, AEAD_SCRATCH, AEAD_SCRATCH_BYTES } from '../common/layout';
import { AES256_RK_BYTES, aes256ExpandKey, aes256EncryptBlocks, aes256Ctr, wipeAes } from './aes';
import { AES256_VP_RK_BYTES, aes256VpExpandKey, aes256VpEncryptBlocks, wipeVperm } from './aes-vperm';
import {
  polyvalInit, polyvalUpdate, polyvalFinal, ghashInit, ghashUpdate, ghashFinal, wipePoly,
} from '../polyval-ghash/polyval';

export const MODE_GCM: u32 = 0;
export const MODE_GCMSIV: u32 = 1;

// The key blob at AES_RK (made by expandKeyBlob, kept by the facade's keyed form and copied in for
// each call): the bitsliced round keys (./aes) for passes of up to 8 blocks; in the SIMD build the
// vector-permutation round keys (./aes-vperm) for single blocks and short messages (see below);
// GHASH's H = E_K(0^128). With H and the one-block cipher kept per key, a GCM record costs one vperm
// block for E_K(J0) (~125 ns) instead of a bitsliced pass for H and E_K(J0) (~375 ns).
/** Offset of the vperm round keys in the blob (SIMD build; none in the scalar build). */
const BLOB_VP: usize = AES256_RK_BYTES;
/** Offset of H in the blob. */
const BLOB_H: usize = BLOB_VP + (ASC_FEATURE_SIMD ? AES256_VP_RK_BYTES : 0);
/** Bytes of the key blob: 2176 in the SIMD build, 976 in the scalar build (≤ AES_RK_BYTES). */
export const KEY_BLOB_BYTES: usize = BLOB_H + 16;
// The blob must fit its region (checked when the module starts: a trap, never a silent overrun).
if (KEY_BLOB_BYTES > AES_RK_BYTES) unreachable();

// AEAD_SCRATCH layout.
const RK2: usize = AEAD_SCRATCH; //          2048: GCM-SIV per-nonce encryption key, expanded
const DERIVE: usize = AEAD_SCRATCH + 2048; //   96: six derivation blocks (GCM-SIV)
const KEYS: usize = AEAD_SCRATCH + 2144; //     48: GCM-SIV auth key (16) ‖ enc key (32)
const EJ0: usize = AEAD_SCRATCH + 2192; //      16: GCM E_K(J0)
const ACC: usize = AEAD_SCRATCH + 2208; //      16: GHASH/POLYVAL result S
const TAG: usize = AEAD_SCRATCH + 2224; //      16: computed tag
const CTR0: usize = AEAD_SCRATCH + 2240; //     16: first counter block of the message
const CTR: usize = AEAD_SCRATCH + 2256; //      16: counter block of the current chunk
const BLOCK: usize = AEAD_SCRATCH + 2272; //    16: zero-padded partial block, lengths block
const NONCE: usize = AEAD_SCRATCH + 2288; //    16: the nonce (12 bytes used)
const STATE: usize = AEAD_SCRATCH + 2304; //     8: u32 mode
const RECV: usize = AEAD_SCRATCH + 2312; //     16: received tag (GCM-SIV opening)
const USED: usize = 2328;
// SIMD build: the GCM-SIV per-nonce encryption key also in the vector-permutation format (./aes-vperm),
// for the one tag block: one vperm block (~120 ns) plus its key expansion (~110 ns) against a whole
// bitsliced pass (~375 ns); the raw 115-byte seal measured ~130 ns faster (2.84 → 2.72 µs, interleaved).
const VP_RK: usize = AEAD_SCRATCH + 2400; //    240: AES256_VP_RK_BYTES
/** SIMD build: up to SHORT_BLOCKS counter blocks, then their keystream (vpCtr). */
const KS: usize = AEAD_SCRATCH + 2640; //       256
/** Bytes of AEAD_SCRATCH written, from its start: through KS in the SIMD build. */
const WIPE_BYTES: usize = ASC_FEATURE_SIMD ? 2640 + 256 : USED;

// Short messages (SIMD build). A bitsliced pass costs the same for 1 to 8 blocks, and a bitsliced
// key expansion more than a vperm one, while the vperm cipher costs per pair of blocks. So for a
// message of at most SHORT_BLOCKS blocks whose key is not expanded bitsliced already, CTR runs on
// the vperm keys: GCM-SIV's per-nonce key (vperm-expanded anyway for the tag) needs no bitsliced
// expansion, and the one-shot form expands its key for vperm only (KEY_VP_ONLY): GCM's H and
// E_K(J0) are then one 2-block call and GCM-SIV's six derivation blocks three. Keyed GCM, whose
// bitsliced keys are at hand, takes vperm CTR up to 8 blocks. Measured in one process, seal, 16-B
// AAD, on a loaded 2-core host (vperm form / bitsliced form of one more byte): one-shot GCM-SIV
// 2,510 / 3,138 ns at 128 B and 3,491 / 3,789 at 256 B; one-shot GCM 1,923 / 2,521 and 2,904 /
// 3,180; keyed GCM-SIV 1,807 / 2,227 and 3,617 / 3,729; keyed GCM 1,294 / 1,428 at 128 B but
// 3,058 / 2,760 at 256 B.
/** Messages of at most this many blocks take the vperm paths above. */
export const SHORT_BLOCKS: usize = 16;
/** Keyed GCM (bitsliced keys at hand) takes vperm CTR up to this many bytes. */
const KEYED_GCM_SHORT_BYTES: i64 = 128;
/** Key forms at AES_RK for aeadBegin: the whole blob, or (SIMD one-shot, short message) vperm keys only. */
export const KEY_BLOB: u32 = 0;
export const KEY_VP_ONLY: u32 = 1;
/** STATE + 4: 1 when CTR runs on vperm keys (vpCtr). */
const CTR_VP: usize = STATE + 4;

/** Zeroes everything the AEAD layer and the cores below it may hold. */
export function aeadWipe(): void {
  memory.fill(AEAD_SCRATCH, 0, WIPE_BYTES < AEAD_SCRATCH_BYTES ? WIPE_BYTES : AEAD_SCRATCH_BYTES);
  wipeAes();
  wipeVperm();
  wipePoly();
}

/**
 * Expands the 32-byte key at `key` into the key blob at `blob` (see above). With `gcmParts` false
 * only the bitsliced round keys are written (all GCM-SIV needs: its master key only derives the
 * per-nonce keys, one bitsliced pass). `key` may lie in IN and must not overlap `blob` (it is read
 * again after the bitsliced keys are written). Constant time.
 */
export function expandKeyBlob(key: usize, blob: usize, gcmParts: bool): void {
  aes256ExpandKey(key, blob);
  if (!gcmParts) return;
  memory.fill(BLOCK, 0, 16);
  if (ASC_FEATURE_SIMD) {
    aes256VpExpandKey(key, blob + BLOB_VP);
    aes256VpEncryptBlocks(blob + BLOB_VP, BLOCK, blob + BLOB_H, 1);
  } else {
    aes256EncryptBlocks(blob, BLOCK, blob + BLOB_H, 1);
  }
}

/** SIMD build: the vperm round keys of the key at `key` alone, where the blob keeps them (KEY_VP_ONLY). */
export function expandKeyVpOnly(key: usize, blob: usize): void {
  if (ASC_FEATURE_SIMD) aes256VpExpandKey(key, blob + BLOB_VP);
}

/** True when a message of `len` bytes takes the short vperm paths (SIMD build). */
export function isShort(len: u64): bool {
  return ASC_FEATURE_SIMD && len <= <u64>(SHORT_BLOCKS << 4);
}

/**
 * SIMD build: dst = src ⊕ keystream for `len` ≤ 16·SHORT_BLOCKS bytes under the vperm keys at `rk`,
 * counter blocks from CTR (GCM: inc32 big-endian on bytes 12..15; GCM-SIV: little-endian on 0..3).
 */
function vpCtr(rk: usize, src: usize, dst: usize, len: usize, littleEndian: bool): void {
  if (len > SHORT_BLOCKS << 4) unreachable(); // KS holds SHORT_BLOCKS blocks: never past it
  const n = (len + 15) >> 4;
  for (let i: usize = 0; i < n; i++) {
    const b = KS + (i << 4);
    memory.copy(b, CTR, 16);
    if (littleEndian) store<u32>(b, load<u32>(CTR) + <u32>i);
    else store<u32>(b + 12, bswap<u32>(bswap<u32>(load<u32>(CTR + 12)) + <u32>i));
  }
  aes256VpEncryptBlocks(rk, KS, KS, n);
  let i: usize = 0;
  for (; i + 8 <= len; i += 8) store<u64>(dst + i, load<u64>(src + i) ^ load<u64>(KS + i));
  for (; i < len; i++) store<u8>(dst + i, load<u8>(src + i) ^ load<u8>(KS + i));
}

/** One block under the key blob at AES_RK: vperm in the SIMD build, a bitsliced pass in the scalar one. */
function blobEncryptBlock(src: usize, dst: usize): void {
  if (ASC_FEATURE_SIMD) aes256VpEncryptBlocks(AES_RK + BLOB_VP, src, dst, 1);
  else aes256EncryptBlocks(AES_RK, src, dst, 1);
}

// @ts-ignore: decorator
@inline function mode(): u32 {
  return load<u32>(STATE);
}

/** Absorbs `len` bytes at `p` into the MAC, zero-padding a final partial block. */
function macBytes(p: usize, len: usize): void {
  const full = len >> 4;
  const rest = len & 15;
  const gcm = mode() == MODE_GCM;
  if (full > 0) {
    if (gcm) ghashUpdate(p, full);
    else polyvalUpdate(p, full);
  }
  if (rest != 0) {
    memory.fill(BLOCK, 0, 16);
    memory.copy(BLOCK, p + (full << 4), rest);
    if (gcm) ghashUpdate(BLOCK, 1);
    else polyvalUpdate(BLOCK, 1);
  }
}

/**
 * Starts a message under the key blob at AES_RK with the nonce of `nonceLen` bytes at `nonce`.
 * GCM: H = E_K(0^128) from the blob; E_K(J0) by the blob's one-block cipher; J0 = nonce ‖ 0^31 ‖ 1 for a 12-byte nonce, else GHASH_H(nonce ‖ 0^s ‖
 * [0]64 ‖ [len(nonce)]64) (SP 800-38D §7.1 step 2); the first counter block is inc32(J0).
 * GCM-SIV (12-byte nonce only): the RFC 8452 §4 key derivation (six blocks le32(i) ‖ nonce, first
 * halves kept), the per-nonce encryption key expanded, in the SIMD build, into VP_RK (for the tag
 * block, and for CTR of a short message), and into RK2 for CTR otherwise.
 * `keyForm` KEY_VP_ONLY (the one-shot form of a short message, SIMD build, 12-byte nonce): only the
 * blob's vperm keys are there. `msgLen`: the message's length when known (else -1), for the short paths.
 */
export function aeadBegin(m: u32, nonce: usize, nonceLen: usize, keyForm: u32 = KEY_BLOB, msgLen: i64 = -1): void {
  store<u32>(STATE, m);
  store<u32>(CTR_VP, 0);
  memory.fill(NONCE, 0, 16);
  memory.copy(NONCE, nonce, nonceLen < 12 ? nonceLen : 12);
  // Only the SIMD build's one-shot form of a 12-byte nonce passes KEY_VP_ONLY: anything else traps.
  if (keyForm == KEY_VP_ONLY && (!ASC_FEATURE_SIMD || (m == MODE_GCM && nonceLen != 12))) unreachable();
  if (m == MODE_GCM && keyForm == KEY_VP_ONLY) {
    // One-shot, short message, 12-byte nonce (the caller's choice): H and E_K(J0) in one 2-block call.
    memory.fill(DERIVE, 0, 32);
    memory.copy(DERIVE + 16, nonce, 12);
    store<u32>(DERIVE + 28, bswap<u32>(1));
    memory.copy(CTR0, DERIVE + 16, 16); // J0
    aes256VpEncryptBlocks(AES_RK + BLOB_VP, DERIVE, DERIVE, 2);
    ghashInit(DERIVE);
    memory.copy(EJ0, DERIVE + 16, 16);
    store<u32>(CTR0 + 12, bswap<u32>(bswap<u32>(load<u32>(CTR0 + 12)) + 1));
    store<u32>(CTR_VP, 1);
  } else if (m == MODE_GCM) {
    memory.fill(CTR0, 0, 16);
    const h = AES_RK + BLOB_H; // H = E_K(0^128), kept in the key blob
    if (nonceLen == 12) {
      memory.copy(CTR0, nonce, 12);
      store<u32>(CTR0 + 12, bswap<u32>(1)); // J0
    } else {
      ghashInit(h);
      macBytes(nonce, nonceLen);
      store<u64>(BLOCK, 0);
      store<u64>(BLOCK + 8, bswap<u64>(<u64>nonceLen << 3));
      ghashUpdate(BLOCK, 1);
      ghashFinal(CTR0); // J0
    }
    ghashInit(h); // a fresh accumulator for the message
    blobEncryptBlock(CTR0, EJ0); // E_K(J0)
    // The bitsliced keys are at hand here: vperm CTR wins up to 8 blocks only (measured).
    if (ASC_FEATURE_SIMD && msgLen >= 0 && msgLen <= KEYED_GCM_SHORT_BYTES) store<u32>(CTR_VP, 1);
    // The message's first counter block is inc32(J0) (SP 800-38D §7.1 step 5).
    store<u32>(CTR0 + 12, bswap<u32>(bswap<u32>(load<u32>(CTR0 + 12)) + 1));
  } else {
    for (let i: u32 = 0; i < 6; i++) {
      const b = DERIVE + (<usize>i << 4);
      store<u32>(b, i);
      memory.copy(b + 4, nonce, 12);
    }
    if (keyForm == KEY_VP_ONLY) aes256VpEncryptBlocks(AES_RK + BLOB_VP, DERIVE, DERIVE, 6);
    else aes256EncryptBlocks(AES_RK, DERIVE, DERIVE, 6);
    for (let i: usize = 0; i < 6; i++) store<u64>(KEYS + (i << 3), load<u64>(DERIVE + (i << 4)));
    if (ASC_FEATURE_SIMD) aes256VpExpandKey(KEYS + 16, VP_RK);
    if (msgLen >= 0 && isShort(<u64>msgLen)) store<u32>(CTR_VP, 1);
    else aes256ExpandKey(KEYS + 16, RK2);
    polyvalInit(KEYS);
  }
  memory.fill(DERIVE, 0, 96);
}

/** Absorbs AAD or message bytes into the MAC (all AAD first; chunks are whole blocks but the last). */
export function aeadAbsorb(p: usize, len: usize): void {
  macBytes(p, len);
}

/**
 * Finishes the MAC with the lengths block and writes the tag to TAG and `out`.
 * GCM: T = E_K(J0) ⊕ GHASH(… ‖ [len(A)]64 ‖ [len(C)]64), big-endian bit lengths.
 * GCM-SIV: S = POLYVAL(… ‖ le64(len(A)) ‖ le64(len(P))), S[0..12) ⊕= nonce, S[15] &= 0x7f,
 * T = AES(encKey, S); the counter base becomes T with its top bit set.
 */
export function aeadTag(aadLen: u64, msgLen: u64, out: usize): void {
  if (mode() == MODE_GCM) {
    store<u64>(BLOCK, bswap<u64>(aadLen << 3));
    store<u64>(BLOCK + 8, bswap<u64>(msgLen << 3));
    ghashUpdate(BLOCK, 1);
    ghashFinal(ACC);
    store<u64>(TAG, load<u64>(ACC) ^ load<u64>(EJ0));
    store<u64>(TAG + 8, load<u64>(ACC + 8) ^ load<u64>(EJ0 + 8));
  } else {
    store<u64>(BLOCK, aadLen << 3);
    store<u64>(BLOCK + 8, msgLen << 3);
    polyvalUpdate(BLOCK, 1);
    polyvalFinal(ACC);
    store<u64>(ACC, load<u64>(ACC) ^ load<u64>(NONCE));
    store<u32>(ACC + 8, load<u32>(ACC + 8) ^ load<u32>(NONCE + 8));
    store<u8>(ACC + 15, load<u8>(ACC + 15) & 0x7f);
    // One block: the vperm cipher in the SIMD build (a bitsliced call would cost a full pass).
    if (ASC_FEATURE_SIMD) aes256VpEncryptBlocks(VP_RK, ACC, TAG, 1);
    else aes256EncryptBlocks(RK2, ACC, TAG, 1);
    setSivCounter(TAG);
  }
  memory.copy(out, TAG, 16);
}

function setSivCounter(tag: usize): void {
  memory.copy(CTR0, tag, 16);
  store<u8>(CTR0 + 15, load<u8>(CTR0 + 15) | 0x80);
}

/** GCM-SIV opening: the counter starts from the received tag (RFC 8452 §5). */
export function aeadSetTag(tag: usize): void {
  setSivCounter(tag);
}

/**
 * XORs keystream into `len` bytes src → dst, starting `blockOffset` blocks into the message
 * (GCM: inc32 big-endian on bytes 12..15; GCM-SIV: little-endian on bytes 0..3; both mod 2^32).
 */
export function aeadCtr(src: usize, dst: usize, len: usize, blockOffset: u32): void {
  memory.copy(CTR, CTR0, 16);
  const vp = ASC_FEATURE_SIMD && load<u32>(CTR_VP) == 1; // a short message (set by aeadBegin)
  if (mode() == MODE_GCM) {
    store<u32>(CTR + 12, bswap<u32>(bswap<u32>(load<u32>(CTR + 12)) + blockOffset));
    if (vp) vpCtr(AES_RK + BLOB_VP, src, dst, len, false);
    else aes256Ctr(AES_RK, CTR, src, dst, len, false);
  } else {
    store<u32>(CTR, load<u32>(CTR) + blockOffset);
    if (vp) vpCtr(VP_RK, src, dst, len, true);
    else aes256Ctr(RK2, CTR, src, dst, len, true);
  }
}

/** Constant-time comparison of TAG with the 16 bytes at `tag`: 1 when equal, else 0. */
export function aeadTagEquals(tag: usize): i32 {
  const d = (load<u64>(TAG) ^ load<u64>(tag)) | (load<u64>(TAG + 8) ^ load<u64>(tag + 8));
  // (d | −d) has its top bit set exactly when d ≠ 0.
  return <i32>(((d | (0 - d)) >> 63) ^ 1);
}

/** Seals one record: out = ciphertext (ptLen bytes) ‖ tag. `out` may equal `pt`. */
export function aeadSeal(m: u32, nonce: usize, nonceLen: usize, aad: usize, aadLen: usize, pt: usize, ptLen: usize, out: usize, keyForm: u32 = KEY_BLOB): void {
  aeadBegin(m, nonce, nonceLen, keyForm, <i64>ptLen);
  macBytes(aad, aadLen);
  if (m == MODE_GCM) {
    aeadCtr(pt, out, ptLen, 0);
    macBytes(out, ptLen);
    aeadTag(aadLen, ptLen, out + ptLen);
  } else {
    macBytes(pt, ptLen);
    aeadTag(aadLen, ptLen, out + ptLen);
    aeadCtr(pt, out, ptLen, 0);
  }
}

/**
 * Opens one record: `ct` holds ctLen ciphertext bytes followed by the 16-byte tag. Writes ctLen
 * plaintext bytes to `out` and returns 1, or returns 0 with `out` zeroed. `out` may equal `ct`.
 */
export function aeadOpen(m: u32, nonce: usize, nonceLen: usize, aad: usize, aadLen: usize, ct: usize, ctLen: usize, out: usize, keyForm: u32 = KEY_BLOB): i32 {
  aeadBegin(m, nonce, nonceLen, keyForm, <i64>ctLen);
  macBytes(aad, aadLen);
  const tag = ct + ctLen;
  let ok: i32;
  if (m == MODE_GCM) {
    macBytes(ct, ctLen);
    aeadTag(aadLen, ctLen, BLOCK);
    ok = aeadTagEquals(tag);
    if (ok) aeadCtr(ct, out, ctLen, 0); // only authenticated ciphertext is ever decrypted
  } else {
    memory.copy(RECV, tag, 16); // kept aside: `out` may overlap the input
    aeadSetTag(RECV);
    aeadCtr(ct, out, ctLen, 0);
    macBytes(out, ctLen);
    aeadTag(aadLen, ctLen, BLOCK);
    ok = aeadTagEquals(RECV);
  }
  if (!ok) memory.fill(out, 0, ctLen);
  return ok;
}
