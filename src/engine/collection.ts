// A typed collection of a store: the façade users put, get, scan and search through. It holds no
// state of its own beyond its name, schema and indexed fields; every operation goes to the store's
// engine (src/engine/store.ts), whose writes all pass through the commit pipeline: this file checks
// and encodes them (encodeOps) and stages them into a commit draft (stageOps).

import { canonicalGovernanceText, type Governance } from '../crypto/record';
import { utf8Length } from '../_utf8';
import { encodeValueInto, ValueWriter, type CompiledSchema, type InferValue, type Schema, type Value } from './codec';
import type { ValueShape } from './codec';
import type { SuiteName } from '../crypto/suites';
import type { RecordIO } from './records';
import type { Manifest } from './manifest';
import type { Registry } from './registry';
import type { Draft } from './commit';
import type { LexicalIndex, SearchOptions } from './lexical';
import type { Store } from './store';

/** @internal What a read with `withhold` gives for a record the policy in force keeps from reading. */
export const WITHHELD: unique symbol = Symbol('withheld');

/** Longest record id, in UTF-8 bytes. */
export const MAX_ID_BYTES = 1024;

export interface PutOptions {
  governance?: Governance;
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

/** Options of `store.collection`: the schema, the suite new records are sealed with, the indexed fields. */
export interface CollectionOptions<S extends Schema = Schema> {
  schema: S;
  suite?: SuiteName;
  index?: { text: readonly TextField<S>[] };
}

/**
 * The value type of `store.collection<V, S>`: `V` when given explicitly, else inferred from the schema.
 * @example store.collection('s', { schema: { n: 'integer' } }) // Collection<{ n: number }>
 */
export type CollectionValue<V, S extends Schema> = [V] extends [never] ? InferValue<S> : V;

/** Operations collected by `store.batch`; they commit together or not at all. */
export interface Transaction {
  put<V extends ValueShape<V>>(collection: Collection<V>, id: string, value: V, options?: PutOptions): void;
  delete<V extends ValueShape<V>>(collection: Collection<V>, id: string): void;
}

/** @internal A write a collection hands to its store. */
export type PendingOp =
  | { kind: 'put'; collection: Collection; id: string; value: Value; governance?: Governance }
  | { kind: 'delete'; collection: Collection; id: string };

/** @internal What a collection asks of its store. */
export interface CollectionEngine {
  commit(ops: PendingOp[]): Promise<void>;
  /**
   * The value of `id` (undefined when absent). A record the policy in force does not allow reading
   * is AUTHORITY_DENIED, or, with `withhold`, WITHHELD (what scan and search skip and count).
   */
  read(c: Collection, id: string, withhold?: boolean): Promise<Value | undefined | typeof WITHHELD>;
  has(collection: string, id: string): boolean;
  count(collection: string): number;
  ids(collection: string, prefix: string): string[];
  index(collection: string): Promise<LexicalIndex>;
  loadedIndex(collection: string): Promise<LexicalIndex> | undefined;
  exportSealed(collection: string, id: string): Promise<Uint8Array>;
}

/** @internal Checks a record id. @throws TypeError, RangeError */
export function checkId(id: unknown): string {
  if (typeof id !== 'string' || id.length === 0) throw new TypeError('"id" expected a non-empty string');
  if (utf8Length(id) > MAX_ID_BYTES) throw new RangeError('"id" is limited to 1,024 UTF-8 bytes');
  return id;
}

/**
 * @internal The suite collection `c` writes with under manifest `m`, and whether its commit must make it
 * active: a new collection that names its suite makes a decrypt-only suite active with its first
 * commit; quarantined and retired suites stay as they are (and refuse the write).
 */
export function writeSuite(m: Manifest, registry: Registry, c: Collection): { suite: number; activate: boolean } {
  const meta = m.collections[c.name];
  if (meta !== undefined) return { suite: meta.suite, activate: false };
  if (c.suite !== undefined) return { suite: c.suite, activate: registry.state(c.suite) === 'decrypt-only' };
  return { suite: m.defaultSuite, activate: false };
}

/** @internal A collection written for the first time enters the draft's manifest (and registry). */
export function declareCollection(draft: Draft, c: Collection): void {
  const m = draft.manifest;
  if (m.collections[c.name] !== undefined) return;
  const { suite, activate } = writeSuite(m, draft.currentRegistry, c);
  if (activate) draft.registry.setState(suite, 'active');
  m.collections[c.name] = { schema: c.schema.source as Schema, suite };
}

/** @internal Pending operations checked and encoded, their plaintexts in one shared buffer. */
export interface EncodedOps {
  pending: readonly PendingOp[];
  buf: ValueWriter;
  spans: [number, number][];
  governance: string[];
}

/**
 * @internal Checks and encodes operations before anything is queued: a bad value writes nothing.
 * The plaintexts of the whole commit share one buffer.
 * @throws TypeError for a collection of another store or a bad id; PqdbError SCHEMA_MISMATCH,
 * SUITE_QUARANTINED, SUITE_RETIRED.
 */
export function encodeOps(store: Store, pending: readonly PendingOp[], m: Manifest, registry: Registry): EncodedOps {
  const buf = new ValueWriter();
  const spans: [number, number][] = pending.map(() => [0, 0]);
  const governance = pending.map((p, i) => {
    if (!(p.collection instanceof Collection) || p.collection.store !== store)
      throw new TypeError('"collection" expected a collection of this store');
    checkId(p.id);
    if (p.kind === 'delete') return '';
    const start = buf.n;
    spans[i] = [start, start + encodeValueInto(p.collection.schema, p.value, buf)];
    const { suite, activate } = writeSuite(m, registry, p.collection);
    if (!activate) registry.checkWrite(suite);
    // The policy in force decides at commit (the write gate, gates.ts), against the commit's own.
    return canonicalGovernanceText(p.governance);
  });
  return { pending, buf, spans, governance };
}

/** @internal Adds encoded operations to a draft as record writes of generation `g`, sealed with its commit. */
export function stageOps(draft: Draft, records: RecordIO, g: number, e: EncodedOps): void {
  const base = draft.sequences(e.pending.length);
  e.pending.forEach((p, i) => {
    const sequence = base + i;
    const { name: collection } = p.collection;
    if (p.kind === 'delete') {
      draft.write({ kind: 'delete', collection, id: p.id, sequence }, { kind: 'delete', collection, id: p.id });
      return;
    }
    // The suite is read again here: a migration may have changed it since the call.
    const { suite, activate } = writeSuite(draft.manifest, draft.currentRegistry, p.collection);
    if (!activate) draft.currentRegistry.checkWrite(suite);
    const plaintext = e.buf.buf.subarray(e.spans[i][0], e.spans[i][1]);
    const governance = e.governance[i];
    const op = records.put({ collection, id: p.id, suite, generation: g, sequence, governance, plaintext });
    draft.write(op, { kind: 'put', collection, id: p.id, value: p.value });
  });
}

/** A typed collection; `V` is the record value type (see CollectionValue). */
export class Collection<V extends ValueShape<V> = Value> {
  readonly #engine: CollectionEngine;

  /** @internal Made by Store.collection. */
  constructor(
    readonly store: Store,
    engine: CollectionEngine,
    readonly name: string,
    /** @internal */ readonly schema: CompiledSchema,
    /** String fields indexed for search(), if any. */
    readonly indexed: readonly string[] = [],
    /** @internal The suite named when the collection was first opened (written with its first commit). */
    readonly suite?: number,
  ) {
    this.#engine = engine;
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
    };
    return this.#engine.commit([op]);
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

  /** Deletes `id`; true when it existed. */
  async delete(id: string): Promise<boolean> {
    checkId(id);
    if (!this.#engine.has(this.name, id)) return false;
    await this.#engine.commit([{ kind: 'delete', collection: this.#self, id }]);
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
}
