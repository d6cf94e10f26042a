// RFC 9162 SHA-384 tree hashing facade: batched leaf hashes, node hashes, tree levels, and the
// compact-range (frontier) append and root. Leaves are packed into the kernel's IN region as
// u32 lengths ‖ leaf bytes, as many per call as fit, so 100,000 leaves take a few hundred calls.

import { sha2Kernel, type Sha2Kernel } from '../wasm/sha2';
import { sha384 } from './sha2';

export const HASH_BYTES = 48;
const LEAF_PREFIX = new Uint8Array([0x00]);

/** Leaf hash of one leaf too large for a batch, by streaming SHA-384(0x00 ‖ data). */
function bigLeafHash(data: Uint8Array): Uint8Array {
  return sha384.create().update(LEAF_PREFIX).update(data).digest();
}

/**
 * Packs leaves[start, end) into IN as u32 len[n] ‖ bytes; returns n (0 when leaves[start] alone
 * does not fit, which the caller handles by streaming). At most `maxN` leaves.
 */
function pack(k: Sha2Kernel, leaves: readonly Uint8Array[], start: number, end: number, maxN: number): number {
  let n = 0;
  let bytesUsed = 0;
  const limit = Math.min(maxN, end - start);
  while (n < limit) {
    const len = leaves[start + n].length;
    if (4 * (n + 1) + bytesUsed + len > k.IN_BYTES) break;
    bytesUsed += len;
    n++;
  }
  let p = k.IN + 4 * n;
  for (let i = 0; i < n; i++) {
    const leaf = leaves[start + i];
    k.dv.setUint32(k.IN + 4 * i, leaf.length, true);
    k.mem.set(leaf, p);
    p += leaf.length;
  }
  return n;
}

/** SHA-384 of every message, concatenated (48·n bytes), in as few kernel calls as fit. */
export function sha384Many(messages: readonly Uint8Array[]): Uint8Array {
  const k = sha2Kernel();
  const out = new Uint8Array(messages.length * HASH_BYTES);
  const maxN = Math.floor(k.OUT_BYTES / HASH_BYTES);
  for (let i = 0; i < messages.length;) {
    const n = pack(k, messages, i, messages.length, maxN);
    if (n === 0) {
      out.set(sha384(messages[i]), i * HASH_BYTES);
      i++;
      continue;
    }
    k.x.sha2_digest_batch(1, n);
    out.set(k.mem.subarray(k.OUT, k.OUT + n * HASH_BYTES), i * HASH_BYTES);
    k.mem.fill(0, k.OUT, k.OUT + n * HASH_BYTES);
    i += n;
  }
  return out;
}

/** SHA-384(0x00 ‖ leaf) of every leaf, concatenated (48·n bytes). */
export function leafHashes(leaves: readonly Uint8Array[]): Uint8Array {
  const k = sha2Kernel();
  const out = new Uint8Array(leaves.length * HASH_BYTES);
  const maxN = Math.floor(k.OUT_BYTES / HASH_BYTES);
  for (let i = 0; i < leaves.length;) {
    const n = pack(k, leaves, i, leaves.length, maxN);
    if (n === 0) {
      out.set(bigLeafHash(leaves[i]), i * HASH_BYTES);
      i++;
      continue;
    }
    k.x.merkle_leaf_hashes(n);
    out.set(k.mem.subarray(k.OUT, k.OUT + n * HASH_BYTES), i * HASH_BYTES);
    k.mem.fill(0, k.OUT, k.OUT + n * HASH_BYTES);
    i += n;
  }
  return out;
}

/** SHA-384(0x01 ‖ left ‖ right). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  const k = sha2Kernel();
  k.mem.set(left, k.IN);
  k.mem.set(right, k.IN + HASH_BYTES);
  k.x.merkle_node();
  const out = k.mem.slice(k.OUT, k.OUT + HASH_BYTES);
  k.mem.fill(0, k.OUT, k.OUT + HASH_BYTES);
  return out;
}

/** The next level up of `hashes` (48·n bytes): pairs hashed, an odd last hash carried up. */
export function levelUp(hashes: Uint8Array): Uint8Array {
  const k = sha2Kernel();
  const n = hashes.length / HASH_BYTES;
  const out = new Uint8Array(Math.ceil(n / 2) * HASH_BYTES);
  // Even-sized chunks so pairs never straddle two calls.
  const chunk = Math.floor(Math.min(k.IN_BYTES / HASH_BYTES, (2 * k.OUT_BYTES) / HASH_BYTES) / 2) * 2;
  for (let i = 0; i < n; i += chunk) {
    const m = Math.min(chunk, n - i);
    k.mem.set(hashes.subarray(i * HASH_BYTES, (i + m) * HASH_BYTES), k.IN);
    k.x.merkle_level(m);
    const outLen = Math.ceil(m / 2) * HASH_BYTES;
    out.set(k.mem.subarray(k.OUT, k.OUT + outLen), (i / 2) * HASH_BYTES);
    k.mem.fill(0, k.OUT, k.OUT + outLen);
  }
  return out;
}

/** Number of frontier entries for a tree of `count` leaves: popcount(count). */
export function frontierSize(count: number): number {
  let n = 0;
  for (let c = count; c > 0; c = Math.floor(c / 2)) n += c % 2;
  return n;
}

function loadFrontier(k: Sha2Kernel, frontier: Uint8Array, count: number): void {
  k.mem.set(frontier.subarray(0, frontierSize(count) * HASH_BYTES), k.FRONTIER);
}

function storeFrontier(k: Sha2Kernel, frontier: Uint8Array, count: number): void {
  const len = frontierSize(count) * HASH_BYTES;
  frontier.set(k.mem.subarray(k.FRONTIER, k.FRONTIER + len));
  k.mem.fill(0, k.FRONTIER, k.FRONTIER + k.FRONTIER_BYTES);
}

/**
 * Appends leaves[start, end) to the compact range `frontier` (64·48 bytes, largest subtree first)
 * of a tree with `count` leaves; mutates `frontier`, returns the new count.
 */
export function frontierAppend(
  frontier: Uint8Array,
  count: number,
  leaves: readonly Uint8Array[],
  start = 0,
  end = leaves.length,
): number {
  const k = sha2Kernel();
  for (let i = start; i < end;) {
    loadFrontier(k, frontier, count);
    const n = pack(k, leaves, i, end, Number.MAX_SAFE_INTEGER);
    if (n === 0) {
      k.mem.set(bigLeafHash(leaves[i]), k.IN);
      k.x.merkle_append_hashes(1, count);
      count += 1;
      i += 1;
    } else {
      k.x.merkle_append(n, count);
      count += n;
      i += n;
    }
    storeFrontier(k, frontier, count);
  }
  return count;
}

/** Appends leaf hashes (48 bytes each, back to back) to the compact range `frontier`; returns the new count. */
export function frontierAppendHashes(frontier: Uint8Array, count: number, hashes: Uint8Array): number {
  const k = sha2Kernel();
  const max = Math.floor(k.IN_BYTES / HASH_BYTES) * HASH_BYTES;
  for (let i = 0; i < hashes.length;) {
    const len = Math.min(max, hashes.length - i);
    loadFrontier(k, frontier, count);
    k.mem.set(hashes.subarray(i, i + len), k.IN);
    k.x.merkle_append_hashes(len / HASH_BYTES, count);
    count += len / HASH_BYTES;
    i += len;
    storeFrontier(k, frontier, count);
  }
  return count;
}

/** Root of the tree of `count` leaves whose compact range is `frontier`. */
export function frontierRoot(frontier: Uint8Array, count: number): Uint8Array {
  const k = sha2Kernel();
  loadFrontier(k, frontier, count);
  k.x.merkle_root(count);
  k.mem.fill(0, k.FRONTIER, k.FRONTIER + k.FRONTIER_BYTES);
  const out = k.mem.slice(k.OUT, k.OUT + HASH_BYTES);
  k.mem.fill(0, k.OUT, k.OUT + HASH_BYTES);
  return out;
}
