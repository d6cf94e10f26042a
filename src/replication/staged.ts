// A commit staged over a replica's page store, for verification before anything is written: the
// replica's pages and manifest with a shipped commit's pages added, its deletes dropped and its
// manifest in place. A read-only store opened on it runs every
// check opening a store runs (authenticated manifest, the live page set against the manifest's
// logs, checkpoint chain and signatures); only if that open succeeds does the replica write the
// commit to its own page store, in one atomic commit. The staged view never writes and never
// closes the page store under it. A page a commit marks as a replacement (sent again because the
// replica's copy differs from the primary's: src/replication/_digests.ts) takes the place of the
// replica's copy in the view, and the batch names it among `replaces` (written over the old copy
// in the same atomic commit).

import { PqdbError } from '../errors';
import { ForwardingPageStore } from '../storage/forwarding';
import { CLEAN_RECOVERY, type CommitBatch, type PageStore, type RecoveryReport } from '../storage/page-store';
import { checkPageId, checkRange, rangeOf, readPagesOf, readRangeOf } from '../storage/page-store-base';
import type { CommitMessage } from './messages';

/** The staged view (a ForwardingPageStore: what is not staged is read from the page store below). */
export class StagedPages extends ForwardingPageStore {
  #added = new Map<number, Uint8Array>();
  #dropped = new Set<number>();
  /** Staged pages that take the place of a page the base holds. */
  #replaced = new Set<number>();
  #manifest: Uint8Array | undefined;
  #baseIds: Set<number> | undefined;
  #open = true;

  constructor(base: PageStore) {
    super(base, { readOnly: 'a replica serves reads only' });
  }

  override get isOpen(): boolean {
    return this.#open;
  }

  override get recovery(): RecoveryReport {
    return CLEAN_RECOVERY;
  }

  /** Stages `m` on top of what is staged (or on the base page store). */
  async stage(m: CommitMessage): Promise<void> {
    for (const id of m.deletes) {
      this.#added.delete(id);
      this.#replaced.delete(id);
      this.#dropped.add(id);
    }
    const replaces = new Set(m.replaces ?? []);
    for (const p of m.pages) {
      const held = await this.#baseHas(p.id);
      if (this.#added.has(p.id) || (held && !this.#dropped.has(p.id) && !replaces.has(p.id)))
        throw new PqdbError('CORRUPTION', `a shipped commit rewrites page ${p.id}`);
      this.#added.set(p.id, p.bytes);
      this.#dropped.delete(p.id);
      if (held) this.#replaced.add(p.id);
    }
    this.#manifest = m.manifest;
  }

  /** What applying the staged commits to the base page store writes, in one commit. */
  async batch(): Promise<
    Required<Pick<CommitBatch, 'pages' | 'deletes'>> & { manifest: Uint8Array; replaces: number[] }
  > {
    const base = await this.#ids();
    const deletes = [...base].filter((id) => this.#dropped.has(id));
    const pages = [...this.#added].map(([id, bytes]) => ({ id, bytes }));
    return { pages, deletes, manifest: this.#manifest!, replaces: [...this.#replaced] };
  }

  /** After the base page store took the batch: reads go to it again. */
  settle(): void {
    this.#added = new Map();
    this.#dropped = new Set();
    this.#replaced = new Set();
    this.#manifest = undefined;
    this.#baseIds = undefined;
  }

  async #ids(): Promise<Set<number>> {
    return (this.#baseIds ??= new Set(await this.inner.listPages()));
  }

  async #baseHas(id: number): Promise<boolean> {
    return (await this.#ids()).has(id);
  }

  override async readPage(id: number): Promise<Uint8Array | undefined> {
    const a = this.#added.get(id);
    if (a !== undefined) return a.slice();
    if (this.#dropped.has(id)) return undefined;
    return this.inner.readPage(id);
  }

  override async readPages(ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
    const below = ids.filter((id) => !this.#added.has(id) && !this.#dropped.has(id));
    const read = await readPagesOf(this.inner, below);
    const from = new Map(below.map((id, i) => [id, read[i]]));
    return ids.map((id) => this.#added.get(id)?.slice() ?? from.get(id));
  }

  /**
   * A range of a staged page (copied from it), undefined for a page the staged commits delete, or
   * the base page store's range (readRangeOf: ranged where the base can, else its page sliced).
   * @throws as PageStore.readRange (CORRUPTION past the end of a staged page too)
   */
  override async readRange(id: number, offset: number, length: number): Promise<Uint8Array | undefined> {
    checkPageId('id', id);
    checkRange(offset, length);
    const a = this.#added.get(id);
    if (a !== undefined) return rangeOf(`staged ${this.kind}`, id, a, offset, length);
    if (this.#dropped.has(id)) return undefined;
    return readRangeOf(this.inner, id, offset, length);
  }

  override async readManifest(): Promise<Uint8Array | undefined> {
    return this.#manifest?.slice() ?? this.inner.readManifest();
  }

  override async listPages(): Promise<number[]> {
    const ids = new Set(await this.#ids());
    for (const id of this.#dropped) ids.delete(id);
    for (const id of this.#added.keys()) ids.add(id);
    return [...ids].sort((a, b) => a - b);
  }

  /** The view goes; the page store under it stays open (the replica closes it). */
  override async close(): Promise<void> {
    this.#open = false;
  }
}
