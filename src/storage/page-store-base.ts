// What every page store adapter shares beyond the contract (page-store.ts): argument checks and
// copies, the fallbacks for optional reads (readPagesOf, readRangeOf), error mapping, and
// BasePageStore — commit serialisation, close/NOT_OPEN handling — which the adapters extend.
// DESIGN.md §6; docs/storage.md.
//
// Security caveat: the checks here are about the shape of arguments and of what the medium
// returns; the bytes stay opaque and sealed, authenticated one layer up.

import { PqdbError } from '../errors';
import { bytes as checkBytes, copyBytes, integer } from '../_args';
import {
  CLEAN_RECOVERY,
  MAX_MANIFEST_BYTES,
  MAX_PAGE_BYTES,
  MAX_PAGE_ID,
  type CheckedBatch,
  type CommitBatch,
  type PageStore,
  type PageStoreStats,
  type PageStoreSupports,
  type PageWrite,
  type RecoveryReport,
  supportsOf,
} from './page-store';

/** `store.readPages(ids)`, or `readPage` for each id where the page store does not declare `supports.readPages`. */
export async function readPagesOf(store: PageStore, ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
  if (supportsOf(store).readPages) return store.readPages!(ids);
  const out: (Uint8Array | undefined)[] = [];
  for (const id of ids) out.push(await store.readPage(id));
  return out;
}

/**
 * `store.readRange(id, offset, length)`, or, where the page store does not declare
 * `supports.readRange`, `readPage`
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
  if (supportsOf(store).readRange) return store.readRange!(id, offset, length);
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
  /** Every adapter declares what it can do (PageStoreSupports). */
  abstract readonly supports: PageStoreSupports;
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
   * (an adapter's maintenance, e.g. node-fs segment reclaim, goes through it between commits).
   * `close()` waits for what is queued.
   */
  protected _serial<T>(run: () => Promise<T>): Promise<T> {
    const next = this.#tail.then(run, run);
    this.#tail = next.catch(() => undefined);
    return next;
  }
}
