// A typed collection of a store: the façade users put, get, scan and search through. It holds no
// state of its own beyond its name, schema and indexed fields; every operation goes to the store's
// engine (src/engine/store.ts, engine.ts), whose writes all pass through the commit pipeline
// (writes.ts checks, encodes and stages them).

import type { Governance } from '../crypto/record';
import {
  compileSchema,
  evolutionProblem,
  storedSchema,
  sameFields,
  type CompiledSchema,
  type InferValue,
  type Schema,
  type Value,
} from './codec';
import { PqdbError } from '../errors';
import type { ValueShape } from './codec';
import { suite as suiteOf, type SuiteName } from '../crypto/suites';
import type { Manifest } from './manifest';
import type { LexicalIndex, SearchOptions } from './lexical';
import { WITHHELD, checkId, checkVersion, type PendingOp } from './writes';
import { Query, Where, type QuerySource } from './query';
import type { KeyRange } from './field-index';
import { rerunOnChange, type Change, type WatchOptions } from './changes';

export { MAX_ID_BYTES } from './writes';

/**
 * The store a collection belongs to: the Store (store.ts completes this interface as `extends Store`,
 * so this file does not import the façade above it).
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface CollectionStore {}

export interface PutOptions {
  governance?: Governance;
  /**
   * Compare and set: the version the record must still have (`collection.version(id)`; 0: it must
   * be absent) when the write commits, else CONFLICT and nothing is written.
   */
  ifVersion?: number;
  /**
   * An id for this write (16 random bytes, base64): given again with a write the store already
   * committed (among its last 64 with an id), it is not applied again: a retried call is safe.
   */
  requestId?: string;
}

export interface ScanOptions {
  prefix?: string;
  limit?: number;
  /** Called for each record the authority policy in force does not allow reading (it is skipped). */
  onWithheld?: (id: string) => void;
}

/** Search hits, and how many matching records the authority policy withheld. */
export type SearchHits<V> = { id: string; value: V }[] & { withheld: number };

/** Fields of schema `S` a lexical index can cover: its string fields (optional or not). */
export type TextField<S extends Schema> = { [K in keyof S]: S[K] extends 'string' | 'string?' ? K : never }[keyof S] &
  string;

/** A collection as `store.collections()` lists it. */
export interface CollectionInfo {
  name: string;
  /** Its current schema. */
  schema: Schema;
  /** The current schema's version (1 until the schema evolved). */
  version: number;
  /** Live records. */
  records: number;
  /** The suite new records are sealed with. */
  suite: SuiteName;
  /** The string fields its lexical index covers. */
  indexed: string[];
}

/** Options of `store.collection`: the schema, the suite new records are sealed with, the indexed fields. */
export interface CollectionOptions<S extends Schema = Schema> {
  schema: S;
  suite?: SuiteName;
  /**
   * `text`: string fields kept in the lexical index (search); `by`: secondary indexes, each a field
   * or a list of fields (a compound index), for `where` and `orderBy`.
   */
  index?: { text?: readonly TextField<S>[]; by?: readonly ((keyof S & string) | readonly (keyof S & string)[])[] };
  /**
   * For a schema that cannot follow the stored one as is (a field renamed, retyped, removed or made
   * required): the function that turns a record of an earlier version (its value, its version) into
   * a value of this schema. The collection moves to the new version with its next write; records
   * of earlier versions read through the function until `upgradeRecords()` has rewritten them.
   */
  upgrade?: (value: Value, version: number) => Value;
}

/**
 * The value type of `store.collection<V, S>`: `V` when given explicitly, else inferred from the schema.
 * @example store.collection('s', { schema: { n: 'integer' } }) // Collection<{ n: number }>
 */
export type CollectionValue<V, S extends Schema> = [V] extends [never] ? InferValue<S> : V;

/**
 * The transaction `store.transaction(fn)` gives `fn`: reads of the store as it stands (and of what
 * `fn` staged), writes staged to commit together when `fn` returns. No other write lands meanwhile.
 */
export interface ReadTransaction {
  get<V extends ValueShape<V>>(collection: Collection<V>, id: string): Promise<V | undefined>;
  has<V extends ValueShape<V>>(collection: Collection<V>, id: string): boolean;
  /** The record's version (its write sequence: a later write has a higher one), undefined when absent. */
  version<V extends ValueShape<V>>(collection: Collection<V>, id: string): number | undefined;
  put<V extends ValueShape<V>>(
    collection: Collection<V>,
    id: string,
    value: V,
    options?: { governance?: Governance },
  ): void;
  delete<V extends ValueShape<V>>(collection: Collection<V>, id: string): void;
}

/** Operations collected by `store.batch`; they commit together or not at all. */
export interface Transaction {
  put<V extends ValueShape<V>>(collection: Collection<V>, id: string, value: V, options?: PutOptions): void;
  delete<V extends ValueShape<V>>(collection: Collection<V>, id: string): void;
}

/** @internal What a collection asks of its store. */
export interface CollectionEngine {
  commit(ops: PendingOp[], requestId?: string): Promise<void>;
  /**
   * The value of `id` (undefined when absent). A record the policy in force does not allow reading
   * is AUTHORITY_DENIED, or, with `withhold`, WITHHELD (what scan and search skip and count).
   */
  read(c: Collection, id: string, withhold?: boolean): Promise<Value | undefined | typeof WITHHELD>;
  has(collection: string, id: string): boolean;
  version(collection: string, id: string): number | undefined;
  /** Rewrites the records of earlier schema versions through the collection's upgrade (upgrade.ts). */
  upgradeRecords(
    c: Collection,
    onProgress?: (p: { done: number; total: number }) => void,
  ): Promise<{ rewritten: number; current: number; version: number }>;
  /** Loads or builds the collection's secondary indexes now (field-indexes.ts build). */
  buildIndexes(collection: string, onProgress?: (p: { done: number; total: number }) => void): Promise<void>;
  /** The values of `ids`, as `read` with `withhold` gives each (a query's results: pages read once). */
  readMany(c: Collection, ids: readonly string[]): Promise<(Value | undefined | typeof WITHHELD)[]>;
  /** The ids of a secondary index's ranges, in order (field-indexes.ts). */
  query(
    collection: string,
    fields: readonly string[],
    ranges: readonly KeyRange[],
    reverse: boolean,
    max: number,
  ): Promise<string[]>;
  count(collection: string): number;
  ids(collection: string, prefix: string): string[];
  index(collection: string): Promise<LexicalIndex>;
  loadedIndex(collection: string): Promise<LexicalIndex> | undefined;
  exportSealed(collection: string, id: string): Promise<Uint8Array>;
  /** Listens to the collection's changes (ChangeFeed.watch); returns the removal. */
  watch(collection: string, listener: (change: Change) => void, options?: WatchOptions): () => void;
}

/** What `collection.live` re-runs: one get, a scan (collected into an array) or a search. */
export type LiveQuery =
  { get: string } | { scan: Omit<ScanOptions, 'onWithheld'> } | { search: string; options?: SearchOptions };

/**
 * @internal The checked options of `store.collection(name, options)` under manifest `m`. Without
 * options, the stored collection as it is. A schema that only adds optional fields or widens types
 * (codec.ts evolutionProblem) is the collection's next version: its first commit records it.
 * @throws TypeError for a bad name, schema or index; RangeError when the schema differs from the
 * stored one in another way; PqdbError NOT_FOUND without options for a collection the store lacks
 */
export function collectionSpec(
  name: unknown,
  options:
    | {
        schema: Schema;
        suite?: SuiteName;
        index?: { text?: readonly string[]; by?: readonly (string | readonly string[])[] };
        upgrade?: (value: Value, version: number) => Value;
      }
    | undefined,
  m: Manifest,
): {
  schema: CompiledSchema;
  text: readonly string[];
  by: string[][];
  suite: number | undefined;
  upgrade?: (value: Value, version: number) => Value;
} {
  if (typeof name !== 'string' || name.length === 0) throw new TypeError('"name" expected a non-empty string');
  const existing = m.collections[name];
  if (options === undefined) {
    if (existing === undefined)
      throw new PqdbError('NOT_FOUND', `no collection "${name}" in this store: give its schema to make it`);
    const text = existing.text ?? m.indexes?.[name]?.fields ?? [];
    return { schema: storedSchema(existing), text, by: existing.by ?? [], suite: undefined };
  }
  if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected { schema, … }');
  const upgrade = options.upgrade;
  if (upgrade !== undefined && typeof upgrade !== 'function') throw new TypeError('"upgrade" expected a function');
  let schema = compileSchema(options.schema);
  if (existing !== undefined) {
    const stored = storedSchema(existing);
    const older = stored.earlier.findIndex((e) => sameFields(e, schema));
    if (sameFields(stored, schema)) {
      schema = stored;
      if (existing.upgrade !== undefined && upgrade === undefined)
        throw new TypeError(
          `collection "${name}" is being upgraded to schema version ${existing.upgrade.to}: open it with its upgrade function to read and finish it`,
        );
    } else if (older >= 0)
      throw new PqdbError(
        'FORMAT_VERSION',
        `collection "${name}" is at schema version ${stored.version}, newer than the version ${older + 1} it is opened with here: open it with its current schema (or none: store.collection("${name}"))`,
      );
    else {
      const why = upgrade === undefined ? evolutionProblem(stored, schema) : undefined;
      if (existing.upgrade !== undefined)
        throw new RangeError(
          `collection "${name}" is being upgraded to schema version ${existing.upgrade.to}: finish that upgrade (upgradeRecords) before another`,
        );
      if (why !== undefined)
        throw new RangeError(
          `collection "${name}" exists with another schema (version ${stored.version}): ${why}; a new version may only add optional fields or widen types (integer to number, required to optional)`,
        );
      schema = compileSchema(options.schema, [...stored.earlier.map((e) => e.source), stored.source]);
    }
  }
  const suite = options.suite !== undefined && existing === undefined ? suiteOf(options.suite).id : undefined;
  const text = options.index?.text ?? [];
  if (!Array.isArray(text) || text.some((f) => schema.fields.find((x) => x.name === f)?.type !== 'string'))
    throw new TypeError('"index.text" expected names of string fields of the schema');
  const byOption = options.index?.by ?? [];
  if (!Array.isArray(byOption)) throw new TypeError('"index.by" expected an array of fields or lists of fields');
  const by = byOption.map((spec) => {
    const fields = typeof spec === 'string' ? [spec] : spec;
    if (
      !Array.isArray(fields) ||
      fields.length === 0 ||
      fields.some((f) => !schema.fields.some((x) => x.name === f)) ||
      new Set(fields).size !== fields.length
    )
      throw new TypeError('"index.by" expected fields of the schema, or lists of distinct ones');
    return [...fields] as string[];
  });
  return { schema, text, by, suite, ...(upgrade !== undefined ? { upgrade } : {}) };
}

/** A typed collection; `V` is the record value type (see CollectionValue). */
export class Collection<V extends ValueShape<V> = Value> {
  readonly #engine: CollectionEngine;

  /** @internal Made by Store.collection. */
  constructor(
    readonly store: CollectionStore,
    engine: CollectionEngine,
    readonly name: string,
    /** @internal */ readonly schema: CompiledSchema,
    /** String fields indexed for search(), if any. */
    readonly indexed: readonly string[] = [],
    /** @internal The suite named when the collection was first opened (written with its first commit). */
    readonly suite?: number,
    /** Its secondary indexes: each a list of fields. */
    readonly by: readonly (readonly string[])[] = [],
    /** @internal Its upgrade function, when it was opened with one. */
    readonly upgrade?: (value: Value, version: number) => Value,
  ) {
    this.#engine = engine;
  }

  /**
   * A query on the secondary index whose fields are (or begin with) `fields`: then `equals`,
   * `between`, `startsWith`, `anyOf` or `all`, and `reverse`, `offset`, `limit`, `filter`.
   * @throws TypeError when no declared index starts with those fields
   * @example for await (const { id, value } of words.where('pos').equals('n').limit(100)) …
   * @example await words.where(['pos', 'offset']).between(['n', 1000], ['n', 2000]).toArray()
   */
  where(fields: string | readonly string[]): Where<V> {
    const list = typeof fields === 'string' ? [fields] : [...fields];
    if (list.length === 0 || list.some((f) => typeof f !== 'string'))
      throw new TypeError('"fields" expected a field name or a list of them');
    return new Where<V>(this.#querySource(), list);
  }

  /**
   * Rewrites every record written under an earlier schema version through the upgrade function the
   * collection was opened with, a chunk per commit beside reads and writes; resumable (a run cut
   * short leaves its chunks done: run it again). Resolves with what it rewrote once every record is
   * at the current version and the store no longer needs the function.
   * @throws TypeError when the collection was not opened with `upgrade`
   */
  upgradeRecords(
    options: { onProgress?: (p: { done: number; total: number }) => void } = {},
  ): Promise<{ rewritten: number; current: number; version: number }> {
    return this.#engine.upgradeRecords(this.#self, options.onProgress);
  }

  /**
   * Loads the collection's secondary indexes, or builds them from the records, now instead of at
   * the first query: in slices, beside reads and writes, with `onProgress` told of a build's
   * records read. Resolves when they are current (an index added to a populated collection).
   */
  buildIndexes(options: { onProgress?: (p: { done: number; total: number }) => void } = {}): Promise<void> {
    if (options.onProgress !== undefined && typeof options.onProgress !== 'function')
      throw new TypeError('"onProgress" expected a function');
    return this.#engine.buildIndexes(this.name, options.onProgress);
  }

  /** Every record with the field, in the order of the index on it (or beginning with it). */
  orderBy(field: string): Query<V> {
    return this.where(field).all();
  }

  /** @internal The ids a query on `fields` takes (the worker engine serves its page's queries so). */
  queryIds(fields: readonly string[], ranges: readonly KeyRange[], reverse: boolean, max: number): Promise<string[]> {
    const begins = (ix: readonly string[]) => fields.every((f, i) => ix[i] === f);
    const index = this.by.find((ix) => ix.length === fields.length && begins(ix)) ?? this.by.find((ix) => begins(ix));
    if (index === undefined) throw new TypeError(`no index on ${fields.join(', ')}`);
    return this.#engine.query(this.name, index, ranges, reverse, max);
  }

  /** @internal Records' values through the read gate (a query's results read in the worker). */
  readMany(ids: readonly string[]): Promise<(Value | undefined | typeof WITHHELD)[]> {
    return this.#engine.readMany(this.#self, ids);
  }

  #querySource(): QuerySource {
    return {
      ids: (fields, ranges, reverse, max) => this.#engine.query(this.name, fields, ranges, reverse, max),
      read: (ids) => this.#engine.readMany(this.#self, ids),
      indexes: () => this.by,
    };
  }

  /** This collection as the engine sees it: values are checked against the schema at run time. */
  get #self(): Collection {
    return this as unknown as Collection;
  }

  /** @internal The lexical index if it is loaded or being loaded (for benchmarks). */
  get lexical(): Promise<LexicalIndex> | undefined {
    return this.#engine.loadedIndex(this.name);
  }

  /**
   * Ids (with values) of records whose indexed text fields contain the query's words: `mode` 'all'
   * (default) or 'any', `prefix` to match the last word as typed, at most `limit` (default 100).
   * The index is built from the records on first use after opening and kept current by every commit.
   * @throws TypeError when the collection was opened without `index: { text: [...] }`.
   */
  async search(query: string, options: SearchOptions = {}): Promise<SearchHits<V>> {
    if (this.indexed.length === 0)
      throw new TypeError(`collection "${this.name}" has no lexical index (open it with index: { text: [...] })`);
    if (typeof query !== 'string') throw new TypeError('"query" expected a string');
    const index = await this.#engine.index(this.name);
    const out = Object.assign([] as { id: string; value: V }[], { withheld: 0 });
    for (const id of index.search(query, options)) {
      const value = await this.#engine.read(this.#self, id, true);
      if (value === WITHHELD) out.withheld++;
      else if (value !== undefined) out.push({ id, value: value as V });
    }
    return out;
  }

  /**
   * Seals and stores `value` under `id` in one commit (durable when the promise resolves).
   * @throws PqdbError SCHEMA_MISMATCH (nothing written), AUTHORITY_DENIED (the policy in force does
   * not allow writing the governance scope: nothing is sealed), SUITE_QUARANTINED, NOT_OPEN, IO_ERROR.
   */
  async put(id: string, value: V, options: PutOptions = {}): Promise<void> {
    const op: PendingOp = {
      kind: 'put',
      collection: this.#self,
      id,
      value: value as Value,
      governance: options?.governance,
      ifVersion: checkVersion(options?.ifVersion),
    };
    return this.#engine.commit([op], options?.requestId);
  }

  /**
   * The version of the record under `id` (its write sequence: every later write of it has a higher
   * one), or undefined when there is none; what `put`'s and `delete`'s `ifVersion` compare with.
   * Answered from the key directory: nothing is decrypted.
   */
  version(id: string): number | undefined {
    return this.#engine.version(this.name, checkId(id));
  }

  /**
   * The value stored under `id`, or undefined.
   * @throws PqdbError AUTHORITY_DENIED (the policy in force does not allow reading its scope),
   * AUTH_FAILED, CORRUPTION, SUITE_RETIRED
   */
  async get(id: string): Promise<V | undefined> {
    return this.#engine.read(this.#self, id) as Promise<V | undefined>;
  }

  /** True when a record is stored under `id` (answered from the key directory: nothing is decrypted). */
  has(id: string): boolean {
    return this.#engine.has(this.name, checkId(id));
  }

  /**
   * Deletes `id`; true when it existed. With `ifVersion`, only if the record still has that version
   * when the delete commits (else CONFLICT).
   */
  async delete(id: string, options: { ifVersion?: number } = {}): Promise<boolean> {
    checkId(id);
    const ifVersion = checkVersion(options?.ifVersion);
    if (!this.#engine.has(this.name, id) && ifVersion === undefined) return false;
    await this.#engine.commit([{ kind: 'delete', collection: this.#self, id, ifVersion }]);
    return true;
  }

  /**
   * Records in id order, optionally only ids starting with `prefix`, at most `limit`. Records the
   * authority policy in force does not allow reading are skipped (`onWithheld` hears of each); the
   * generator's return value counts them.
   */
  async *scan(options: ScanOptions = {}): AsyncGenerator<{ id: string; value: V }, { withheld: number }> {
    const ids = this.#engine.ids(this.name, options.prefix ?? '');
    const limit = options.limit ?? Infinity;
    const onWithheld = options.onWithheld;
    if (onWithheld !== undefined && typeof onWithheld !== 'function')
      throw new TypeError('"onWithheld" expected a function');
    let n = 0;
    let withheld = 0;
    for (const id of ids) {
      if (n >= limit) break;
      const value = await this.#engine.read(this.#self, id, true);
      if (value === WITHHELD) {
        withheld++;
        onWithheld?.(id);
        continue;
      }
      if (value === undefined) continue;
      n++;
      yield { id, value: value as V };
    }
    return { withheld };
  }

  /**
   * A self-verifying sealed export of `id`: header ‖ ciphertext ‖ inclusion proof ‖ signed
   * checkpoint ‖ signer key id. Verify it anywhere with verifySealed(bytes, signerPublicKey).
   * A record of the current key generation no checkpoint covers yet gets one signed first.
   * @throws PqdbError NOT_CHECKPOINTED for a record left in an older generation past its last
   * checkpoint (withheld or failed by a migration); TypeError when a checkpoint is needed and the
   * store has no signer keys; RangeError when there is no such record.
   */
  exportSealed(id: string): Promise<Uint8Array> {
    return this.#engine.exportSealed(this.name, checkId(id));
  }

  /** Number of live records. */
  get size(): number {
    return this.#engine.count(this.name);
  }

  /**
   * Calls `listener` after each durable commit that puts or deletes records of this collection
   * (only those of `options.ids`, or whose id starts with `options.prefix`, when given) with the
   * commit number and the ids: never values. Returns the function that stops it (docs/changes.md).
   * @example const stop = notes.watch(({ ids }) => refresh(ids), { prefix: 'inbox/' })
   */
  watch(listener: (change: Change) => void, options?: WatchOptions): () => void {
    return this.#engine.watch(this.name, listener, options);
  }

  /**
   * Runs `query` now and again whenever a commit touches what it read (the id of a get, the prefix
   * of a scan, any record for a search), handing each result to `onResult`; returns the stop.
   * @example const stop = notes.live({ scan: { prefix: 'inbox/' } }, (rows) => render(rows))
   */
  live<T = unknown>(query: LiveQuery, onResult: (result: T) => void, onError?: (e: unknown) => void): () => void {
    return live(this, query, onResult as (result: unknown) => void, onError);
  }
}

/** What a live query reads and watches: a Collection, or a worker's WorkerCollection. */
export interface LiveSource {
  get(id: string): Promise<unknown>;
  scan(options: Omit<ScanOptions, 'onWithheld'>): AsyncIterable<unknown>;
  search(query: string, options?: SearchOptions): Promise<unknown>;
  watch(listener: (change: Change) => void, options?: WatchOptions): () => void;
}

/** @internal `collection.live(query, …)` over `c` (here and on a worker's page side): the query, its watch filter, the re-runs. */
export function live(
  c: LiveSource,
  query: LiveQuery,
  onResult: (result: unknown) => void,
  onError?: (e: unknown) => void,
): () => void {
  if (typeof query !== 'object' || query === null)
    throw new TypeError('"query" expected { get }, { scan } or { search }');
  let watch: WatchOptions;
  let run: () => Promise<unknown>;
  if ('get' in query) {
    const id = checkId(query.get);
    [watch, run] = [{ ids: [id] }, () => c.get(id)];
  } else if ('scan' in query) {
    const o = query.scan ?? {};
    if (typeof o !== 'object' || o === null) throw new TypeError('"scan" expected scan options');
    const rows = async () => {
      const out: unknown[] = [];
      for await (const r of c.scan(o)) out.push(r);
      return out;
    };
    [watch, run] = [o.prefix ? { prefix: o.prefix } : {}, rows];
  } else if ('search' in query) {
    if (typeof query.search !== 'string') throw new TypeError('"search" expected a string');
    [watch, run] = [{}, () => c.search(query.search, query.options)];
  } else throw new TypeError('"query" expected { get }, { scan } or { search }');
  return rerunOnChange((heard) => c.watch(heard, watch), run, onResult, onError);
}

/** @internal The operations `fn` gives a batch's transaction, in order (Store.batch commits them in one page). */
export async function collectOps(fn: (tx: Transaction) => void | Promise<void>): Promise<PendingOp[]> {
  const ops: PendingOp[] = [];
  await fn({
    put: (collection, id, value, options = {}) =>
      ops.push({
        kind: 'put',
        collection,
        id,
        value,
        governance: options.governance,
        ifVersion: checkVersion(options.ifVersion),
      }),
    delete: (collection, id) => ops.push({ kind: 'delete', collection, id }),
  });
  return ops;
}
