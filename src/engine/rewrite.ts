// The one re-seal step (DESIGN §2, §6, §8, §9): a stored record version opened for a purpose —
// `copy` (compaction, a migration's copy) or `restore` (a restore into a new store) — through that
// purpose's gate, re-sealed under the key ring's current generation with a fresh write sequence of
// the draft, written into the draft's commit page, and its plaintext wiped. Compaction, migration
// and restore all go through it, so what a re-seal preserves is kept in one place:
//
//   - the gate is asked before anything is decrypted (RecordIO's gates: current authority);
//   - write sequences come from the draft, one per record in the order written: unique and ordered
//     within the store, so no (key, nonce) pair is used twice and the Merkle log only grows;
//   - the new version keeps the record's governance state (a restore may name the live store's);
//   - a record sealed ahead (`sealInto`) takes the draft's commit salt, the one its page carries;
//     otherwise it is sealed with the commit page, under the page's salt;
//   - a copy (compaction, migration: the value unchanged) is written with the copy flag, so no
//     user-facing hook takes it for a user's write; a restore's records are plain writes;
//   - the plaintext is wiped: at once when sealed ahead, else once the commit is made or dropped.
//
// Runs inside the commit queue of the draft's store (the caller's pipeline.run task).

import { sealedLength } from '../crypto/record';
import type { Draft } from './commit';
import type { Location } from './directory';
import type { RecordIO } from './records';

/** What the step uses: where the version is opened, where it is sealed, and the generation. */
export interface RewriteContext {
  /** The records of the store the version is read from (with its purposes' gates). */
  readonly from: Pick<RecordIO, 'refusal' | 'open' | 'openIn'>;
  /** The records of the draft's store, which seal the new version. */
  readonly to: Pick<RecordIO, 'put' | 'putSealed'>;
  /** The key ring's current generation: the one the new version is sealed under. */
  generation(): number;
}

/** What the step does to the draft. */
export type RewriteDraft = Pick<Draft, 'sequences' | 'commitSalt' | 'write' | 'afterCommit' | 'onAbort'>;

/** One record version to re-seal. */
export interface Rewrite {
  purpose: 'copy' | 'restore';
  collection: string;
  id: string;
  /** The version (its index entry in the store it is read from). */
  loc: Location;
  /** The bytes of its commit page when the caller holds them (else read through the page cache). */
  page?: Uint8Array;
  /** The suite the new version is sealed with. */
  suite: number;
  /** Its governance state (default: the version's own). */
  governance?: string;
  /** Written as a copy: the value is unchanged (compaction, a migration). */
  copy: boolean;
  /** A buffer of at least loc.length bytes to open the plaintext into (wiped by the step). */
  plaintext?: Uint8Array;
  /**
   * Seal at once into the buffer this returns (exactly `length` bytes, kept by the caller until the
   * commit page is encoded), with the draft's commit salt, and wipe the plaintext now.
   */
  sealInto?: (length: number) => Uint8Array;
  /** A further check after the gate, before opening (a migration's authority callback): false withholds. */
  allow?: () => boolean;
  /** Checks the plaintext before it is sealed (a restore decodes it): what it throws, the step throws. */
  check?: (plaintext: Uint8Array) => void;
}

/**
 * What became of it: written (the sealed length), withheld (by the gate or `allow`; nothing was
 * opened), or failed to open (the caller counts it or throws `error`).
 */
export type Rewritten = { kind: 'written'; length: number } | { kind: 'withheld' } | { kind: 'failed'; error: unknown };

/**
 * Re-seals one record version into `draft` (see the file comment).
 * @throws what `check` throws (the plaintext wiped); what sealing throws
 * @example
 * const r = await rewrite({ from: records, to: records, generation: () => keys.current() }, draft,
 *   { purpose: 'copy', collection, id, loc, suite: loc.suite, copy: true });
 */
export async function rewrite(ctx: RewriteContext, draft: RewriteDraft, r: Rewrite): Promise<Rewritten> {
  const { collection, id, loc } = r;
  if (ctx.from.refusal(r.purpose, collection, id, loc) !== undefined || r.allow?.() === false)
    return { kind: 'withheld' };
  let plaintext: Uint8Array;
  try {
    plaintext =
      r.page !== undefined
        ? ctx.from.openIn(r.purpose, r.page, collection, id, loc, r.plaintext)
        : await ctx.from.open(r.purpose, collection, id, loc);
  } catch (error) {
    return { kind: 'failed', error };
  }
  const wipe = () => plaintext.fill(0);
  let ahead = false;
  try {
    r.check?.(plaintext);
    const spec = {
      collection,
      id,
      suite: r.suite,
      generation: ctx.generation(),
      sequence: draft.sequences(1),
      governance: r.governance ?? loc.governance,
      plaintext,
      ...(r.copy ? { copy: true } : {}),
    };
    let op;
    if (r.sealInto !== undefined) {
      ahead = true;
      op = ctx.to.putSealed(spec, draft.commitSalt(), r.sealInto(sealedLength(r.suite, plaintext.length)));
    } else {
      op = ctx.to.put(spec);
      draft.afterCommit(wipe);
      draft.onAbort(wipe);
    }
    draft.write(op, { kind: 'put', collection, id, ...(r.copy ? { copy: true } : {}) });
    return { kind: 'written', length: op.kind === 'put' ? op.length : 0 };
  } catch (e) {
    wipe();
    throw e;
  } finally {
    if (ahead) wipe();
  }
}
