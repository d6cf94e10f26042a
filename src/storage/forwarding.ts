// ForwardingPageStore: the base of page-store wrappers that show another page store through a
// filter (a follower's view pinned to one manifest, a replica's staged commit). Every method
// forwards to the page store inside; a wrapper overrides only what it changes, and so cannot forget
// to forward a method the contract gains. DESIGN.md §6; docs/storage.md.
//
// Security caveat: a wrapper sees the same opaque sealed bytes as the page store inside, and adds
// no check of its own beyond what it overrides; what it returns is authenticated one layer up.

import { PqdbError } from '../errors';
import {
  supportsOf,
  type CommitBatch,
  type PageStore,
  type PageStoreStats,
  type PageStoreSupports,
  type RecoveryReport,
} from './page-store';
import { readPagesOf, readRangeOf } from './page-store-base';

/** Options of a ForwardingPageStore. */
export interface ForwardingOptions {
  /** When set, `commit` and `deletePages` reject with PqdbError READ_ONLY and this message. */
  readonly readOnly?: string;
}

/**
 * A page store that forwards every call to `inner`. Reads go through readPagesOf and readRangeOf,
 * so the wrapper reads pages together and reads ranges whatever `inner` declares; it declares
 * `readPages` and `readRange`, `inner`'s `partialRanges`, and nothing else (no synchronous reads,
 * no reclaim, no following: a wrapper that adds one overrides `supports`).
 * @example
 * class Counted extends ForwardingPageStore {
 *   reads = 0;
 *   override readPage(id: number) { this.reads++; return super.readPage(id); }
 * }
 */
export abstract class ForwardingPageStore<B extends PageStore = PageStore> implements PageStore {
  readonly kind: string;
  readonly supports: PageStoreSupports;
  /** The page store every call goes to. */
  protected readonly inner: B;
  readonly #readOnly: string | undefined;

  constructor(inner: B, options: ForwardingOptions = {}) {
    this.inner = inner;
    this.kind = inner.kind;
    this.#readOnly = options.readOnly;
    this.supports = Object.freeze({
      readPages: true,
      readRange: true,
      partialRanges: supportsOf(inner).partialRanges === true,
      readRangeSync: false,
      blockingReads: false,
      reclaim: false,
      follow: false,
    });
  }

  get isOpen(): boolean {
    return this.inner.isOpen;
  }

  get recovery(): RecoveryReport {
    return this.inner.recovery;
  }

  readPage(id: number): Promise<Uint8Array | undefined> {
    return this.inner.readPage(id);
  }

  readPages(ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
    return readPagesOf(this.inner, ids);
  }

  readRange(id: number, offset: number, length: number): Promise<Uint8Array | undefined> {
    return readRangeOf(this.inner, id, offset, length);
  }

  readManifest(): Promise<Uint8Array | undefined> {
    return this.inner.readManifest();
  }

  listPages(): Promise<number[]> {
    return this.inner.listPages();
  }

  async commit(batch: CommitBatch): Promise<void> {
    if (this.#readOnly !== undefined) throw new PqdbError('READ_ONLY', this.#readOnly);
    return this.inner.commit(batch);
  }

  async deletePages(ids: readonly number[]): Promise<void> {
    if (this.#readOnly !== undefined) throw new PqdbError('READ_ONLY', this.#readOnly);
    return this.inner.deletePages(ids);
  }

  stats(): Promise<PageStoreStats> {
    return this.inner.stats();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
