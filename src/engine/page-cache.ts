// A bounded LRU of commit pages read from the PageStore. Pages are immutable once written (a page id
// is never reused), so a cached page is never stale; they hold only ciphertext and sealed indexes.
// `getRange` serves one record: out of a cached page, or by a ranged read that caches nothing.

import { PqdbError } from '../errors';
import { supportsOf, type PageStore } from '../storage/page-store';
import { checkRange, checkRangeInPage, readRangeOf } from '../storage/page-store-base';

/** Default bound of the cache, in page bytes. */
export const PAGE_CACHE_BYTES = 64 * 1024 * 1024;

export class PageCache {
  readonly #pages: PageStore;
  readonly #bound: number;
  readonly #cache = new Map<number, Uint8Array>();
  #bytes = 0;

  constructor(pages: PageStore, bound = PAGE_CACHE_BYTES) {
    this.#pages = pages;
    this.#bound = bound;
  }

  /** The cached page, its place in the LRU order refreshed; undefined when it is not cached. */
  #hit(pageId: number): Uint8Array | undefined {
    const hit = this.#cache.get(pageId);
    if (hit !== undefined) {
      this.#cache.delete(pageId);
      this.#cache.set(pageId, hit);
    }
    return hit;
  }

  /**
   * A commit page, from the cache or the page store (then cached).
   * @throws PqdbError CORRUPTION when the page store has no such page.
   */
  async get(pageId: number): Promise<Uint8Array> {
    const hit = this.#hit(pageId);
    if (hit !== undefined) return hit;
    const page = await this.#pages.readPage(pageId);
    if (page === undefined) throw new PqdbError('CORRUPTION', `commit page ${pageId} is missing`);
    this.put(pageId, page);
    return page;
  }

  /**
   * A commit page without caching it: the cached copy when there is one (its place in the LRU order
   * is left as it is), else read from the page store and handed back uncached. For a pass over many
   * pages that reads each of them once (a migration's copy and verification): going through the
   * LRU would evict the pages that random reads keep coming back to.
   * @throws PqdbError CORRUPTION when the page store has no such page.
   * @example const page = await cache.peek(loc.pageId);
   */
  async peek(pageId: number): Promise<Uint8Array> {
    const hit = this.#cache.get(pageId);
    if (hit !== undefined) return hit;
    const page = await this.#pages.readPage(pageId);
    if (page === undefined) throw new PqdbError('CORRUPTION', `commit page ${pageId} is missing`);
    return page;
  }

  /**
   * Bytes `[offset, offset + length)` of a commit page — one sealed record: a view into the cached
   * page when it is cached (pages are immutable; the caller must not write to it), else a ranged
   * read from the page store (readRangeOf), which leaves the page uncached: a random read of one
   * record costs the record's bytes, not the page's. No storage checksum covers a range; the
   * sealed record's AEAD tag does (PageStore.readRange).
   * @throws PqdbError CORRUPTION when the page store has no such page or the range runs past the
   * page's end; RangeError/TypeError for an offset or length that is not an integer in range
   * @example const sealed = await cache.getRange(loc.pageId, loc.offset, loc.length);
   */
  async getRange(pageId: number, offset: number, length: number): Promise<Uint8Array> {
    checkRange(offset, length);
    const hit = this.#hit(pageId);
    if (hit !== undefined) return rangeView(pageId, hit, offset, length);
    // Where a range costs the whole page, the page is read once and kept for the next record in it.
    if (!supportsOf(this.#pages).partialRanges) return rangeView(pageId, await this.get(pageId), offset, length);
    const range = await readRangeOf(this.#pages, pageId, offset, length);
    if (range === undefined) throw new PqdbError('CORRUPTION', `commit page ${pageId} is missing`);
    return range;
  }

  /**
   * getRange without a promise: a view into the cached page, or the range read synchronously into
   * `into` (PageStore.readRangeSync), or undefined when neither can be done now (call getRange).
   * @throws as getRange
   */
  getRangeSync(pageId: number, offset: number, length: number, into: Uint8Array): Uint8Array | undefined {
    checkRange(offset, length);
    const hit = this.#hit(pageId);
    if (hit !== undefined) return rangeView(pageId, hit, offset, length);
    const can = supportsOf(this.#pages);
    const r = can.partialRanges && can.readRangeSync ? this.#pages.readRangeSync!(pageId, offset, length, into) : -1;
    if (r === 0) throw new PqdbError('CORRUPTION', `commit page ${pageId} is missing`);
    return r === 1 ? into.subarray(0, length) : undefined;
  }

  /** Adds a page, evicting the least recently used beyond the bound (the newest always stays). */
  put(pageId: number, page: Uint8Array): void {
    if (this.#cache.has(pageId)) return;
    this.#cache.set(pageId, page);
    this.#bytes += page.length;
    while (this.#bytes > this.#bound && this.#cache.size > 1) this.drop(this.#cache.keys().next().value as number);
  }

  /** Forgets a page (it was deleted). */
  drop(pageId: number): void {
    const p = this.#cache.get(pageId);
    if (p === undefined) return;
    this.#cache.delete(pageId);
    this.#bytes -= p.length;
  }
}

/** `page.subarray(offset, offset + length)`. @throws PqdbError CORRUPTION past the page's end */
function rangeView(pageId: number, page: Uint8Array, offset: number, length: number): Uint8Array {
  checkRangeInPage('page cache', pageId, offset, length, page.length);
  return page.subarray(offset, offset + length);
}
