// The key directory (DESIGN §6): per collection, id → the location of the record's live version
// (its commit page, place in the page, Merkle leaf, write sequence, suite and captured governance),
// and the generation and commit salt of every live commit page. It is kept current by every commit
// (src/engine/replay.ts applies pages to it), persisted at checkpoints in sealed directory pages
// (persistence.ts) and loaded from them on open, so an open replays only the pages written since.
// It tracks what changed since it was last persisted, so a checkpoint writes only those rows.

import { checkPart, Interned, type Location, type PageInfo, type PartSource } from './rows';
import { DirectoryTable } from './table';

const EMPTY_TABLE = new DirectoryTable(new Interned());

export class KeyDirectory {
  readonly #interned = new Interned();
  readonly #collections = new Map<string, DirectoryTable>();
  /** Generation and commit salt of every live commit page (retiring a generation deletes its pages). */
  readonly #commitPages = new Map<number, PageInfo>();
  /** Sum of the live commit pages' lengths. */
  #pageBytes = 0;
  /**
   * Since the directory was last persisted (persistence.ts): the ids written or
   * deleted per collection and the commit pages added or dropped; `undefined` once a full snapshot
   * is due anyway (too many changes to keep track of, or never persisted).
   */
  #changes?: { ids: Map<string, Set<string>>; added: Set<number>; dropped: Set<number>; count: number };
  /** Live records when the directory was last persisted in full. */
  #baseRecords = 0;
  /** Rows persisted in runs since then. */
  #sinceBase = 0;
  /** The pages of the base snapshot's partitions (deleted with it when a new base replaces it). */
  #partPages: readonly number[] = [];
  /** While a lazily loaded base has partitions not loaded: its source and which are loaded. */
  #lazy?: { source: PartSource; loaded: Uint8Array; left: number };

  /**
   * Takes a base snapshot kept in partitions (`pages`) that load on first use: before any run or
   * commit page is applied. A lookup loads its id's partition; a count or bytes total loads the
   * partitions written to since; whatever visits every record (iteration, a new base) loads all.
   */
  lazyBase(source: PartSource, pages: readonly number[]): void {
    this.#partPages = pages;
    const parts = 1 << source.bits;
    const loaded = new Uint8Array(parts);
    // A partition without rows has nothing to load.
    let left = 0;
    for (let p = 0; p < parts; p++) {
      let rows = 0;
      for (const t of source.tables.values()) rows += t.rows[p];
      if (rows === 0) loaded[p] = 1;
      else left++;
    }
    const load = (p: number) => this.loadPart(p);
    const loadAll = () => this.loadAll();
    for (const [name, { rows, bytes }] of source.tables) {
      const t = this.table(name); // an emptied collection is listed too
      if (left > 0) t.lazy({ bits: source.bits, loaded, load, loadAll, rows, bytes });
    }
    if (left > 0) this.#lazy = { source, loaded, left };
  }

  /** Loads every partition of a lazily loaded base not loaded yet. */
  loadAll(): void {
    const lazy = this.#lazy;
    if (lazy === undefined) return;
    for (let p = 0; p < lazy.loaded.length; p++) if (lazy.loaded[p] === 0) this.loadPart(p);
  }

  /**
   * loadAll in steps, awaiting `pause()` after each partition, so that what runs beside a long
   * operation (a migration, a compaction, a new base) is not held for the whole load.
   */
  async loadAllInSteps(pause: () => Promise<void>): Promise<void> {
    for (let p = 0; this.#lazy !== undefined && p < this.#lazy.loaded.length; p++)
      if (this.#lazy.loaded[p] === 0) (this.loadPart(p), await pause());
  }

  /** Partitions of the base not loaded yet (0 once all are, or when the base was loaded whole). */
  get unloadedParts(): number {
    return this.#lazy?.left ?? 0;
  }

  /** The pages of the base snapshot's partitions. */
  get partPages(): readonly number[] {
    return this.#partPages;
  }

  /** The directory was persisted with a new base whose partitions are `pages`. */
  basePersisted(pages: readonly number[]): void {
    this.#partPages = pages;
  }

  /** Loads partition `p` of a lazily loaded base (nothing when it is loaded). */
  loadPart(p: number): void {
    const lazy = this.#lazy;
    if (lazy === undefined) return;
    if (lazy.loaded[p] === 1) return;
    const part = lazy.source.load(p);
    try {
      checkPart(lazy.source, p, part.collections); // all of it before any row is merged
      for (const { name, rows } of part.collections) this.table(name).mergePart(p, rows, part.governance);
    } finally {
      part.done();
    }
    lazy.loaded[p] = 1;
    lazy.left--;
    for (const name of lazy.source.tables.keys()) this.table(name).partLoaded(p, lazy.left === 0);
    if (lazy.left === 0) this.#lazy = undefined;
  }

  get(collection: string, id: string): Location | undefined {
    return this.#collections.get(collection)?.get(id);
  }

  has(collection: string, id: string): boolean {
    return this.#collections.get(collection)?.has(id) ?? false;
  }

  /** Number of live records of a collection. */
  count(collection: string): number {
    return this.#collections.get(collection)?.size ?? 0;
  }

  /** Sorted ids of a collection starting with `prefix`. */
  ids(collection: string, prefix = ''): string[] {
    const t = this.#collections.get(collection);
    if (t === undefined) return [];
    const ids = t.keys();
    return (prefix === '' ? ids : ids.filter((id) => id.startsWith(prefix))).sort();
  }

  /** Ids of a collection in no particular order (no sort of every id). */
  unorderedIds(collection: string): string[] {
    return this.#collections.get(collection)?.keys() ?? [];
  }

  /** The live records of a collection, iterable as [id, location] (do not edit). */
  entries(collection: string): DirectoryTable {
    return this.#collections.get(collection) ?? EMPTY_TABLE;
  }

  /** Collections with their live records (including emptied ones). */
  collections(): IterableIterator<[string, DirectoryTable]> {
    return this.#collections.entries();
  }

  /** Live record counts per collection. */
  counts(): Record<string, number> {
    return Object.fromEntries([...this.#collections].map(([k, t]) => [k, t.size]));
  }

  /** Live records of every collection. */
  get records(): number {
    let n = 0;
    for (const t of this.#collections.values()) n += t.size;
    return n;
  }

  /**
   * Live record counts per collection and suite id (from the locations: nothing is decrypted). Every
   * collection the directory holds is listed, an emptied one with no suite.
   * @example directory.suiteCounts(); // { words: { 2: 120, 3: 4 } }
   */
  suiteCounts(): Record<string, Record<number, number>> {
    const out: Record<string, Record<number, number>> = {};
    for (const [name, t] of this.#collections) out[name] = t.suiteCounts();
    return out;
  }

  /** True when some live record is sealed with suite `suite`. */
  usesSuite(suite: number): boolean {
    for (const t of this.#collections.values()) if (t.usesSuite(suite)) return true;
    return false;
  }

  /** True when some collection has a live record. */
  any(): boolean {
    for (const t of this.#collections.values()) if (t.size > 0) return true;
    return false;
  }

  /** The table of `collection`, made when missing. */
  table(collection: string): DirectoryTable {
    let t = this.#collections.get(collection);
    if (t === undefined) this.#collections.set(collection, (t = new DirectoryTable(this.#interned)));
    return t;
  }

  /** The interned governance states (for snapshots). */
  get interned(): Interned {
    return this.#interned;
  }

  set(collection: string, id: string, loc: Location): void {
    this.table(collection).set(id, loc);
    this.#changed(collection, id);
  }

  delete(collection: string, id: string): void {
    this.table(collection).delete(id);
    this.#changed(collection, id);
  }

  /** Records that commit page `pageId` (of `generation`, commit salt `salt`, `bytes` long) is live. */
  addPage(pageId: number, generation: number, salt: Uint8Array, bytes: number): void {
    this.#pageBytes += bytes - (this.#commitPages.get(pageId)?.bytes ?? 0);
    this.#commitPages.set(pageId, { generation, salt, bytes });
    if (this.#changes !== undefined) (this.#changes.added.add(pageId), this.#changes.dropped.delete(pageId));
  }

  /** Forgets deleted commit pages. */
  dropPages(pageIds: readonly number[]): void {
    for (const id of pageIds) {
      const p = this.#commitPages.get(id);
      if (p === undefined) continue;
      this.#pageBytes -= p.bytes;
      this.#commitPages.delete(id);
      if (this.#changes !== undefined && !this.#changes.added.delete(id)) this.#changes.dropped.add(id);
    }
  }

  /** The generation and commit salt of a live commit page. */
  page(pageId: number): PageInfo | undefined {
    return this.#commitPages.get(pageId);
  }

  /** The live commit pages, ascending, with their generation and salt. */
  pages(): [number, PageInfo][] {
    return [...this.#commitPages].sort(([a], [b]) => a - b);
  }

  /**
   * Bytes of the live commit pages, and of the live records in them (what compaction would keep);
   * with `estimate`, no partition of a lazily loaded base is loaded (see recordBytesEstimate).
   */
  liveBytes(estimate = false): { pageBytes: number; recordBytes: number } {
    const pageBytes = this.#pageBytes;
    let recordBytes = 0;
    for (const t of this.#collections.values()) recordBytes += estimate ? t.recordBytesEstimate() : t.recordBytes();
    return { pageBytes, recordBytes };
  }

  /** Per live commit page, the bytes of the live records in it. */
  livePerPage(): Map<number, number> {
    const out = new Map<number, number>();
    for (const t of this.#collections.values()) t.addLiveBytes(out);
    return out;
  }

  /** The live commit pages of any of `generations`. */
  pagesOf(generations: ReadonlySet<number>): number[] {
    return [...this.#commitPages].filter(([, p]) => generations.has(p.generation)).map(([id]) => id);
  }

  /**
   * What changed since the directory was last persisted, or undefined when a full snapshot is due
   * (never persisted, or changes past a quarter of the records then persisted, at least 4,096).
   */
  changes(): { ids: ReadonlyMap<string, ReadonlySet<string>>; added: number[]; dropped: number[] } | undefined {
    const c = this.#changes;
    if (c === undefined) return undefined;
    return { ids: c.ids, added: [...c.added].sort((a, b) => a - b), dropped: [...c.dropped].sort((a, b) => a - b) };
  }

  /** The directory was persisted: in full (`full`) or as the changes since the last time. */
  persisted(full: boolean): void {
    if (full) {
      this.#baseRecords = this.records;
      this.#sinceBase = 0;
    } else this.#sinceBase += this.#changes?.count ?? 0;
    this.#changes = { ids: new Map(), added: new Set(), dropped: new Set(), count: 0 };
  }

  /** The directory was loaded from a snapshot of `baseRows` records and `runRows` rows of runs after it. */
  loaded(baseRows: number, runRows: number): void {
    this.#baseRecords = baseRows;
    this.#sinceBase = runRows;
    this.#changes = { ids: new Map(), added: new Set(), dropped: new Set(), count: 0 };
  }

  /** Rows persisted in runs since the last full snapshot (a loader passes them on). */
  get runRows(): number {
    return this.#sinceBase;
  }

  #changed(collection: string, id: string): void {
    const c = this.#changes;
    if (c === undefined) return;
    let ids = c.ids.get(collection);
    if (ids === undefined) c.ids.set(collection, (ids = new Set()));
    if (ids.has(id)) return;
    ids.add(id);
    if (this.#sinceBase + ++c.count > Math.max(4096, this.#baseRecords / 4)) this.#changes = undefined; // a full snapshot is due
  }
}
