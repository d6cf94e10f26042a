// RFC 9162 Merkle tree: against the naive reference, the incremental appender, argument errors.
import { describe, it, expect, beforeAll } from 'vitest';
import { createHash } from 'node:crypto';
import * as api from '../src/crypto';
import { merkleCases, appenderCases, ReferenceTree } from './cases/merkle';
import { Rng, hex } from './cases/_util';
import { FLAVORS } from './support/vectors';

const sha384 = (m: Uint8Array) => new Uint8Array(createHash('sha384').update(m).digest());
const { merkle, MerkleAppender } = api;

describe.each(FLAVORS)('merkle (%s)', (flavor) => {
  beforeAll(() => api.setWasmFlavor(flavor));

  it('roots, every inclusion and consistency proof of sizes 1..130 match the reference; mutations rejected', () => {
    const s = merkleCases(api, sha384, 130, 9162);
    console.log(`[${flavor}] ${s.name}: ${s.passed}/${s.total}`);
    expect(s.failures.slice(0, 10)).toEqual([]);
    expect(s.total).toBeGreaterThan(4 * 8515);
  });

  it('incremental appender equals the batch root after every append and after resuming', () => {
    const s = appenderCases(api, 300, 7);
    expect(s.failures).toEqual([]);
  });

  it('large trees: 5,000 leaves and leaves larger than one kernel batch', () => {
    const rng = new Rng(1);
    const leaves = Array.from({ length: 5000 }, () => rng.bytes(131));
    leaves[17] = rng.bytes(200_000); // larger than the kernel input region: streamed
    leaves[4000] = rng.bytes(131_072);
    const ref = new ReferenceTree(leaves, sha384);
    const root = merkle.root(leaves);
    expect(root).toEqual(ref.mth(0, leaves.length));
    expect(merkle.leafHash(leaves[17])).toEqual(ref.mth(17, 18));
    for (const i of [0, 17, 2047, 2048, 4000, 4999]) {
      const proof = merkle.inclusionProof(leaves, i);
      expect(proof).toEqual(ref.path(i, 0, leaves.length));
      expect(merkle.verifyInclusion(leaves[i], i, leaves.length, proof, root)).toBe(true);
    }
    const cp = merkle.consistencyProof(leaves, 3001);
    expect(merkle.verifyConsistency(3001, 5000, ref.mth(0, 3001), root, cp)).toBe(true);
    expect(new MerkleAppender().appendMany(leaves).root()).toEqual(root);
    // Leaf hashes appended in uneven runs (as the store appends each commit's) give the same roots.
    const hashes = new Uint8Array(leaves.length * 48);
    leaves.forEach((l, i) => hashes.set(merkle.leafHash(l), i * 48));
    const byHash = new MerkleAppender();
    for (let at = 0, run = 1; at < leaves.length; at += run, run = (run * 7 + 3) % 1500) {
      const end = Math.min(leaves.length, at + run);
      byHash.appendHashes(hashes.subarray(at * 48, end * 48));
      expect(byHash.size).toBe(end);
      expect(byHash.root(), `size ${end}`).toEqual(ref.mth(0, end));
    }
    expect(() => new MerkleAppender().appendHashes(new Uint8Array(47))).toThrow(RangeError);
  });

  it('consistency proofs from a compact range equal the tree proofs for every 0 ≤ m ≤ n ≤ 130 and verify', () => {
    const rng = new Rng(11);
    const leaves = Array.from({ length: 130 }, () => rng.bytes(1 + rng.int(40)));
    const ref = new ReferenceTree(leaves, sha384);
    const hashes = new Uint8Array(leaves.length * 48);
    leaves.forEach((l, i) => hashes.set(merkle.leafHash(l), i * 48));
    // The compact range at every size, from one appender.
    const at = new MerkleAppender();
    const frontiers = [at.frontier()];
    for (let m = 1; m <= leaves.length; m++)
      frontiers.push(at.appendHashes(hashes.subarray((m - 1) * 48, m * 48)).frontier());
    const failures: string[] = [];
    let checked = 0;
    for (let n = 1; n <= leaves.length; n++) {
      const tree = new merkle.MerkleHashTree(hashes.subarray(0, n * 48));
      for (let m = 0; m <= n; m++) {
        const proof = merkle.consistencyProofFromFrontier(m, frontiers[m], hashes.subarray(m * 48, n * 48));
        const expected = m === 0 || m === n ? [] : ref.subproof(m, 0, n, true);
        if (proof.map(hex).join() !== expected.map(hex).join()) failures.push(`${m}→${n}: differs from the reference`);
        if (proof.map(hex).join() !== tree.consistencyProof(m).map(hex).join())
          failures.push(`${m}→${n}: differs from MerkleHashTree`);
        if (!merkle.verifyConsistency(m, n, ref.mth(0, m), ref.mth(0, n), proof)) failures.push(`${m}→${n}: rejected`);
        checked++;
      }
    }
    expect(failures.slice(0, 10)).toEqual([]);
    expect(checked).toBe((131 * 132) / 2 - 1);
  });

  it("a tree with a floor (history below it kept as its compact range) gives the full tree's root and proofs", () => {
    const rng = new Rng(12);
    const leaves = Array.from({ length: 70 }, () => rng.bytes(1 + rng.int(40)));
    const hashes = new Uint8Array(leaves.length * 48);
    leaves.forEach((l, i) => hashes.set(merkle.leafHash(l), i * 48));
    const frontiers = [new MerkleAppender().frontier()];
    const at = new MerkleAppender();
    for (let m = 1; m <= leaves.length; m++)
      frontiers.push(at.appendHashes(hashes.subarray((m - 1) * 48, m * 48)).frontier());
    const failures: string[] = [];
    let checked = 0;
    for (let n = 0; n <= leaves.length; n++) {
      const full = new merkle.MerkleHashTree(hashes.subarray(0, n * 48));
      for (let f = 0; f <= n; f++) {
        const t = new merkle.MerkleHashTree(hashes.subarray(f * 48, n * 48), { size: f, frontier: frontiers[f] });
        if (t.size !== n || t.floor !== f) failures.push(`${f}/${n}: size`);
        if (hex(t.root()) !== hex(full.root())) failures.push(`${f}/${n}: root`);
        for (let i = f; i < n; i++)
          if (t.inclusionProof(i).map(hex).join() !== full.inclusionProof(i).map(hex).join())
            failures.push(`${f}/${n}: inclusion ${i}`);
        for (let m = f; m <= n; m++)
          if (t.consistencyProof(m).map(hex).join() !== full.consistencyProof(m).map(hex).join())
            failures.push(`${f}/${n}: consistency from ${m}`);
        if (f > 0) {
          expect(() => t.inclusionProof(f - 1)).toThrow(RangeError);
          if (f > 1 && f < n) expect(() => t.consistencyProof(f - 1)).toThrow(RangeError);
        }
        checked++;
      }
    }
    expect(failures.slice(0, 10)).toEqual([]);
    expect(checked).toBe((71 * 72) / 2);
    expect(() => new merkle.MerkleHashTree(new Uint8Array(0), { size: 6, frontier: frontiers[7] })).toThrow(RangeError);
  });

  it('MerkleHashTree.build, in slices with pauses between, is the tree the constructor builds', async () => {
    const rng = new Rng(13);
    const n = 70_001;
    const hashes = rng.bytes(n * 48);
    const f = 33_333;
    const floor = { size: f, frontier: new MerkleAppender().appendHashes(hashes.subarray(0, f * 48)).frontier() };
    let pauses = 0;
    const pause = async () => void pauses++;
    const built = await merkle.MerkleHashTree.build(hashes.subarray(f * 48), floor, pause);
    const whole = new merkle.MerkleHashTree(hashes);
    expect(pauses).toBeGreaterThan(1);
    expect(hex(built.root())).toBe(hex(whole.root()));
    for (const i of [f, f + 1, 50_000, n - 1])
      expect(built.inclusionProof(i).map(hex)).toEqual(whole.inclusionProof(i).map(hex));
    for (const m of [f, 40_000, n - 1])
      expect(built.consistencyProof(m).map(hex)).toEqual(whole.consistencyProof(m).map(hex));
    const plain = await merkle.MerkleHashTree.build(hashes, undefined, pause);
    expect(hex(plain.root())).toBe(hex(whole.root()));
  });

  it('consistencyProofFromFrontier: inputs unchanged, unaligned views, fresh outputs, misuse throws', () => {
    const rng = new Rng(12);
    const hashes = rng.bytes(37 * 48);
    const m = 21; // frontier of three subtrees (16, 4, 1)
    const frontier = new MerkleAppender().appendHashes(hashes.subarray(0, m * 48)).frontier();
    const expected = new merkle.MerkleHashTree(hashes).consistencyProof(m);
    for (let offset = 0; offset < 8; offset++) {
      const buf = new Uint8Array(offset + hashes.length);
      buf.set(hashes, offset);
      const appended = buf.subarray(offset + m * 48);
      const kept = [appended.slice(), frontier.map((h) => h.slice())];
      const proof = merkle.consistencyProofFromFrontier(m, frontier, appended);
      expect(proof, `offset ${offset}`).toEqual(expected);
      expect([appended, frontier]).toEqual(kept);
      proof.forEach((p) => p.fill(0)); // the proof holds copies, not the caller's frontier
      expect(frontier).toEqual(kept[1]);
    }
    const rest = hashes.subarray(m * 48);
    expect(merkle.consistencyProofFromFrontier(0, [], hashes)).toEqual([]);
    expect(merkle.consistencyProofFromFrontier(m, frontier, new Uint8Array(0))).toEqual([]);
    expect(() => merkle.consistencyProofFromFrontier(m, frontier.slice(1), rest)).toThrow(RangeError);
    expect(() => merkle.consistencyProofFromFrontier(m, [...frontier, frontier[0]], rest)).toThrow(RangeError);
    expect(() =>
      merkle.consistencyProofFromFrontier(m, [frontier[0], frontier[1], frontier[2].subarray(1)], rest),
    ).toThrow(RangeError);
    expect(() => merkle.consistencyProofFromFrontier(m, frontier, rest.subarray(1))).toThrow(RangeError);
    expect(() => merkle.consistencyProofFromFrontier(-1, [], rest)).toThrow(RangeError);
    expect(() => merkle.consistencyProofFromFrontier(1.5, frontier, rest)).toThrow(TypeError);
    expect(() => merkle.consistencyProofFromFrontier(m, frontier, [] as unknown as Uint8Array)).toThrow(TypeError);
  });

  it('verification arithmetic holds for sizes beyond 2^32', () => {
    // A proof for a huge tree can be checked without the tree: build the path from the reference
    // rules for index i in a tree of size n using synthetic subtree hashes, then verify.
    const n = 2 ** 40 + 12345;
    const i = 2 ** 33 + 7;
    const leaf = new Uint8Array([1, 2, 3]);
    // Expected length: inner + border.
    const proof = Array.from({ length: 41 }, (_, k) => sha384(new Uint8Array([k])));
    // Fold like RFC 9162 §2.1.3.2 to obtain the root this (arbitrary) path commits to.
    let fn = i,
      sn = n - 1,
      r = merkle.leafHash(leaf);
    const used: Uint8Array[] = [];
    for (const p of proof) {
      if (sn === 0) break;
      used.push(p);
      if (fn % 2 === 1 || fn === sn) {
        r = merkle.nodeHash(p, r);
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      } else r = merkle.nodeHash(r, p);
      fn = Math.floor(fn / 2);
      sn = Math.floor(sn / 2);
    }
    expect(merkle.verifyInclusion(leaf, i, n, used, r)).toBe(true);
    expect(merkle.verifyInclusion(leaf, i + 1, n, used, r)).toBe(false);
    expect(merkle.verifyInclusion(leaf, i, n, used.slice(1), r)).toBe(false);
  });

  it('malformed arguments throw TypeError/RangeError; wrong proofs return false', () => {
    const leaves = [new Uint8Array([1]), new Uint8Array([2]), new Uint8Array([3])];
    const root = merkle.root(leaves);
    const proof = merkle.inclusionProof(leaves, 1);
    expect(() => merkle.root([1, 2] as unknown as Uint8Array[])).toThrow(TypeError);
    expect(() => merkle.inclusionProof(leaves, 3)).toThrow(RangeError);
    expect(() => merkle.inclusionProof(leaves, -1)).toThrow(RangeError);
    expect(() => merkle.inclusionProof(leaves, 1.5)).toThrow(TypeError);
    expect(() => merkle.verifyInclusion(leaves[1], 3, 3, proof, root)).toThrow(RangeError);
    expect(() => merkle.verifyInclusion(leaves[1], 1, 0, proof, root)).toThrow(RangeError);
    expect(() => merkle.verifyInclusion(leaves[1], 1, 3, proof, root.subarray(1))).toThrow(RangeError);
    expect(() => merkle.verifyInclusion(leaves[1], 1, 3, 'x' as unknown as Uint8Array[], root)).toThrow(TypeError);
    expect(() => merkle.verifyConsistency(3, 2, root, root, [])).toThrow(RangeError);
    expect(() => merkle.consistencyProof(leaves, 4)).toThrow(RangeError);
    expect(() => merkle.nodeHash(root, root.subarray(0, 47))).toThrow(RangeError);
    expect(merkle.verifyInclusion(leaves[1], 1, 3, [proof[0].subarray(0, 47), proof[1]], root)).toBe(false);
    expect(merkle.verifyInclusion(leaves[1], 1, 3, [], root)).toBe(false);
    expect(merkle.verifyConsistency(0, 3, root, root, [])).toBe(false);
    expect(merkle.verifyConsistency(0, 3, merkle.root([]), root, [])).toBe(true);
    expect(merkle.verifyConsistency(3, 3, root, root, [])).toBe(true);
    expect(merkle.verifyConsistency(3, 3, root, root, [root])).toBe(false);
    expect(() => MerkleAppender.fromFrontier(3, [root])).toThrow(RangeError);
  });
});
