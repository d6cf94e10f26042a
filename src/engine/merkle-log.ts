// Per key generation, the append-only Merkle log of its records (DESIGN §7): the leaf hashes in
// append order, the compact range (frontier) that gives the current root in O(log n), and a few
// trees of a given size kept for proofs. Leaves are appended as commits are applied; a checkpoint
// persists the leaves added since the last log page (page-format.ts log pages).

import { MerkleHashTree, MerkleAppender, HASH_BYTES } from '../crypto/merkle';
import { yieldToEventLoop } from '../_yield';
import { encodeLogPage } from './page-format';
import type { LogPageRef } from './manifest';

/** Leaves a new generation's log has room for before it first grows. */
const INITIAL_LEAVES = 1024;
/** Trees of a given size kept for proofs (any more and the cache starts again). */
const TREE_CACHE = 4;

/** Where log pages go: a draft's page-id allocation and page list (src/engine/commit.ts). */
export interface LogPageSink {
  pageId(): number;
  addPage(page: { id: number; bytes: Uint8Array }): void;
}

export class MerkleLogs {
  readonly #leaves = new Map<number, { buf: Uint8Array; n: number }>();
  readonly #appenders = new Map<number, MerkleAppender>();
  /** Trees built for proofs, by "generation/size" (cleared when a log grows). */
  readonly #trees = new Map<string, MerkleHashTree>();

  /** The leaf hashes of a generation's log (48·n bytes; a view, valid until the log grows). */
  log(generation: number): Uint8Array {
    const log = this.#leaves.get(generation);
    return log === undefined ? new Uint8Array(0) : log.buf.subarray(0, log.n * HASH_BYTES);
  }

  /** Number of leaves in a generation's log. */
  size(generation: number): number {
    return this.#leaves.get(generation)?.n ?? 0;
  }

  /** The root of a generation's whole log, from its compact range. */
  root(generation: number): Uint8Array {
    return this.#appender(generation).root();
  }

  /**
   * Appends leaf hashes (48 each) to a generation's log; returns the index of the first. `next`:
   * the compact range headAfter computed for exactly these hashes, taken instead of hashing again.
   */
  append(generation: number, hashes: Uint8Array, next?: MerkleAppender): number {
    let log = this.#leaves.get(generation);
    if (log === undefined)
      this.#leaves.set(generation, (log = { buf: new Uint8Array(HASH_BYTES * INITIAL_LEAVES), n: 0 }));
    const first = log.n;
    const n = hashes.length / HASH_BYTES;
    if ((log.n + n) * HASH_BYTES > log.buf.length) {
      const grown = new Uint8Array(Math.max(log.buf.length * 2, (log.n + n) * HASH_BYTES));
      grown.set(log.buf.subarray(0, log.n * HASH_BYTES));
      log.buf = grown;
    }
    log.buf.set(hashes, log.n * HASH_BYTES);
    log.n += n;
    if (next !== undefined && next.size === log.n) this.#appenders.set(generation, next);
    else this.#appender(generation).appendHashes(hashes);
    if (n > 0) this.#trees.clear();
    return first;
  }

  /** The tree of the first `size` leaves of a generation (cached: proofs for many records reuse it). */
  tree(generation: number, size: number): MerkleHashTree {
    const key = `${generation}/${size}`;
    let t = this.#trees.get(key);
    if (t === undefined) {
      t = new MerkleHashTree(this.log(generation).subarray(0, size * HASH_BYTES));
      if (this.#trees.size >= TREE_CACHE) this.#trees.clear();
      this.#trees.set(key, t);
    }
    return t;
  }

  /** The compact range of a generation's whole log. */
  frontier(generation: number): Uint8Array[] {
    return this.#appender(generation).frontier();
  }

  /** The size and root a generation's log would have with `hashes` appended (the log is unchanged). */
  headAfter(generation: number, hashes: Uint8Array): { size: number; root: Uint8Array; appender: MerkleAppender } {
    const a = this.#appender(generation);
    const next = MerkleAppender.fromFrontier(a.size, a.frontier()).appendHashes(hashes);
    return { size: next.size, root: next.root(), appender: next };
  }

  /** The root of the first `size` leaves (from the compact range when that is the whole log). */
  rootAt(generation: number, size: number): Uint8Array {
    return size === this.size(generation) ? this.root(generation) : this.tree(generation, size).root();
  }

  /**
   * Adds to `sink` a log page of generation g's leaves not yet in one (if any), and its entry to
   * `logs` (a draft manifest's `logs`).
   */
  async pushLogPage(g: number, logs: Record<string, LogPageRef[]>, sink: LogPageSink): Promise<void> {
    const size = this.size(g);
    const persistedTo = logs[g]?.at(-1)?.to ?? 0;
    if (size <= persistedTo) return;
    const id = sink.pageId();
    sink.addPage({
      id,
      bytes: await encodeLogPage(g, persistedTo, this.log(g).subarray(persistedTo * HASH_BYTES), yieldToEventLoop),
    });
    logs[g] = [...(logs[g] ?? []), { pageId: id, from: persistedTo, to: size }];
  }

  #appender(generation: number): MerkleAppender {
    let a = this.#appenders.get(generation);
    if (a === undefined) this.#appenders.set(generation, (a = new MerkleAppender()));
    return a;
  }
}
