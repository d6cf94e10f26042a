// PageStore: the contract every storage adapter (memory, node-fs, indexeddb) fulfils, plus the
// helpers they share: argument checks, commit serialisation, close/NOT_OPEN handling and error
// mapping (CRC-32C is src/_crc32c.ts). DESIGN.md §6; the on-disk formats are in docs/storage.md.
//
// Security caveats: a store holds opaque, already-sealed bytes and never sees plaintext or keys.
// The per-page CRC-32C detects accidents (torn writes, flipped bits, truncation); it is not a MAC
// and detects nothing an attacker does on purpose — the sealed records above carry the MAC.

import { PqdbError } from '../errors';
import { bytes as checkBytes, copyBytes, integer } from '../_args';

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
   * bytes (dead records included, until `compact` removes their segment) plus the manifest file; for memory and
   * IndexedDB an estimate (payload plus per-record framing).
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
  /** The page's bytes (a fresh copy), or undefined when absent. @throws PqdbError CORRUPTION */
  readPage(id: number): Promise<Uint8Array | undefined>;
  /**
   * `readPage` for each of `ids`, in their order; a medium that can reads adjacent pages together
   * (node-fs: one read per run of neighbouring records). Optional: see readPagesOf.
   */
  readPages?(ids: readonly number[]): Promise<(Uint8Array | undefined)[]>;
  /**
   * Bytes `[offset, offset + length)` of page `id` (a fresh copy), or undefined when the page is
   * absent: one sealed record out of a commit page without reading (or caching) the whole page.
   * node-fs and postgres read only the range; memory copies it; IndexedDB, which cannot read part
   * of a value, reads the page (checked) and copies the range. Optional: see readRangeOf.
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
  /**
   * True when readRange reads only the range's bytes from the medium (memory, node-fs, postgres);
   * false or absent when a range costs reading the whole page (IndexedDB), so that the engine's page
   * cache reads and keeps the page instead of reading it again for each record in it.
   */
  readonly partialRanges?: boolean;
  /**
   * readRange done synchronously into `into[0, length)` when the medium can do it now: 1 when read,
   * 0 when the page is absent, -1 when not now (then call readRange). node-fs reads a record-sized
   * range this way (at most 64 in one turn of the event loop); the others answer -1. Optional: a
   * user's read of a record then costs no promise and no new array. The same trust rule as readRange.
   * With `block` (where `blockingReads` is true) it always reads, however long the range, holding
   * the thread for the read: the engine loads the persisted directory's partitions this way on a
   * store's first lookup of them.
   * @throws as readRange; RangeError when `into` is shorter than `length`
   */
  readRangeSync?(id: number, offset: number, length: number, into: Uint8Array, block?: boolean): -1 | 0 | 1;
  /** True when readRangeSync with `block` always reads (node-fs, memory). */
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
   * Reclaims the space of deleted pages where the medium keeps it (node-fs: segments whose dead
   * fraction reaches `minDeadFraction` have their live pages copied into the newest segment, each
   * checked against its CRC-32C as it is copied, and are then removed). Page ids and bytes never
   * change; nothing becomes visible or invisible. It runs in the commit queue in bounded steps (at
   * most `stepBytes` copied and one commit-protocol write per step), so commits and reads
   * interleave with it, and a crash at any point leaves every acknowledged page exactly once.
   * Resolves once no segment qualifies, `maxBytes` were copied, or the store was closed meanwhile
   * (with what was done so far). Optional: a store without dead space has none (memory, IndexedDB
   * and postgres free a deleted page at once).
   *
   * @throws RangeError for options out of range; PqdbError NOT_OPEN after close, READ_ONLY on a
   * read-only store, CORRUPTION when a page to copy fails its checksum (nothing is written),
   * CONFLICT when another writer committed, IO_ERROR/QUOTA_EXCEEDED when the medium fails (the store
   * then refuses commits until reopened, as after a failed commit; nothing acknowledged is lost)
   * @example
   * await store.deletePages(oldPages);
   * const { bytesBefore, bytesAfter } = await store.compact?.({ minDeadFraction: 0.5 }) ?? {};
   */
  compact?(options?: SegmentCompactOptions): Promise<SegmentCompactResult>;
  /** Waits for pending operations, then releases the medium and the writer lock. Idempotent. */
  close(): Promise<void>;
}

/** Options of `PageStore.compact`. */
export interface SegmentCompactOptions {
  /** A segment is rewritten once this fraction of its bytes is dead, in (0, 1] (default 0.5). */
  readonly minDeadFraction?: number;
  /** Stop once about this many bytes were copied by this call (default: no limit). */
  readonly maxBytes?: number;
  /** The most bytes one step copies (default: the store's step size, 4 MiB on node-fs); a larger page moves alone. */
  readonly stepBytes?: number;
  /** Called after each step. */
  readonly onProgress?: (progress: SegmentCompactProgress) => void;
}

/** Where a `compact` call stands, after one of its steps. */
export interface SegmentCompactProgress {
  /** Segments removed so far by this call. */
  readonly segmentsRewritten: number;
  /** Page and tombstone bytes (framing included) copied so far by this call. */
  readonly bytesCopied: number;
  /** `stats().storedBytes` now. */
  readonly storedBytes: number;
}

/** What a `compact` call did. */
export interface SegmentCompactResult {
  /** Segments removed (their live pages copied out first). */
  readonly segmentsRewritten: number;
  /** Page and tombstone bytes (framing included) copied. */
  readonly bytesCopied: number;
  /** `stats().storedBytes` when the call started. */
  readonly bytesBefore: number;
  /** `stats().storedBytes` when it ended. */
  readonly bytesAfter: number;
}

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
 * opened with `follow` (src/engine/follower.ts) needs it; no engine code branches on the kind.
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

/** Whether `pages` can follow a writer (FollowablePageStore, opened read-only). */
export function canFollow(pages: PageStore): pages is FollowablePageStore {
  const f = pages as Partial<FollowablePageStore>;
  return (
    f.readOnly === true &&
    typeof f.view === 'function' &&
    typeof f.watch === 'function' &&
    typeof f.ready === 'function'
  );
}

/** `store.readPages(ids)`, or `readPage` for each id where the page store has no `readPages`. */
export async function readPagesOf(store: PageStore, ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
  if (store.readPages !== undefined) return store.readPages(ids);
  const out: (Uint8Array | undefined)[] = [];
  for (const id of ids) out.push(await store.readPage(id));
  return out;
}

/**
 * `store.readRange(id, offset, length)`, or, where the page store has no `readRange`, `readPage`
 * and a copy of the range (the same contract: undefined for an absent page, CORRUPTION past its
 * end, a fresh copy).
 * @throws as PageStore.readRange
 * @example const sealed = await readRangeOf(store, loc.pageId, loc.offset, loc.length);
 */
export async function readRangeOf(
  store: PageStore,
  id: number,
  offset: number,
  length: number,
): Promise<Uint8Array | undefined> {
  if (store.readRange !== undefined) return store.readRange(id, offset, length);
  checkRange(offset, length);
  const page = await store.readPage(id);
  return page === undefined ? undefined : rangeOf(store.kind, id, page, offset, length);
}

/** Throws unless `offset` and `length` are integers in [0, MAX_PAGE_BYTES] (no page is larger). */
export function checkRange(offset: unknown, length: unknown): void {
  integer('offset', offset, 0, MAX_PAGE_BYTES);
  integer('length', length, 0, MAX_PAGE_BYTES);
}

/**
 * Throws CORRUPTION unless `[offset, offset + length)` lies inside a page of `pageLength` bytes.
 * @throws PqdbError CORRUPTION
 */
export function checkRangeInPage(kind: string, id: number, offset: number, length: number, pageLength: number): void {
  if (offset + length > pageLength) {
    throw corruption(
      `${kind}: page ${id} holds ${pageLength} bytes, a read of [${offset}, ${offset + length}) runs past its end`,
    );
  }
}

/** A copy of `[offset, offset + length)` of `page` (page `id` of a `kind` store). @throws PqdbError CORRUPTION past its end */
export function rangeOf(kind: string, id: number, page: Uint8Array, offset: number, length: number): Uint8Array {
  checkRangeInPage(kind, id, offset, length, page.length);
  return copyBytes(page, offset, offset + length);
}

export const CLEAN_RECOVERY: RecoveryReport = Object.freeze({
  clean: true,
  truncatedBytes: 0,
  actions: Object.freeze([]),
});

/** Throws unless `id` is a u32 page id. */
export function checkPageId(name: string, id: unknown): number {
  return integer(name, id, 0, MAX_PAGE_ID);
}

/** Validates and copies a commit batch (the copy keeps later caller writes out of the store). */
export function checkBatch(batch: unknown): {
  pages: PageWrite[];
  manifest: Uint8Array | undefined;
  deletes: number[];
  replaces: Set<number>;
} {
  if (typeof batch !== 'object' || batch === null || Array.isArray(batch)) {
    throw new TypeError(
      `"batch" expected an object, got ${batch === null ? 'null' : Array.isArray(batch) ? 'Array' : typeof batch}`,
    );
  }
  const b = batch as CommitBatch;
  const pages: PageWrite[] = [];
  const seen = new Set<number>();
  if (b.pages !== undefined) {
    if (!Array.isArray(b.pages)) throw new TypeError(`"pages" expected an array, got ${typeof b.pages}`);
    b.pages.forEach((p: unknown, i: number) => {
      if (typeof p !== 'object' || p === null)
        throw new TypeError(`"pages[${i}]" expected {id, bytes}, got ${p === null ? 'null' : typeof p}`);
      const id = checkPageId(`pages[${i}].id`, (p as PageWrite).id);
      const data = checkBytes(`pages[${i}].bytes`, (p as PageWrite).bytes);
      if (data.length > MAX_PAGE_BYTES) {
        throw new RangeError(`"pages[${i}].bytes" expected at most ${MAX_PAGE_BYTES} bytes, got length=${data.length}`);
      }
      if (seen.has(id)) throw new RangeError(`"pages[${i}].id" page ${id} appears twice in one commit`);
      seen.add(id);
      pages.push({ id, bytes: b.transfer === true ? data : copyBytes(data) });
    });
  }
  let manifest: Uint8Array | undefined;
  if (b.manifest !== undefined) {
    const m = checkBytes('manifest', b.manifest);
    if (m.length > MAX_MANIFEST_BYTES) {
      throw new RangeError(`"manifest" expected at most ${MAX_MANIFEST_BYTES} bytes, got length=${m.length}`);
    }
    manifest = b.transfer === true ? m : copyBytes(m);
  }
  const deletes = b.deletes === undefined ? [] : checkIds('deletes', b.deletes);
  for (const id of deletes) {
    if (seen.has(id)) throw new RangeError(`"deletes" page ${id} is also written by this commit`);
  }
  const replaces = new Set(b.replaces === undefined ? [] : checkIds('replaces', b.replaces));
  for (const id of replaces)
    if (!seen.has(id)) throw new RangeError(`"replaces" page ${id} is not written by this commit`);
  return { pages, manifest, deletes, replaces };
}

/** Validates an id list; returns it without duplicates. */
export function checkIds(name: string, ids: unknown): number[] {
  if (!Array.isArray(ids))
    throw new TypeError(`"${name}" expected an array, got ${ids === null ? 'null' : typeof ids}`);
  const out = new Set<number>();
  ids.forEach((id: unknown, i: number) => out.add(checkPageId(`${name}[${i}]`, id)));
  return [...out];
}

/** PqdbError('NOT_OPEN'). */
export function notOpen(kind: string): PqdbError {
  return new PqdbError('NOT_OPEN', `${kind} page store is closed`);
}

/** PqdbError('CORRUPTION') with a message naming what failed. */
export function corruption(message: string): PqdbError {
  return new PqdbError('CORRUPTION', message);
}

/**
 * Maps an error from the medium to a PqdbError: an existing PqdbError (or TypeError/RangeError)
 * passes through, a full medium (QuotaExceededError, ENOSPC, EDQUOT) becomes QUOTA_EXCEEDED,
 * anything else IO_ERROR. The original is kept as `cause`.
 */
export function mediumError(what: string, cause: unknown): Error {
  if (cause instanceof PqdbError || cause instanceof TypeError || cause instanceof RangeError) return cause;
  const name = (cause as { name?: unknown } | null)?.name;
  const code = (cause as { code?: unknown } | null)?.code;
  const inner = (cause as { error?: { name?: unknown } } | null)?.error?.name; // an aborted IDBTransaction
  if (name === 'QuotaExceededError' || inner === 'QuotaExceededError' || code === 'ENOSPC' || code === 'EDQUOT') {
    return new PqdbError('QUOTA_EXCEEDED', `${what}: storage quota exceeded`, { cause });
  }
  const detail = cause instanceof Error ? cause.message : String(cause);
  return new PqdbError('IO_ERROR', `${what}: ${detail}`, { cause });
}

/**
 * The part of every adapter that is not about the medium: public methods validate and copy their
 * arguments, commits run one at a time in call order, `close()` waits for what is in flight, and
 * anything called after `close()` rejects with NOT_OPEN. Adapters implement the `_` methods and
 * receive checked arguments only.
 */
export abstract class BasePageStore implements PageStore {
  abstract readonly kind: string;
  recovery: RecoveryReport = CLEAN_RECOVERY;
  #open = true;
  #tail: Promise<unknown> = Promise.resolve();
  /**
   * Reads in flight, counted (close waits for them): a count, not a set of the promises, since a
   * record read is one of them and a set would give every promise an identity hash.
   */
  #inflight = 0;
  /** close()'s wait for the reads in flight, resolved when the count reaches 0. */
  #drained?: () => void;
  readonly #done = (): void => {
    if (--this.#inflight === 0 && this.#drained !== undefined) this.#drained();
  };
  #closing: Promise<void> | undefined;

  get isOpen(): boolean {
    return this.#open;
  }

  protected abstract _readPage(id: number): Promise<Uint8Array | undefined>;
  protected abstract _readManifest(): Promise<Uint8Array | undefined>;
  /** Live ids, ascending. */
  protected abstract _listPages(): number[];
  protected abstract _has(id: number): boolean;
  /** Writes one checked batch atomically and durably; updates the adapter's view only on success. */
  protected abstract _commit(batch: CheckedBatch): Promise<void>;
  protected abstract _stats(): Promise<PageStoreStats>;
  /** Releases the medium and the lock; called once, after everything in flight has settled. */
  protected abstract _close(): Promise<void>;

  async readPage(id: number): Promise<Uint8Array | undefined> {
    this.#checkOpen();
    checkPageId('id', id);
    return this.#track(this._readPage(id));
  }

  async readPages(ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
    this.#checkOpen();
    if (!Array.isArray(ids)) throw new TypeError('"ids" expected an array of page ids');
    for (const id of ids) checkPageId('id', id);
    return this.#track(this._readPages(ids));
  }

  /** Reads pages one by one; an adapter that can read neighbours together overrides it. */
  protected async _readPages(ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
    const out: (Uint8Array | undefined)[] = [];
    for (const id of ids) out.push(await this._readPage(id));
    return out;
  }

  async readRange(id: number, offset: number, length: number): Promise<Uint8Array | undefined> {
    this.#checkOpen();
    checkPageId('id', id);
    checkRange(offset, length);
    return this.#track(this._readRange(id, offset, length));
  }

  readRangeSync(id: number, offset: number, length: number, into: Uint8Array, block = false): -1 | 0 | 1 {
    this.#checkOpen();
    checkPageId('id', id);
    checkRange(offset, length);
    if (!(into instanceof Uint8Array) || into.length < length)
      throw new RangeError(`"into" expected Uint8Array of length >= ${length}`);
    return this._readRangeSync(id, offset, length, into, block);
  }

  /** Not now (-1): an adapter that can read a range synchronously overrides it. */
  protected _readRangeSync(
    _id: number,
    _offset: number,
    _length: number,
    _into: Uint8Array,
    _block: boolean,
  ): -1 | 0 | 1 {
    return -1;
  }

  /**
   * Reads the page and copies the range; an adapter that can read part of a page overrides it
   * (and checks the range against the page's length itself: `checkRangeInPage`).
   */
  protected async _readRange(id: number, offset: number, length: number): Promise<Uint8Array | undefined> {
    const page = await this._readPage(id);
    return page === undefined ? undefined : rangeOf(this.kind, id, page, offset, length);
  }

  async readManifest(): Promise<Uint8Array | undefined> {
    this.#checkOpen();
    return this.#track(this._readManifest());
  }

  async listPages(): Promise<number[]> {
    this.#checkOpen();
    return this._listPages();
  }

  async stats(): Promise<PageStoreStats> {
    this.#checkOpen();
    return this.#track(this._stats());
  }

  async commit(batch: CommitBatch): Promise<void> {
    this.#checkOpen();
    const checked = checkBatch(batch);
    return this.#serial(() => {
      // Existence is checked when the commit runs, after every earlier commit has landed.
      checked.pages.forEach((p, i) => {
        if (this._has(p.id) && !checked.replaces.has(p.id))
          throw new RangeError(`"pages[${i}].id" page ${p.id} already exists (pages are immutable)`);
      });
      // A replaced page is dropped and written in the same commit (deletes go first).
      const deletes = [...checked.deletes, ...checked.replaces].filter((id) => this._has(id));
      if (checked.pages.length === 0 && deletes.length === 0 && checked.manifest === undefined)
        return Promise.resolve();
      return this._commit({ pages: checked.pages, manifest: checked.manifest, deletes });
    });
  }

  async deletePages(ids: readonly number[]): Promise<void> {
    this.#checkOpen();
    return this.commit({ deletes: checkIds('ids', ids) });
  }

  close(): Promise<void> {
    if (this.#closing) return this.#closing;
    this.#open = false;
    this.#closing = (async () => {
      await this.#tail.catch(() => undefined);
      if (this.#inflight > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
      await this._close();
    })();
    return this.#closing;
  }

  #checkOpen(): void {
    if (!this.#open) throw notOpen(this.kind);
  }

  #track<T>(p: Promise<T>): Promise<T> {
    this.#inflight++;
    p.then(this.#done, this.#done);
    return p;
  }

  #serial(run: () => Promise<void>): Promise<void> {
    return this._serial(run);
  }

  /**
   * Runs `run` in the commit queue: after every commit called before it, before any called after
   * (an adapter's maintenance, e.g. node-fs segment compaction, goes through it between commits).
   * `close()` waits for what is queued.
   */
  protected _serial<T>(run: () => Promise<T>): Promise<T> {
    const next = this.#tail.then(run, run);
    this.#tail = next.catch(() => undefined);
    return next;
  }
}
