// Signed checkpoints (DESIGN §7): the signing policy of a store. A checkpoint is (store id,
// generation, tree size, root, hash of the previous checkpoint) signed with ML-DSA-87; it is its own
// page, and the log's new leaf hashes (a log page) and whatever contributors add (sealed lexical
// indexes) go into the same commit. Automatic checkpoints follow commits (an `applied` hook) once
// enough records or time passed since the last one.

import { PqdbError } from '../errors';
import { signCheckpoint, checkpointHash, type Checkpoint } from '../crypto/proofs';
import { consistencyProofFromFrontier, verifyConsistency } from '../crypto/merkle';
import type { KeyRing } from './keys';
import type { MerkleLogs } from './merkle-log';
import type { CommitPipeline, Draft } from './commit';
import { b64 } from '../_encoding';
import type { SignedCheckpoint } from './replay';

/** Automatic checkpoint defaults: after this many records, or this long with at least one. */
export const AUTO_CHECKPOINT_RECORDS = 10_000;
export const AUTO_CHECKPOINT_MS = 60_000;

/** Adds to a checkpoint's draft, under generation `g`, what covers the commit pages up to `afterPage`. */
export type CheckpointContributor = (draft: Draft, g: number, afterPage: number) => Promise<void>;

export interface CheckpointContext {
  readonly pipeline: CommitPipeline;
  readonly keys: KeyRing;
  readonly logs: MerkleLogs;
  readonly storeId: Uint8Array;
  /** The signed checkpoints so far, oldest first (found by replay; new ones are appended). */
  readonly list: SignedCheckpoint[];
}

export interface CheckpointOptions {
  signer?: Uint8Array;
  signerPublicKey?: Uint8Array;
  autoCheckpoint?: { records?: number; ms?: number } | false;
}

/** The last element of `list` that satisfies `test`. */
export function lastWhere<T>(list: readonly T[], test: (x: T) => boolean): T | undefined {
  for (let i = list.length - 1; i >= 0; i--) if (test(list[i])) return list[i];
  return undefined;
}

export class Checkpoints {
  readonly #pipeline: CommitPipeline;
  readonly #keys: KeyRing;
  readonly #logs: MerkleLogs;
  readonly #storeId: Uint8Array;
  readonly #signer?: Uint8Array;
  readonly #signerPublic?: Uint8Array;
  readonly #auto?: { records: number; ms: number };
  readonly #contributors: CheckpointContributor[] = [];
  /** Every signed checkpoint with its decoded fields, oldest first. */
  readonly #list: SignedCheckpoint[];
  #lastAt = Date.now();
  /** The compact range of the log at the last checkpoint of `generation` (for consistency proofs). */
  #frontier?: { generation: number; size: number; frontier: Uint8Array[] };
  #autoError?: unknown;
  /** Per generation, its log's size when the store's state was last persisted without a signature. */
  readonly #persistedAt = new Map<number, number>();

  constructor(ctx: CheckpointContext, options: CheckpointOptions) {
    this.#pipeline = ctx.pipeline;
    this.#keys = ctx.keys;
    this.#logs = ctx.logs;
    this.#storeId = ctx.storeId;
    this.#list = ctx.list;
    this.#signer = options.signer === undefined ? undefined : new Uint8Array(options.signer);
    this.#signerPublic = options.signerPublicKey;
    const auto = options.autoCheckpoint ?? {};
    if (auto !== false) {
      if (typeof auto !== 'object' || auto === null)
        throw new TypeError('"autoCheckpoint" expected { records?, ms? } or false');
      const records = auto.records ?? AUTO_CHECKPOINT_RECORDS;
      const ms = auto.ms ?? AUTO_CHECKPOINT_MS;
      if (!(records >= 1) || !(ms >= 0)) throw new RangeError('"autoCheckpoint" expected records >= 1 and ms >= 0');
      this.#auto = { records, ms };
    }
  }

  /** True when the store holds signer keys. */
  /** The signer's public key, when the store was opened with signer keys. */
  get signerPublicKey(): Uint8Array | undefined {
    return this.#signerPublic;
  }

  get canSign(): boolean {
    return this.#signer !== undefined && this.#signerPublic !== undefined;
  }

  /** The last automatic checkpoint's failure, if it failed. */
  get autoError(): unknown {
    return this.#autoError;
  }

  /** Adds what a checkpoint's commit must also carry (run in registration order). */
  contribute(fn: CheckpointContributor): void {
    this.#contributors.push(fn);
  }

  /** Every signed checkpoint, oldest first (the list itself: do not edit). */
  get list(): readonly SignedCheckpoint[] {
    return this.#list;
  }

  /** The newest checkpoint of generation `g`. */
  last(g: number): SignedCheckpoint | undefined {
    return lastWhere(this.#list, (c) => c.generation === g);
  }

  /**
   * Signs a checkpoint of the current generation's log and stores it durably. `unlessCovered`: not
   * when the newest checkpoint already signs the whole log as it stands when the task runs (then
   * that one is returned, and nothing is written).
   * @throws TypeError without signer keys; whatever the commit throws.
   */
  checkpoint(unlessCovered = false): Promise<SignedCheckpoint> {
    return this.#pipeline.run(async (draft) => {
      if (!this.canSign) throw new TypeError('checkpoints need the "signer" and "signerPublicKey" options');
      const g = this.#keys.current();
      const newest = this.#list.at(-1);
      if (unlessCovered && newest?.generation === g && newest.size === this.#logs.size(g)) {
        draft.discard();
        return newest;
      }
      // The root comes from the generation's compact range, kept current by every commit: no
      // rehashing of the log, however long it is.
      const last = this.#list.at(-1);
      const previous = last !== undefined ? checkpointHash(last.signed) : new Uint8Array(48);
      const size = this.#logs.size(g);
      const root = this.#logs.root(g);
      await this.#checkConsistent(g, size, root);
      const c: Checkpoint = { storeId: this.#storeId, generation: g, size, root, previous };
      const signed = signCheckpoint(c, this.#signer!, this.#signerPublic!);
      const m = draft.manifest;
      const afterPage = m.nextPageId - 1; // every commit page so far: what an index persisted here covers
      const page = { id: draft.pageId(), bytes: signed };
      draft.addPage(page);
      // Only the leaves added since the last log page are written: a checkpoint costs what it adds.
      const logs = { ...(m.logs ?? {}) };
      await this.#logs.pushLogPage(g, logs, draft);
      m.logs = logs;
      for (const fn of this.#contributors) await fn(draft, g, afterPage);
      m.checkpointPages = [...(m.checkpointPages ?? []), page.id];
      m.lastCheckpoint = b64(checkpointHash(signed));
      const result = { ...c, signed };
      const frontier = this.#logs.frontier(g);
      draft.afterCommit(() => {
        this.#list.push(result);
        this.#frontier = { generation: g, size, frontier };
        this.#lastAt = Date.now();
        this.#persistedAt.set(g, size);
      });
      return result;
    });
  }

  /**
   * Refuses to sign a root that is not an append-only extension of the last checkpoint of its
   * generation: the RFC 9162 consistency proof between the two is built from the log (the compact
   * range at the older size and the leaves since) and verified before anything is signed.
   * @throws PqdbError CORRUPTION when the log does not extend what was signed.
   */
  async #checkConsistent(g: number, size: number, root: Uint8Array): Promise<void> {
    const last = this.last(g);
    if (last === undefined) return;
    const bad = () => {
      throw new PqdbError(
        'CORRUPTION',
        `the log of generation ${g} does not extend its last signed checkpoint (size ${last.size}): nothing is signed`,
      );
    };
    if (last.size > size) bad();
    if (this.#frontier?.generation !== g || this.#frontier.size !== last.size) {
      // Once per process: the compact range at the last checkpoint — the log's own when nothing was
      // appended since, the persisted one when the directory was persisted with it, else from one
      // pass over the log.
      const frontier = await this.#logs.frontierAt(g, last.size);
      this.#frontier = { generation: g, size: last.size, frontier };
    }
    const appended = await this.#logs.since(g, last.size);
    const proof = consistencyProofFromFrontier(last.size, this.#frontier.frontier, appended);
    if (!verifyConsistency(last.size, size, last.root, root, proof)) bad();
  }

  /**
   * Persists what a checkpoint persists besides the signed checkpoint itself (the contributors: the
   * key directory, the lexical indexes, and the log pages with them), without signing: how a store
   * without signer keys keeps its open short.
   */
  persist(): Promise<void> {
    return this.#pipeline.run(async (draft) => {
      const g = this.#keys.current();
      const afterPage = draft.manifest.nextPageId - 1;
      for (const fn of this.#contributors) await fn(draft, g, afterPage);
      const sizes = new Map(this.#keys.generations().map((x) => [x, this.#logs.size(x)] as const));
      draft.afterCommit(() => {
        for (const [x, size] of sizes) this.#persistedAt.set(x, size);
        this.#lastAt = Date.now();
      });
    });
  }

  /** The log sizes an open found persisted (so the next automatic persist counts from them). */
  notePersisted(sizes: Record<string, number>): void {
    for (const [g, size] of Object.entries(sizes)) this.#persistedAt.set(Number(g), size);
  }

  /**
   * `applied` hook: queues an automatic checkpoint (without signer keys: a persist) when enough
   * records or time passed since the last one.
   */
  maybeCheckpoint(): void {
    if (this.#auto === undefined) return;
    const g = this.#keys.current();
    const size = this.#logs.size(g);
    const last = Math.max(this.last(g)?.size ?? 0, this.#persistedAt.get(g) ?? 0);
    const due = size - last >= this.#auto.records || (size > last && Date.now() - this.#lastAt >= this.#auto.ms);
    if (!due) return;
    this.#lastAt = Date.now(); // one queued checkpoint at a time
    (this.canSign ? this.checkpoint() : this.persist()).then(
      () => (this.#autoError = undefined),
      (e) => (this.#autoError = e),
    );
  }

  /**
   * Consistency proof between two checkpoints (by position in the list) of one generation.
   * @throws RangeError for unknown positions or checkpoints of different generations; PqdbError
   * HISTORY_PRUNED when the older one lies below the generation's history floor
   */
  async consistencyProof(from: number, to: number): Promise<Uint8Array[]> {
    const a = this.#list[from];
    const b = this.#list[to];
    if (a === undefined || b === undefined || a.generation !== b.generation || a.size > b.size)
      throw new RangeError('"from" and "to" expected checkpoints of one generation, oldest first');
    const floor = this.#logs.floorOf(a.generation);
    if (a.size > 0 && a.size < floor && a.size !== b.size)
      throw new PqdbError(
        'HISTORY_PRUNED',
        `checkpoint ${from} (size ${a.size}) lies below the history floor ${floor} of generation ${a.generation}: the floor page's link proves it consistent (verifyStore checks it)`,
      );
    if (a.size === b.size) return [];
    return (await this.#logs.tree(b.generation, b.size)).consistencyProof(a.size);
  }

  /**
   * A checkpoint covering leaf `leafIndex` of generation `g`: the newest one, or a new one when `g`
   * is the current generation (new checkpoints sign only that one).
   * @throws PqdbError NOT_CHECKPOINTED for a leaf of an older generation past its last checkpoint.
   */
  async covering(g: number, leafIndex: number): Promise<SignedCheckpoint> {
    let cp = lastWhere(this.#list, (x) => x.generation === g && x.size > leafIndex);
    if (cp === undefined && g === this.#keys.current()) cp = await this.checkpoint();
    if (cp === undefined || cp.generation !== g || cp.size <= leafIndex)
      throw new PqdbError(
        'NOT_CHECKPOINTED',
        `no signed checkpoint covers this record (leaf ${leafIndex} of key generation ${g}), and new checkpoints sign only the current generation ${this.#keys.current()}`,
      );
    return cp;
  }

  /** Wipes the signer's secret key. */
  close(): void {
    this.#signer?.fill(0);
  }
}
