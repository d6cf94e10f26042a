// The pqdb SHA-2 (SHA-256/384/512, HMAC, HKDF, RFC 9162 Merkle) WebAssembly module: its exported operations and buffer offsets.
// ABI: `<kernel>_<op>(…lengths)`; inputs are placed at IN, CTX and FRONTIER where noted by the facade, results come back at
// OUT. Every operation zeroes the kernel scratch (and the part of IN it read) before it returns; the
// facade zeroes OUT, CTX and FRONTIER where noted after copying them out.

import { TMP_A, IN, OUT, OUT_BYTES, CTX, CTX2, CTX_BYTES, FRONTIER, FRONTIER_BYTES, SCRATCH, SCRATCH_BYTES, wipeScratch } from '../common/layout';
import { ctxInit, ctxUpdate, ctxFinal, digestInto, digestBytes } from '../sha2/hash';
import { hmacKey, hmacFinal, hmacInto, hkdfExpandInto } from '../sha2/hmac';
import { leafHash, nodeHash, frontierPush, frontierRoot, HASH_BYTES } from '../sha2/merkle';

export * from './_common';
export const MEM_CTX: usize = CTX;
export const MEM_CTX2: usize = CTX2;
export const MEM_CTX_BYTES: usize = CTX_BYTES;
export const MEM_FRONTIER: usize = FRONTIER;
export const MEM_FRONTIER_BYTES: usize = FRONTIER_BYTES;
export const MEM_SCRATCH: usize = SCRATCH;
export const MEM_SCRATCH_BYTES: usize = SCRATCH_BYTES;

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
