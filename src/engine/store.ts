// The pqdb store (DESIGN §6): a log-structured engine over a PageStore. This file is the façade:
// opening and creating a store, collection handles, and the wiring of the engine's parts around
// the commit pipeline (src/engine/commit.ts), the only writer of the PageStore. Every commit
// appends one commit page (a sealed index plus the sealed records of the commit) and replaces the
// manifest in the same atomic PageStore commit; the key directory, the Merkle logs, the page
// cache, the lexical indexes and automatic checkpoints follow each durable commit through the
// pipeline's `applied` hooks, in commit order, and are rebuilt from the pages on open (replay.ts).
//
// Records are sealed with the collection's suite under data keys derived from the current key
// generation's root and the record's governance state (src/engine/keys.ts); the storage layer only
// ever sees sealed bytes. The registry gates writes (quarantined suites refuse them) and reads
// (retired suites refuse them).

import { PqdbError } from '../errors';
import { bytes } from '../_args';
import type { PageStore } from '../storage/page-store';
import { canonicalGovernanceText } from '../crypto/record';
import { suite as suiteOf, DEFAULT_SUITE, type SuiteName } from '../crypto/suites';
import type { KeyedAead } from '../kernels/aead';
import type { Checkpoint } from '../crypto/proofs';
import { compileSchema, encodeValueInto, decodeValue, ValueWriter, type CompiledSchema, type Schema } from './codec';
import { KeyRing } from './keys';
import { Registry, type SuiteState, type RegistryEntry } from './registry';
import { metaKey } from './page-format';
import { b64, decodeManifest, fromHex, generationRecords, hex, keyringEntries, verifyManifest } from './manifest';
import type { Manifest } from './manifest';
import { KeyDirectory } from './directory';
import { MerkleLogs } from './merkle-log';
import { PageCache } from './page-cache';
import { replay, applyCommitPage, type ReplayTarget, type SignedCheckpoint } from './replay';
import { RecordIO } from './records';
import { CommitPipeline, type AppliedCommit, type Draft } from './commit';
import { Checkpoints } from './checkpoints';
import { LexicalStore } from './lexical-store';
import { Migration, type AuthorityCheck, type MigrateOptions, type MigrationStatus } from './migration/run';
import { retireGenerations } from './retire';
import { exportSealed } from './exports';
import { Collection, checkId, type CollectionEngine, type PendingOp, type Transaction } from './collection';
import type { SearchOptions } from './lexical';

export { Collection, type PutOptions, type ScanOptions, type Transaction } from './collection';
export type { AuthorityCheck, MigrateOptions, MigrationStatus, MigrationProgress } from './migration/run';
export type { MigrationCounts, MigrationPhase } from './manifest';
export type { SearchOptions };

/** Bytes of a new store's random id. */
const STORE_ID_BYTES = 16;

export interface StoreOptions {
  /** Create the store when it has no manifest yet. */
  create?: boolean;
  /** Recipient public keys (hybrid or classical) whose envelopes wrap new generations' roots. */
  recipients?: readonly Uint8Array[];
  /** A recipient secret key that opens the store. */
  unlock: Uint8Array;
  /** The suite new collections write with (default 'gcmsiv-hkdf384'). */
  suite?: SuiteName;
  /** ML-DSA-87 secret key for checkpoints (kept for signing batches). */
  signer?: Uint8Array;
  /** The signer's public key (named in checkpoints by its id); required with `signer`. */
  signerPublicKey?: Uint8Array;
  /** Bound of the data-key cache. */
  keyCacheSize?: number;
  /**
   * Automatic checkpoints (with `signer`): after a commit, once `records` records were written
   * since the last checkpoint, or `ms` milliseconds passed since it and at least one was written.
   * Default { records: 10000, ms: 60000 }; false turns them off.
   */
  autoCheckpoint?: { records?: number; ms?: number } | false;
  /**
   * Current authority: asked again for every record a migration copies; false withholds the record
   * (it stays where it is, counted as withheld). Default: every record may be migrated.
   */
  authority?: AuthorityCheck;
  /**
   * Open for reading only: nothing is written (no repair, no migration resumed); writes reject
   * with READ_ONLY. Use with a read-only page store (openNodeFsPageStore(dir, { readOnly: true })).
   */
  readOnly?: boolean;
}

export class Store {
  readonly #pages: PageStore;
  readonly #keys: KeyRing;
  readonly #pipeline: CommitPipeline;
  readonly #directory = new KeyDirectory();
  readonly #logs = new MerkleLogs();
  readonly #cache: PageCache;
  readonly #records: RecordIO;
  readonly #lexical: LexicalStore;
  readonly #checkpoints: Checkpoints;
  readonly #checkpointList: SignedCheckpoint[] = [];
  readonly #migration: Migration;
  readonly #collections = new Map<string, Collection>();
  readonly #schemas = new Map<string, CompiledSchema>();
  readonly #target: ReplayTarget;
  readonly #engine: CollectionEngine;
  readonly #readOnly: boolean;
  readonly #storeId: Uint8Array;
  #recovered: string[] = [];
  #open = true;
  #closing = false;

  private constructor(pages: PageStore, keys: KeyRing, manifest: Manifest, registry: Registry, options: StoreOptions) {
    if (options.authority !== undefined && typeof options.authority !== 'function')
      throw new TypeError('"authority" expected a function');
    this.#pages = pages;
    this.#keys = keys;
    this.#readOnly = options.readOnly === true;
    this.#storeId = fromHex(manifest.storeId);
    const live = () => this.#live();
    this.#pipeline = new CommitPipeline(pages, keys, manifest, registry, () => {
      this.#live();
      if (this.#readOnly) throw new PqdbError('READ_ONLY', 'the store was opened read-only');
    });
    this.#cache = new PageCache(pages);
    this.#records = new RecordIO(this.#cache, keys, () => this.#pipeline.registry);
    const { directory, pipeline, records } = {
      directory: this.#directory,
      pipeline: this.#pipeline,
      records: this.#records,
    };
    const value = async (collection: string, id: string) => {
      const loc = directory.get(collection, id);
      if (loc === undefined) return undefined;
      return decodeValue(this.#schemaOf(collection), await records.open('index', collection, id, loc));
    };
    this.#lexical = new LexicalStore({ pipeline, pages, keys, directory, value, live });
    this.#checkpoints = new Checkpoints(pipeline, keys, this.#logs, this.#storeId, this.#checkpointList, options);
    this.#checkpoints.contribute((draft, g, afterPage) => this.#lexical.persistDirty(draft, g, afterPage));
    this.#target = {
      directory,
      logs: this.#logs,
      storeId: this.#storeId,
      onPage: (page) => this.#lexical.notePage(page),
    };
    this.#migration = new Migration({
      pipeline,
      keys,
      directory,
      records,
      logs: this.#logs,
      lexical: this.#lexical,
      checkpoints: this.#checkpoints,
      authority: options.authority,
      current: () => keys.current(),
      live,
      closing: () => this.#closing,
      decode: (collection, plaintext) => decodeValue(this.#schemaOf(collection), plaintext),
    });
    pipeline.hook({ prepare: (draft) => this.#declareCollections(draft), applied: (c) => this.#applied(c) });
    pipeline.hook({ applied: (c) => this.#lexical.applied(c) });
    pipeline.hook({
      applied: (c) => void (c.writes.some((w) => w.copy !== true) && this.#checkpoints.maybeCheckpoint()),
    });
    this.#engine = {
      commit: (ops) => this.#commitOps(ops),
      read: (c, id) => this.#read(c, id),
      has: (collection, id) => directory.has(collection, id),
      count: (collection) => directory.count(collection),
      ids: (collection, prefix) => directory.ids(collection, prefix),
      index: (collection) => this.#lexical.indexOf(collection),
      loadedIndex: (collection) => this.#lexical.loaded(collection),
      exportSealed: (collection, id) => {
        this.#live();
        const ctx = { directory, logs: this.#logs, cache: this.#cache, checkpoints: this.#checkpoints };
        return exportSealed({ ...ctx, storeId: this.#storeId }, collection, id);
      },
    };
  }

  /**
   * Opens (or with `create`, creates) a store on a PageStore.
   * @throws PqdbError AUTH_FAILED (wrong secret key or altered manifest), NOT_OPEN (no store and no
   * `create`), CORRUPTION, FORMAT_VERSION; RangeError for missing recipients on create.
   */
  static async open(pages: PageStore, options: StoreOptions): Promise<Store> {
    if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
    bytes('unlock', options.unlock, 32);
    const raw = await pages.readManifest();
    if (raw === undefined) {
      if (!options.create || options.readOnly)
        throw new PqdbError('NOT_OPEN', 'no store here (pass create: true to make one)');
      const recipients = options.recipients ?? [];
      if (!Array.isArray(recipients) || recipients.length === 0)
        throw new RangeError('"recipients" expected at least one public key to create a store');
      const suite = suiteOf(options.suite ?? DEFAULT_SUITE);
      const keys = new KeyRing([], options.keyCacheSize);
      const g = keys.createGeneration(suite.id, recipients);
      keys.unlock(options.unlock); // the creator must be able to open what it creates
      const registry = new Registry({ active: suite.id });
      const storeId = new Uint8Array(STORE_ID_BYTES);
      globalThis.crypto.getRandomValues(storeId);
      const manifest: Manifest = {
        v: 1,
        storeId: hex(storeId),
        macGeneration: g,
        nextPageId: 1,
        nextSequence: 1,
        keyring: keyringEntries(keys.records()),
        registry: registry.records(),
        collections: {},
        defaultSuite: suite.id,
        recipients: recipients.map((r) => b64(bytes('recipients[]', r))),
      };
      const store = new Store(pages, keys, manifest, registry, options);
      await store.#pipeline.run(() => undefined); // the first manifest
      return store;
    }
    const manifest = decodeManifest(raw);
    const keys = new KeyRing(generationRecords(manifest), options.keyCacheSize);
    keys.unlock(options.unlock);
    verifyManifest(raw, keys.generationKey(manifest.macGeneration, 'meta', metaKey));
    const store = new Store(pages, keys, manifest, new Registry({ records: manifest.registry }), options);
    const found = await replay(pages, manifest, keys, store.#target, store.#readOnly);
    store.#checkpointList.push(...found.checkpoints);
    store.#recovered = found.recovered;
    // An unfinished migration resumes where its durable cursor stands.
    if (manifest.migration !== undefined && !store.#readOnly) store.#migration.resume();
    return store;
  }

  /** What opening the store repaired, at this layer and in the page store below. */
  get recovery(): { clean: boolean; actions: string[] } {
    const actions = [...this.#pages.recovery.actions, ...this.#recovered];
    return { clean: actions.length === 0, actions };
  }

  #live(): void {
    if (!this.#open) throw new PqdbError('NOT_OPEN', 'the store is closed');
  }

  #writable(): void {
    if (this.#readOnly) throw new PqdbError('READ_ONLY', 'the store was opened read-only');
  }

  #schemaOf(collection: string): CompiledSchema {
    const open = this.#collections.get(collection)?.schema;
    if (open !== undefined) return open;
    let s = this.#schemas.get(collection);
    if (s === undefined)
      this.#schemas.set(collection, (s = compileSchema(this.#pipeline.manifest.collections[collection].schema)));
    return s;
  }

  /** `applied` hook: the directory, the logs and the page cache follow the commit. */
  #applied(commit: AppliedCommit): void {
    if (commit.page !== undefined) {
      applyCommitPage(this.#target, commit.page);
      this.#cache.put(commit.page.id, commit.page.bytes);
    }
    this.#directory.dropPages(commit.deletes);
    for (const id of commit.deletes) this.#cache.drop(id);
  }

  /** The suite collection `c` writes with in `m`, and whether the commit must make it active. */
  #writeSuite(m: Manifest, registry: Registry, c: Collection): { suite: number; activate: boolean } {
    const meta = m.collections[c.name];
    if (meta !== undefined) return { suite: meta.suite, activate: false };
    // A new collection that names its suite: a decrypt-only suite becomes active for it with its
    // first commit. Quarantined and retired suites stay as they are (and refuse the write).
    if (c.suite !== undefined) return { suite: c.suite, activate: registry.state(c.suite) === 'decrypt-only' };
    return { suite: m.defaultSuite, activate: false };
  }

  /** `prepare` hook: collections written for the first time enter the manifest (and the registry). */
  #declareCollections(draft: Draft): void {
    const m = draft.manifest;
    for (const w of draft.writes) {
      if (w.copy === true || m.collections[w.collection] !== undefined) continue;
      const c = this.#collections.get(w.collection)!;
      const { suite, activate } = this.#writeSuite(m, draft.currentRegistry, c);
      if (activate) draft.registry.setState(suite, 'active');
      m.collections[c.name] = { schema: c.schema.source as Schema, suite };
    }
  }

  /** Checks and encodes operations, then seals and commits them as one page. */
  #commitOps(pending: PendingOp[]): Promise<void> {
    this.#live();
    // Everything is checked before anything is written: a bad value writes nothing. The plaintexts
    // of the whole commit share one buffer.
    const w = new ValueWriter();
    const spans: [number, number][] = pending.map(() => [0, 0]);
    const governance: string[] = pending.map((p, i) => {
      if (!(p.collection instanceof Collection) || p.collection.store !== this)
        throw new TypeError('"collection" expected a collection of this store');
      checkId(p.id);
      if (p.kind === 'delete') return '';
      const start = w.n;
      spans[i] = [start, start + encodeValueInto(p.collection.schema, p.value, w)];
      const { suite, activate } = this.#writeSuite(this.#pipeline.manifest, this.#pipeline.registry, p.collection);
      if (!activate) this.#pipeline.registry.checkWrite(suite);
      return canonicalGovernanceText(p.governance);
    });
    return this.#pipeline.run((draft) => {
      // Sealing happens in commit order, so write sequences (and so nonces) are unique and ordered.
      const g = this.#keys.current();
      const base = draft.sequences(pending.length);
      pending.forEach((p, i) => {
        const sequence = base + i;
        const { name: collection } = p.collection;
        if (p.kind === 'delete') {
          draft.write({ kind: 'delete', collection, id: p.id, sequence }, { kind: 'delete', collection, id: p.id });
          return;
        }
        // The suite is read again here: a migration may have changed it since the call.
        const { suite, activate } = this.#writeSuite(draft.manifest, draft.currentRegistry, p.collection);
        if (!activate) draft.currentRegistry.checkWrite(suite);
        const plaintext = w.buf.subarray(spans[i][0], spans[i][1]);
        const op = this.#records.put({
          collection,
          id: p.id,
          suite,
          generation: g,
          sequence,
          governance: governance[i],
          plaintext,
        });
        draft.write(op, { kind: 'put', collection, id: p.id, value: p.value });
      });
    });
  }

  /** The value of record `id` of `c`, opened for reading. */
  async #read(c: Collection, id: string) {
    this.#live();
    checkId(id);
    const loc = this.#directory.get(c.name, id);
    if (loc === undefined) return undefined;
    return decodeValue(c.schema, await this.#records.open('read', c.name, id, loc));
  }

  /**
   * A typed collection. Its schema is stored with the store; reopening with another schema is an error.
   * @throws TypeError for a bad name or schema; RangeError when the schema differs from the stored one.
   */
  collection(
    name: string,
    options: { schema: Schema; suite?: SuiteName; index?: { text: readonly string[] } },
  ): Collection {
    this.#live();
    if (typeof name !== 'string' || name.length === 0) throw new TypeError('"name" expected a non-empty string');
    const schema = compileSchema(options?.schema);
    const existing = this.#pipeline.manifest.collections[name];
    if (
      existing !== undefined &&
      JSON.stringify(compileSchema(existing.schema).source) !== JSON.stringify(schema.source)
    ) {
      throw new RangeError(`collection "${name}" exists with another schema`);
    }
    const suite = options.suite !== undefined && existing === undefined ? suiteOf(options.suite).id : undefined;
    const text = options.index?.text ?? [];
    if (!Array.isArray(text) || text.some((f) => schema.fields.find((x) => x.name === f)?.type !== 'string')) {
      throw new TypeError('"index.text" expected names of string fields of the schema');
    }
    let c = this.#collections.get(name);
    if (c === undefined) {
      this.#collections.set(name, (c = new Collection(this, this.#engine, name, schema, text, suite)));
      this.#lexical.declare(name, text);
    }
    return c;
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
    return {
      list: () => this.#pipeline.registry.list(),
      setState: (suite, state) =>
        this.#pipeline.run((draft) => {
          const id = suiteOf(suite).id;
          const inUse = this.#directory.any() && Object.values(draft.manifest.collections).some((c) => c.suite === id);
          draft.registry.setState(suite, state, { inUse });
        }),
    };
  }

  /** Wraps the store's roots for another recipient (no record is re-encrypted). */
  addRecipient(publicKey: Uint8Array): Promise<void> {
    return this.#pipeline.run((draft) => {
      draft.keyring.addRecipient(publicKey);
      const m = draft.manifest;
      m.recipients = [...new Set([...(m.recipients ?? []), b64(publicKey)])];
    });
  }

  /** Drops a recipient's envelopes. */
  removeRecipient(publicKey: Uint8Array): Promise<void> {
    return this.#pipeline.run((draft) => {
      draft.keyring.removeRecipient(publicKey);
      const b = b64(publicKey);
      draft.manifest.recipients = (draft.manifest.recipients ?? []).filter((x) => x !== b);
    });
  }

  /** Store id, page store kind and counts. */
  info(): {
    storeId: string;
    storage: string;
    generations: number[];
    collections: Record<string, number>;
    commits: number;
    autoCheckpointError?: string;
  } {
    const error = this.#checkpoints.autoError;
    return {
      ...(error !== undefined ? { autoCheckpointError: String((error as Error)?.message ?? error) } : {}),
      storeId: this.#pipeline.manifest.storeId,
      storage: this.#pages.kind,
      generations: this.#keys.generations(),
      collections: this.#directory.counts(),
      commits: this.#pipeline.manifest.nextPageId - 1,
    };
  }

  // ---- verifiable batches (DESIGN §7) -------------------------------------------------------------

  /**
   * Signs a checkpoint of the current generation's log (store id, generation, tree size, root,
   * hash of the previous checkpoint) with ML-DSA-87 and stores it durably.
   * @throws PqdbError NOT_OPEN; TypeError when the store was opened without signer keys.
   */
  checkpoint(): Promise<Checkpoint & { signed: Uint8Array }> {
    return this.#checkpoints.checkpoint();
  }

  /** Every signed checkpoint, oldest first. */
  checkpoints(): (Checkpoint & { signed: Uint8Array })[] {
    return this.#checkpoints.list.map((c) => ({ ...c, signed: c.signed.slice() }));
  }

  /**
   * Consistency proof between two checkpoints (by position in checkpoints()) of one generation.
   * @throws RangeError for unknown positions or checkpoints of different generations.
   */
  consistencyProof(from: number, to: number): Uint8Array[] {
    return this.#checkpoints.consistencyProof(from, to);
  }

  /** The data key of (suite, generation, governance) for opening exports (see openSealed). */
  dataKeyFor(suite: number, generation: number, governance: string): { key: Uint8Array; aead: KeyedAead } {
    this.#live();
    return this.#keys.aeadFor(suite, generation, governance);
  }

  /**
   * Retires every key generation older than the current one, once no live record is left in them
   * (after a migration of every collection; see docs/migration.md). In one commit their commit
   * pages are deleted and their roots leave the keyring (and are wiped from memory): what they
   * sealed, the old versions of records and sealed exports of them, can no longer be opened by
   * anyone holding the store's keys. Their Merkle logs (completed in a log page if needed) and the
   * signed checkpoints stay, so those checkpoints still verify, chain and prove consistency. A
   * lexical index page still sealed under one of them is sealed again under the current one.
   * Returns the generations retired (none when only the current one exists).
   * @throws PqdbError GENERATION_IN_USE while a migration is under way or when a live record is
   * still in an older generation (withheld or failed by a migration, or in a collection that was
   * not migrated); READ_ONLY; NOT_OPEN.
   * @example await store.migrate({ to: 'gcmsiv-hkdf384' }); await store.retireGenerations(); // [1]
   */
  retireGenerations(): Promise<number[]> {
    const ctx = { pipeline: this.#pipeline, keys: this.#keys, directory: this.#directory, logs: this.#logs };
    return retireGenerations({ ...ctx, lexical: this.#lexical });
  }

  // ---- live migration (DESIGN §8) -----------------------------------------------------------------

  /**
   * Moves every record of the collection (or of every collection) to suite `to` while the store
   * keeps serving reads and writes: prepares key generation g+1 with the target suite (new writes
   * go there at once), copies the records in bounded chunks, each commit carrying the durable
   * cursor, rebuilds the lexical indexes, verifies every migrated record, checkpoints (with signer
   * keys) and activates. A store reopened with a migration under way resumes it; calling migrate()
   * with the same target then awaits that migration. Resolves with the accounting.
   * @throws PqdbError ABORTED (paused by `signal`; it resumes later), SUITE_QUARANTINED (target
   * refuses writes), READ_ONLY, NOT_OPEN; RangeError for another migration under way or an
   * unknown suite or collection; TypeError when the store has no recipient public keys.
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

  /** Waits for pending commits, wipes every key and releases the storage. Idempotent. */
  async close(): Promise<void> {
    if (!this.#open) return;
    this.#closing = true;
    await this.#pipeline.idle();
    await this.#migration.running?.catch(() => undefined);
    await this.#pipeline.idle();
    this.#open = false;
    this.#keys.close();
    this.#checkpoints.close();
    await this.#pages.close();
  }
}
