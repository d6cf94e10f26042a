// FollowedPages: the page store a following Store's engine state reads through (src/engine/
// follower.ts): a view of the page store below pinned to one manifest and page set, so a refresh
// of that page store never shows the state pages of a later commit. A ForwardingPageStore
// (src/storage/forwarding.ts) that overrides only the reads it filters and refuses writes.
//
// Security caveat: the pin is what the page store reported; the engine state opened on it
// authenticates the manifest and checks the pages against its logs (DESIGN §11).

import { ForwardingPageStore } from '../storage/forwarding';
import { canFollow, type FollowablePageStore, type PageStore, type PageStoreView } from '../storage/page-store';
import { checkPageId, checkRange, readPagesOf, readRangeOf } from '../storage/page-store-base';

/**
 * A page store view pinned to one manifest and page set of a following page store: the pages the
 * engine state built from it may read, and no other. Writes are READ_ONLY; `close` closes the page
 * store below (the Store closes the view of the state it serves last).
 */
export class FollowedPages extends ForwardingPageStore<FollowablePageStore> {
  #pin: PageStoreView;

  constructor(base: FollowablePageStore, pin: PageStoreView) {
    super(base, { readOnly: 'a following store serves reads only' });
    this.#pin = pin;
  }

  /** The following page store below. */
  get base(): FollowablePageStore {
    return this.inner;
  }

  /** The view this one is pinned to. */
  get pin(): PageStoreView {
    return this.#pin;
  }

  /** Pins a later view (the commits taken in place only added pages). */
  advance(pin: PageStoreView): void {
    this.#pin = pin;
  }

  override async readPage(id: number): Promise<Uint8Array | undefined> {
    return this.#pin.pages.has(id) ? this.inner.readPage(id) : undefined;
  }

  override async readPages(ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
    const pages = this.#pin.pages;
    const asked = ids.filter((id) => pages.has(id));
    const read = await readPagesOf(this.inner, asked);
    const found = new Map(asked.map((id, i) => [id, read[i]]));
    return ids.map((id) => found.get(id));
  }

  /** The range of a page the pin holds (readRangeOf the page store below), else undefined. */
  override async readRange(id: number, offset: number, length: number): Promise<Uint8Array | undefined> {
    checkPageId('id', id);
    checkRange(offset, length);
    return this.#pin.pages.has(id) ? readRangeOf(this.inner, id, offset, length) : undefined;
  }

  override async readManifest(): Promise<Uint8Array | undefined> {
    return this.#pin.manifest?.slice();
  }

  override async listPages(): Promise<number[]> {
    return [...this.#pin.pages.keys()].sort((a, b) => a - b);
  }
}

/**
 * The view a Store that follows opens on.
 * @throws TypeError unless `pages` can follow (declares `supports.follow`: a read-only postgres
 * page store) and `readOnly` is set
 */
export function followView(pages: PageStore, readOnly: boolean | undefined): FollowedPages {
  if (readOnly !== true) throw new TypeError('"follow" needs readOnly: true (a follower never writes)');
  if (!canFollow(pages))
    throw new TypeError(
      `"follow" needs a page store that follows its writer, opened read-only (the postgres one); this is ${pages.kind}`,
    );
  return new FollowedPages(pages, pages.view());
}
