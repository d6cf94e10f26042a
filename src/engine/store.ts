// The pqdb store (DESIGN §6): the façade over a PageStore — opening, collection handles, and the
// wiring of the engine's parts around the commit pipeline (commit.ts), the only PageStore writer.
// Each commit appends one commit page and replaces the manifest atomically; the key directory,
// Merkle logs, page cache, lexical indexes and checkpoints follow each durable commit through the
// pipeline's `applied` hooks and are rebuilt from the pages on open (replay.ts). Records are sealed
// under data keys derived from the generation's root and their governance state (keys.ts); storage
// sees sealed bytes only. The registry and the authority policy gate reads and writes.

import { PqdbError } from '../errors';
import { bytes } from '../_args';
import type { PageStore } from '../storage/page-store';
import { suite as suiteOf, DEFAULT_SUITE, type SuiteName } from '../crypto/suites';
import type { KeyedAead } from '../kernels/aead';
import type { Checkpoint } from '../crypto/proofs';
import { compileSchema, decodeValue, type CompiledSchema, type Schema, type ValueShape } from './codec';
import { KeyRing, leafBlind } from './keys';
import { Registry, type SuiteState, type RegistryEntry } from './registry';
import { newManifest, unlockManifest, STORE_ID_LABEL } from './manifest';
import { fromHex, hex } from '../_encoding';
import type { Manifest } from './manifest';
import { KeyDirectory } from './directory';
import { noteDroppedPages, persistDirectory } from './directory';
import { autoCompaction, compact as compactStore, type CompactOptions, type CompactResult } from './compact';
import { MerkleLogs } from './merkle-log';
import { PageCache } from './page-cache';
import { replay, logLeaves, type ReplayTarget, type SignedCheckpoint } from './replay';
import { applyCommit, logHead } from './apply';
import { RecordIO } from './records';
import { CommitPipeline, type AppliedCommit, type Draft } from './commit';
import { Checkpoints } from './checkpoints';
import { LexicalStore } from './lexical-store';
import { Migration, type AuthorityCheck, type MigrateOptions, type MigrationStatus } from './migration/run';
import { retireGenerations } from './retire';
import { exportSealed } from './exports';
import {
  authorityKeysOf,
  checkPinnedKeys,
  currentPolicy,
  installPolicy,
  openedPolicy,
  pinnedAuthority,
  pinnedOptions,
} from './authority';
import { recordGates, writeGate } from './gates';
import { storePosture, type Cbom } from './posture';
import type { Policy } from '../crypto/policy';
import { Collection, WITHHELD, checkId, declareCollection, encodeOps, stageOps } from './collection';
import type { CollectionEngine, CollectionOptions, CollectionValue, PendingOp, Transaction } from './collection';
import type { SearchOptions } from './lexical';

export { Collection, type PutOptions, type ScanOptions, type Transaction, type CollectionOptions } from './collection';
export type { AuthorityCheck, MigrateOptions, MigrationStatus, MigrationProgress } from './migration/run';
export type { MigrationCounts, MigrationPhase } from './manifest';
export type { SearchOptions };
export type { StoreOptions } from './store-options';
export type { BackupResult, ManagedCopy } from './copies';
import type { Locations, ReplicationServer, ServeReplicationOptions, StoreOptions } from './store-options';
import {
  backup as backupTo,
  destinationOf,
  listCopies,
  retireCopy,
  type BackupResult,
  type ManagedCopy,
} from './copies';
import { internals, type Parts } from './parts';
import { Follower, followOptions, followView, type FollowedPages } from './follower';
import { info, recipients, registryApi, type StoreInfo } from './store-admin';

export class Store {
  // #p, #target and #migration are replaced when a following store opens its state anew (follower.ts).
  #p: Parts;
  readonly #checkpointList: SignedCheckpoint[] = [];
  #migration: Migration;
  readonly #collections = new Map<string, Collection>();
  readonly #schemas = new Map<string, CompiledSchema>();
  #target: ReplayTarget & Parts;
  readonly #engine: CollectionEngine;
  readonly #readOnly: boolean;
  readonly #locations?: Locations;
  #recovered: string[] = [];
  /** An automatic compaction under way. */
  #compacting?: Promise<unknown>;
  /** Dead bytes the last automatic compaction left. */
  #deadAfterCompaction = 0;
  #open = true;
  #closing = false;
  /** Following the writer (`follow`); the store whose state this one serves then owns this one's. */
  #follower: Follower<Store> | undefined;
  #owner: Store | undefined;

  private constructor(
    pages: PageStore,
    keys: KeyRing,
    manifest: Manifest,
    registry: Registry,
    options: StoreOptions,
    sealed?: Uint8Array,
  ) {
    if (options.authority !== undefined && typeof options.authority !== 'function')
      throw new TypeError('"authority" expected a function');
    this.#readOnly = options.readOnly === true;
    this.#locations = options.locations;
    const live = () => this.#live();
    const check = () => (this.#live(), this.#writable());
    const pipeline = new CommitPipeline(pages, keys, manifest, registry, check, sealed);
    const cache = new PageCache(pages);
    const directory = new KeyDirectory();
    const records = new RecordIO(
      cache,
      keys,
      () => pipeline.registry,
      (id) => directory.page(id)?.salt,
      recordGates(() => pipeline.manifest),
    );
    const logs = new MerkleLogs();
    logs.setLoader((g, to) => logLeaves(pages, pipeline.manifest, g, to));
    const base = { pages, keys, pipeline, directory, logs, cache, records, live };
    const value = async (collection: string, id: string) => {
      const loc = directory.get(collection, id);
      if (loc === undefined) return undefined;
      return decodeValue(this.#schemaOf(collection), await records.open('index', collection, id, loc));
    };
    const lexical = new LexicalStore({ ...base, value });
    const storeId = fromHex(manifest.storeId);
    const checkpoints = new Checkpoints({ ...base, storeId, list: this.#checkpointList }, options);
    const p = (this.#p = { ...base, storeId, lexical, checkpoints, readOnly: this.#readOnly });
    internals.set(this, p);
    checkpoints.contribute((draft, g, afterPage) => lexical.persistDirty(draft, g, afterPage));
    checkpoints.contribute((draft, _g, afterPage) => persistDirectory(draft, p, afterPage, lexical.pendingIds()));
    const blind = (salt: Uint8Array) => leafBlind(keys, salt);
    const target = (this.#target = { ...p, blind, onPage: (page) => lexical.notePage(page) });
    this.#migration = new Migration({
      ...p,
      authority: options.authority,
      current: () => keys.current(),
      closing: () => this.#closing,
      decode: (collection, plaintext) => decodeValue(this.#schemaOf(collection), plaintext),
    });
    pipeline.hook({ prepare: writeGate });
    pipeline.hook({
      prepare: (draft) => (this.#declareCollections(draft), noteDroppedPages(draft, directory)),
      sealed: (draft, page) => logHead(target, draft, page),
      applied: (c) => this.#applied(c),
    });
    pipeline.hook({ applied: (c) => lexical.applied(c) });
    // Checkpoints and compaction write: never for a foreign commit (a read-only store's).
    pipeline.hook({
      applied: (c) => void (!c.foreign && c.writes.some((w) => w.copy !== true) && checkpoints.maybeCheckpoint()),
    });
    const auto = autoCompaction(options.autoCompact);
    if (auto !== undefined)
      pipeline.hook({
        applied: (c) => {
          if (c.foreign || this.#compacting !== undefined || !c.writes.some((w) => w.copy !== true)) return;
          // After a durable commit: nothing here may load (or fail to load) a directory partition.
          const { pageBytes, recordBytes } = directory.liveBytes(true);
          const dead = pageBytes - recordBytes;
          // Dead bytes a compaction left (pages it keeps) do not start another one by themselves.
          if (dead - this.#deadAfterCompaction < auto.minDeadBytes || dead < auto.deadRatio * pageBytes) return;
          this.#compacting = compactStore(this.#p).then(
            () => {
              const after = directory.liveBytes(true);
              this.#deadAfterCompaction = after.pageBytes - after.recordBytes;
              this.#compacting = undefined;
            },
            () => (this.#compacting = undefined), // a failed one leaves the store as it was; the next commit tries again
          );
        },
      });
    // Through this.#p, not the parts above: a following store may serve another state later.
    this.#engine = {
      commit: (ops) => this.#commitOps(ops),
      read: (c, id, withhold) => this.#read(c, id, withhold),
      has: (collection, id) => this.#p.directory.has(collection, id),
      count: (collection) => this.#p.directory.count(collection),
      ids: (collection, prefix) => this.#p.directory.ids(collection, prefix),
      index: (collection) => this.#pinned((p) => p.lexical.indexOf(collection)),
      loadedIndex: (collection) => this.#p.lexical.loaded(collection),
      exportSealed: (collection, id) => {
        this.#live();
        const t = this.#target;
        return this.#pinned(() => exportSealed(t, collection, id));
      },
    };
  }

  /**
   * Opens (or with `create`, creates) a store on a PageStore.
   * @throws PqdbError AUTH_FAILED (wrong secret key or altered manifest), NOT_FOUND (no store and no
   * `create`), CORRUPTION, FORMAT_VERSION; RangeError for missing recipients on create.
   */
  static async open(pages: PageStore, options: StoreOptions): Promise<Store> {
    if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
    bytes('unlock', options.unlock, 32);
    const follow = followOptions(options.follow);
    if (follow !== undefined) return Store.#following(followView(pages, options.readOnly), options, follow);
    const raw = await pages.readManifest();
    if (raw === undefined) {
      if (!options.create || options.readOnly)
        throw new PqdbError('NOT_FOUND', `no pqdb store in this ${pages.kind} page store (create: true makes one)`);
      const recipients = options.recipients ?? [];
      if (!Array.isArray(recipients) || recipients.length === 0)
        throw new RangeError('"recipients" expected at least one public key to create a store');
      const suite = suiteOf(options.suite ?? DEFAULT_SUITE);
      const keys = new KeyRing([], options.keyCacheSize);
      return Store.#wipingOnFailure(keys, async (made) => {
        keys.createGeneration(suite.id, recipients);
        keys.unlock(options.unlock); // the creator must be able to open what it creates
        const registry = new Registry({ active: suite.id });
        const storeId = hex(keys.storeKey(STORE_ID_LABEL, 16));
        const manifest = newManifest(storeId, keys.records(), registry.records(), suite.id, recipients);
        const pinned = authorityKeysOf(options.authorityPublicKey);
        manifest.authority = pinnedAuthority(
          pinned,
          pinnedOptions(pinned, options.authorityThreshold, options.authorityDomain),
        );
        const store = made(new Store(pages, keys, manifest, registry, options));
        await store.#p.pipeline.run(() => undefined); // the first manifest
        return store;
      });
    }
    if (options.storeId !== undefined && typeof options.storeId !== 'string')
      throw new TypeError('"storeId" expected a string of 32 hex digits');
    const { manifest, keys } = unlockManifest(raw, options.unlock, options);
    if (options.minCommit !== undefined && manifest.commit < options.minCommit) {
      keys.close();
      throw new PqdbError(
        'ROLLBACK',
        `the store is at commit ${manifest.commit}, older than the ${options.minCommit} it was known to reach: an older copy of it`,
      );
    }
    return Store.#wipingOnFailure(keys, async (made) => {
      if (manifest.copy !== undefined && options.readOnly !== true)
        throw new PqdbError(
          'READ_ONLY',
          `this is managed copy ${manifest.copy.id} of store ${manifest.storeId}: open it with readOnly, or make a live store of it with restoreStore`,
        );
      checkPinnedKeys(manifest, authorityKeysOf(options.authorityPublicKey));
      openedPolicy(manifest); // its signatures, once, and that it governs this store
      const registry = new Registry({ records: manifest.registry });
      const store = made(new Store(pages, keys, manifest, registry, options, raw));
      const found = await replay(pages, manifest, keys, store.#target, store.#readOnly);
      store.#checkpointList.push(...found.checkpoints);
      store.#recovered = found.recovered;
      if (found.pending !== undefined) store.#p.lexical.restorePending(found.pending);
      if (found.persistedLogs !== undefined) store.#p.checkpoints.notePersisted(found.persistedLogs);
      // An unfinished migration resumes where its durable cursor stands.
      if (manifest.migration !== undefined && !store.#readOnly) store.#migration.resume();
      return store;
    });
  }

  /**
   * Runs an open that has unlocked `keys`; when it fails, wipes them (and the signer key of the
   * store `made`, if one was made) before rethrowing. The page store stays with the caller.
   */
  static async #wipingOnFailure(keys: KeyRing, open: (made: (s: Store) => Store) => Promise<Store>): Promise<Store> {
    let store: Store | undefined;
    try {
      return await open((s) => (store = s));
    } catch (e) {
      keys.close();
      if (store !== undefined) store.#p.checkpoints.close();
      throw e;
    }
  }

  /** Opens a read-only store on `view` that follows the writer (follower.ts). */
  static async #following(
    view: FollowedPages,
    options: StoreOptions,
    follow: NonNullable<ReturnType<typeof followOptions>>,
  ): Promise<Store> {
    const store = await Store.open(view, { ...options, follow: false });
    const storeId = store.info().storeId;
    const follower = new Follower<Store>(
      view,
      {
        parts: () => store.#p,
        reopen: (next, minCommit) => Store.open(next, { ...options, follow: false, storeId, minCommit }),
        install: (next) => store.#adopt(next),
      },
      follow,
    );
    store.#follower = follower;
    try {
      await follower.start();
    } catch (e) {
      await store.close();
      throw e;
    }
    return store;
  }

  /** Serves `next`'s engine state from now on (a following store); returns the state it replaced. */
  #adopt(next: Store): Parts {
    const old = this.#p;
    this.#p = next.#p;
    this.#target = next.#target;
    this.#migration = next.#migration;
    this.#recovered = next.#recovered;
    next.#owner = this;
    internals.set(this, this.#p);
    for (const c of this.#collections.values()) this.#p.lexical.declare(c.name, c.indexed);
    return old;
  }

  /** Runs `read` on the state served now; a following store keeps that state for it until it is done. */
  #pinned<T>(read: (p: Parts) => Promise<T>): Promise<T> {
    const p = this.#p;
    return this.#follower === undefined ? read(p) : this.#follower.pinned(p, () => read(p));
  }

  /** What opening the store repaired, at this layer and in the page store below. */
  get recovery(): { clean: boolean; actions: string[] } {
    const actions = [...this.#p.pages.recovery.actions, ...this.#recovered];
    return { clean: actions.length === 0, actions };
  }

  #live(): void {
    if (!this.#open || (this.#owner !== undefined && !this.#owner.#open))
      throw new PqdbError('NOT_OPEN', 'the store is closed');
  }

  #writable(): void {
    if (this.#readOnly) throw new PqdbError('READ_ONLY', 'the store was opened read-only');
  }

  #schemaOf(collection: string): CompiledSchema {
    const open = this.#collections.get(collection)?.schema;
    if (open !== undefined) return open;
    let s = this.#schemas.get(collection);
    if (s === undefined)
      this.#schemas.set(collection, (s = compileSchema(this.#p.pipeline.manifest.collections[collection].schema)));
    return s;
  }

  /** `applied` hook: the directory, the logs and the page cache follow the commit (apply.ts). */
  #applied(commit: AppliedCommit): void {
    applyCommit(this.#target, commit);
  }

  /** `prepare` hook: collections written for the first time enter the manifest (and the registry). */
  #declareCollections(draft: Draft): void {
    for (const w of draft.writes) if (w.copy !== true) declareCollection(draft, this.#collections.get(w.collection)!);
  }

  /** Checks and encodes operations, then seals and commits them as one page. */
  #commitOps(pending: PendingOp[]): Promise<void> {
    this.#live();
    const { pipeline, keys, records } = this.#p;
    const encoded = encodeOps(this, pending, pipeline.manifest, pipeline.registry);
    // Sealing happens in commit order, so write sequences (and so nonces) are unique and ordered.
    return pipeline.run((draft) => stageOps(draft, records, keys.current(), encoded));
  }

  /** The value of record `id` of `c`, opened for reading. */
  async #read(c: Collection, id: string, withhold = false) {
    this.#live();
    checkId(id);
    const loc = this.#p.directory.get(c.name, id);
    if (loc === undefined) return undefined;
    const decode = (plaintext: Uint8Array) => decodeValue(c.schema, plaintext);
    // The read gate (gates.ts) refuses a scope the policy in force keeps from reading: WITHHELD for
    // scans and searches, AUTHORITY_DENIED for a get.
    return this.#pinned((p) => p.records.read(c.name, id, loc, decode, withhold ? WITHHELD : undefined));
  }

  /**
   * A typed collection: its value type is inferred from the schema literal (or given as `V`). Its schema
   * is stored with the store; reopening with another schema is an error.
   * @throws TypeError for a bad name or schema; RangeError when the schema differs from the stored one.
   * @example const words = store.collection('words', { schema: { lemma: 'string', gloss: 'string?' } })
   */
  collection<V extends ValueShape<V> = never, S extends Schema = Schema>(
    name: string,
    options: CollectionOptions<S>,
  ): Collection<CollectionValue<V, S>> {
    this.#live();
    if (typeof name !== 'string' || name.length === 0) throw new TypeError('"name" expected a non-empty string');
    const schema = compileSchema(options?.schema);
    const existing = this.#p.pipeline.manifest.collections[name];
    const stored = existing !== undefined ? JSON.stringify(compileSchema(existing.schema).source) : undefined;
    if (stored !== undefined && stored !== JSON.stringify(schema.source))
      throw new RangeError(`collection "${name}" exists with another schema`);
    const suite = options.suite !== undefined && existing === undefined ? suiteOf(options.suite).id : undefined;
    const text = options.index?.text ?? [];
    if (!Array.isArray(text) || text.some((f) => schema.fields.find((x) => x.name === f)?.type !== 'string')) {
      throw new TypeError('"index.text" expected names of string fields of the schema');
    }
    let c = this.#collections.get(name);
    if (c === undefined) {
      this.#collections.set(name, (c = new Collection(this, this.#engine, name, schema, text, suite)));
      this.#p.lexical.declare(name, text);
    }
    return c as unknown as Collection<CollectionValue<V, S>>; // values are checked at run time
  }

  /** Runs `fn` to collect operations, then commits them all in one page (all or nothing). */
  async batch(fn: (tx: Transaction) => void | Promise<void>): Promise<void> {
    this.#live();
    const ops: PendingOp[] = [];
    await fn({
      put: (collection, id, value, options = {}) =>
        ops.push({ kind: 'put', collection, id, value, governance: options.governance }),
      delete: (collection, id) => ops.push({ kind: 'delete', collection, id }),
    });
    if (ops.length > 0) await this.#commitOps(ops);
  }

  /** The crypto registry: list states, change them (durably). */
  get registry(): { list(): RegistryEntry[]; setState(suite: SuiteName | number, state: SuiteState): Promise<void> } {
    return registryApi(this.#p);
  }

  /** Wraps the store's roots for another recipient (no record is re-encrypted). */
  addRecipient(publicKey: Uint8Array): Promise<void> {
    return recipients(this.#p, 'add', publicKey);
  }

  /**
   * Installs a signed authority policy (docs/authority.md): signed by the keys pinned at creation to
   * its threshold and the one in force, not expired, naming this store (or the domain it pins),
   * version exactly the current one + 1. Resolves with the policy now in force.
   */
  setPolicy(signed: Uint8Array): Promise<Policy> {
    let installed!: Policy;
    return this.#p.pipeline
      .run((draft) => void (installed = installPolicy(draft.manifest, signed)))
      .then(() => installed);
  }

  /** The authority policy in force, or undefined when none was set. */
  policy(): Policy | undefined {
    return currentPolicy(this.#p.pipeline.manifest)?.policy;
  }

  /** Drops a recipient's envelopes. */
  removeRecipient(publicKey: Uint8Array): Promise<void> {
    return recipients(this.#p, 'remove', publicKey);
  }

  /** Store id, page store kind and counts. */
  info(): StoreInfo {
    return info(this.#p);
  }

  // ---- verifiable batches (DESIGN §7) -------------------------------------------------------------

  /**
   * Signs a checkpoint (store id, generation, size, root, previous hash) with ML-DSA-87, durably.
   * @throws PqdbError NOT_OPEN; TypeError when the store was opened without signer keys.
   */
  checkpoint(): Promise<Checkpoint & { signed: Uint8Array }> {
    return this.#p.checkpoints.checkpoint();
  }

  /** Every signed checkpoint, oldest first. */
  checkpoints(): (Checkpoint & { signed: Uint8Array })[] {
    return this.#p.checkpoints.list.map((c) => ({ ...c, signed: c.signed.slice() }));
  }

  /**
   * Rewrites the live records of mostly dead commit pages into new ones and deletes the old pages
   * (src/engine/compact.ts), in one atomic commit per page, beside reads and writes.
   * @throws PqdbError NOT_OPEN, READ_ONLY
   * @example const { bytesBefore, bytesAfter } = await store.compact();
   */
  compact(options?: CompactOptions): Promise<CompactResult> {
    this.#live();
    return compactStore(this.#p, options);
  }

  /**
   * Consistency proof between two checkpoints (by position in checkpoints()) of one generation
   * (a promise: the log's persisted leaves may have to be read first).
   * @throws RangeError for unknown positions or checkpoints of different generations.
   * @example const proof = await store.consistencyProof(0, 1);
   */
  consistencyProof(from: number, to: number): Promise<Uint8Array[]> {
    this.#live();
    return this.#p.checkpoints.consistencyProof(from, to);
  }

  /** The data key of (suite, generation, governance) for opening exports (see openSealed). */
  dataKeyFor(suite: number, generation: number, governance: string): { key: Uint8Array; aead: KeyedAead } {
    this.#live();
    return this.#p.keys.aeadFor(suite, generation, governance);
  }

  /**
   * Retires every generation older than the current one once no live record is left in them
   * (docs/migration.md): their commit pages deleted and roots destroyed in one commit; their logs
   * and checkpoints stay verifiable. Resolves with the generations retired.
   * @throws PqdbError GENERATION_IN_USE (a migration under way, a live record left), READ_ONLY, NOT_OPEN
   */
  retireGenerations(): Promise<number[]> {
    return retireGenerations(this.#p);
  }

  // ---- live migration (DESIGN §8) -----------------------------------------------------------------

  /**
   * Moves every record of the collection (or of every collection) to suite `to` while the store
   * keeps serving reads and writes: prepares key generation g+1 with the target suite (new writes
   * go there at once), copies the records in bounded chunks, each commit carrying the durable
   * cursor, rebuilds the lexical indexes, verifies every migrated record, checkpoints (with signer
   * keys) and activates. A store reopened with a migration under way resumes it; calling migrate()
   * with the same target then awaits that migration. Resolves with the accounting.
   * @throws PqdbError ABORTED (paused by `signal`; it resumes later), AUTHORITY_DENIED (the authority
   * check refused it), SUITE_QUARANTINED (target refuses writes), READ_ONLY, NOT_OPEN; RangeError for
   * another migration under way or an unknown suite or collection; TypeError without recipient keys.
   */
  migrate(options: MigrateOptions): Promise<MigrationStatus> {
    this.#live();
    this.#writable();
    return this.#migration.start(options);
  }

  /** The migration under way (or the last finished one), with its accounting; undefined if none. */
  migration(): MigrationStatus | undefined {
    return this.#migration.status();
  }

  // ---- managed copies (DESIGN §9) ------------------------------------------------------------------

  /**
   * Writes a consistent copy of the store to `destination` (a directory in Node, an IndexedDB
   * database name in browsers, or any empty PageStore) while the store keeps serving: writes wait
   * only while the page set is read (`pausedMs`). The copy holds a signed checkpoint (one is taken
   * first when needed), verifies on its own with verifyStore, opens only read-only, and is listed in
   * `copies()` until retired. Restore it with restoreStore.
   * @throws PqdbError CONFLICT (the destination holds a store), READ_ONLY, NOT_OPEN, IO_ERROR;
   * TypeError without signer keys.
   */
  async backup(destination: string | PageStore): Promise<BackupResult> {
    this.#live();
    this.#writable();
    return backupTo(this.#p, await destinationOf(destination, this.#locations, 'create'));
  }

  /** The managed copies inventory (backups, kept generations, the copy a store was restored from), oldest first. */
  copies(): ManagedCopy[] {
    return listCopies(this.#p);
  }

  /**
   * Records the retirement of managed copy `id`; a backup at a location this platform reaches is
   * deleted first (`deleted`), a migration's kept generation is retired with retireGenerations.
   * A retired copy no longer holds its suites (posture) and can no longer be restored next to this store.
   * @throws RangeError (unknown id), PqdbError CONFLICT (retired already), GENERATION_IN_USE, IO_ERROR
   */
  retireCopy(id: string): Promise<{ copy: ManagedCopy; deleted: boolean }> {
    this.#writable();
    return retireCopy(this.#p, id, this.#locations, () => this.retireGenerations());
  }

  /**
   * The store's posture: a CycloneDX 1.6 CBOM of its live state, with no key bytes (docs/posture.md).
   * @throws PqdbError NOT_OPEN
   * @example const cbom = store.posture(); // JSON.stringify(cbom): the CycloneDX document
   */
  posture(): Cbom {
    this.#live();
    return storePosture(this.#p);
  }

  /**
   * Serves read-only replicas over the post-quantum channel (docs/replication.md): `identity` is
   * this primary's ML-DSA-87 key pair, `trustedPeers` the replicas' public keys. Node only.
   */
  async serveReplication(options: ServeReplicationOptions): Promise<ReplicationServer> {
    this.#live();
    if (this.#locations?.serve === undefined) throw new TypeError('replication needs the Node build of pqdb');
    return this.#locations.serve(this.#p, options);
  }

  /** Waits for pending commits, wipes every key and releases the storage. Idempotent. */
  async close(): Promise<void> {
    if (!this.#open) return;
    this.#closing = true;
    await this.#follower?.close();
    await this.#p.pipeline.idle();
    await this.#migration.running?.catch(() => undefined);
    await this.#p.pipeline.idle();
    this.#open = false;
    this.#p.keys.close();
    this.#p.checkpoints.close();
    await this.#p.pages.close();
  }
}
