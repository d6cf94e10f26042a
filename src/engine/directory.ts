// The key directory (DESIGN §6): per collection, id → the location of the record's live version
// (its commit page, place in the page, Merkle leaf, write sequence, suite and captured governance),
// and the key generation of every live commit page. Built by replaying commit pages on open and
// kept current by every commit (src/engine/replay.ts applies pages to it); nothing here is persisted.

/** Where a record's live version is. */
export interface Location {
  /** Index of the record's leaf in its generation's Merkle log. */
  leafIndex: number;
  generation: number;
  pageId: number;
  offset: number;
  length: number;
  sequence: number;
  /** The suite the record is sealed with (its header's suite byte). */
  suite: number;
  /** The captured governance state, in canonical text form. */
  governance: string;
}

export class KeyDirectory {
  readonly #collections = new Map<string, Map<string, Location>>();
  /** Generation of every live commit page (retiring a generation deletes its pages). */
  readonly #commitPages = new Map<number, number>();

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
    const m = this.#collections.get(collection);
    if (m === undefined) return [];
    return [...m.keys()].filter((id) => id.startsWith(prefix)).sort();
  }

  /** Ids of a collection in no particular order (no sort of every id). */
  unorderedIds(collection: string): string[] {
    return [...(this.#collections.get(collection)?.keys() ?? [])];
  }

  /** The live records of a collection, id → location (iterate; do not edit). */
  entries(collection: string): ReadonlyMap<string, Location> {
    return this.#collections.get(collection) ?? new Map();
  }

  /** Collections with their live record maps (including emptied ones). */
  collections(): IterableIterator<[string, ReadonlyMap<string, Location>]> {
    return this.#collections.entries();
  }

  /** Live record counts per collection. */
  counts(): Record<string, number> {
    return Object.fromEntries([...this.#collections].map(([k, m]) => [k, m.size]));
  }

  /**
   * Live record counts per collection and suite id (from the locations: nothing is decrypted). Every
   * collection the directory holds is listed, an emptied one with no suite.
   * @example directory.suiteCounts(); // { words: { 2: 120, 3: 4 } }
   */
  suiteCounts(): Record<string, Record<number, number>> {
    const out: Record<string, Record<number, number>> = {};
    for (const [name, m] of this.#collections) {
      const counts: Record<number, number> = {};
      for (const loc of m.values()) counts[loc.suite] = (counts[loc.suite] ?? 0) + 1;
      out[name] = counts;
    }
    return out;
  }

  /** True when some live record is sealed with suite `suite`. */
  usesSuite(suite: number): boolean {
    for (const m of this.#collections.values()) for (const loc of m.values()) if (loc.suite === suite) return true;
    return false;
  }

  /** True when some collection has a live record. */
  any(): boolean {
    for (const m of this.#collections.values()) if (m.size > 0) return true;
    return false;
  }

  set(collection: string, id: string, loc: Location): void {
    let m = this.#collections.get(collection);
    if (m === undefined) this.#collections.set(collection, (m = new Map()));
    m.set(id, loc);
  }

  delete(collection: string, id: string): void {
    let m = this.#collections.get(collection);
    if (m === undefined) this.#collections.set(collection, (m = new Map()));
    m.delete(id);
  }

  /** Records that commit page `pageId` (of `generation`) is live. */
  addPage(pageId: number, generation: number): void {
    this.#commitPages.set(pageId, generation);
  }

  /** Forgets deleted commit pages. */
  dropPages(pageIds: readonly number[]): void {
    for (const id of pageIds) this.#commitPages.delete(id);
  }

  /** The live commit pages of any of `generations`. */
  pagesOf(generations: ReadonlySet<number>): number[] {
    return [...this.#commitPages].filter(([, g]) => generations.has(g)).map(([id]) => id);
  }
}
