// The pqdb store (DESIGN §6): the public façade over one engine (engine.ts). Each public method
// checks its arguments and the store's state, then the engine acts (abstract-level's put → _put).
// Opening builds the engine (open-engine.ts), held in a slot (engine-slot.ts) that a store that
// follows its writer swaps to an engine opened anew. Restore and the replica open engines
// themselves and make stores over them (`Store.over`).

import { PqdbError } from '../errors';
import { bytes } from '../_args';
import { unb64 } from '../_encoding';
import type { PageStore } from '../storage/page-store';
import type { KeyedAead } from '../kernels/aead';
import type { Checkpoint } from '../crypto/proofs';
import type { Policy } from '../crypto/policy';
import { sameFields, type Schema, type Value, type ValueShape } from './codec';
import { suite as suiteOf } from '../crypto/suites';
import type { CompactOptions, CompactResult } from './compact';
import type { MigrateOptions, MigrationStatus } from './migration/run';
import { currentPolicy, setPolicy } from './authority';
import type { Cbom } from './posture';
import { checkId, type PendingOp } from './writes';
import { Collection, collectionSpec, collectOps, type CollectionEngine, type CollectionValue } from './collection';
import type { CollectionInfo, CollectionOptions, ReadTransaction, Transaction } from './collection';
import type { Engine } from './engine';
import { destinationOf, type BackupResult, type ManagedCopy } from './copies';
import { EngineSlot } from './engine-slot';
import { ChangeFeed, type Change, type ChangesOptions } from './changes';
import { recoveryOf, type StoreInfo, type StoreRegistry } from './store-admin';
import type { Locations, ReplicationServer, ServeReplicationOptions, StoreOptions } from './store-options';

export { Collection, type CollectionOptions } from './collection';
export type { StoreOptions } from './store-options';

declare module './collection' {
  /** A collection's `store` is the Store that made it. */
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface CollectionStore extends Store {}
}

/**
 * @internal The engine a store serves now (set in a static block: the class's own path to it), for
 * a restore's live source (restore.ts) and the tests; nothing else of src/ calls it.
 */
export let engineOf: (store: Store) => Engine;

export class Store {
  readonly #slot: EngineSlot;
  readonly #collections: Map<string, Collection>;
  readonly #api: CollectionEngine;
  readonly #locations?: Locations;
  readonly #feed: ChangeFeed;
  #open = true;

  static {
    engineOf = (store) => store.#engine;
  }

  private constructor(
    slot: EngineSlot,
    locations: Locations | undefined,
    collections = new Map<string, Collection>(),
    feed = new ChangeFeed(),
  ) {
    this.#slot = slot;
    this.#locations = locations;
    this.#collections = collections;
    this.#feed = feed;
    slot.engine.ship((c) => feed.applied(c)); // an engine opened anew later subscribes in open's declare
    // Through the slot, never one engine: a following store may serve another engine later.
    this.#api = {
      commit: (ops, requestId) => this.#commit(ops, requestId),
      read: (c, id, withhold) => (this.#live(), checkId(id), slot.pinned((e) => e.read(c, id, withhold))),
      readMany: (c, ids) => (this.#live(), slot.pinned((e) => e.readMany(c, ids))),
      upgradeRecords: (c, onProgress) => (this.#live(), slot.pinned((e) => e.upgradeRecords(c, onProgress))),
      buildIndexes: (collection, onProgress) => (
        this.#live(),
        slot.pinned((e) => e.fieldIndexes.build(collection, onProgress))
      ),
      has: (collection, id) => (this.#live(), this.#engine.directory.has(collection, id)),
      version: (collection, id) => (this.#live(), this.#engine.directory.get(collection, id)?.sequence),
      query: (collection, fields, ranges, reverse, max) => (
        this.#live(),
        slot.pinned((e) => e.fieldIndexes.ids(collection, fields, ranges, reverse, max))
      ),
      count: (collection) => (this.#live(), this.#engine.directory.count(collection)),
      ids: (collection, prefix) => (this.#live(), this.#engine.directory.ids(collection, prefix)),
      index: (collection) => slot.pinned((e) => e.lexical.indexOf(collection)),
      loadedIndex: (collection) => this.#engine.lexical.loaded(collection),
      exportSealed: (collection, id) => (this.#live(), slot.pinned((e) => e.exportSealed(collection, id))),
      watch: (collection, listener, options) => (this.#live(), feed.watch(collection, listener, options)),
    };
  }

  /** The engine served now. */
  get #engine(): Engine {
    return this.#slot.engine;
  }

  /** @internal A store over an engine its caller opened (restoreStore, the replica: open-engine.ts). */
  static over(engine: Engine, locations?: Locations): Store {
    return new Store(EngineSlot.of(engine), locations);
  }

  /**
   * Opens (or with `create`, creates) a store on a PageStore.
   * @throws PqdbError AUTH_FAILED (wrong secret key or altered manifest), NOT_FOUND (no store and no
   * `create`), CORRUPTION, FORMAT_VERSION; RangeError for missing recipients on create.
   */
  static async open(pages: PageStore, options: StoreOptions): Promise<Store> {
    if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
    bytes('unlock', options.unlock, 32);
    const collections = new Map<string, Collection>();
    const feed = new ChangeFeed();
    const slot = await EngineSlot.open(pages, options, (next) => {
      // A following store's engine opened anew: the store's collections, its listeners.
      collections.forEach((c) => next.declare(c));
      next.ship((c) => feed.applied(c));
      feed.reset(next.pipeline.manifest.commit, Object.keys(next.pipeline.manifest.collections));
    });
    return new Store(slot, options.locations, collections, feed);
  }

  /** What opening the store repaired, at this layer and in the page store below. */
  get recovery(): { clean: boolean; actions: string[] } {
    return recoveryOf(this.#engine);
  }

  /** Throws NOT_OPEN once the store is closed, and READ_ONLY for a change (`write`) of a read-only one. */
  #live(write = false): void {
    if (!this.#open) throw new PqdbError('NOT_OPEN', 'the store is closed');
    if (write && this.#engine.readOnly) throw new PqdbError('READ_ONLY', 'the store was opened read-only');
  }

  /** Checks that operations are of this store's collections; the engine encodes, seals and commits them. */
  #commit(pending: PendingOp[], requestId?: string): Promise<void> {
    this.#live();
    for (const p of pending)
      if (!(p.collection instanceof Collection) || p.collection.store !== this)
        throw new TypeError('"collection" expected a collection of this store');
    return this.#engine.commit(pending, requestId);
  }

  /**
   * A typed collection: its value type is inferred from the schema literal (or given as `V`). Its
   * schema is stored with the store. Reopened with a schema that only adds optional fields or widens
   * types (integer to number, required to optional), the collection moves to that schema's next
   * version with its next write, without rewriting a record: each record keeps the version it was
   * written under and is read through it. Without options, the stored collection is opened with its
   * stored schema and indexed fields.
   * @throws TypeError for a bad name or schema; RangeError when the schema differs from the stored
   * one in another way (or from the one this store opened the collection with); PqdbError NOT_FOUND
   * without options for a collection the store does not have
   * @example const words = store.collection('words', { schema: { lemma: 'string', gloss: 'string?' } })
   * @example const again = store.collection('words') // Collection<Value>, the stored schema
   */
  collection(name: string): Collection<Value>;
  collection<V extends ValueShape<V> = never, S extends Schema = Schema>(
    name: string,
    options: CollectionOptions<S>,
  ): Collection<CollectionValue<V, S>>;
  collection(name: string, options?: CollectionOptions): Collection<Value> {
    this.#live();
    const { schema, text, by, suite, upgrade } = collectionSpec(name, options, this.#engine.pipeline.manifest);
    let c = this.#collections.get(name);
    if (c !== undefined && options !== undefined && !sameFields(c.schema, schema))
      throw new RangeError(`collection "${name}" is open in this store with another schema`);
    if (c === undefined) {
      this.#collections.set(name, (c = new Collection(this, this.#api, name, schema, text, suite, by, upgrade)));
      this.#engine.declare(c);
    }
    return c; // values are checked at run time
  }

  /** The store's collections: name, schema (and its version), records, suite and indexed fields. */
  collections(): CollectionInfo[] {
    this.#live();
    const m = this.#engine.pipeline.manifest;
    return Object.entries(m.collections)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, meta]) => ({
        name,
        schema: { ...meta.schema },
        version: (meta.versions?.length ?? 0) + 1,
        records: this.#engine.directory.count(name),
        suite: suiteOf(meta.suite).name,
        indexed: [...(meta.text ?? m.indexes?.[name]?.fields ?? [])],
      }));
  }

  /**
   * Runs `fn` to collect operations, then commits them all in one page (all or nothing). With
   * `requestId` (as a put's) a batch the store already committed under that id is not applied again.
   */
  async batch(fn: (tx: Transaction) => void | Promise<void>, options: { requestId?: string } = {}): Promise<void> {
    this.#live();
    const ops = await collectOps(fn);
    if (ops.length > 0) await this.#commit(ops, options?.requestId);
  }

  /**
   * Runs `fn` with a transaction that reads: `tx.get`/`has`/`version` see the store as every earlier
   * commit left it (and what `fn` staged), and `tx.put`/`delete` commit together when `fn` returns,
   * in one page; when it throws, nothing is written. It is serialised with every other write: no
   * commit lands while `fn` runs, so a read-modify-write in it loses nothing (write through `tx`
   * inside it: a store write there would wait for the transaction, and so never end). Resolves with
   * what `fn` returns once the commit is durable.
   * @example await store.transaction(async (tx) => tx.put(c, 'n', { n: ((await tx.get(c, 'n'))?.n ?? 0) + 1 }))
   */
  transaction<T>(fn: (tx: ReadTransaction) => T | Promise<T>): Promise<T> {
    this.#live();
    if (typeof fn !== 'function') throw new TypeError('"fn" expected a function');
    const own = (c: unknown): Collection => {
      if (!(c instanceof Collection) || c.store !== this)
        throw new TypeError('"collection" expected a collection of this store');
      return c as unknown as Collection;
    };
    return this.#engine.transaction((inner) =>
      fn({
        get: (c, id) => inner.get(own(c), id) as never,
        has: (c, id) => inner.has(own(c), id),
        version: (c, id) => inner.version(own(c), id),
        put: (c, id, value, options) => inner.put(own(c), id, value as Value, options),
        delete: (c, id) => inner.delete(own(c), id),
      }),
    );
  }

  /** The crypto registry: list states, change them (durably). */
  get registry(): StoreRegistry {
    return this.#engine.registry();
  }

  /** Wraps the store's roots for another recipient (no record is re-encrypted). */
  addRecipient(publicKey: Uint8Array): Promise<void> {
    return this.#engine.recipients('add', publicKey);
  }

  /**
   * Installs a signed authority policy (docs/authority.md): signed by the keys pinned at creation to
   * its threshold and the one in force, not expired, naming this store (or the domain it pins),
   * version exactly the current one + 1. Resolves with the policy now in force.
   */
  setPolicy(signed: Uint8Array): Promise<Policy> {
    return setPolicy(this.#engine.pipeline, signed);
  }

  /** The authority policy in force, or undefined when none was set. */
  policy(): Policy | undefined {
    return currentPolicy(this.#engine.pipeline.manifest)?.policy;
  }

  /** The public keys the store's roots are wrapped to (addRecipient adds one, removeRecipient drops one). */
  recipientKeys(): Uint8Array[] {
    this.#live();
    return (this.#engine.pipeline.manifest.recipients ?? []).map((k) => unb64(k));
  }

  /** Drops a recipient's envelopes. */
  removeRecipient(publicKey: Uint8Array): Promise<void> {
    return this.#engine.recipients('remove', publicKey);
  }

  /** Store id, page store kind and counts. */
  info(): StoreInfo {
    return this.#engine.info();
  }

  /**
   * Signs a checkpoint (store id, generation, size, root, previous hash) with ML-DSA-87, durably.
   * @throws PqdbError NOT_OPEN; TypeError when the store was opened without signer keys.
   */
  checkpoint(): Promise<Checkpoint & { signed: Uint8Array }> {
    return this.#engine.checkpoints.checkpoint();
  }

  /** Every signed checkpoint, oldest first. */
  checkpoints(): (Checkpoint & { signed: Uint8Array })[] {
    return this.#engine.checkpoints.list.map((c) => ({ ...c, signed: c.signed.slice() }));
  }

  /**
   * Rewrites the live records of mostly dead commit pages into new ones and deletes the old pages
   * (src/engine/compact.ts), in one atomic commit per page, beside reads and writes.
   * @throws PqdbError NOT_OPEN, READ_ONLY
   * @example const { bytesBefore, bytesAfter } = await store.compact();
   */
  compact(options?: CompactOptions): Promise<CompactResult> {
    this.#live();
    return this.#engine.compact(options);
  }

  /**
   * Consistency proof between two checkpoints (by position in checkpoints()) of one generation
   * (a promise: the log's persisted leaves may have to be read first).
   * @throws RangeError for unknown positions or checkpoints of different generations.
   * @example const proof = await store.consistencyProof(0, 1);
   */
  consistencyProof(from: number, to: number): Promise<Uint8Array[]> {
    this.#live();
    return this.#engine.checkpoints.consistencyProof(from, to);
  }

  /** The data key of (suite, generation, governance) for opening exports (see openSealed). */
  dataKeyFor(suite: number, generation: number, governance: string): { key: Uint8Array; aead: KeyedAead } {
    this.#live();
    return this.#engine.keys.aeadFor(suite, generation, governance);
  }

  /**
   * Retires every generation older than the current one once no live record is left in them
   * (docs/migration.md): their commit pages deleted and roots destroyed in one commit; their logs
   * and checkpoints stay verifiable. Resolves with the generations retired.
   * @throws PqdbError GENERATION_IN_USE (a migration under way, a live record left), READ_ONLY, NOT_OPEN
   */
  retireGenerations(): Promise<number[]> {
    return this.#engine.retireGenerations();
  }

  /**
   * Moves every record of the collection (or of every collection) to suite `to` while the store keeps
   * serving (docs/migration.md): key generation g+1, bounded copy chunks with a durable cursor, index
   * rebuild, verification, checkpoint, activation; resolves with the accounting. A reopened store
   * resumes it; migrate() with the same target awaits it.
   * @throws PqdbError ABORTED (paused by `signal`; it resumes later), AUTHORITY_DENIED (the authority
   * check refused it), SUITE_QUARANTINED (target refuses writes), READ_ONLY, NOT_OPEN; RangeError for
   * another migration under way or an unknown suite or collection; TypeError without recipient keys.
   */
  migrate(options: MigrateOptions): Promise<MigrationStatus> {
    this.#live(true);
    return this.#engine.migration.start(options);
  }

  /** The migration under way (or the last finished one), with its accounting; undefined if none. */
  migration(): MigrationStatus | undefined {
    return this.#engine.migration.status();
  }

  /**
   * Writes a consistent copy of the store to `destination` (a directory in Node, an IndexedDB database
   * name in browsers, or any empty PageStore) while it keeps serving (DESIGN §9). The copy holds a
   * signed checkpoint, verifies on its own, opens read-only, and is listed in `copies()` until retired.
   * @throws PqdbError CONFLICT (the destination holds a store), READ_ONLY, NOT_OPEN, IO_ERROR;
   * TypeError without signer keys.
   */
  async backup(destination: string | PageStore): Promise<BackupResult> {
    this.#live(true);
    return this.#engine.backup(await destinationOf(destination, this.#locations, 'create'));
  }

  /**
   * A consistent copy of the store as one backup file (docs/storage.md#backup-files): what `backup`
   * writes to a page store, as bytes an app saves or offers as a download. `restoreStore(bytes, …)`
   * verifies it and makes a store of it. The copy is inventoried as `backup`'s are, its destination
   * "a backup file" (retiring it records the retirement; the file is the app's to delete).
   * @throws as backup
   */
  async backupFile(): Promise<BackupResult & { file: Uint8Array }> {
    this.#live(true);
    // Loaded when a file is asked for: a page that never makes one does not carry the format.
    const { backupFileOf } = await import('../storage/archive');
    const { result, file } = await backupFileOf((pages) =>
      this.#engine.backup({ pages, label: 'a backup file', close: false }),
    );
    return { ...result, file };
  }

  /** The managed copies inventory (backups, kept generations, the copy a store was restored from), oldest first. */
  copies(): ManagedCopy[] {
    return this.#engine.copies();
  }

  /**
   * Records the retirement of managed copy `id`; a backup at a location this platform reaches is
   * deleted first (`deleted`), a migration's kept generation is retired with retireGenerations.
   * A retired copy no longer holds its suites (posture) and can no longer be restored next to this store.
   * @throws RangeError (unknown id), PqdbError CONFLICT (retired already), GENERATION_IN_USE, IO_ERROR
   */
  retireCopy(id: string): Promise<{ copy: ManagedCopy; deleted: boolean }> {
    this.#live(true);
    return this.#engine.retireCopy(id, this.#locations);
  }

  /**
   * The store's posture: a CycloneDX 1.6 CBOM of its live state, with no key bytes (docs/posture.md).
   * @throws PqdbError NOT_OPEN
   * @example const cbom = store.posture(); // JSON.stringify(cbom): the CycloneDX document
   */
  posture(): Cbom {
    this.#live();
    return this.#engine.posture();
  }

  /**
   * Serves read-only replicas over the post-quantum channel (docs/replication.md): `identity` is
   * this primary's ML-DSA-87 key pair, `trustedPeers` the replicas' public keys. Node only.
   */
  async serveReplication(options: ServeReplicationOptions): Promise<ReplicationServer> {
    this.#live();
    if (this.#locations?.serve === undefined) throw new TypeError('replication needs the Node build of pqdb');
    const e = this.#engine;
    return this.#locations.serve({ pages: e.pages, pipeline: e.pipeline, ship: (l) => e.ship(l) }, options);
  }

  /** Waits for pending commits, wipes every key and releases the storage. Idempotent. */
  async close(): Promise<void> {
    if (!this.#open) return;
    await this.#slot.close();
    this.#open = false;
    this.#feed.close();
  }

  /**
   * The changes of every collection (or of `options.collections`) from now on, one per collection
   * and durable commit, in commit order: commit number, collection and ids, never values. It ends
   * when the store closes, `options.signal` aborts or the loop leaves it (docs/changes.md).
   * @throws PqdbError ABORTED (from the iterator) when more than a million changed ids wait unread
   * @example for await (const { collection, ids, commit } of store.changes()) log(commit, collection, ids)
   */
  changes(options?: ChangesOptions): AsyncIterableIterator<Change> {
    this.#live();
    return this.#feed.changes(options);
  }
}
