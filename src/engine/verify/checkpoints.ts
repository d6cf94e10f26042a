// The verifier's checkpoint step: the freshness pin (ROLLBACK when the store no longer holds it),
// and for every signed checkpoint in signing order its ML-DSA-87 signature (with the trusted signer
// key), its store, its chain by hash, growth within its generation, its root against the root of
// the leaves it covers and the consistency proof from the one before it. Roots and consistency
// proofs come from one MerkleAppender pass per generation (walkLog, log.ts).

import {
  decodeCheckpoint,
  verifyCheckpoint,
  checkpointHash,
  signerKeyId,
  CHECKPOINT_BYTES,
  KEY_ID_BYTES,
  type Checkpoint,
} from '../../crypto/proofs';
import { HASH_BYTES, root as merkleRoot } from '../../crypto/merkle';
import { equalBytes } from '../../_bytes';
import { hex } from '../../_encoding';
import { walkLog, type CheckpointEntry, type LogWalk } from './log';
import { checkFloor, type HistoryFloor } from '../history-floor';
import type { OpenedStore, VerifyRun } from './run';

/** What the inclusion step needs of the checkpoints: each generation's last, and its log walk. */
export interface Checkpoints {
  readonly lastOf: Map<number, Checkpoint>;
  readonly walks: Map<number, LogWalk>;
}

export function checkCheckpoints(
  run: VerifyRun,
  store: OpenedStore,
  list: readonly (Uint8Array | undefined)[],
  logOf: ReadonlyMap<number, Uint8Array>,
  floorOf: ReadonlyMap<number, HistoryFloor> = new Map(),
): Checkpoints {
  const { options, counts } = run;
  if (options.expectCheckpoint !== undefined) checkPin(run, list, options.expectCheckpoint);
  if (list.length > 0 && options.signerPublicKey === undefined)
    run.skipped.push('checkpoint signatures (no trusted signer public key)');
  // Decoded in signing order, each with the one signed before it in its generation.
  const decoded: (CheckpointEntry | undefined)[] = [];
  const byGeneration = new Map<number, CheckpointEntry[]>();
  const lastOf = new Map<number, Checkpoint>();
  list.forEach((signed, index) => {
    const c = signed === undefined ? undefined : decodeCheckpoint(signed);
    if (c === undefined) {
      decoded.push(undefined);
      return;
    }
    const entry = { index, c, before: lastOf.get(c.generation) };
    decoded.push(entry);
    let same = byGeneration.get(c.generation);
    if (same === undefined) byGeneration.set(c.generation, (same = []));
    same.push(entry);
    lastOf.set(c.generation, c);
  });
  // One pass over each generation's log: its roots at the signed sizes and its consistency proofs.
  const walks = new Map<number, LogWalk>();
  // Below a history floor, each checkpoint reaches the log through its link (history-floor.ts).
  const floorFails = new Map<number, string | undefined>();
  for (const [g, same] of byGeneration) {
    const log = logOf.get(g);
    const floor = floorOf.get(g);
    if (log !== undefined) walks.set(g, walkLog(log, same, floor));
    if (floor !== undefined) {
      const fails = checkFloor(
        floor,
        same.map((e) => e.c),
      );
      floorFails.set(g, fails);
      if (fails !== undefined)
        run.problem(`generation ${g}`, 'MISMATCH', `the history floor at ${floor.size}: ${fails}`);
    }
  }
  for (const g of floorOf.keys())
    if (!byGeneration.has(g) && floorOf.get(g)!.links.length > 0)
      run.problem(`generation ${g}`, 'MISMATCH', 'the history floor links checkpoints the store does not hold');
  let previous: Uint8Array = new Uint8Array(48);
  list.forEach((signed, i) => {
    const where = `checkpoint ${i + 1}`;
    counts.checkpoints++;
    if (signed === undefined) return; // its page failed above
    const entry = decoded[i];
    if (entry === undefined) {
      run.problem(where, 'CORRUPTION', 'the checkpoint does not decode');
      return;
    }
    const { c, before } = entry;
    if (options.signerPublicKey !== undefined) {
      if (verifyCheckpoint(signed, options.signerPublicKey) === undefined) {
        const named = equalBytes(
          signed.subarray(CHECKPOINT_BYTES, CHECKPOINT_BYTES + KEY_ID_BYTES),
          signerKeyId(options.signerPublicKey),
        )
          ? 'its signature does not verify'
          : 'it names another signer key';
        run.problem(where, 'AUTH_FAILED', `the checkpoint is not signed by the trusted signer key: ${named}`);
      } else counts.signaturesVerified++;
    }
    if (!equalBytes(c.storeId, store.storeId)) run.problem(where, 'MISMATCH', 'the checkpoint names another store');
    if (!equalBytes(c.previous, previous))
      run.problem(where, 'MISMATCH', 'the checkpoint does not chain to the one before it');
    previous = checkpointHash(signed);
    if (before !== undefined && c.size < before.size)
      run.problem(where, 'MISMATCH', `the log shrank from ${before.size} to ${c.size} leaves`);
    const log = logOf.get(c.generation);
    const floor = floorOf.get(c.generation)?.size ?? 0;
    const held = floor + (log?.length ?? 0) / HASH_BYTES;
    if (c.size > 0 && c.size < floor) {
      // Below the floor: its link (checked with the floor's chain) makes it consistent with the one before.
      if (before !== undefined && floorFails.get(c.generation) === undefined) counts.consistencyProofs++;
    } else if (c.size === 0) {
      // A checkpoint of an empty log (a store checkpointed or backed up before its first write).
      if (!equalBytes(c.root, merkleRoot([])))
        run.problem(where, 'MISMATCH', 'the checkpoint of an empty log signs another root');
    } else if (log === undefined || held < c.size) {
      if (store.keys !== undefined || c.size > 0)
        run.problem(
          where,
          'MISMATCH',
          `generation ${c.generation} holds fewer than the ${c.size} leaves the checkpoint signs`,
        );
    } else if (!equalBytes(walks.get(c.generation)!.roots.get(c.size)!, c.root)) {
      run.problem(
        where,
        'MISMATCH',
        `the root of the first ${c.size} leaves of generation ${c.generation} is not the signed root`,
      );
    } else if (before !== undefined && before.size < floor) {
      // The one before lies below the floor: its link and this root make the two consistent.
      if (floorFails.get(c.generation) === undefined) counts.consistencyProofs++;
    } else if (before !== undefined && before.size <= c.size) {
      if (walks.get(c.generation)!.consistent.get(i) === true) counts.consistencyProofs++;
      else run.problem(where, 'MISMATCH', `the consistency proof from size ${before.size} does not verify`);
    }
  });
  return { lastOf, walks };
}

/** The freshness pin: a checkpoint hash the store must hold, or a log size its newest generation's checkpoints must reach. */
function checkPin(run: VerifyRun, list: readonly (Uint8Array | undefined)[], pin: string | number): void {
  const decodedPins = list.map((b) => (b === undefined ? undefined : { b, c: decodeCheckpoint(b) }));
  const held =
    typeof pin === 'string'
      ? decodedPins.some((x) => x !== undefined && hex(checkpointHash(x.b)) === pin.toLowerCase())
      : (() => {
          const cs = decodedPins.flatMap((x) => (x?.c !== undefined ? [x.c] : []));
          const newest = cs.reduce((g, c) => Math.max(g, c.generation), 0);
          return cs.some((c) => c.generation === newest && c.size >= pin);
        })();
  if (!held)
    run.problem(
      'checkpoints',
      'ROLLBACK',
      typeof pin === 'string'
        ? `the store holds no checkpoint ${pin}: it is an older copy, or another store`
        : `the store's checkpoints do not reach log size ${pin}: it is an older copy`,
    );
}
