// The verifier's log step: the leaves recomputed from the commit pages placed in each generation's
// persisted log (compaction leaves gaps), and one MerkleAppender pass over a log that yields the
// roots at the sizes its checkpoints sign and the RFC 9162 consistency proofs between them.

import type { Checkpoint } from '../../crypto/proofs';
import {
  MerkleAppender,
  HASH_BYTES,
  consistencyProofFromFrontier,
  verifyConsistency,
  type TreeFloor,
} from '../../crypto/merkle';
import { concatBytes, equalBytes } from '../../_bytes';

/**
 * `kept` (a persisted log) with the leaves of `parts` (commit pages in page order) after it: the
 * pages whose first leaf is in `kept` must match it there, at increasing places (pages between
 * them were compacted away); the rest, in order, are its tail. Undefined when they do not fit.
 */
export function onPersisted(
  kept: Uint8Array,
  parts: readonly Uint8Array[],
): { all: Uint8Array; starts: number[] } | undefined {
  const n = kept.length / HASH_BYTES;
  const key = (b: Uint8Array, i: number) => String.fromCharCode(...b.subarray(i * HASH_BYTES, i * HASH_BYTES + 16));
  const at = new Map<string, number>();
  for (let i = 0; i < n; i++) at.set(key(kept, i), i);
  let cursor = 0;
  let end = n;
  const tail: Uint8Array[] = [];
  const starts: number[] = [];
  for (const h of parts) {
    const k = h.length / HASH_BYTES;
    if (tail.length === 0 && k > 0) {
      const i = at.get(key(h, 0));
      if (i !== undefined) {
        if (i < cursor || i + k > n || !equalBytes(h, kept.subarray(i * HASH_BYTES, (i + k) * HASH_BYTES)))
          return undefined;
        starts.push(i);
        cursor = i + k;
        continue;
      }
    }
    starts.push(tail.length === 0 && k === 0 ? cursor : end);
    end += k;
    tail.push(h);
  }
  return { all: concatBytes([kept, ...tail]), starts };
}

/** The leaves of `parts` back to back, and where each starts. */
export function inOrder(parts: readonly Uint8Array[]): { all: Uint8Array; starts: number[] } {
  const starts: number[] = [];
  let at = 0;
  for (const h of parts) {
    starts.push(at);
    at += h.length / HASH_BYTES;
  }
  return { all: concatBytes(parts), starts };
}

/** A decoded checkpoint: its place in signing order and the one signed before it in its generation. */
export interface CheckpointEntry {
  index: number;
  c: Checkpoint;
  before?: Checkpoint;
}

/** What one pass over a generation's log found. */
export interface LogWalk {
  /** The recomputed root at every signed size the log holds. */
  roots: Map<number, Uint8Array>;
  /** By checkpoint index: whether the consistency proof from its predecessor's size verifies. */
  consistent: Map<number, boolean>;
}

/**
 * One MerkleAppender pass over a generation's log (48·n bytes of leaf hashes) that yields the root
 * at each size its checkpoints sign as the pass reaches it (sizes the log does not hold are left to
 * the caller). For each checkpoint whose recomputed root is its signed root and whose predecessor
 * in the generation signs no more leaves, it builds the RFC 9162 consistency proof between the two
 * sizes from the log (consistencyProofFromFrontier: the compact range saved at the older size, the
 * leaves since) and verifies it against both signed roots.
 *
 * Memory: 48 bytes per distinct size, and the compact ranges of sizes a later checkpoint still needs
 * (one at a time while sizes grow): no tree. Time: the pass hashes each leaf once; the proofs hash
 * the leaves between each pair once more, which sums to the log again while sizes grow (a shrink,
 * itself reported, can make later pairs overlap).
 */
export function walkLog(log: Uint8Array, checkpoints: readonly CheckpointEntry[], floor?: TreeFloor): LogWalk {
  // With a history floor, `log` holds the leaves from it on and the pass starts from its compact range.
  const from = floor?.size ?? 0;
  const held = from + log.length / HASH_BYTES;
  const inLog = checkpoints.filter(({ c }) => c.size <= held && c.size >= from);
  const sizes = [...new Set(inLog.map(({ c }) => c.size))].sort((x, y) => x - y);
  // Each consistency pair is built once the pass reaches its newer size; the compact range at its
  // older size is kept from there until the last pair that needs it.
  const pairsAt = new Map<number, CheckpointEntry[]>();
  const lastUse = new Map<number, number>();
  for (const e of inLog) {
    if (e.before === undefined || e.before.size > e.c.size || e.before.size < from) continue;
    let at = pairsAt.get(e.c.size);
    if (at === undefined) pairsAt.set(e.c.size, (at = []));
    at.push(e);
    lastUse.set(e.before.size, Math.max(lastUse.get(e.before.size) ?? 0, e.c.size));
  }
  const dropAt = new Map<number, number[]>();
  for (const [old, last] of lastUse) {
    let at = dropAt.get(last);
    if (at === undefined) dropAt.set(last, (at = []));
    at.push(old);
  }
  const roots = new Map<number, Uint8Array>();
  const consistent = new Map<number, boolean>();
  const frontiers = new Map<number, Uint8Array[]>();
  const appender = floor === undefined ? new MerkleAppender() : MerkleAppender.fromFrontier(from, floor.frontier);
  for (const size of sizes) {
    appender.appendHashes(log.subarray((appender.size - from) * HASH_BYTES, (size - from) * HASH_BYTES));
    const root = appender.root();
    roots.set(size, root);
    if (lastUse.has(size)) frontiers.set(size, appender.frontier());
    for (const { index, c, before } of pairsAt.get(size) ?? []) {
      if (!equalBytes(root, c.root)) continue; // the caller reports the root
      const old = before!.size;
      const proof = consistencyProofFromFrontier(
        old,
        frontiers.get(old)!,
        log.subarray((old - from) * HASH_BYTES, (size - from) * HASH_BYTES),
      );
      consistent.set(index, verifyConsistency(old, size, before!.root, c.root, proof));
    }
    for (const old of dropAt.get(size) ?? []) frontiers.delete(old);
  }
  return { roots, consistent };
}
