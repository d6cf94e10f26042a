// A bounded LRU of commit pages read from the PageStore. Pages are immutable once written (a page id
// is never reused), so a cached page is never stale; they hold only ciphertext and sealed indexes.

import { PqdbError } from '../errors';
import type { PageStore } from '../storage/page-store';

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

  /**
   * A commit page, from the cache or the page store (then cached).
   * @throws PqdbError CORRUPTION when the page store has no such page.
   */
  async get(pageId: number): Promise<Uint8Array> {
    const hit = this.#cache.get(pageId);
    if (hit !== undefined) {
      this.#cache.delete(pageId); // refresh its place in the LRU order
      this.#cache.set(pageId, hit);
      return hit;
    }
    const page = await this.#pages.readPage(pageId);
    if (page === undefined) throw new PqdbError('CORRUPTION', `commit page ${pageId} is missing`);
    this.put(pageId, page);
    return page;
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
