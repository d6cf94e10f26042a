// RFC 9162 §2.1 Merkle tree over SHA-384: leaf = H(0x00 ‖ data), node = H(0x01 ‖ left ‖ right),
// MTH({}) = H(""), split at the largest power of two smaller than n; a last leaf is never
// duplicated. Proof verification first computes the exact expected proof length (as
// transparency-dev/merkle does) and returns false for any other.
//
// Tree sizes and indexes are JavaScript safe integers (< 2^53); bit operations on them are done in
// two 32-bit halves (see _bits below).

import { bytes, integer } from '../_args';
import {
  HASH_BYTES,
  leafHashes,
  nodeHash as kernelNodeHash,
  levelUp,
  frontierAppend,
  frontierAppendHashes,
  frontierRoot,
  frontierSize,
} from '../kernels/merkle-hash';
import { sha384 } from '../kernels/sha2';
import { equalBytes } from '../_bytes';

export { HASH_BYTES };

const MAX_SIZE = Number.MAX_SAFE_INTEGER;
const TWO32 = 2 ** 32;

// ---- 53-bit integer helpers ---------------------------------------------------------------------

const hi = (x: number) => Math.floor(x / TWO32);
const lo = (x: number) => x >>> 0;
const pop32 = (x: number) => {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
};
/** Number of bits needed to write x (bits.Len). */
const bitLen = (x: number) => (hi(x) !== 0 ? 64 - Math.clz32(hi(x)) : 32 - Math.clz32(lo(x)));
const xor = (a: number, b: number) => (hi(a) ^ hi(b)) * TWO32 + ((lo(a) ^ lo(b)) >>> 0);
const shr = (x: number, s: number) => Math.floor(x / 2 ** s);
const popcount = (x: number) => pop32(hi(x)) + pop32(lo(x));
const isOdd = (x: number) => x % 2 === 1;
const trailingZeros = (x: number) => {
  let n = 0;
  while (x > 0 && x % 2 === 0) {
    x /= 2;
    n++;
  }
  return n;
};

// ---- hashing -----------------------------------------------------------------------------------

/**
 * Leaf hash SHA-384(0x00 ‖ data).
 * @example leafHash(new TextEncoder().encode('record'))
 */
export function leafHash(data: Uint8Array): Uint8Array {
  return leafHashes([bytes('data', data)]);
}

/**
 * Interior node hash SHA-384(0x01 ‖ left ‖ right).
 * @throws RangeError when either child is not 48 bytes.
 */
export function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  return kernelNodeHash(bytes('left', left, HASH_BYTES), bytes('right', right, HASH_BYTES));
}

function checkLeaves(leaves: readonly Uint8Array[]): readonly Uint8Array[] {
  if (!Array.isArray(leaves)) throw new TypeError('"leaves" expected an array of Uint8Array');
  for (let i = 0; i < leaves.length; i++) bytes(`leaves[${i}]`, leaves[i]);
  return leaves;
}

/**
 * Root hash MTH(leaves) of the tree whose leaf data are `leaves`, computed in one streaming pass
 * (batched leaf hashing and an O(log n) compact range in WebAssembly).
 * @throws TypeError when `leaves` is not an array of Uint8Array.
 * @example root([a, b, c]) // 48 bytes
 */
export function root(leaves: readonly Uint8Array[]): Uint8Array {
  checkLeaves(leaves);
  const frontier = new Uint8Array(64 * HASH_BYTES);
  const count = frontierAppend(frontier, 0, leaves);
  return frontierRoot(frontier, count);
}

// ---- proofs --------------------------------------------------------------------------------------

/** Node hashes per slice of MerkleHashTree.build. */
const BUILD_SLICE = 16_384;

interface BuiltLevels {
  lv: Uint8Array[];
  start: number[];
  floor: number;
  size: number;
}

function drain<T>(g: Generator<void, T>): T {
  for (let r = g.next(); ; r = g.next()) if (r.done === true) return r.value;
}

/**
 * The levels of a tree over `leafHashes` (from `floor.size` on), yielding after each slice of
 * BUILD_SLICE node hashes. Each level starts at the node holding the floor's first leaf, with the
 * compact range's subtree before it where that node is a right child.
 */
function* buildLevels(leafHashes: Uint8Array, floor: TreeFloor | undefined): Generator<void, BuiltLevels> {
  bytes('leafHashes', leafHashes);
  if (leafHashes.length % HASH_BYTES !== 0)
    throw new RangeError(`"leafHashes" expected a multiple of ${HASH_BYTES} bytes, got length=${leafHashes.length}`);
  const f = floor?.size ?? 0;
  integer('floor.size', f, 0, MAX_SIZE);
  const frontier = floor?.frontier ?? [];
  if (!Array.isArray(frontier) || frontier.length !== frontierSize(f))
    throw new RangeError(`"floor.frontier" expected ${frontierSize(f)} hashes for size ${f}`);
  frontier.forEach((h, i) => bytes(`floor.frontier[${i}]`, h, HASH_BYTES));
  const size = f + leafHashes.length / HASH_BYTES;
  if (size > MAX_SIZE) throw new RangeError('tree size would exceed 2^53 - 1');
  // The compact range's subtree for each set bit of the floor (largest first).
  const byBit = new Map<number, Uint8Array>();
  for (let b = bitLen(f) - 1, i = 0; b >= 0; b--) if (isOdd(shr(f, b))) byBit.set(b, frontier[i++]);
  const lv: Uint8Array[] = [];
  const start: number[] = [];
  let level: Uint8Array = leafHashes.slice();
  let at = f;
  for (let l = 0; ; l++) {
    if (isOdd(at)) {
      // The node before the floor's is a left sibling wholly below it: the range's subtree of bit l.
      const withLeft = new Uint8Array(level.length + HASH_BYTES);
      withLeft.set(byBit.get(l)!);
      withLeft.set(level, HASH_BYTES);
      level = withLeft;
      at--;
    }
    lv.push(level);
    start.push(at);
    const n = level.length / HASH_BYTES;
    if (at + n <= 1) break;
    // The next level, a slice of pairs at a time (even slices: no pair straddles two).
    const up = new Uint8Array(Math.ceil(n / 2) * HASH_BYTES);
    for (let i = 0; i < n; i += 2 * BUILD_SLICE) {
      const m = Math.min(2 * BUILD_SLICE, n - i);
      up.set(levelUp(level.subarray(i * HASH_BYTES, (i + m) * HASH_BYTES)), (i / 2) * HASH_BYTES);
      if (i + m < n) yield;
    }
    level = up;
    at /= 2;
    if (n > 2 * BUILD_SLICE) yield;
  }
  return { lv, start, floor: f, size };
}

/** A tree's history below `size` kept only as its compact range (MerkleHashTree's `floor`). */
export interface TreeFloor {
  /** Leaves [0, size) are not held. */
  readonly size: number;
  /** The compact range at `size` (MerkleAppender#frontier), largest subtree first. */
  readonly frontier: readonly Uint8Array[];
}

/**
 * A tree over given leaf hashes (48·n bytes), for roots and proofs without the leaf data. Holds all
 * levels: levels[0] the leaf hashes, each higher level the pairs of the one below with an odd last
 * node carried up; node j of level l covers the leaves [j·2^l, min((j+1)·2^l, n)).
 *
 * With a `floor`, the leaves given are those from `floor.size` on and the ones before are known only
 * by the floor's compact range: each level then starts at the node that holds the floor's first
 * leaf, with the compact range's subtree just before it where that node is a right child (a node
 * entirely below the floor is asked for only as such a sibling). Inclusion proofs of leaves from the
 * floor on and consistency proofs from sizes from the floor on are the full tree's, byte for byte.
 * @example new MerkleHashTree(hashes).inclusionProof(5)
 */
export class MerkleHashTree {
  readonly #lv: Uint8Array[];
  /** The index of the first node each level holds. */
  readonly #start: number[];
  readonly #floor: number;
  readonly #size: number;

  /**
   * @param built internal: the levels MerkleHashTree.build made (the leaves are then not read again)
   */
  constructor(leafHashes: Uint8Array, floor?: TreeFloor, built?: BuiltLevels) {
    const levels = built ?? drain(buildLevels(leafHashes, floor));
    this.#lv = levels.lv;
    this.#start = levels.start;
    this.#floor = levels.floor;
    this.#size = levels.size;
  }

  /**
   * The same tree, built a slice at a time: `pause` is awaited between slices of about 16,384 node
   * hashes (the levels of a million leaves take a second of hashing), so the caller's event loop
   * serves other work meanwhile.
   */
  static async build(
    leafHashes: Uint8Array,
    floor: TreeFloor | undefined,
    pause: () => Promise<void>,
  ): Promise<MerkleHashTree> {
    const steps = buildLevels(leafHashes, floor);
    for (let r = steps.next(); ; r = steps.next()) {
      if (r.done === true) return new MerkleHashTree(leafHashes, floor, r.value);
      await pause();
    }
  }

  get size(): number {
    return this.#size;
  }

  /** The first leaf held (0 without a floor). */
  get floor(): number {
    return this.#floor;
  }

  /** MTH of all leaves (SHA-384("") for none). */
  root(): Uint8Array {
    return this.size === 0 ? sha384(new Uint8Array(0)) : this.#node(this.#lv.length - 1, 0);
  }

  #node(level: number, index: number): Uint8Array {
    const at = index - this.#start[level];
    if (at < 0) throw new Error(`internal: node ${index} of level ${level} lies below the floor ${this.#floor}`);
    return this.#lv[level].slice(at * HASH_BYTES, (at + 1) * HASH_BYTES);
  }

  /** MTH(D[a:b]) for a range that is a node of the tree (every range the proofs ask for is). */
  #subtree(a: number, b: number): Uint8Array {
    const n = this.size;
    const level = bitLen(b - a - 1);
    if (a % 2 ** level !== 0 || Math.min(a + 2 ** level, n) !== b) {
      throw new Error(`internal: [${a}, ${b}) is not a node of a tree of ${n} leaves`);
    }
    return this.#node(level, a / 2 ** level);
  }

  /**
   * Inclusion proof (RFC 9162 §2.1.3.1 PATH) of leaf `index`, deepest sibling first.
   * @throws RangeError for an index outside [floor, size)
   */
  inclusionProof(index: number): Uint8Array[] {
    integer('index', index, this.#floor, this.size - 1);
    const proof: Uint8Array[] = [];
    for (let l = 0, i = index; l < this.#lv.length - 1; l++, i = Math.floor(i / 2)) {
      const sibling = xor(i, 1);
      if (sibling - this.#start[l] < this.#lv[l].length / HASH_BYTES) proof.push(this.#node(l, sibling));
    }
    return proof;
  }

  /**
   * Consistency proof (RFC 9162 §2.1.4.1 PROOF) from the first `oldSize` leaves to all of them.
   * @throws RangeError for an oldSize outside [floor, size] (0 aside)
   */
  consistencyProof(oldSize: number): Uint8Array[] {
    const n = this.size;
    integer('oldSize', oldSize, 0, n);
    if (oldSize === 0 || oldSize === n) return [];
    if (oldSize < this.#floor)
      throw new RangeError(`"oldSize" expected a size from the floor ${this.#floor} on, got ${oldSize}`);
    return subproof(oldSize, n, (a, b) => this.#subtree(a, b));
  }
}

/**
 * PROOF(m, D[0:n]) = SUBPROOF(m, D[0:n], true) (RFC 9162 §2.1.4.1) for 0 < m < n, iteratively: the
 * recursion only ever descends one side. `subtree(a, b)` gives MTH(D[a:b]); every range it is asked
 * for lies either within [0, m) (a subtree of the old tree's compact range) or within [m, n).
 */
function subproof(oldSize: number, n: number, subtree: (a: number, b: number) => Uint8Array): Uint8Array[] {
  const proof: Uint8Array[] = [];
  const pending: Uint8Array[] = [];
  let m = oldSize;
  let a = 0;
  let b = n;
  let complete = true;
  while (m !== b - a) {
    const k = 2 ** (bitLen(b - a - 1) - 1);
    if (m <= k) {
      pending.push(subtree(a + k, b));
      b = a + k;
    } else {
      pending.push(subtree(a, a + k));
      m -= k;
      a += k;
      complete = false;
    }
  }
  if (!complete) proof.push(subtree(a, b));
  for (let i = pending.length - 1; i >= 0; i--) proof.push(pending[i]);
  return proof;
}

/**
 * Inclusion proof (RFC 9162 §2.1.3.1 PATH) for leaf `index` of the tree over `leaves`,
 * deepest sibling first.
 * @throws RangeError when index ∉ [0, leaves.length).
 * @example const proof = inclusionProof(leaves, 5)
 */
export function inclusionProof(leaves: readonly Uint8Array[], index: number): Uint8Array[] {
  checkLeaves(leaves);
  integer('index', index, 0, leaves.length - 1);
  return new MerkleHashTree(leafHashes(leaves)).inclusionProof(index);
}

/**
 * Consistency proof (RFC 9162 §2.1.4.1 PROOF) that the tree of the first `oldSize` leaves is a
 * prefix of the tree over all `leaves`. Empty when oldSize is 0 or equals leaves.length.
 * @throws RangeError when oldSize ∉ [0, leaves.length].
 */
export function consistencyProof(leaves: readonly Uint8Array[], oldSize: number): Uint8Array[] {
  checkLeaves(leaves);
  integer('oldSize', oldSize, 0, leaves.length);
  if (oldSize === 0 || oldSize === leaves.length) return [];
  return new MerkleHashTree(leafHashes(leaves)).consistencyProof(oldSize);
}

function checkProof(proof: readonly Uint8Array[]): boolean {
  if (!Array.isArray(proof)) throw new TypeError('"proof" expected an array of Uint8Array');
  for (let i = 0; i < proof.length; i++) bytes(`proof[${i}]`, proof[i]);
  return proof.every((p) => p.length === HASH_BYTES);
}

/**
 * Consistency proof (RFC 9162 §2.1.4.1 PROOF) from the tree of the first `oldSize` leaves to the
 * tree of those and the `appended` leaf hashes (48 bytes each, back to back), built without either
 * tree: the proof's nodes left of `oldSize` are subtrees of the old tree's compact range
 * (`oldFrontier`, as MerkleAppender#frontier gives it at size `oldSize`), and each node right of it
 * is MTH of a run of the appended leaves, hashed here. O(log n) memory and at most
 * `appended.length / 48` leaves hashed, so proving every consecutive pair of sizes along one log
 * costs one pass over it. The result equals MerkleHashTree#consistencyProof; empty when oldSize is 0
 * or nothing was appended.
 * @throws TypeError/RangeError when oldSize is not a safe integer ≥ 0, the frontier is not
 *   popcount(oldSize) hashes of 48 bytes, or `appended` is not a multiple of 48 bytes.
 * @example
 * const at = new MerkleAppender().appendHashes(log.subarray(0, m * 48));
 * consistencyProofFromFrontier(m, at.frontier(), log.subarray(m * 48, n * 48))
 */
export function consistencyProofFromFrontier(
  oldSize: number,
  oldFrontier: readonly Uint8Array[],
  appended: Uint8Array,
): Uint8Array[] {
  integer('oldSize', oldSize, 0, MAX_SIZE);
  if (!Array.isArray(oldFrontier) || oldFrontier.length !== frontierSize(oldSize))
    throw new RangeError(`"oldFrontier" expected ${frontierSize(oldSize)} hashes for size ${oldSize}`);
  oldFrontier.forEach((h, i) => bytes(`oldFrontier[${i}]`, h, HASH_BYTES));
  bytes('appended', appended);
  if (appended.length % HASH_BYTES !== 0)
    throw new RangeError(`"appended" expected a multiple of ${HASH_BYTES} bytes, got length=${appended.length}`);
  const added = appended.length / HASH_BYTES;
  if (oldSize + added > MAX_SIZE) throw new RangeError('tree size would exceed 2^53 - 1');
  if (oldSize === 0 || added === 0) return [];
  // The compact range of [0, oldSize): one perfect subtree per set bit of oldSize, largest first;
  // entry i covers [starts[i], starts[i] + sizes[i]).
  const starts: number[] = [];
  const sizes: number[] = [];
  for (let at = 0, rest = oldSize; rest > 0;) {
    const size = 2 ** (bitLen(rest) - 1);
    starts.push(at);
    sizes.push(size);
    at += size;
    rest -= size;
  }
  const scratch = new Uint8Array(64 * HASH_BYTES);
  return subproof(oldSize, oldSize + added, (a, b) => {
    if (b <= oldSize) {
      const i = starts.indexOf(a);
      if (i < 0 || sizes[i] !== b - a)
        throw new Error(`internal: [${a}, ${b}) is not in the compact range of ${oldSize}`);
      return oldFrontier[i].slice();
    }
    if (a < oldSize) throw new Error(`internal: [${a}, ${b}) straddles the old size ${oldSize}`);
    // MTH(D[a:b]) is the root of the run's own tree (RFC 9162 §2.1.1 defines it on the run alone).
    const run = appended.subarray((a - oldSize) * HASH_BYTES, (b - oldSize) * HASH_BYTES);
    return frontierRoot(scratch, frontierAppendHashes(scratch, 0, run));
  });
}

/**
 * Verifies an inclusion proof (RFC 9162 §2.1.3.2) of `leafData` at `index` in a tree of `treeSize`
 * leaves with root `root`. Returns false for a wrong proof (including any proof whose length is
 * not exactly the one the index and size imply).
 * @throws TypeError/RangeError for malformed arguments (index ≥ treeSize, a root not 48 bytes).
 * @example verifyInclusion(leaf, 5, leaves.length, inclusionProof(leaves, 5), root(leaves)) // true
 */
export function verifyInclusion(
  leafData: Uint8Array,
  index: number,
  treeSize: number,
  proof: readonly Uint8Array[],
  rootHash: Uint8Array,
): boolean {
  bytes('leafData', leafData);
  return verifyInclusionOfHash(leafHash(leafData), index, treeSize, proof, rootHash);
}

/** verifyInclusion for a leaf given by its hash (MTH({d}) = SHA-384(0x00 ‖ d)), e.g. from a log page. */
export function verifyInclusionOfHash(
  leaf: Uint8Array,
  index: number,
  treeSize: number,
  proof: readonly Uint8Array[],
  rootHash: Uint8Array,
): boolean {
  bytes('leaf', leaf, HASH_BYTES);
  integer('treeSize', treeSize, 1, MAX_SIZE);
  integer('index', index, 0, treeSize - 1);
  bytes('root', rootHash, HASH_BYTES);
  if (!checkProof(proof)) return false;
  const inner = bitLen(xor(index, treeSize - 1));
  if (proof.length !== inner + popcount(shr(index, inner))) return false;
  let fn = index;
  let sn = treeSize - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      r = kernelNodeHash(p, r);
      while (!isOdd(fn) && fn !== 0) {
        fn = shr(fn, 1);
        sn = shr(sn, 1);
      }
    } else {
      r = kernelNodeHash(r, p);
    }
    fn = shr(fn, 1);
    sn = shr(sn, 1);
  }
  return sn === 0 && equalBytes(r, rootHash);
}

/**
 * Verifies a consistency proof (RFC 9162 §2.1.4.2) between a tree of `oldSize` leaves with root
 * `oldRoot` and one of `newSize` leaves with root `newRoot`. For oldSize = newSize the proof must be
 * empty and the roots equal; for oldSize = 0 it must be empty and oldRoot must be MTH({}).
 * @throws TypeError/RangeError for malformed arguments (oldSize > newSize, roots not 48 bytes).
 */
export function verifyConsistency(
  oldSize: number,
  newSize: number,
  oldRoot: Uint8Array,
  newRoot: Uint8Array,
  proof: readonly Uint8Array[],
): boolean {
  integer('newSize', newSize, 0, MAX_SIZE);
  integer('oldSize', oldSize, 0, newSize);
  bytes('oldRoot', oldRoot, HASH_BYTES);
  bytes('newRoot', newRoot, HASH_BYTES);
  if (!checkProof(proof)) return false;
  if (oldSize === newSize) return proof.length === 0 && equalBytes(oldRoot, newRoot);
  if (oldSize === 0) return proof.length === 0 && equalBytes(oldRoot, sha384(new Uint8Array(0)));
  const inner = bitLen(xor(oldSize - 1, newSize - 1));
  const border = popcount(shr(oldSize - 1, inner));
  const shift = trailingZeros(oldSize);
  const seeded = oldSize === 2 ** shift; // old tree is a perfect subtree: its root seeds the path
  if (proof.length !== (seeded ? 0 : 1) + inner - shift + border) return false;
  const path = seeded ? [oldRoot, ...proof] : proof;
  let fn = oldSize - 1;
  let sn = newSize - 1;
  while (isOdd(fn)) {
    fn = shr(fn, 1);
    sn = shr(sn, 1);
  }
  let fr = path[0];
  let sr = path[0];
  for (let i = 1; i < path.length; i++) {
    const c = path[i];
    if (sn === 0) return false;
    if (isOdd(fn) || fn === sn) {
      fr = kernelNodeHash(c, fr);
      sr = kernelNodeHash(c, sr);
      while (!isOdd(fn) && fn !== 0) {
        fn = shr(fn, 1);
        sn = shr(sn, 1);
      }
    } else {
      sr = kernelNodeHash(sr, c);
    }
    fn = shr(fn, 1);
    sn = shr(sn, 1);
  }
  return sn === 0 && equalBytes(fr, oldRoot) && equalBytes(sr, newRoot);
}

// ---- incremental appender ---------------------------------------------------------------------

/**
 * An append-only tree kept as its compact range: the roots of the perfect subtrees that make it up
 * (popcount(size) hashes of 48 bytes). `append` costs O(log n) node hashes; `root()` folds the range.
 * @example
 * const t = new MerkleAppender(); t.append(a); t.appendMany([b, c]); t.root()
 */
export class MerkleAppender {
  #frontier = new Uint8Array(64 * HASH_BYTES);
  #size = 0;

  /** Number of leaves appended so far. */
  get size(): number {
    return this.#size;
  }

  /** Appends one leaf (its data; the leaf hash is computed here). */
  append(leaf: Uint8Array): this {
    return this.appendMany([leaf]);
  }

  /** Appends many leaves in batched kernel calls. */
  appendMany(leaves: readonly Uint8Array[]): this {
    checkLeaves(leaves);
    if (this.#size + leaves.length > MAX_SIZE) throw new RangeError('tree size would exceed 2^53 - 1');
    this.#size = frontierAppend(this.#frontier, this.#size, leaves);
    return this;
  }

  /** Appends leaves given by their hashes (48 bytes each, back to back), e.g. from a persisted log. */
  appendHashes(leafHashes: Uint8Array): this {
    bytes('leafHashes', leafHashes);
    if (leafHashes.length % HASH_BYTES !== 0)
      throw new RangeError(`"leafHashes" expected a multiple of ${HASH_BYTES} bytes, got length=${leafHashes.length}`);
    if (this.#size + leafHashes.length / HASH_BYTES > MAX_SIZE) throw new RangeError('tree size would exceed 2^53 - 1');
    this.#size = frontierAppendHashes(this.#frontier, this.#size, leafHashes);
    return this;
  }

  /** Root hash MTH of the leaves appended so far. */
  root(): Uint8Array {
    return frontierRoot(this.#frontier, this.#size);
  }

  /** The compact range, largest subtree first (copies). */
  frontier(): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (let i = 0; i < frontierSize(this.#size); i++)
      out.push(this.#frontier.slice(i * HASH_BYTES, (i + 1) * HASH_BYTES));
    return out;
  }

  /**
   * Resumes a tree from a saved size and compact range.
   * @throws RangeError when the number of hashes is not popcount(size) or a hash is not 48 bytes.
   */
  static fromFrontier(size: number, frontier: readonly Uint8Array[]): MerkleAppender {
    integer('size', size, 0, MAX_SIZE);
    if (!Array.isArray(frontier) || frontier.length !== frontierSize(size)) {
      throw new RangeError(`"frontier" expected ${frontierSize(size)} hashes for size ${size}`);
    }
    const t = new MerkleAppender();
    frontier.forEach((h, i) => t.#frontier.set(bytes(`frontier[${i}]`, h, HASH_BYTES), i * HASH_BYTES));
    t.#size = size;
    return t;
  }
}
