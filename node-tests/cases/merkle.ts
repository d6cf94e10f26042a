// Merkle cases: pqdb's RFC 9162 tree against a naive recursive reference (the RFC's definitions
// written out directly over an oracle SHA-384) for every size 1..maxSize: roots, every inclusion
// proof, every consistency proof, and rejection of mutated proofs, sizes and indexes.

import type { Api } from './api';
import { type Summary, summary, record, hex, Rng } from './_util';

type H = (msg: Uint8Array) => Uint8Array;

/** RFC 9162 §2.1.1–§2.1.4 by the book, memoised on the leaf range (the tree never changes). */
export class ReferenceTree {
  private memo = new Map<string, Uint8Array>();
  constructor(
    private readonly leaves: Uint8Array[],
    private readonly h: H,
  ) {}

  private cat(...parts: Uint8Array[]): Uint8Array {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let o = 0;
    for (const p of parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  }

  /** Largest power of two strictly smaller than n (n > 1). */
  static split(n: number): number {
    let k = 1;
    while (k * 2 < n) k *= 2;
    return k;
  }

  mth(a: number, b: number): Uint8Array {
    const key = `${a},${b}`;
    let r = this.memo.get(key);
    if (r) return r;
    const n = b - a;
    if (n === 0) r = this.h(new Uint8Array(0));
    else if (n === 1) r = this.h(this.cat(new Uint8Array([0]), this.leaves[a]));
    else {
      const k = ReferenceTree.split(n);
      r = this.h(this.cat(new Uint8Array([1]), this.mth(a, a + k), this.mth(a + k, b)));
    }
    this.memo.set(key, r);
    return r;
  }

  /** |PATH(m, D[n])|: the number of nodes an inclusion proof holds. */
  static pathLength(m: number, n: number): number {
    if (n <= 1) return 0;
    const k = ReferenceTree.split(n);
    return 1 + (m < k ? ReferenceTree.pathLength(m, k) : ReferenceTree.pathLength(m - k, n - k));
  }

  /** PATH(m, D[a:b]). */
  path(m: number, a: number, b: number): Uint8Array[] {
    const n = b - a;
    if (n <= 1) return [];
    const k = ReferenceTree.split(n);
    return m < k
      ? [...this.path(m, a, a + k), this.mth(a + k, b)]
      : [...this.path(m - k, a + k, b), this.mth(a, a + k)];
  }

  /** SUBPROOF(m, D[a:b], complete). */
  subproof(m: number, a: number, b: number, complete: boolean): Uint8Array[] {
    const n = b - a;
    if (m === n) return complete ? [] : [this.mth(a, b)];
    const k = ReferenceTree.split(n);
    return m <= k
      ? [...this.subproof(m, a, a + k, complete), this.mth(a + k, b)]
      : [...this.subproof(m - k, a + k, b, false), this.mth(a, a + k)];
  }
}

const flip = (p: Uint8Array[], i: number, bit: number) =>
  p.map((x, j) => (j === i ? x.map((y, k) => (k === bit >> 3 ? y ^ (1 << (bit & 7)) : y)) : x));
const hexes = (p: Uint8Array[]) => p.map(hex).join(',');

export function merkleCases(api: Api, sha384: H, maxSize: number, seed: number): Summary {
  const s = summary(`Merkle RFC 9162 sizes 1..${maxSize} vs reference`);
  const rng = new Rng(seed);
  const leaves = Array.from({ length: maxSize }, (_, i) => rng.bytes(i % 7 === 0 ? 0 : rng.int(300)));
  const ref = new ReferenceTree(leaves, sha384);
  const m = api.merkle;
  record(s, 'empty tree', hex(m.root([])) === hex(sha384(new Uint8Array(0))));
  const roots: Uint8Array[] = [m.root([])];
  for (let n = 1; n <= maxSize; n++) {
    const prefix = leaves.slice(0, n);
    const root = m.root(prefix);
    roots.push(root);
    record(s, `root n=${n}`, hex(root) === hex(ref.mth(0, n)));
    for (let i = 0; i < n; i++) {
      const proof = m.inclusionProof(prefix, i);
      const id = `inclusion n=${n} i=${i}`;
      record(s, id, hexes(proof) === hexes(ref.path(i, 0, n)) && m.verifyInclusion(leaves[i], i, n, proof, root));
      // Mutations: every element flipped, truncated, extended, other leaf, other index, other size.
      let rejected = true;
      for (let j = 0; j < proof.length; j++)
        rejected &&= !m.verifyInclusion(leaves[i], i, n, flip(proof, j, rng.int(384)), root);
      if (proof.length > 0) rejected &&= !m.verifyInclusion(leaves[i], i, n, proof.slice(1), root);
      rejected &&= !m.verifyInclusion(leaves[i], i, n, [...proof, root], root);
      if (n > 1)
        rejected &&=
          !m.verifyInclusion(leaves[(i + 1) % n], i, n, proof, root) || hex(leaves[(i + 1) % n]) === hex(leaves[i]);
      if (n > 1) rejected &&= !m.verifyInclusion(leaves[i], (i + 1) % n, n, proof, root);
      // Another size is rejected whenever its path has another shape (same-shape sizes share roots
      // by construction: the checkpoint's signed size is what pins n).
      for (const other of [n + 1, 2 * n, n - 1, i + 1]) {
        if (other > i && other !== n && ReferenceTree.pathLength(i, other) !== proof.length) {
          rejected &&= !m.verifyInclusion(leaves[i], i, other, proof, root);
        }
      }
      record(s, `${id} mutations rejected`, rejected);
    }
  }
  for (let n = 1; n <= maxSize; n++) {
    const prefix = leaves.slice(0, n);
    for (let old = 0; old <= n; old++) {
      const proof = m.consistencyProof(prefix, old);
      const want = old === 0 || old === n ? [] : ref.subproof(old, 0, n, true);
      const id = `consistency ${old}->${n}`;
      record(s, id, hexes(proof) === hexes(want) && m.verifyConsistency(old, n, roots[old], roots[n], proof));
      let rejected = true;
      for (let j = 0; j < proof.length; j++)
        rejected &&= !m.verifyConsistency(old, n, roots[old], roots[n], flip(proof, j, rng.int(384)));
      if (proof.length > 0) rejected &&= !m.verifyConsistency(old, n, roots[old], roots[n], proof.slice(0, -1));
      rejected &&= !m.verifyConsistency(old, n, roots[old], roots[n], [...proof, roots[n]]);
      if (old > 0 && old < n) {
        rejected &&= !m.verifyConsistency(old - 1, n, roots[old], roots[n], proof);
        rejected &&= !m.verifyConsistency(old, n, roots[old], roots[n - 1], proof);
        rejected &&= !m.verifyConsistency(old, n, roots[n], roots[n], proof);
      }
      record(s, `${id} mutations rejected`, rejected);
    }
  }
  return s;
}

/** The incremental appender must give the batch root after every append, in any chunking. */
export function appenderCases(api: Api, maxSize: number, seed: number): Summary {
  const s = summary(`MerkleAppender sizes 0..${maxSize}`);
  const rng = new Rng(seed);
  const leaves = Array.from({ length: maxSize }, () => rng.bytes(rng.int(400)));
  const Appender = api.MerkleAppender;
  const t = new Appender();
  record(s, 'root n=0', hex(t.root()) === hex(api.merkle.root([])));
  for (let n = 0; n < maxSize;) {
    const step = Math.min(1 + rng.int(9), maxSize - n);
    t.appendMany(leaves.slice(n, n + step));
    n += step;
    record(s, `root n=${n}`, hex(t.root()) === hex(api.merkle.root(leaves.slice(0, n))) && t.size === n);
    const resumed = Appender.fromFrontier(t.size, t.frontier());
    record(s, `resume n=${n}`, hex(resumed.root()) === hex(t.root()));
  }
  return s;
}
