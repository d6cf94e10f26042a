// The secondary indexes of a store's collections (field-index.ts): declared with a collection
// (`index: { by: [...] }`), loaded on a collection's first query from the sealed page the last
// checkpoint wrote (then the ids written after it are read again) or built from the records, in
// slices beside other work, and kept current by every commit after (an `applied` hook: a put's value
// is in the commit; a followed commit's ids are read again before the next query). A checkpoint (or
// an automatic persist) seals the indexes changed since in one page per collection, under a key of
// the store secret (no key generation: a migration and a retirement leave it readable):
//
//   page  = encodeIndexPage(page id, generation 0, K_fi, collection ‖ 0x00 ‖ "by", plaintext)
//   plain = varint(k) ‖ k × (varint(|index|) ‖ FieldIndex.serialize())   in the manifest's spec order
//   K_fi  = HKDF-SHA384(S, "", "pqdb field index key v1", 32)
//
// so no entry, value or order of values reaches the medium in the clear. A persisted page covers
// the commit pages up to its `afterPage`, the same as the key directory persisted with it: the ids
// of later pages are noted as they are replayed or committed. One whose collection was written
// after it while it was not loaded is dropped at the next persist (the ids in between would not be
// replayed again): the next query builds it from the records.

import { pauseIfSpent, sliceSpent, yieldToEventLoop } from '../_yield';
import { readVarint } from '../_varint';
import { PqdbError } from '../errors';
import { ValueWriter, type Value } from './codec';
import type { KeyDirectory } from './directory';
import type { AppliedCommit, CommitPage, CommitPipeline, Draft } from './commit';
import type { KeyRing } from './keys';
import type { PageStore } from '../storage/page-store';
import { decodeIndexPageAsync, encodeIndexPage } from './page-format';
import { FieldIndex, FIELD_INDEX_KEY_LABEL, fieldIndexBinding, type KeyRange } from './field-index';

/** What the indexes use of the engine (engine.ts builds it). */
export interface FieldIndexContext {
  readonly directory: Pick<KeyDirectory, 'loadAllInSteps' | 'unorderedIds'>;
  readonly pipeline: Pick<CommitPipeline, 'manifest'>;
  readonly pages: Pick<PageStore, 'readPage'>;
  readonly keys: Pick<KeyRing, 'storeKey'>;
  /** A record's value (undefined when it no longer exists), read for indexing. */
  value(collection: string, id: string): Promise<Value | undefined>;
  /** Throws once the store is closed. */
  live(): void;
}

const specKey = (fields: readonly string[]) => fields.join('\u0000');

/** A secondary index build's progress: records read of the collection's. */
export interface IndexProgress {
  done: number;
  total: number;
}

interface Entry {
  specs: (readonly string[])[];
  /** Told of a build's progress (buildIndexes), while one runs. */
  onProgress?: (p: IndexProgress) => void;
  built?: Promise<Map<string, FieldIndex>>;
  /** Ids to read again before the next query (a followed commit's, or written while building). */
  pending: Set<string>;
  building: boolean;
  /** Changed since it was persisted (or never persisted). */
  dirty: boolean;
}

export class FieldIndexes {
  readonly #ctx: FieldIndexContext;
  readonly #entries = new Map<string, Entry>();
  /** Per collection with a persisted page: the ids written after it (noted as pages are applied). */
  readonly #after = new Map<string, Set<string>>();

  constructor(ctx: FieldIndexContext) {
    this.#ctx = ctx;
  }

  /** Declares collection `name`'s indexes (field lists); a later declaration adds the new ones. */
  declare(name: string, specs: readonly (readonly string[])[]): void {
    if (specs.length === 0) return;
    let e = this.#entries.get(name);
    if (e === undefined)
      this.#entries.set(name, (e = { specs: [], pending: new Set(), building: false, dirty: false }));
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

  /**
   * Loads or builds every declared index of `name` now (in slices, beside reads and writes),
   * telling `onProgress` of a build's records read; resolves when they are current.
   */
  async build(name: string, onProgress?: (p: IndexProgress) => void): Promise<void> {
    const e = this.#entries.get(name);
    if (e === undefined) throw new TypeError(`collection "${name}" has no secondary index`);
    e.onProgress = onProgress;
    try {
      await this.#index(name, e.specs[0]);
    } finally {
      e.onProgress = undefined;
    }
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

  /** Every declared index of `name`: from its persisted page and the ids written since, else from the records. */
  async #build(name: string, e: Entry): Promise<Map<string, FieldIndex>> {
    e.building = true;
    try {
      const ref = this.#ctx.pipeline.manifest.fieldIndexes?.[name];
      const same =
        ref !== undefined &&
        ref.specs.length === e.specs.length &&
        e.specs.every((s, i) => specKey(s) === specKey(ref.specs[i]));
      if (same) {
        const out = await this.#load(name, ref.pageId, e.specs);
        const after = this.#after.get(name) ?? new Set<string>();
        this.#after.delete(name);
        for (const id of after) e.pending.add(id);
        e.dirty = after.size > 0;
        return out;
      }
      this.#after.delete(name);
      e.dirty = true;
      const out = new Map(e.specs.map((s) => [specKey(s), new FieldIndex(s)] as const));
      await this.#ctx.directory.loadAllInSteps(pauseIfSpent);
      const ids = this.#ctx.directory.unorderedIds(name);
      let done = 0;
      for (const id of ids) {
        if (sliceSpent()) {
          e.onProgress?.({ done, total: ids.length });
          await yieldToEventLoop();
        }
        this.#ctx.live();
        const value = await this.#ctx.value(name, id);
        for (const ix of out.values()) ix.update(id, value);
        done++;
      }
      e.onProgress?.({ done, total: ids.length });
      return out;
    } finally {
      e.building = false;
    }
  }

  /** The indexes of `name` out of their sealed page. @throws PqdbError CORRUPTION, AUTH_FAILED */
  async #load(name: string, pageId: number, specs: readonly (readonly string[])[]): Promise<Map<string, FieldIndex>> {
    const page = await this.#ctx.pages.readPage(pageId);
    if (page === undefined)
      throw new PqdbError('CORRUPTION', `the secondary index page ${pageId} of ${name} is missing`);
    const plain = await decodeIndexPageAsync(
      pageId,
      this.#ctx.keys.storeKey(FIELD_INDEX_KEY_LABEL),
      fieldIndexBinding(name),
      page,
      pauseIfSpent,
    );
    try {
      const bad = (why: string) => new PqdbError('CORRUPTION', `the secondary index page of ${name} ${why}`);
      const [k, at] = readVarint(plain, 0, plain.length, bad);
      let p = at;
      if (k !== specs.length) throw bad('holds other indexes than the manifest names');
      const out = new Map<string, FieldIndex>();
      for (const s of specs) {
        const [len, next] = readVarint(plain, p, plain.length, bad);
        if (next + len > plain.length) throw bad('is cut short');
        out.set(specKey(s), FieldIndex.deserialize(plain.subarray(next, next + len), s));
        p = next + len;
        await pauseIfSpent();
      }
      if (p !== plain.length) throw bad('has bytes after its indexes');
      return out;
    } finally {
      plain.fill(0);
    }
  }

  /**
   * Notes a commit page applied (on open and after every commit): ids written after a persisted
   * page of their collection, while its indexes are not loaded, are read again when they load.
   * Copies (a migration's, a compaction's) change no value.
   */
  notePage(page: CommitPage): void {
    const refs = this.#ctx.pipeline.manifest.fieldIndexes;
    if (refs === undefined) return;
    for (const op of page.ops) {
      const ref = refs[op.collection];
      if (ref === undefined || page.id <= ref.afterPage || (op.kind === 'put' && op.copy === true)) continue;
      if (this.#entries.get(op.collection)?.built !== undefined) continue; // the applied hook has it
      let ids = this.#after.get(op.collection);
      if (ids === undefined) this.#after.set(op.collection, (ids = new Set()));
      ids.add(op.id);
    }
  }

  /**
   * Checkpoint contributor: seals the loaded indexes changed since they were persisted, each
   * collection's in a page of its own covering the commit pages up to `afterPage`; moves a
   * persisted page nothing was written after to `afterPage`; drops one whose collection was
   * written after it while it was not loaded (the next query builds it from the records).
   */
  async persistDirty(draft: Draft, afterPage: number): Promise<void> {
    const refs = { ...(draft.manifest.fieldIndexes ?? {}) };
    const sealed: Entry[] = [];
    const fresh = new Set<string>();
    for (const [name, e] of this.#entries) {
      if (e.built === undefined || e.building) continue;
      const built = await e.built.catch(() => undefined);
      if (built === undefined || (!e.dirty && refs[name] !== undefined)) continue;
      const w = new ValueWriter();
      w.varint(e.specs.length);
      for (const s of e.specs) {
        const bytes = built.get(specKey(s))!.serialize();
        w.varint(bytes.length);
        w.bytes(bytes);
        bytes.fill(0);
        await pauseIfSpent();
      }
      const plain = w.done();
      w.buf.fill(0);
      const id = draft.pageId();
      const key = this.#ctx.keys.storeKey(FIELD_INDEX_KEY_LABEL);
      const bytes = await encodeIndexPage(id, 0, key, fieldIndexBinding(name), plain, pauseIfSpent);
      plain.fill(0);
      draft.addPage({ id, bytes });
      if (refs[name] !== undefined) draft.deletePage(refs[name].pageId);
      refs[name] = { pageId: id, afterPage, specs: e.specs.map((s) => [...s]) };
      sealed.push(e);
      fresh.add(name);
    }
    for (const [name, ref] of Object.entries(refs)) {
      if (fresh.has(name) || ref.afterPage === afterPage) continue;
      const e = this.#entries.get(name);
      const loaded = e?.built !== undefined && !e.building;
      if (e?.building === true) {
        // Loading from this page right now: the writes since would be missed after a move. Dropped;
        // the loaded index is sealed anew by the next persist.
        draft.deletePage(ref.pageId);
        delete refs[name];
        continue;
      }
      // A loaded, unchanged index: nothing written after it. Else only if no write was noted since.
      if (loaded || (this.#after.get(name)?.size ?? 0) === 0) refs[name] = { ...ref, afterPage };
      else {
        draft.deletePage(ref.pageId);
        delete refs[name];
      }
    }
    if (Object.keys(refs).length > 0) draft.manifest.fieldIndexes = refs;
    else delete draft.manifest.fieldIndexes;
    draft.afterCommit(() => {
      for (const e of sealed) e.dirty = false;
      for (const name of Object.keys(refs)) this.#after.delete(name);
    });
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
        e.dirty = true;
        continue;
      }
      e.dirty = true;
      void e.built.then(
        (built) => {
          for (const ix of built.values()) ix.update(w.id, w.kind === 'delete' ? undefined : w.value);
        },
        () => undefined,
      );
    }
  }
}
