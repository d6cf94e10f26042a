// The commit pages a migration's copy and verification read, one after another, outside the
// store's page cache. Both passes visit records in page order (the copy in log order, which is the
// order pages were appended in; the verification sorted by page), so each page is read once and
// decrypted record by record while it is held here. Through the shared LRU, a pass over a store
// larger than the cache (a 1,000,000-record store is ~4× the default 64 MiB) would evict every page
// that random reads come back to, for pages it never reads again. Pages are immutable once written
// (an id is never reused), so a page held here is never stale.

import type { PageCache } from '../page-cache';

export class PagePass {
  readonly #cache: PageCache;
  #id = -1;
  #page?: Uint8Array;
  #ahead?: { id: number; page: Promise<Uint8Array> };

  constructor(cache: PageCache) {
    this.#cache = cache;
  }

  /**
   * Commit page `pageId`: the one held, the one read ahead, or from the cache or the page store
   * (PageCache.peek, which caches nothing). It replaces the page held.
   * @throws PqdbError CORRUPTION when the page store has no such page; storage errors
   * @example const page = await pass.get(loc.pageId);
   */
  async get(pageId: number): Promise<Uint8Array> {
    if (pageId === this.#id && this.#page !== undefined) return this.#page;
    let ahead: Promise<Uint8Array> | undefined;
    if (this.#ahead?.id === pageId) {
      ahead = this.#ahead.page;
      this.#ahead = undefined;
    }
    this.#id = -1;
    this.#page = undefined;
    const page = await (ahead ?? this.#cache.peek(pageId));
    this.#id = pageId;
    this.#page = page;
    return page;
  }

  /**
   * Starts reading `pageId` (the page the pass needs next) while the caller works on the one held.
   * A failed read surfaces when the page is asked for, and not at all if it never is.
   */
  readAhead(pageId: number): void {
    if (pageId === this.#id || this.#ahead?.id === pageId) return;
    const page = this.#cache.peek(pageId);
    page.catch(() => undefined);
    this.#ahead = { id: pageId, page };
  }
}
