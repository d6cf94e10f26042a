// The verifier's generation step: the Merkle log of each key generation. With the key, the leaves
// recomputed from the commit pages are placed on the persisted log (compaction deletes pages whose
// leaves the log pages keep: log.ts) and must equal it and give the log head the manifest names;
// a retired generation's log stands on its log pages alone. The live records are then known, each
// at its leaf. Without the key, the persisted logs are all there is.

import { MerkleAppender, HASH_BYTES } from '../../crypto/merkle';
import { equalBytes } from '../../_bytes';
import { unb64 } from '../../_encoding';
import type { Manifest } from '../manifest';
import { onPersisted, inOrder } from './log';
import type { PagesRead } from './pages';
import type { OpenedStore, VerifyRun } from './run';
import type { HistoryFloor } from '../history-floor';

/** Per collection, its live records: id → where its leaf is. */
export type LiveRecords = Map<string, Map<string, { generation: number; leafIndex: number }>>;

/**
 * The log of each generation (leaf hashes back to back, from its history floor on: `floorOf`) and
 * the live records (known with the key).
 */
export interface Generations {
  readonly logOf: Map<number, Uint8Array>;
  readonly floorOf: Map<number, HistoryFloor>;
  readonly live: LiveRecords;
}

export function checkGenerations(run: VerifyRun, store: OpenedStore, read: PagesRead): Generations {
  const { manifest, keys } = store;
  const { persisted, leaves } = read;
  const floorOf = read.floors;
  const logOf = new Map<number, Uint8Array>();
  const live: LiveRecords = new Map();
  if (keys === undefined) {
    for (const [g, kept] of persisted) logOf.set(g, kept);
    countLeaves(run, logOf, floorOf);
    return { logOf, floorOf, live };
  }
  const starts = new Map<number, number[]>();
  for (const [g, parts] of leaves) {
    const kept = persisted.get(g);
    // Compaction deletes commit pages whose leaves the log pages keep: the pages left must give
    // their leaves at increasing places of the persisted log, and the pages past it its tail.
    const placed = (kept !== undefined ? onPersisted(kept, parts) : undefined) ?? inOrder(parts);
    const all = placed.all;
    starts.set(g, placed.starts);
    logOf.set(g, all);
    if (kept !== undefined && (kept.length > all.length || !equalBytes(kept, all.subarray(0, kept.length))))
      run.problem(
        `generation ${g}`,
        'MISMATCH',
        `the persisted log of generation ${g} differs from the leaves recomputed from its records`,
      );
  }
  const retired = new Set(manifest.retired ?? []);
  for (const [g, kept] of persisted) {
    if (leaves.has(g)) continue;
    // A retired generation's records are gone with its keys: its log stands on its log pages.
    if (retired.has(g)) logOf.set(g, kept);
    else run.problem(`generation ${g}`, 'MISMATCH', `generation ${g} has a persisted log but no records`);
  }
  for (const g of retired)
    if (leaves.has(g))
      run.problem(`generation ${g}`, 'MISMATCH', `generation ${g} is retired but still has commit pages`);
  // The live records, in page order, at the places their pages' leaves hold.
  for (const { g, part, ops } of read.pageOps) {
    let n = starts.get(g)![part] + (floorOf.get(g)?.size ?? 0);
    for (const [kind, collection, id] of ops) {
      let m = live.get(collection);
      if (m === undefined) live.set(collection, (m = new Map()));
      if (kind === 'delete') m.delete(id);
      else m.set(id, { generation: g, leafIndex: n });
      n++;
    }
  }
  for (const [name, m] of live) if (m.size > 0) run.counts.collections[name] = m.size;
  // The logs the records give must be those the manifest names (no commit page missing, older
  // or foreign: a dropped delete-only commit, for one, shows here).
  const heads = (manifest as Manifest).heads ?? {};
  for (const g of new Set([...Object.keys(heads).map(Number), ...logOf.keys()])) {
    const log = logOf.get(g) ?? new Uint8Array(0);
    const head = heads[g];
    // Below a history floor, the floor's compact range stands for the leaves no longer stored.
    const floor = floorOf.get(g);
    const start = floor === undefined ? new MerkleAppender() : MerkleAppender.fromFrontier(floor.size, floor.frontier);
    const size = (floor?.size ?? 0) + log.length / HASH_BYTES;
    const same =
      (head?.size ?? 0) === size &&
      (head === undefined || equalBytes(start.appendHashes(log).root(), unb64(head.root)));
    if (!same)
      run.problem(
        `generation ${g}`,
        'MISMATCH',
        `the records of generation ${g} do not give the log the manifest names (${size} of ${head?.size ?? 0} leaves, or another root)`,
      );
  }
  countLeaves(run, logOf, floorOf);
  return { logOf, floorOf, live };
}

function countLeaves(
  run: VerifyRun,
  logOf: ReadonlyMap<number, Uint8Array>,
  floorOf: ReadonlyMap<number, HistoryFloor>,
): void {
  for (const [g, log] of logOf) run.counts.leaves[g] = (floorOf.get(g)?.size ?? 0) + log.length / HASH_BYTES;
}
