// Per key generation, the append-only Merkle log of its records (DESIGN §7): the leaf hashes in
// append order, the compact range (frontier) that gives the current root in O(log n), and a few
// trees of a given size kept for proofs. Leaves are appended as commits are applied; a checkpoint
// persists the leaves added since the last log page (page-format.ts log pages).
//
// A store opened from its persisted key directory does not read the log pages: each log starts
// as `base` leaves that are only in log pages, with the compact range at `base` (persisted with
// the directory), and the leaves appended after. The persisted leaves are loaded on first need
// (a proof, a root of an older size), through the loader the store sets: memory holds the leaves
// since the last persisted directory, not the whole log.
//
// A log may have a history floor (history-floor.ts): its leaves below `floor` are known only by the
// compact range there. Leaves are then counted from 0 as always, but only those from the floor on
// are held, loaded or written; proofs and roots reach back to the floor and no further.

import { PqdbError } from '../errors';
import { MerkleHashTree, MerkleAppender, HASH_BYTES } from '../crypto/merkle';
import { equalBytes } from '../_bytes';
import { pauseIfSpent } from '../_yield';
import { encodeLogPage } from './page-format';
import type { LogPageRef } from './manifest';
import type { TreeFloor } from '../crypto/merkle';

/** Leaves a new generation's log has room for before it first grows. */
const INITIAL_LEAVES = 1024;
/** Trees of a given size kept for proofs (any more and the cache starts again). */
const TREE_CACHE = 4;
/** Leaves folded into a compact range per slice (a few milliseconds of hashing). */
const APPEND_SLICE = 8192;
/** Leaves per log page at most (12 MiB of hashes: well under a page's limit). */
export const LOG_PAGE_LEAVES = 1 << 18;

/** Where log pages go: a draft's page-id allocation and page list (src/engine/commit.ts). */
export interface LogPageSink {
  pageId(): number;
  addPage(page: { id: number; bytes: Uint8Array }): void;
}

/** Loads leaves [floor, to) of a generation's log from its log pages. */
export type LeafLoader = (generation: number, to: number) => Promise<Uint8Array>;

export class MerkleLogs {
  /**
   * Per generation: leaves [floor, base) only in log pages, then `n` leaves in `buf` (leaves below
   * the floor are known only by its compact range, `floor`).
   */
  readonly #leaves = new Map<
    number,
    {
      floor?: TreeFloor;
      base: number;
      buf: Uint8Array;
      n: number;
      baseRoot?: Uint8Array;
      baseFrontier?: Uint8Array[];
    }
  >();
  #loader?: LeafLoader;
  readonly #appenders = new Map<number, MerkleAppender>();
  /** Trees built for proofs, by "generation/size" (cleared when a log grows). */
  readonly #trees = new Map<string, MerkleHashTree>();

  /** Sets how persisted leaves are loaded (the store's log pages). */
  setLoader(loader: LeafLoader): void {
    this.#loader = loader;
  }

  /**
   * A log whose first `size` leaves are in log pages (not loaded), with `frontier` the compact
   * range at `size`. The generation's log must be empty.
   */
  restore(generation: number, size: number, frontier: readonly Uint8Array[], floor?: TreeFloor): void {
    if (this.size(generation) !== 0) throw new RangeError(`the log of generation ${generation} is not empty`);
    if (floor !== undefined && floor.size > size)
      throw new PqdbError('CORRUPTION', `the history floor of generation ${generation} lies past its log`);
    const appender = MerkleAppender.fromFrontier(size, frontier);
    const buf = new Uint8Array(HASH_BYTES * INITIAL_LEAVES);
    this.#leaves.set(generation, {
      floor: floor?.size ? floor : undefined,
      base: size,
      buf,
      n: 0,
      baseRoot: appender.root(),
      baseFrontier: [...frontier],
    });
    this.#appenders.set(generation, appender);
  }

  /** The first leaf a generation's log holds (0 unless a history floor was raised). */
  floorOf(generation: number): number {
    return this.#leaves.get(generation)?.floor?.size ?? 0;
  }

  /** The history floor of a generation's log (its size and compact range), if any. */
  floor(generation: number): TreeFloor | undefined {
    return this.#leaves.get(generation)?.floor;
  }

  /**
   * Raises a loaded log's floor to `size`: leaves below it are dropped from memory and known from
   * then on only by the compact range there (the caller persists that first: history-floor.ts).
   */
  raiseFloor(generation: number, floor: TreeFloor): void {
    const log = this.#leaves.get(generation);
    const from = this.floorOf(generation);
    if (log === undefined || log.base !== from)
      throw new RangeError(`the log of generation ${generation} is not loaded`);
    if (floor.size < from || floor.size > log.base + log.n)
      throw new RangeError('a floor within the held leaves expected');
    log.buf = log.buf.slice((floor.size - from) * HASH_BYTES, log.n * HASH_BYTES);
    log.n -= floor.size - from;
    log.base = floor.size;
    log.floor = floor.size > 0 ? floor : undefined;
    this.#trees.clear();
  }

  /** Loads the persisted leaves of a generation's log into memory (once). */
  async load(generation: number): Promise<void> {
    const log = this.#leaves.get(generation);
    const from = this.floorOf(generation);
    if (log === undefined || log.base === from) return;
    if (this.#loader === undefined) throw new RangeError('no loader for persisted log leaves');
    const head = await this.#loader(generation, log.base);
    if (log.base === from) return; // loaded meanwhile
    const held = log.base - from;
    if (head.length !== held * HASH_BYTES)
      throw new PqdbError('CORRUPTION', `the log pages of generation ${generation} do not hold ${held} leaves`);
    const buf = new Uint8Array(Math.max(HASH_BYTES * INITIAL_LEAVES, (held + log.n) * 2 * HASH_BYTES));
    buf.set(head);
    buf.set(log.buf.subarray(0, log.n * HASH_BYTES), head.length);
    // The tree that checks them is the one a proof at this size uses: kept, not built again.
    const tree = await MerkleHashTree.build(head, log.floor, pauseIfSpent);
    if (log.baseRoot !== undefined && !equalBytes(tree.root(), log.baseRoot))
      throw new PqdbError('CORRUPTION', `the log pages of generation ${generation} do not give the persisted root`);
    this.#trees.set(`${generation}/${log.base}`, tree);
    log.buf = buf;
    log.n += held;
    log.base = from;
    log.baseRoot = undefined;
    log.baseFrontier = undefined;
  }

  /**
   * The leaf hashes of a generation's log from its floor on (48·(n − floor) bytes; a view, valid
   * until the log grows): leaf i is at (i − floorOf(generation))·48.
   * @throws RangeError when persisted leaves are not loaded (await load first)
   */
  log(generation: number): Uint8Array {
    const log = this.#leaves.get(generation);
    if (log === undefined) return new Uint8Array(0);
    if (log.base > this.floorOf(generation)) throw new RangeError(`the log of generation ${generation} is not loaded`);
    return log.buf.subarray(0, log.n * HASH_BYTES);
  }

  /**
   * Leaves [from, size) of a generation's log, from memory when they are there (else loaded).
   * @throws PqdbError HISTORY_PRUNED when `from` lies below the log's history floor
   */
  async since(generation: number, from: number): Promise<Uint8Array> {
    const log = this.#leaves.get(generation);
    if (log === undefined) return new Uint8Array(0);
    this.#held(generation, from);
    if (from < log.base) await this.load(generation);
    return log.buf.subarray((from - log.base) * HASH_BYTES, log.n * HASH_BYTES);
  }

  /** @throws PqdbError HISTORY_PRUNED when leaf or size `at` lies below the history floor */
  #held(generation: number, at: number): void {
    const floor = this.floorOf(generation);
    if (at < floor)
      throw new PqdbError(
        'HISTORY_PRUNED',
        `the log of generation ${generation} keeps its history from leaf ${floor} on (a compaction dropped what lies below; the floor's links prove the older checkpoints consistent)`,
      );
  }

  /** Number of leaves in a generation's log. */
  size(generation: number): number {
    const log = this.#leaves.get(generation);
    return log === undefined ? 0 : log.base + log.n;
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
      this.#leaves.set(generation, (log = { base: 0, buf: new Uint8Array(HASH_BYTES * INITIAL_LEAVES), n: 0 }));

    const first = log.base + log.n;
    const n = hashes.length / HASH_BYTES;
    if ((log.n + n) * HASH_BYTES > log.buf.length) {
      const grown = new Uint8Array(Math.max(log.buf.length * 2, (log.n + n) * HASH_BYTES));
      grown.set(log.buf.subarray(0, log.n * HASH_BYTES));
      log.buf = grown;
    }
    log.buf.set(hashes, log.n * HASH_BYTES);
    log.n += n;
    if (next !== undefined && next.size === log.base + log.n) this.#appenders.set(generation, next);
    else this.#appender(generation).appendHashes(hashes);
    if (n > 0) this.#trees.clear();
    return first;
  }

  /** The tree of the first `size` leaves of a generation (cached: proofs for many records reuse it). */
  async tree(generation: number, size: number): Promise<MerkleHashTree> {
    const key = `${generation}/${size}`;
    let t = this.#trees.get(key);
    if (t === undefined) {
      this.#held(generation, size);
      await this.load(generation);
      const from = this.floorOf(generation);
      const leaves = this.log(generation).subarray(0, (size - from) * HASH_BYTES);
      // Built in slices: a tree of a million leaves is a second of hashing, and reads come first.
      t = await MerkleHashTree.build(leaves, this.floor(generation), pauseIfSpent);
      if (this.#trees.size >= TREE_CACHE) this.#trees.clear();
      this.#trees.set(key, t);
    }
    return t;
  }

  /** The compact range of the first `size` leaves (kept for the persisted part; else from the leaves). */
  async frontierAt(generation: number, size: number): Promise<Uint8Array[]> {
    if (size === this.size(generation)) return this.frontier(generation);
    const log = this.#leaves.get(generation);
    if (log?.baseFrontier !== undefined && size === log.base) return log.baseFrontier;
    this.#held(generation, size);
    const floor = this.floor(generation);
    if (floor !== undefined && size === floor.size) return [...floor.frontier];
    await this.load(generation);
    const from = floor?.size ?? 0;
    const start = floor === undefined ? new MerkleAppender() : MerkleAppender.fromFrontier(floor.size, floor.frontier);
    const leaves = this.log(generation).subarray(0, (size - from) * HASH_BYTES);
    for (let at = 0; at < leaves.length; at += APPEND_SLICE * HASH_BYTES) {
      if (at > 0) await pauseIfSpent();
      start.appendHashes(leaves.subarray(at, at + APPEND_SLICE * HASH_BYTES));
    }
    return start.frontier();
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

  /**
   * The root of the first `size` leaves: from the compact range when that is the whole log or the
   * persisted part, else from the leaves (loaded if need be).
   */
  async rootAt(generation: number, size: number): Promise<Uint8Array> {
    if (size === this.size(generation)) return this.root(generation);
    const log = this.#leaves.get(generation);
    if (log?.baseRoot !== undefined && size === log.base) return log.baseRoot;
    return (await this.tree(generation, size)).root();
  }

  /**
   * Adds to `sink` log pages of generation g's leaves not yet in one (if any; at most
   * LOG_PAGE_LEAVES a page), and their entries to `logs` (a draft manifest's `logs`).
   */
  async pushLogPage(g: number, logs: Record<string, LogPageRef[]>, sink: LogPageSink): Promise<void> {
    const size = this.size(g);
    let from = logs[g]?.at(-1)?.to ?? this.floorOf(g);
    if (size <= from) return;
    const leaves = await this.since(g, from);
    const refs = [...(logs[g] ?? [])];
    for (let at = 0; from < size;) {
      const to = Math.min(size, from + LOG_PAGE_LEAVES);
      const id = sink.pageId();
      const hashes = leaves.subarray(at, at + (to - from) * HASH_BYTES);
      sink.addPage({ id, bytes: await encodeLogPage(g, from, hashes, pauseIfSpent) });
      refs.push({ pageId: id, from, to });
      at += hashes.length;
      from = to;
    }
    logs[g] = refs;
  }

  #appender(generation: number): MerkleAppender {
    let a = this.#appenders.get(generation);
    if (a === undefined) this.#appenders.set(generation, (a = new MerkleAppender()));
    return a;
  }
}
