// The pqdb WebAssembly module: every kernel's exported operations and buffer offsets.
// ABI: `<kernel>_<op>(…lengths)`; inputs are placed at IN (and CTX/FRONTIER where noted) by the
// facade, results come back at OUT. Every operation zeroes the kernel scratch (and the part of IN it
// read) before it returns; the facade zeroes OUT, CTX and FRONTIER after copying them out.

import {
  TMP_A, AES_RK, KCTX, KECCAK_TMP, IN, IN_BYTES, OUT, OUT_BYTES, CTX, CTX2, CTX_BYTES, FRONTIER, FRONTIER_BYTES, SCRATCH, SCRATCH_BYTES, wipeScratch, wipeIn,
} from '../common/layout';
import { ctxInit, ctxUpdate, ctxFinal, digestInto, digestBytes } from '../sha2/hash';
import { hmacKey, hmacFinal, hmacInto, hkdfExpandInto } from '../sha2/hmac';
import { leafHash, nodeHash, frontierPush, frontierRoot, HASH_BYTES } from '../sha2/merkle';
import { AES256_RK_BYTES, aes256ExpandKey, aes256EncryptBlocks, wipeAes } from '../aes/aes';
import { keccakInit, keccakAbsorb, keccakSqueeze, wipeKeccak, KECCAK_CTX_BYTES } from '../keccak/keccak';
import { mlkemKeyGen, mlkemEncaps, mlkemDecaps, mlkemCheckEk, mlkemCheckDk, wipeMlkem, EK_BYTES, DK_BYTES, CT_BYTES } from '../mlkem/mlkem';
import { polyvalInit, polyvalUpdate, polyvalFinal, ghashInit, ghashUpdate, ghashFinal, wipePoly } from '../polyval-ghash/polyval';
import { aeadSeal, aeadOpen, aeadBegin, aeadAbsorb, aeadTag, aeadSetTag, aeadCtr, aeadTagEquals, aeadWipe } from '../aes/aead';

export const MEM_IN: usize = IN;
export const MEM_IN_BYTES: usize = IN_BYTES;
export const MEM_OUT: usize = OUT;
export const MEM_OUT_BYTES: usize = OUT_BYTES;
export const MEM_CTX: usize = CTX;
export const MEM_CTX2: usize = CTX2;
export const MEM_CTX_BYTES: usize = CTX_BYTES;
export const MEM_FRONTIER: usize = FRONTIER;
export const MEM_FRONTIER_BYTES: usize = FRONTIER_BYTES;
export const MEM_SCRATCH: usize = SCRATCH;
export const MEM_SCRATCH_BYTES: usize = SCRATCH_BYTES;
/** 1 when this build uses WebAssembly SIMD (v128) instructions. */
export const SIMD: i32 = ASC_FEATURE_SIMD ? 1 : 0;

// ---- SHA-2 -------------------------------------------------------------------------------------

/** OUT = H_alg(IN[0, len)). */
export function sha2_digest(alg: u32, len: usize): void {
  digestInto(TMP_A, alg, IN, len, OUT);
  wipeScratch(len);
}

/** CTX = fresh context for `alg`. */
export function sha2_init(alg: u32): void {
  ctxInit(CTX, alg);
}

/**
 * Absorbs IN[0, len) into CTX. IN is left as it is: a stream of many chunks overwrites it chunk
 * by chunk and the facade zeroes it once after the last one (one memset instead of one per chunk).
 */
export function sha2_update(len: usize): void {
  ctxUpdate(CTX, IN, len);
  wipeScratch(0);
}

/** OUT = digest of CTX; CTX zeroed. */
export function sha2_final(): void {
  ctxFinal(CTX, OUT);
  wipeScratch(0);
}

// ---- HMAC / HKDF -------------------------------------------------------------------------------

/** OUT = HMAC_alg(key = IN[0, keyLen), msg = IN[keyLen, keyLen + msgLen)). */
export function hmac_digest(alg: u32, keyLen: usize, msgLen: usize): void {
  hmacInto(alg, IN, keyLen, IN + keyLen, msgLen, OUT);
  wipeScratch(keyLen + msgLen);
}

/** CTX = inner, CTX2 = outer keyed context for key IN[0, keyLen). Stream with hmac_update. */
export function hmac_init(alg: u32, keyLen: usize): void {
  hmacKey(alg, IN, keyLen, CTX, CTX2);
  wipeScratch(keyLen);
}

/** Absorbs IN[0, len) into the inner context CTX; like sha2_update, IN is zeroed by the facade. */
export function hmac_update(len: usize): void {
  ctxUpdate(CTX, IN, len);
  wipeScratch(0);
}

/** OUT = HMAC tag from CTX/CTX2; both zeroed. */
export function hmac_final(): void {
  hmacFinal(CTX, CTX2, OUT);
  wipeScratch(0);
}

/**
 * HKDF (RFC 5869) in one call: IN = ikm ‖ salt ‖ info; OUT = OKM of `outLen` bytes.
 * An empty salt means HashLen zero bytes (§2.2), which HMAC's zero padding gives by itself.
 */
export function hkdf(alg: u32, ikmLen: usize, saltLen: usize, infoLen: usize, outLen: usize): void {
  // PRK = HMAC(salt, ikm), parked at the end of OUT (the OKM, ≤ 255·64 bytes, never reaches it).
  const prk = OUT + OUT_BYTES - 64;
  hmacInto(alg, IN + ikmLen, saltLen, IN, ikmLen, prk);
  hkdfExpandInto(alg, prk, digestBytes(alg), IN + ikmLen + saltLen, infoLen, OUT, outLen);
  memory.fill(prk, 0, 64);
  wipeScratch(ikmLen + saltLen + infoLen);
}

/** HKDF-Expand: IN = prk ‖ info; OUT = OKM of `outLen` bytes. */
export function hkdf_expand(alg: u32, prkLen: usize, infoLen: usize, outLen: usize): void {
  hkdfExpandInto(alg, IN, prkLen, IN + prkLen, infoLen, OUT, outLen);
  wipeScratch(prkLen + infoLen);
}

// ---- Merkle (RFC 9162, SHA-384) ----------------------------------------------------------------


/** OUT[d·i] = H_alg(message i) (d = digest size), for IN = u32 len[n] ‖ messages. */
export function sha2_digest_batch(alg: u32, n: usize): void {
  const d = digestBytes(alg);
  let p = IN + n * 4;
  for (let i: usize = 0; i < n; i++) {
    const len = <usize>load<u32>(IN + i * 4);
    digestInto(TMP_A, alg, p, len, OUT + i * d);
    p += len;
  }
  wipeScratch(p - IN);
}

/** OUT[48·i] = leaf hash of leaf i, for IN = u32 len[n] ‖ leaves. */
export function merkle_leaf_hashes(n: usize): void {
  let p = IN + n * 4;
  for (let i: usize = 0; i < n; i++) {
    const len = <usize>load<u32>(IN + i * 4);
    leafHash(p, len, OUT + i * HASH_BYTES);
    p += len;
  }
  wipeScratch(p - IN);
}

/** Appends the n leaves in IN (u32 len[n] ‖ leaves) to FRONTIER holding a tree of `count` leaves. */
export function merkle_append(n: usize, count: f64): void {
  let c = <u64>count;
  let p = IN + n * 4;
  for (let i: usize = 0; i < n; i++, c++) {
    const len = <usize>load<u32>(IN + i * 4);
    leafHash(p, len, OUT);
    frontierPush(OUT, c);
    p += len;
  }
  memory.fill(OUT, 0, HASH_BYTES);
  wipeScratch(p - IN);
}

/** Appends the n leaf hashes IN[48·i] to FRONTIER holding a tree of `count` leaves. */
export function merkle_append_hashes(n: usize, count: f64): void {
  let c = <u64>count;
  for (let i: usize = 0; i < n; i++, c++) frontierPush(IN + i * HASH_BYTES, c);
  wipeScratch(n * HASH_BYTES);
}

/** OUT = root of the tree of `count` leaves whose frontier is in FRONTIER. */
export function merkle_root(count: f64): void {
  frontierRoot(<u64>count, OUT);
  wipeScratch(0);
}

/** OUT = node hash of left = IN[0, 48), right = IN[48, 96). */
export function merkle_node(): void {
  nodeHash(IN, IN + HASH_BYTES, OUT);
  wipeScratch(2 * HASH_BYTES);
}

/**
 * One level up: OUT[48·j] = node(IN[96·j], IN[96·j + 48]) for the n hashes in IN; an odd last
 * hash is carried up unchanged (RFC 9162 trees are left-balanced; nothing is duplicated).
 */
export function merkle_level(n: usize): void {
  const pairs = n >> 1;
  for (let j: usize = 0; j < pairs; j++) nodeHash(IN + j * 96, IN + j * 96 + 48, OUT + j * HASH_BYTES);
  if (n & 1) memory.copy(OUT + pairs * HASH_BYTES, IN + (n - 1) * HASH_BYTES, HASH_BYTES);
  wipeScratch(n * HASH_BYTES);
}

// ---- AES-256-GCM / AES-256-GCM-SIV -------------------------------------------------------------
// Mode ids: 0 = GCM, 1 = GCM-SIV. The expanded key is placed at AES_RK by the facade before each
// operation (and zeroed by it afterwards). Records are laid out as nonce(12) ‖ aad ‖ data.

export const MEM_AES_RK: usize = AES_RK;
export const MEM_AES_RK_BYTES: usize = AES256_RK_BYTES;

/** OUT[0, AES256_RK_BYTES) = expanded key of the 32-byte key at IN. */
export function aes_expand_key(): void {
  aes256ExpandKey(IN, OUT);
  aeadWipe();
  wipeIn(32);
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

// ---- Keccak: SHA3-256/512, SHAKE128/256 ---------------------------------------------------------
// A sponge context lives at KCTX while a stream is being absorbed/squeezed; the facade keeps it
// between calls and zeroes it here after each.

export const MEM_KCTX: usize = KCTX;
export const MEM_KCTX_BYTES: usize = KECCAK_CTX_BYTES;

/** OUT[0, outLen) = Keccak[rate, ds](IN[0, len)) — SHA3 (ds 0x06) or SHAKE (ds 0x1f). */
export function keccak_hash(rate: u32, ds: u32, len: usize, outLen: usize): void {
  keccakInit(KECCAK_TMP, rate, <u8>ds);
  keccakAbsorb(KECCAK_TMP, IN, len);
  keccakSqueeze(KECCAK_TMP, OUT, outLen);
  memory.fill(KECCAK_TMP, 0, KECCAK_CTX_BYTES);
  wipeKeccak();
  wipeIn(len);
}

/** KCTX = a fresh sponge. */
export function keccak_init(rate: u32, ds: u32): void {
  keccakInit(KCTX, rate, <u8>ds);
}

/** Absorbs IN[0, len) into KCTX (IN is zeroed by the facade after the last chunk). */
export function keccak_absorb(len: usize): void {
  keccakAbsorb(KCTX, IN, len);
  wipeKeccak();
}

/** OUT[0, len) = the next `len` bytes squeezed from KCTX (padding first on the first call). */
export function keccak_squeeze(len: usize): void {
  keccakSqueeze(KCTX, OUT, len);
  wipeKeccak();
}

// ---- ML-KEM-1024 -------------------------------------------------------------------------------

/** IN = d ‖ z (64 bytes) → OUT = ek (1568) ‖ dk (3168). */
export function mlkem_keygen(): void {
  mlkemKeyGen(IN, IN + 32, OUT, OUT + EK_BYTES);
  wipeMlkemAll(64);
}

/** IN = ek (1568) ‖ m (32) → OUT = c (1568) ‖ K (32); returns 0 (no output) if ek fails §7.2. */
export function mlkem_encaps(): i32 {
  const ok = mlkemCheckEk(IN);
  if (ok) mlkemEncaps(IN, IN + EK_BYTES, OUT, OUT + CT_BYTES);
  wipeMlkemAll(EK_BYTES + 32);
  return ok;
}

/** IN = c (1568) ‖ dk (3168) → OUT = K (32); returns 0 (no output) if dk fails §7.3. */
export function mlkem_decaps(): i32 {
  const ok = mlkemCheckDk(IN + CT_BYTES);
  if (ok) mlkemDecaps(IN + CT_BYTES, IN, OUT);
  wipeMlkemAll(CT_BYTES + DK_BYTES);
  return ok;
}

/** 1 when the ek at IN passes the §7.2 modulus check. */
export function mlkem_check_ek(): i32 {
  const ok = mlkemCheckEk(IN);
  wipeMlkemAll(EK_BYTES);
  return ok;
}

/** 1 when the dk at IN passes the §7.3 hash check. */
export function mlkem_check_dk(): i32 {
  const ok = mlkemCheckDk(IN);
  wipeMlkemAll(DK_BYTES);
  return ok;
}

function wipeMlkemAll(inLen: usize): void {
  wipeMlkem();
  wipeKeccak();
  wipeIn(inLen);
}

// ---- ML-DSA-87 ---------------------------------------------------------------------------------
export * from './mldsa-exports';
