// The secondary indexes of a store's collections (field-index.ts): declared with a collection
// (`index: { by: [...] }`), built from the records on a collection's first query, in slices beside
// other work, and kept current by every commit after (an `applied` hook: a put's value is in the
// commit; a followed commit's ids are read again before the next query). Held in memory only: no
// entry, value or order of values is written to the medium.

import { pauseIfSpent, sliceSpent, yieldToEventLoop } from '../_yield';
import type { Value } from './codec';
import type { KeyDirectory } from './directory';
import type { AppliedCommit } from './commit';
import { FieldIndex, type KeyRange } from './field-index';

/** What the indexes use of the engine (engine.ts builds it). */
export interface FieldIndexContext {
  readonly directory: Pick<KeyDirectory, 'loadAllInSteps' | 'unorderedIds'>;
  /** A record's value (undefined when it no longer exists), read for indexing. */
  value(collection: string, id: string): Promise<Value | undefined>;
  /** Throws once the store is closed. */
  live(): void;
}

const specKey = (fields: readonly string[]) => fields.join('\u0000');

interface Entry {
  specs: (readonly string[])[];
  built?: Promise<Map<string, FieldIndex>>;
  /** Ids to read again before the next query (a followed commit's, or written while building). */
  pending: Set<string>;
  building: boolean;
}

export class FieldIndexes {
  readonly #ctx: FieldIndexContext;
  readonly #entries = new Map<string, Entry>();

  constructor(ctx: FieldIndexContext) {
    this.#ctx = ctx;
  }

  /** Declares collection `name`'s indexes (field lists); a later declaration adds the new ones. */
  declare(name: string, specs: readonly (readonly string[])[]): void {
    if (specs.length === 0) return;
    let e = this.#entries.get(name);
    if (e === undefined) this.#entries.set(name, (e = { specs: [], pending: new Set(), building: false }));
    for (const s of specs)
      if (!e.specs.some((x) => specKey(x) === specKey(s))) {
        e.specs.push([...s]);
        e.built = undefined; // built again with the new one on the next query
      }
  }

  /** The declared field lists of collection `name`. */
  specs(name: string): readonly (readonly string[])[] {
    return this.#entries.get(name)?.specs ?? [];
  }

  /**
   * The ids of collection `name` whose keys under the index on `fields` lie in any of `ranges`
   * (disjoint, in key order), in key order or its reverse; the index is built on first use.
   */
  async ids(
    name: string,
    fields: readonly string[],
    ranges: readonly KeyRange[],
    reverse: boolean,
    max = Infinity,
  ): Promise<string[]> {
    const index = await this.#index(name, fields);
    const out: string[] = [];
    const list = reverse ? [...ranges].reverse() : ranges;
    for (const r of list)
      for (const id of index.ids(r, reverse)) {
        if (out.length >= max) return out;
        out.push(id);
      }
    return out;
  }

  async #index(name: string, fields: readonly string[]): Promise<FieldIndex> {
    const e = this.#entries.get(name);
    if (e === undefined) throw new TypeError(`collection "${name}" has no secondary index`);
    const built = await (e.built ??= this.#build(name, e).catch((err: unknown) => {
      e.built = undefined;
      throw err;
    }));
    if (e.pending.size > 0) {
      const ids = [...e.pending];
      e.pending.clear();
      for (const id of ids) {
        if (sliceSpent()) await yieldToEventLoop();
        const value = await this.#ctx.value(name, id);
        for (const ix of built.values()) ix.update(id, value);
      }
    }
    const index = built.get(specKey(fields));
    if (index === undefined) throw new TypeError(`collection "${name}" has no index on ${fields.join(', ')}`);
    return index;
  }

  /** Every declared index of `name`, from the records (in slices: reads come first). */
  async #build(name: string, e: Entry): Promise<Map<string, FieldIndex>> {
    e.building = true;
    try {
      const out = new Map(e.specs.map((s) => [specKey(s), new FieldIndex(s)] as const));
      await this.#ctx.directory.loadAllInSteps(pauseIfSpent);
      for (const id of this.#ctx.directory.unorderedIds(name)) {
        if (sliceSpent()) await yieldToEventLoop();
        this.#ctx.live();
        const value = await this.#ctx.value(name, id);
        for (const ix of out.values()) ix.update(id, value);
      }
      return out;
    } finally {
      e.building = false;
    }
  }

  /**
   * `applied` hook: built indexes follow the commit's writes (a put's value is in the commit); a
   * followed commit's ids, and those written while an index builds, are read again before the next
   * query. Copies (a migration's, a compaction's) change no value. Never throws.
   */
  applied(commit: AppliedCommit): void {
    for (const w of commit.writes) {
      if (w.copy === true) continue;
      const e = this.#entries.get(w.collection);
      if (e?.built === undefined) continue;
      if (commit.foreign || e.building || (w.kind === 'put' && w.value === undefined)) {
        e.pending.add(w.id);
        continue;
      }
      void e.built.then(
        (built) => {
          for (const ix of built.values()) ix.update(w.id, w.kind === 'delete' ? undefined : w.value);
        },
        () => undefined,
      );
    }
    if (commit.foreign)
      for (const page of commit.commitPages)
        for (const op of page.ops) {
          const e = this.#entries.get(op.collection);
          if (e?.built !== undefined) e.pending.add(op.id);
        }
  }
}
