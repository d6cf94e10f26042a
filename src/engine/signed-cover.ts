// What a trusted signer's checkpoints vouch for in a store that is not trusted (a managed copy, a
// fork offered as one): the restore's test of every record it would take (src/engine/restore.ts).
//
// A holder of the store secret (a removed recipient) can write anything the store key seals — pages,
// directory, log pages, manifest — but cannot sign a checkpoint. So a record version is taken only
// when a checkpoint by the trusted key covers it: its leaf index lies below the signed size of the
// last such checkpoint of its generation, the log's first `size` leaves give the signed root, and
// the leaf there is the hash of exactly the bytes that will be opened (store id, collection, id,
// sequence, suite, generation, sealed record, governance, commit salt and blind: the leaf binds
// them all, so neither the value nor the governance scope a restore gates on can be changed under
// it). The key directory that points at the version is not trusted: each location is checked here.

import { PqdbError } from '../errors';
import { recordLeafHash, verifyCheckpoint } from '../crypto/proofs';
import { HASH_BYTES } from '../crypto/merkle';
import { equalBytes } from '../_bytes';
import { pageSalt } from './page-format';
import { leafBlind } from './keys';
import type { Location } from './directory';
import type { KeyRing } from './keys';
import type { MerkleLogs } from './merkle-log';
import type { Checkpoints } from './checkpoints';

/** What the cover reads of the copy's engine. */
export interface CoverContext {
  readonly checkpoints: Pick<Checkpoints, 'list'>;
  readonly logs: Pick<MerkleLogs, 'tree' | 'log' | 'floorOf'>;
  readonly storeId: Uint8Array;
  readonly keys: KeyRing;
}

/** Why a record version is not one a trusted checkpoint covers. */
export type UnsignedReason =
  /** Its leaf lies past the last trusted checkpoint of its generation (written after it). */
  | 'past-checkpoint'
  /** Its generation has no checkpoint by the trusted key at all. */
  | 'generation-unsigned';

export class SignedCover {
  readonly #p: CoverContext;
  /**
   * Per generation: the signed size, and the log's leaves from its history floor (`from`) up to
   * `size`, checked against the signed root (a view of the log: a store opened read-only never
   * appends to it).
   */
  readonly #signed = new Map<number, { size: number; from: number; leaves: Uint8Array }>();

  private constructor(p: CoverContext) {
    this.#p = p;
  }

  /**
   * The cover of store `p`'s checkpoints under `trusted` (an ML-DSA-87 public key): the newest
   * checkpoint of each generation, which must verify under it.
   * @throws PqdbError AUTH_FAILED (a checkpoint not signed by the trusted key), CORRUPTION (a log
   * whose first leaves do not give the signed root)
   */
  static async of(p: CoverContext, trusted: Uint8Array): Promise<SignedCover> {
    const cover = new SignedCover(p);
    const newest = new Map<number, Uint8Array>();
    for (const c of p.checkpoints.list) newest.set(c.generation, c.signed);
    for (const [g, signed] of newest) {
      const c = verifyCheckpoint(signed, trusted);
      if (c === undefined || c.generation !== g || !equalBytes(c.storeId, p.storeId))
        throw new PqdbError('AUTH_FAILED', `the last checkpoint of generation ${g} is not signed by the trusted key`);
      if (c.size === 0) {
        cover.#signed.set(g, { size: 0, from: 0, leaves: new Uint8Array(0) }); // signs the empty log: covers nothing
        continue;
      }
      const from = p.logs.floorOf(g);
      if (c.size < from)
        throw new PqdbError('CORRUPTION', `the last checkpoint of generation ${g} lies below its history floor`);
      const tree = await p.logs.tree(g, c.size);
      if (!equalBytes(tree.root(), c.root))
        throw new PqdbError('CORRUPTION', `the log of generation ${g} does not give the root its checkpoint signs`);
      cover.#signed.set(g, { size: c.size, from, leaves: p.logs.log(g).subarray(0, (c.size - from) * HASH_BYTES) });
    }
    return cover;
  }

  /** Whether the trusted checkpoint of generation `g` covers its leaf `leafIndex`. */
  covers(g: number, leafIndex: number): boolean {
    const s = this.#signed.get(g);
    return s !== undefined && leafIndex < s.size;
  }

  /**
   * Undefined when the version at `loc` — `page` is its commit page's bytes — is covered; else why not.
   * @throws PqdbError CORRUPTION when the leaf `loc` names is covered but is not that version's
   * (the directory points at bytes the signer did not sign there)
   */
  check(collection: string, id: string, loc: Location, page: Uint8Array): UnsignedReason | undefined {
    const s = this.#signed.get(loc.generation);
    if (s === undefined) return 'generation-unsigned';
    if (loc.leafIndex >= s.size) return 'past-checkpoint';
    if (loc.leafIndex < s.from)
      throw new PqdbError(
        'CORRUPTION',
        `record ${collection}/${id} names leaf ${loc.leafIndex} of generation ${loc.generation}, below its history floor`,
      );
    if (loc.offset + loc.length > page.length || loc.length < 2)
      throw new PqdbError('CORRUPTION', `record ${collection}/${id} lies past the end of page ${loc.pageId}`);
    const blob = page.subarray(loc.offset, loc.offset + loc.length);
    const salt = pageSalt(page);
    const leaf = recordLeafHash(
      this.#p.storeId,
      collection,
      id,
      loc.sequence,
      blob[1],
      loc.generation,
      blob,
      loc.governance,
      salt,
      leafBlind(this.#p.keys, salt),
    );
    const at = (loc.leafIndex - s.from) * HASH_BYTES;
    if (!equalBytes(leaf, s.leaves.subarray(at, at + HASH_BYTES)))
      throw new PqdbError(
        'CORRUPTION',
        `record ${collection}/${id} is not the version leaf ${loc.leafIndex} of generation ${loc.generation} signs`,
      );
    return undefined;
  }
}
