// PageStore: the contract every storage adapter (memory, node-fs, indexeddb, postgres) fulfils, and
// `supports`, the capabilities it declares (abstract-level's `db.supports` manifest): callers check
// it, never the presence of a method. The helpers adapters share are in page-store-base.ts, CRC-32C
// in src/_crc32c.ts. DESIGN.md §6; the on-disk formats are in docs/storage.md.
//
// Security caveats: a store holds opaque, already-sealed bytes and never sees plaintext or keys.
// The per-page CRC-32C detects accidents (torn writes, flipped bits, truncation); it is not a MAC
// and detects nothing an attacker does on purpose — the sealed records above carry the MAC.

/** Largest page id: ids are u32. */
export const MAX_PAGE_ID = 0xffff_ffff;
/** Largest page accepted by `commit` (64 MiB). */
export const MAX_PAGE_BYTES = 64 * 1024 * 1024;
/** Largest manifest accepted by `commit` (16 MiB): the manifest is meant to stay small. */
export const MAX_MANIFEST_BYTES = 16 * 1024 * 1024;

/** One page to write. `bytes` is copied when `commit` is called; later changes do not reach the store. */
export interface PageWrite {
  readonly id: number;
  readonly bytes: Uint8Array;
}

/** One atomic commit: new pages, pages to drop, and optionally the new manifest. */
export interface CommitBatch {
  /** New pages. Ids must be unique in the batch and absent from the store (pages are immutable). */
  readonly pages?: readonly PageWrite[];
  /** Replaces the manifest; `undefined` keeps the current one. */
  readonly manifest?: Uint8Array;
  /** Pages to drop (garbage collection). Ids not in the store are ignored. */
  readonly deletes?: readonly number[];
  /**
   * Ids of `pages` that may replace a live page of the same id: in the same atomic commit the old
   * page goes and the new one is written (a replica putting back a page its primary sent again
   * because its copy went bad). Every other page of the batch must still be absent. Each id must
   * be among `pages` and not among `deletes`.
   */
  readonly replaces?: readonly number[];
  /**
   * The caller hands the page and manifest buffers over instead of having them copied: it must
   * never change them afterwards. The engine does this for its (immutable) pages, so a commit of
   * many megabytes costs no copy on the main thread.
   */
  readonly transfer?: boolean;
}

/** Sizes, for accounting and quotas. */
export interface PageStoreStats {
  /** Live pages. */
  readonly pageCount: number;
  /** Sum of live page lengths. */
  readonly pageBytes: number;
  /** Length of the manifest (0 when there is none). */
  readonly manifestBytes: number;
  /**
   * Bytes the medium holds for this store, framing included: for node-fs the committed segment
   * bytes (dead records included, until `reclaim` removes their segment) plus the manifest file; for
   * memory and IndexedDB an estimate (payload plus per-record framing).
   */
  readonly storedBytes: number;
}

/** What opening the store had to repair. */
export interface RecoveryReport {
  /** True when nothing needed repair. */
  readonly clean: boolean;
  /** Bytes cut from segment tails (node-fs: writes of a commit that never completed). */
  readonly truncatedBytes: number;
  /** One human-readable line per repair action. */
  readonly actions: readonly string[];
}

/**
 * What a page store can do beyond the required methods, declared once (abstract-level's `supports`
 * manifest). Each flag, when true, promises the methods and behaviour it names, and the shared
 * conformance suite (node-tests/cases/page-store.ts) runs the cases of every flag declared. A
 * page store without `supports` (one written before it existed) is taken as declaring nothing:
 * callers then use only the required methods (readPagesOf and readRangeOf fall back to readPage).
 * @example if (supportsOf(pages).reclaim) await pages.reclaim!({ minDeadFraction: 0.5 });
 */
export interface PageStoreSupports {
  /** `readPages` is implemented (node-fs reads neighbouring pages together). */
  readonly readPages: boolean;
  /** `readRange` is implemented. */
  readonly readRange: boolean;
  /**
   * `readRange` reads only the range's bytes from the medium (memory, node-fs, postgres); false
   * when a range costs reading the whole page (IndexedDB), so that the engine's page cache reads and
   * keeps the page instead of reading it again for each record in it. Implies `readRange`.
   */
  readonly partialRanges: boolean;
  /** `readRangeSync` is implemented (it may still answer -1, "not now"). */
  readonly readRangeSync: boolean;
  /** `readRangeSync` with `block` always reads (node-fs, memory). Implies `readRangeSync`. */
  readonly blockingReads: boolean;
  /** `reclaim` is implemented: deleted pages leave dead space that it gives back (node-fs segments). */
  readonly reclaim: boolean;
  /**
   * The store is a FollowablePageStore opened read-only beside a writer it follows (`view`,
   * `watch`, `ready`: the postgres one opened with `readOnly`).
   */
  readonly follow: boolean;
}

/** The capabilities of a page store that declares none: only the required methods are used. */
export const NOTHING_SUPPORTED: PageStoreSupports = Object.freeze({
  readPages: false,
  readRange: false,
  partialRanges: false,
  readRangeSync: false,
  blockingReads: false,
  reclaim: false,
  follow: false,
});

/**
 * `store.supports`, or NOTHING_SUPPORTED for a page store that declares none (a flag it leaves out
 * counts as false).
 * @example const ranged = supportsOf(pages).partialRanges;
 */
export function supportsOf(store: PageStore): PageStoreSupports {
  const s = store.supports;
  if (s === undefined || s === null || typeof s !== 'object') return NOTHING_SUPPORTED;
  return s;
}

/**
 * A store of immutable numbered pages and one manifest, changed only by atomic commits.
 *
 * Errors: methods reject with `PqdbError` — `NOT_OPEN` after `close()`, `CORRUPTION` when stored
 * bytes fail their checksum (never returned as data), `IO_ERROR` (with `cause`) when the medium
 * fails, `QUOTA_EXCEEDED` when it is full, `LOCKED` when opening a store another writer holds —
 * and with `TypeError`/`RangeError` for programmer mistakes (bad ids, non-bytes, rewriting a page).
 *
 * @example
 * const store = await openMemoryPageStore();
 * await store.commit({ pages: [{ id: 1, bytes: sealedPage }], manifest: sealedManifest });
 * const page = await store.readPage(1);
 * await store.close();
 */
export interface PageStore {
  /** 'memory' | 'node-fs' | 'indexeddb'. */
  readonly kind: string;
  /** False once `close()` was called. */
  readonly isOpen: boolean;
  /** What opening the store repaired. */
  readonly recovery: RecoveryReport;
  /**
   * What it can do beyond the required methods (PageStoreSupports). Optional for page stores
   * written before it existed: those count as supporting nothing optional (supportsOf).
   */
  readonly supports?: PageStoreSupports;
  /** The page's bytes (a fresh copy), or undefined when absent. @throws PqdbError CORRUPTION */
  readPage(id: number): Promise<Uint8Array | undefined>;
  /**
   * `readPage` for each of `ids`, in their order; a medium that can reads adjacent pages together
   * (node-fs: one read per run of neighbouring records). Optional (`supports.readPages`): see readPagesOf.
   */
  readPages?(ids: readonly number[]): Promise<(Uint8Array | undefined)[]>;
  /**
   * Bytes `[offset, offset + length)` of page `id` (a fresh copy), or undefined when the page is
   * absent: one sealed record out of a commit page without reading (or caching) the whole page.
   * node-fs and postgres read only the range; memory copies it; IndexedDB, which cannot read part
   * of a value, reads the page (checked) and copies the range. Optional (`supports.readRange`):
   * see readRangeOf.
   *
   * No checksum is checked on a partial read (the page's CRC-32C covers the whole page, so
   * checking it needs every byte): the bytes are returned as the medium holds them. That is sound
   * because the engine reads a range only at a location taken from its authenticated directory and
   * opens it as a sealed record, whose AEAD tag authenticates exactly those bytes — an accident or
   * an attack in the range is AUTH_FAILED one layer up, never wrong data.
   *
   * @throws TypeError/RangeError for a bad id, or an offset or length that is not an integer in
   * [0, MAX_PAGE_BYTES]; PqdbError CORRUPTION when the range runs past the end of the page (the
   * engine's locations come from its authenticated directory, so a page shorter than the
   * location says means the medium changed under it), NOT_OPEN after close, IO_ERROR
   * @example const sealed = await store.readRange(pageId, loc.offset, loc.length);
   */
  readRange?(id: number, offset: number, length: number): Promise<Uint8Array | undefined>;
  /** @deprecated Ignored: declare `supports.partialRanges`. */
  readonly partialRanges?: boolean;
  /**
   * readRange done synchronously into `into[0, length)` when the medium can do it now: 1 when read,
   * 0 when the page is absent, -1 when not now (then call readRange). node-fs reads a record-sized
   * range this way (at most 64 in one turn of the event loop); the others answer -1. Optional
   * (`supports.readRangeSync`): a user's read of a record then costs no promise and no new array.
   * The same trust rule as readRange. With `block` (where `supports.blockingReads`) it always reads, however long the range, holding
   * the thread for the read: the engine loads the persisted directory's partitions this way on a
   * store's first lookup of them.
   * @throws as readRange; RangeError when `into` is shorter than `length`
   */
  readRangeSync?(id: number, offset: number, length: number, into: Uint8Array, block?: boolean): -1 | 0 | 1;
  /** @deprecated Ignored: declare `supports.blockingReads`. */
  readonly blockingReads?: boolean;
  /** The manifest (a fresh copy), or undefined before the first commit that set one. */
  readManifest(): Promise<Uint8Array | undefined>;
  /** Ids of the live pages, ascending. */
  listPages(): Promise<number[]>;
  /**
   * Writes the pages, drops `deletes` and replaces the manifest atomically: after a crash either
   * all of it is visible or none. Commits run one at a time in call order; the promise resolves
   * once the commit is durable.
   */
  commit(batch: CommitBatch): Promise<void>;
  /** `commit({ deletes: ids })`. */
  deletePages(ids: readonly number[]): Promise<void>;
  /** Sizes. */
  stats(): Promise<PageStoreStats>;
  /**
   * Segment reclaim: gives back the space of deleted pages where the medium keeps it (node-fs:
   * segments whose dead fraction reaches `minDeadFraction` have their live pages copied into the
   * newest segment, each checked against its CRC-32C as it is copied, and are then removed). Not
   * the engine's record compaction (`store.compact()`), which calls it after its own work. Page
   * ids and bytes never change; nothing becomes visible or invisible. It runs in the commit queue
   * in bounded steps (at most `stepBytes` copied and one commit-protocol write per step), so
   * commits and reads interleave with it, and a crash at any point leaves every acknowledged page
   * exactly once. Resolves once no segment qualifies, `maxBytes` were copied, or the store was
   * closed meanwhile (with what was done so far). Optional (`supports.reclaim`): a store without
   * dead space has none (memory, IndexedDB and postgres free a deleted page at once).
   *
   * @throws RangeError for options out of range; PqdbError NOT_OPEN after close, READ_ONLY on a
   * read-only store, CORRUPTION when a page to copy fails its checksum (nothing is written),
   * CONFLICT when another writer committed, IO_ERROR/QUOTA_EXCEEDED when the medium fails (the store
   * then refuses commits until reopened, as after a failed commit; nothing acknowledged is lost)
   * @example
   * await store.deletePages(oldPages);
   * if (supportsOf(store).reclaim) console.log(await store.reclaim!({ minDeadFraction: 0.5 }));
   */
  reclaim?(options?: ReclaimOptions): Promise<ReclaimResult>;
  /** @deprecated The former name of `reclaim` (node-fs keeps it as an alias). */
  compact?(options?: ReclaimOptions): Promise<ReclaimResult>;
  /** Waits for pending operations, then releases the medium and the writer lock. Idempotent. */
  close(): Promise<void>;
}

/** Options of `PageStore.reclaim`. */
export interface ReclaimOptions {
  /** A segment is rewritten once this fraction of its bytes is dead, in (0, 1] (default 0.5). */
  readonly minDeadFraction?: number;
  /** Stop once about this many bytes were copied by this call (default: no limit). */
  readonly maxBytes?: number;
  /** The most bytes one step copies (default: the store's step size, 4 MiB on node-fs); a larger page moves alone. */
  readonly stepBytes?: number;
  /** Called after each step. */
  readonly onProgress?: (progress: ReclaimProgress) => void;
}

/** Where a `reclaim` call stands, after one of its steps. */
export interface ReclaimProgress {
  /** Segments removed so far by this call. */
  readonly segmentsRewritten: number;
  /** Page and tombstone bytes (framing included) copied so far by this call. */
  readonly bytesCopied: number;
  /** `stats().storedBytes` now. */
  readonly storedBytes: number;
}

/** What a `reclaim` call did. */
export interface ReclaimResult {
  /** Segments removed (their live pages copied out first). */
  readonly segmentsRewritten: number;
  /** Page and tombstone bytes (framing included) copied. */
  readonly bytesCopied: number;
  /** `stats().storedBytes` when the call started. */
  readonly bytesBefore: number;
  /** `stats().storedBytes` when it ended. */
  readonly bytesAfter: number;
}

/** @deprecated The former name of ReclaimOptions. */
export type SegmentCompactOptions = ReclaimOptions;
/** @deprecated The former name of ReclaimProgress. */
export type SegmentCompactProgress = ReclaimProgress;
/** @deprecated The former name of ReclaimResult. */
export type SegmentCompactResult = ReclaimResult;

/**
 * A commit after validation: copied bytes, existing-page deletes only. An adapter applies the
 * deletes before the pages: an id in both (a replaced page, CommitBatch.replaces) ends up holding
 * the new page, on the medium and after a replay.
 */
export interface CheckedBatch {
  readonly pages: readonly PageWrite[];
  readonly manifest: Uint8Array | undefined;
  readonly deletes: readonly number[];
}

/**
 * What a following page store's view holds at one instant: its manifest version, the manifest and
 * the live pages, consistent with each other (one snapshot). Read it, never change it.
 */
export interface PageStoreView {
  /** The view's manifest version (each commit of the writer adds one). */
  readonly version: number;
  /** The sealed manifest, undefined before the first commit that set one. */
  readonly manifest: Uint8Array | undefined;
  /** Live page id → length in bytes. */
  readonly pages: ReadonlyMap<number, number>;
}

/**
 * The optional capability of a page store opened read-only beside a writer that it can follow
 * (the postgres one): a consistent view of the store now, and word of each new one. A `Store`
 * opened with `follow` (src/engine/follower.ts) needs it; no engine code branches on the kind. It
 * declares `supports.follow` (true only when opened read-only).
 * @example if (canFollow(pages)) pages.watch(({ version }) => console.log(version, pages.view().manifest));
 */
export interface FollowablePageStore extends PageStore {
  /** True when opened read-only: only those follow a writer. */
  readonly readOnly: boolean;
  /** The view now (read, never changed: a new view replaces it). */
  view(): PageStoreView;
  /**
   * Calls `listener` after each change of the view to a new version; `onError` hears failures of
   * the watching (a lost connection, a failed refresh). Returns the unsubscribe function.
   * @throws TypeError when the page store is not read-only, PqdbError NOT_OPEN after close
   */
  watch(listener: (change: { readonly version: number }) => void, onError?: (error: Error) => void): () => void;
  /** Resolves once the watching is in place (so no later commit goes unnoticed). */
  ready(): Promise<void>;
}

/** Whether `pages` can follow a writer: it declares `supports.follow` (FollowablePageStore, opened read-only). */
export function canFollow(pages: PageStore): pages is FollowablePageStore {
  return supportsOf(pages).follow === true;
}

/** The RecoveryReport of an open that repaired nothing. */
export const CLEAN_RECOVERY: RecoveryReport = Object.freeze({
  clean: true,
  truncatedBytes: 0,
  actions: Object.freeze([]),
});
