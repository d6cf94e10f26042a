// The verifier's inclusion step: every live record covered by a checkpoint is proven included in
// the root of its generation's last checkpoint. The root of the log's first `size` leaves,
// recomputed from the records, being the signed root proves every leaf below `size` included;
// explicit inclusion proofs are checked for a sample of leaves (all of them when the root does not
// match), from one MerkleHashTree per generation, built on its first record and dropped before the
// next generation's: time and memory stay linear in the log.

import { MerkleHashTree, HASH_BYTES, verifyInclusionOfHash } from '../../crypto/merkle';
import { equalBytes } from '../../_bytes';
import type { Checkpoints } from './checkpoints';
import type { Generations } from './generations';
import type { VerifyRun } from './run';

/** Explicit inclusion proofs are checked for every PROOF_SAMPLE-th leaf (a power of two). */
const PROOF_SAMPLE = 256;

/** Checks the inclusion of every live record (known with the key only). */
export function checkInclusion(
  run: VerifyRun,
  { live, logOf, floorOf }: Generations,
  { lastOf, walks }: Checkpoints,
): void {
  const { options, counts } = run;
  const total = [...live.values()].reduce((n, m) => n + m.size, 0);
  const generations = new Set<number>();
  for (const m of live.values()) for (const { generation } of m.values()) generations.add(generation);
  let k = 0;
  // A generation at a time, so that one tree is held at once.
  for (const g of [...generations].sort((x, y) => x - y)) {
    const c = lastOf.get(g);
    const log = logOf.get(g);
    const floor = floorOf.get(g);
    const from = floor?.size ?? 0;
    let tree: MerkleHashTree | undefined;
    const root = c !== undefined ? walks.get(g)?.roots.get(c.size) : undefined;
    const rootHolds = root !== undefined && equalBytes(root, c!.root);
    for (const [name, m] of live) {
      for (const [id, { generation, leafIndex }] of m) {
        if (generation !== g) continue;
        if ((k++ & 4095) === 0) options.onProgress?.({ phase: 'proofs', done: k, total });
        if (c === undefined || leafIndex >= c.size) {
          counts.uncheckpointed++;
          continue;
        }
        if (log === undefined || from + log.length / HASH_BYTES < c.size || c.size < from) continue; // reported by the checkpoint step
        if (leafIndex < from) {
          run.problem(`record ${name}/${id}`, 'MISMATCH', `its leaf ${leafIndex} lies below the history floor ${from}`);
          continue;
        }
        if (rootHolds && (leafIndex & (PROOF_SAMPLE - 1)) !== 0 && leafIndex !== c.size - 1) {
          counts.inclusionProofs++;
          continue;
        }
        tree ??= new MerkleHashTree(log.subarray(0, (c.size - from) * HASH_BYTES), floor);
        const leaf = log.subarray((leafIndex - from) * HASH_BYTES, (leafIndex - from + 1) * HASH_BYTES);
        if (verifyInclusionOfHash(leaf, leafIndex, c.size, tree.inclusionProof(leafIndex), c.root))
          counts.inclusionProofs++;
        else
          run.problem(
            `record ${name}/${id}`,
            'MISMATCH',
            'the inclusion proof does not verify against the checkpoint root',
          );
      }
    }
  }
  options.onProgress?.({ phase: 'proofs', done: total, total });
}
