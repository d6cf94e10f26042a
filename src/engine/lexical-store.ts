// Index persistence (docs/lexical-index.md): the lexical index of each collection opened with
// `index: { text }` — held in memory (it has plaintext terms), loaded on first use from the sealed
// index page the last checkpoint wrote and brought up to date with the ids committed after it, or
// built from the records. Every commit keeps loaded indexes current (an `applied` hook); a
// checkpoint seals the indexes changed since (a checkpoint contributor); a migration carries an
// index over to the new generation, and retirement makes one whole before the pages it would be
// completed from go.

import { PqdbError } from '../errors';
import type { PageStore } from '../storage/page-store';
import { pauseIfSpent, sliceSpent, yieldToEventLoop } from '../_yield';
import { LexicalIndex } from './lexical';
import type { Value } from './codec';
import type { KeyRing } from './keys';
import type { KeyDirectory } from './directory';
import type { IndexRef } from './manifest';
import type { AppliedCommit, CommitPipeline, Draft } from './commit';
import type { ReplayPage } from './replay';
import {
  decodeIndexPageAsync,
  encodeIndexPage,
  indexPageGeneration,
  lexicalKey,
  INDEX_PART_BYTES,
} from './page-format';

export interface LexicalContext {
  readonly pipeline: CommitPipeline;
  readonly pages: PageStore;
  readonly keys: KeyRing;
  readonly directory: KeyDirectory;
  /** A record's value read for indexing (undefined when it no longer exists). */
  value(collection: string, id: string): Promise<Value | undefined>;
  /** Throws when the store is closed. */
  live(): void;
}

interface Entry {
  fields: readonly string[];
  index?: Promise<LexicalIndex>;
}

const sameFields = (ref: IndexRef, fields: readonly string[]) =>
  ref.fields === undefined || (ref.fields.length === fields.length && fields.every((f) => ref.fields!.includes(f)));

export class LexicalStore {
  readonly #ctx: LexicalContext;
  readonly #entries = new Map<string, Entry>();
  /** Per collection: ids committed after its persisted index, while the index is not loaded. */
  readonly #pending = new Map<string, Set<string>>();
  /** Collections whose loaded index changed since it was last persisted. */
  readonly #dirty = new Set<string>();
  /** Collections whose index must be built from the records next time (a load failed). */
  readonly #fromRecords = new Set<string>();
  /** While an index is being rebuilt: the collection and the ids committed meanwhile. */
  #reindexing?: { name: string; touched: Set<string> };

  constructor(ctx: LexicalContext) {
    this.#ctx = ctx;
  }

  /**
   * Declares collection `name`'s indexed fields (a first declaration wins). The index of an empty
   * collection without a persisted one starts built: commits keep it current from the first put.
   */
  declare(name: string, fields: readonly string[]): void {
    if (fields.length === 0 || this.#entries.has(name)) return;
    const entry: Entry = { fields };
    const { directory, pipeline } = this.#ctx;
    if (directory.count(name) === 0 && pipeline.manifest.indexes?.[name] === undefined)
      entry.index = Promise.resolve(new LexicalIndex({ text: fields }));
    this.#entries.set(name, entry);
  }

  /** The index of `name` if it is loaded or being loaded (no load is started). */
  loaded(name: string): Promise<LexicalIndex> | undefined {
    return this.#entries.get(name)?.index;
  }

  /**
   * The collection's lexical index, loaded or built on first use. A failed load is not kept: the
   * next use builds the index from the records (the ids to re-index after the persisted page may be
   * lost with the failed attempt).
   * @throws TypeError when the collection has no indexed fields.
   */
  indexOf(name: string): Promise<LexicalIndex> {
    const entry = this.#entries.get(name);
    if (entry === undefined) throw new TypeError(`collection "${name}" has no lexical index`);
    return (entry.index ??= this.#build(name, entry.fields).catch((e: unknown) => {
      entry.index = undefined;
      this.#fromRecords.add(name);
      throw e;
    }));
  }

  /**
   * Loads the index from the sealed page of the last checkpoint and re-indexes the ids committed
   * since, or builds it from the records when there is none (or it indexes other fields).
   */
  async #build(name: string, fields: readonly string[]): Promise<LexicalIndex> {
    const ref = this.#ctx.pipeline.manifest.indexes?.[name];
    const pending = this.#pending.get(name) ?? new Set<string>();
    this.#pending.delete(name);
    if (ref !== undefined && sameFields(ref, fields) && !this.#fromRecords.has(name)) {
      const { bytes } = (await this.#openPage(name, ref.pageId))!;
      let index: LexicalIndex | undefined;
      try {
        index = await LexicalIndex.deserializeAsync(bytes, { text: fields }, pauseIfSpent);
      } catch (e) {
        if (!(e instanceof RangeError)) throw e; // other fields than persisted: build anew below
      } finally {
        bytes.fill(0);
      }
      if (index !== undefined) {
        for (const id of pending) {
          const value = await this.#ctx.value(name, id);
          if (value === undefined) index.remove(id);
          else index.update(id, value);
        }
        if (pending.size > 0) this.#dirty.add(name);
        return index;
      }
    }
    const index = new LexicalIndex({ text: fields });
    await this.#ctx.directory.loadAllInSteps(pauseIfSpent);
    for (const id of this.#ctx.directory.unorderedIds(name)) index.update(id, await this.#ctx.value(name, id));
    this.#dirty.add(name);
    this.#fromRecords.delete(name);
    return index;
  }

  /** Per collection, the ids noted for re-indexing (persisted with the key directory). */
  pendingIds(): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    for (const [name, ids] of this.#pending) if (ids.size > 0) out[name] = [...ids];
    return out;
  }

  /** Takes the ids to re-index that the persisted key directory kept (on open, before replay's pages). */
  restorePending(pending: Record<string, string[]>): void {
    for (const [name, ids] of Object.entries(pending)) {
      let set = this.#pending.get(name);
      if (set === undefined) this.#pending.set(name, (set = new Set()));
      for (const id of ids) set.add(id);
    }
  }

  /**
   * Notes a commit page applied (on open and after every commit): ids written after a persisted
   * index that is not loaded are re-indexed when it loads. A migration's copy changes no value, so
   * a persisted index stays right for it.
   */
  notePage(page: ReplayPage): void {
    const indexes = this.#ctx.pipeline.manifest.indexes;
    if (indexes === undefined) return;
    for (const op of page.ops) {
      const ref = indexes[op.collection];
      const copy = op.kind === 'put' && op.copy === true;
      if (copy || ref === undefined || page.id <= ref.afterPage || this.loaded(op.collection) !== undefined) continue;
      let pending = this.#pending.get(op.collection);
      if (pending === undefined) this.#pending.set(op.collection, (pending = new Set()));
      pending.add(op.id);
    }
  }

  /**
   * `applied` hook: loaded indexes follow the commit's writes (unloaded ones will read the records).
   * It never throws: the commit is durable already. An index whose load fails meanwhile is dropped
   * (indexOf builds it from the records next time, this write included).
   */
  async applied(commit: AppliedCommit): Promise<void> {
    if (commit.foreign) {
      for (const page of commit.commitPages) await this.followed(page); // its values are sealed: read them
      return;
    }
    const re = this.#reindexing;
    for (const w of commit.writes) {
      if (w.copy === true) continue;
      if (re !== undefined && re.name === w.collection) re.touched.add(w.id);
      const lexical = this.loaded(w.collection);
      if (lexical === undefined) continue;
      const index = await lexical.catch(() => undefined);
      if (index === undefined) continue;
      if (w.kind === 'delete') index.remove(w.id);
      else index.update(w.id, w.value!);
      this.#dirty.add(w.collection);
    }
  }

  /**
   * A commit page another writer made, taken by a store following it (a foreign commit, from
   * `applied`), after the page was applied: loaded indexes read the values of the ids it wrote (the
   * unloaded ones noted them in notePage). Never throws: a value that does not open drops the index
   * (built again on use).
   */
  async followed(page: ReplayPage): Promise<void> {
    for (const op of page.ops) {
      if (op.kind === 'put' && op.copy === true) continue;
      const entry = this.#entries.get(op.collection);
      const index = await entry?.index?.catch(() => undefined);
      if (entry === undefined || index === undefined) continue;
      try {
        const value = await this.#ctx.value(op.collection, op.id);
        if (value === undefined) index.remove(op.id);
        else index.update(op.id, value);
      } catch {
        entry.index = undefined;
        this.#fromRecords.add(op.collection);
      }
    }
  }

  /**
   * Checkpoint contributor: seals every index changed since it was last persisted into the draft,
   * under generation `g`, covering the commit pages up to `afterPage`.
   */
  async persistDirty(draft: Draft, g: number, afterPage: number): Promise<void> {
    const indexes = { ...(draft.manifest.indexes ?? {}) };
    const dirty = [...this.#dirty];
    for (const name of dirty) {
      const lexical = this.loaded(name);
      if (lexical === undefined) continue;
      const index = await lexical;
      const parts = await index.serializeParts(INDEX_PART_BYTES, pauseIfSpent);
      const page = await this.#sealPage(draft, name, g, parts);
      for (const p of parts) p.fill(0);
      draft.addPage(page);
      if (indexes[name] !== undefined) draft.deletePage(indexes[name].pageId);
      indexes[name] = { pageId: page.id, afterPage, fields: [...index.fields] };
    }
    draft.manifest.indexes = indexes;
    draft.afterCommit(() => dirty.forEach((name) => this.#dirty.delete(name)));
  }

  /**
   * A migration's indexing phase for collection `name`, migrated into generation `g`. A migration
   * changes no value: an index kept current by the commits (or persisted, plus the writes since) is
   * the index of the migrated records. One in memory is persisted at the activation checkpoint; a
   * persisted one that is not loaded is sealed again, unchanged, under `g` (its page is opened and
   * sealed again, never parsed into an index) and still covers what it covered. Only a collection
   * without one is indexed anew, in small steps; ids written meanwhile are read again until none is
   * left, then it takes over.
   */
  async carryOver(name: string, g: number): Promise<void> {
    const ref = this.#ctx.pipeline.manifest.indexes?.[name];
    const declared = this.#entries.get(name);
    const fields = declared !== undefined ? declared.fields : (ref?.fields ?? []);
    if (fields.length === 0) return;
    this.declare(name, fields);
    const entry = this.#entries.get(name)!;
    if (entry.index !== undefined) {
      await entry.index;
      this.#dirty.add(name);
      return;
    }
    if (ref !== undefined && sameFields(ref, fields)) return this.#reseal(name, g);
    const fresh = new LexicalIndex({ text: fields });
    const touched = new Set<string>();
    this.#reindexing = { name, touched };
    try {
      await this.#ctx.directory.loadAllInSteps(pauseIfSpent);
      const ids = this.#ctx.directory.unorderedIds(name);
      this.#ctx.live();
      for (const id of ids) {
        if (sliceSpent()) {
          await yieldToEventLoop(); // reads first
          this.#ctx.live();
        }
        fresh.update(id, await this.#ctx.value(name, id));
      }
      while (touched.size > 0) {
        const again = [...touched];
        touched.clear();
        for (const id of again) fresh.update(id, await this.#ctx.value(name, id));
      }
      entry.index = Promise.resolve(fresh);
      this.#dirty.add(name);
    } finally {
      this.#reindexing = undefined;
    }
  }

  /**
   * Seals collection `name`'s persisted index page again under generation `g`, in its own commit
   * (the old page is deleted in it). The content and so `afterPage` stay. Nothing to do when the
   * page is already of generation `g` (resealed before a restart, or written by a checkpoint).
   */
  async #reseal(name: string, g: number): Promise<void> {
    const ref = this.#ctx.pipeline.manifest.indexes?.[name];
    if (ref === undefined) return;
    let opened: { bytes: Uint8Array } | undefined;
    try {
      opened = await this.#openPage(name, ref.pageId, g);
    } catch (e) {
      if (this.#ctx.pipeline.manifest.indexes?.[name]?.pageId !== ref.pageId) return; // replaced meanwhile
      throw e;
    }
    if (opened === undefined) return;
    const { bytes } = opened;
    try {
      await this.#ctx.pipeline.run(async (draft) => {
        if (draft.manifest.indexes?.[name]?.pageId !== ref.pageId) return draft.discard(); // replaced meanwhile
        const page = await this.#sealPage(draft, name, g, bytes);
        draft.addPage(page);
        draft.deletePage(ref.pageId);
        draft.manifest.indexes = { ...draft.manifest.indexes, [name]: { ...ref, pageId: page.id } };
      });
    } finally {
      bytes.fill(0);
    }
  }

  /**
   * Retirement of every generation but `current`, deleting commit pages up to `lastDeleted`: a
   * persisted index is made whole by re-indexing the ids written after it, found in the commit pages
   * after its `afterPage`. If some of those pages are going, the index is brought up to date (loaded
   * if need be) and persisted now; otherwise a page sealed under a retiring generation is sealed
   * again, unchanged.
   */
  async beforeRetire(draft: Draft, current: number, lastDeleted: number, afterPage: number): Promise<void> {
    const m = draft.manifest;
    const indexes = { ...(m.indexes ?? {}) };
    const persisted: string[] = [];
    for (const [name, ref] of Object.entries(indexes)) {
      if (ref.afterPage < lastDeleted) {
        const declared = this.#entries.get(name);
        const fields = declared !== undefined ? declared.fields : (ref.fields ?? []);
        if (fields.length === 0 || m.collections[name] === undefined) {
          draft.deletePage(ref.pageId); // nothing to load it with: rebuilt from the records when next used
          delete indexes[name];
          continue;
        }
        this.declare(name, fields);
        const index = await this.indexOf(name);
        const parts = await index.serializeParts(INDEX_PART_BYTES, pauseIfSpent);
        try {
          const page = await this.#sealPage(draft, name, current, parts);
          draft.addPage(page);
          indexes[name] = { pageId: page.id, afterPage, fields: [...index.fields] };
        } finally {
          for (const p of parts) p.fill(0);
        }
        draft.deletePage(ref.pageId);
        persisted.push(name);
        continue;
      }
      // Older generations are all retiring, so only a page of the current one stays as it is.
      const opened = await this.#openPage(name, ref.pageId, current);
      if (opened === undefined) continue;
      try {
        const page = await this.#sealPage(draft, name, current, opened.bytes);
        draft.addPage(page);
        indexes[name] = { ...ref, pageId: page.id };
      } finally {
        opened.bytes.fill(0);
      }
      draft.deletePage(ref.pageId);
    }
    m.indexes = indexes;
    draft.afterCommit(() => persisted.forEach((name) => this.#dirty.delete(name)));
  }

  /**
   * Reads and opens collection `name`'s index page `pageId`: its plaintext (the caller wipes it)
   * and the generation it is sealed under; undefined, without opening it, when that is `skip`.
   * @throws PqdbError CORRUPTION when the page is missing; AUTH_FAILED when it does not open.
   */
  async #openPage(
    name: string,
    pageId: number,
    skip?: number,
  ): Promise<{ generation: number; bytes: Uint8Array } | undefined> {
    const page = await this.#ctx.pages.readPage(pageId);
    if (page === undefined) throw new PqdbError('CORRUPTION', `lexical index page ${pageId} is missing`);
    const generation = indexPageGeneration(page);
    if (generation === skip) return undefined;
    const key = this.#ctx.keys.generationKey(generation, 'lexical', lexicalKey);
    return { generation, bytes: await decodeIndexPageAsync(pageId, key, name, page, pauseIfSpent) };
  }

  /** A new index page of collection `name` holding `plaintext`, sealed under generation g (its id from the draft). */
  async #sealPage(
    draft: Draft,
    name: string,
    g: number,
    plaintext: Uint8Array | readonly Uint8Array[],
  ): Promise<{ id: number; bytes: Uint8Array }> {
    const id = draft.pageId();
    const key = this.#ctx.keys.generationKey(g, 'lexical', lexicalKey);
    return { id, bytes: await encodeIndexPage(id, g, key, name, plaintext, pauseIfSpent) };
  }
}
