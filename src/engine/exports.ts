// Sealed exports (DESIGN §7): one record as header ‖ ciphertext with its Merkle inclusion proof,
// the ML-DSA-87-signed checkpoint that covers it and the signer's key id, verifiable anywhere with
// the public key alone (verifySealed in src/crypto/proofs.ts). Nothing is decrypted to export.

import { encodeExport, leafData } from '../crypto/proofs';
import type { KeyDirectory } from './directory';
import type { MerkleLogs } from './merkle-log';
import type { PageCache } from './page-cache';
import type { Checkpoints } from './checkpoints';
import { pageSalt } from './page-format';

export interface ExportContext {
  readonly directory: KeyDirectory;
  readonly logs: MerkleLogs;
  readonly cache: PageCache;
  readonly checkpoints: Checkpoints;
  readonly storeId: Uint8Array;
  /** The blind of a page's leaves (keys.ts leafBlind). */
  blind(salt: Uint8Array): Uint8Array;
}

/**
 * A self-verifying export of record `id` of `collection` (checkpointing first when no checkpoint
 * covers it).
 * @throws RangeError when there is no such record; TypeError when a checkpoint is needed and the
 * store has no signer keys; PqdbError NOT_CHECKPOINTED when no checkpoint covers the record and a
 * new one would not (an older key generation).
 */
export async function exportSealed(ctx: ExportContext, collection: string, id: string): Promise<Uint8Array> {
  const loc = ctx.directory.get(collection, id);
  if (loc === undefined) throw new RangeError(`no record "${id}" in collection "${collection}"`);
  const cp = await ctx.checkpoints.covering(loc.generation, loc.leafIndex);
  const page = await ctx.cache.get(loc.pageId);
  const record = page.slice(loc.offset, loc.offset + loc.length);
  const proof = (await ctx.logs.tree(loc.generation, cp.size)).inclusionProof(loc.leafIndex);
  return encodeExport({
    leafData: leafData(
      ctx.storeId,
      collection,
      id,
      loc.sequence,
      loc.suite,
      loc.generation,
      record,
      loc.governance,
      pageSalt(page),
      ctx.blind(pageSalt(page)),
    ),
    record,
    governance: loc.governance,
    leafIndex: loc.leafIndex,
    salt: pageSalt(page),
    proof,
    signedCheckpoint: cp.signed,
  });
}
