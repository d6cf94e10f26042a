// RFC 9162 §2.1.1 Merkle tree hashing over SHA-384:
//   leaf = SHA-384(0x00 ‖ data), node = SHA-384(0x01 ‖ left ‖ right).
// The compact range ("frontier") holds the roots of the perfect subtrees that make up a tree of
// `count` leaves, largest first: popcount(count) entries. Appending a leaf merges equal-sized
// subtrees (O(log n)); the root folds the frontier from the right. No last leaf is ever duplicated.

import { FRONTIER, PAD, STATE, DIGEST, TMP_A } from '../common/layout';
import { compress512 } from './sha512';
import { IV384 } from './_constants';
import { ALG_SHA384, ctxInit, ctxUpdate, ctxFinal } from './hash';

export const HASH_BYTES: usize = 48;
/** Longest leaf hashed by the two-block fast path: 1 + len + 1 + 16 ≤ 256. */
const SMALL_MAX: usize = 238;

/** SHA-384 of the `n` ≤ 239 bytes already in PAD, written big-endian to `out`. */
function padHash384(n: usize, out: usize): void {
  const blocks: usize = n + 17 <= 128 ? 1 : 2;
  const end = blocks << 7;
  store<u8>(PAD + n, 0x80);
  memory.fill(PAD + n + 1, 0, end - 8 - n - 1);
  store<u64>(PAD + end - 8, bswap<u64>(<u64>n << 3));
  memory.copy(STATE, IV384, 64);
  compress512(STATE, PAD, blocks);
  for (let i: usize = 0; i < 48; i += 8) store<u64>(out + i, bswap<u64>(load<u64>(STATE + i)));
}

/** out = SHA-384(0x00 ‖ data). `out` may alias `data`. */
export function leafHash(data: usize, len: usize, out: usize): void {
  if (len <= SMALL_MAX) {
    store<u8>(PAD, 0x00);
    memory.copy(PAD + 1, data, len);
    padHash384(1 + len, out);
  } else {
    store<u8>(PAD, 0x00);
    ctxInit(TMP_A, ALG_SHA384);
    ctxUpdate(TMP_A, PAD, 1);
    ctxUpdate(TMP_A, data, len);
    ctxFinal(TMP_A, out);
  }
}

/** out = SHA-384(0x01 ‖ left ‖ right). `out` may alias either input. */
export function nodeHash(left: usize, right: usize, out: usize): void {
  store<u8>(PAD, 0x01);
  memory.copy(PAD + 1, left, 48);
  memory.copy(PAD + 49, right, 48);
  padHash384(97, out);
}

/** Appends the leaf hash at `h` to a frontier of a tree with `count` leaves (mutates FRONTIER). */
export function frontierPush(h: usize, count: u64): void {
  let size = <usize>popcnt<u64>(count);
  memory.copy(DIGEST, h, 48);
  for (let c = count; (c & 1) != 0; c >>= 1) {
    size--;
    nodeHash(FRONTIER + size * 48, DIGEST, DIGEST);
  }
  memory.copy(FRONTIER + size * 48, DIGEST, 48);
}

/** Root of the tree whose frontier (for `count` leaves) is in FRONTIER; MTH({}) = SHA-384(""). */
export function frontierRoot(count: u64, out: usize): void {
  const size = <usize>popcnt<u64>(count);
  if (size == 0) {
    padHash384(0, out);
    return;
  }
  memory.copy(DIGEST, FRONTIER + (size - 1) * 48, 48);
  for (let i = <isize>size - 2; i >= 0; i--) nodeHash(FRONTIER + <usize>i * 48, DIGEST, DIGEST);
  memory.copy(out, DIGEST, 48);
}
