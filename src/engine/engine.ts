// The engine of one open store (DESIGN §2), the composition root: it builds the parts around the
// commit pipeline (commit.ts, the only PageStore writer) and registers every hook, in order: migration
// accounting; collection declaration, directory page drops, log heads, the apply step; lexical;
// auto-checkpoint; auto-compaction; replication shipping. No module registers its own hook nor gets
// the engine whole: each takes the context it declares, built here. A following store swaps engines.

import { PqdbError } from '../errors';
import type { PageStore } from '../storage/page-store';
import { decodeValue, storedSchema, valueVersion, type CompiledSchema, type Value } from './codec';
import type { UpgradeResult } from './upgrade';
import { leafBlind, type KeyRing } from './keys';
import type { Registry } from './registry';
import type { Manifest } from './manifest';
import { fromHex } from '../_encoding';
import { KeyDirectory } from './directory';
import { noteDroppedPages, persistDirectory } from './directory/persistence';
import { autoCompactor, compact, type CompactOptions, type CompactResult } from './compact';
import { MerkleLogs } from './merkle-log';
import { PageCache } from './page-cache';
import { logLeaves, type ReplayTarget, type SignedCheckpoint } from './replay';
import { applyCommit, logHead, type ApplyContext } from './apply';
import { recordGates, writeGate } from './gates';
import { RecordIO } from './records';
import { CommitPipeline, type AppliedCommit } from './commit';
import { Checkpoints } from './checkpoints';
import { LexicalStore } from './lexical-store';
import { FieldIndexes } from './field-indexes';
import { Migration } from './migration/run';
import { retireGenerations } from './retire';
import { exportSealed } from './exports';
import { storePosture, type Cbom } from './posture';
import {
  checkId,
  commitOps,
  declareCollection,
  encodeOps,
  readRecord,
  readRecords,
  stageOps,
  type DeclaredCollection,
  type PendingOp,
  type ReadTransaction,
} from './writes';
import type { WITHHELD } from './writes';
import { backup, listCopies, retireCopy, type BackupResult, type CopyDestination, type ManagedCopy } from './copies';
import { prepareFollow, type FollowedCommits } from './follow';
import { info, recipients, registryApi, type StoreInfo } from './store-admin';
import type { Locations, StoreOptions } from './store-options';

/** What an open found or made: the page store, the unlocked key ring, the manifest and registry. */
export interface OpenedState {
  readonly pages: PageStore;
  readonly keys: KeyRing;
  readonly manifest: Manifest;
  readonly registry: Registry;
  readonly sealed?: Uint8Array; // the manifest's bytes as read (none for a store being created)
}

/** A listener of durable commits (replication shipping); `ship` returns its removal. */
export type CommitListener = (commit: AppliedCommit) => void;

export class Engine {
  readonly pages: PageStore;
  readonly keys: KeyRing;
  readonly pipeline: CommitPipeline;
  readonly directory = new KeyDirectory();
  readonly logs = new MerkleLogs();
  readonly cache: PageCache;
  readonly records: RecordIO;
  readonly storeId: Uint8Array;
  readonly lexical: LexicalStore;
  readonly fieldIndexes: FieldIndexes;
  readonly checkpoints: Checkpoints;
  readonly migration: Migration;
  readonly readOnly: boolean;
  readonly target: ReplayTarget & ApplyContext; // what replay and the apply step update (open, follower, replica)
  readonly checkpointList: SignedCheckpoint[] = []; // oldest first; replay fills it on open
  recovered: string[] = []; // what opening repaired at this layer
  readonly #declared = new Map<string, DeclaredCollection>();
  readonly #schemas = new Map<string, CompiledSchema>();
  readonly #shipping = new Set<CommitListener>();
  readonly #keepHistory: boolean;
  #closing = false;
  #closed = false;
  readonly #live = () => this.live();

  constructor(opened: OpenedState, options: StoreOptions) {
    if (options.authority !== undefined && typeof options.authority !== 'function')
      throw new TypeError('"authority" expected a function');
    const { pages, keys, manifest, registry, sealed } = opened;
    const { directory, logs } = this;
    this.pages = pages;
    this.keys = keys;
    this.readOnly = options.readOnly === true;
    if (options.keepHistory !== undefined && typeof options.keepHistory !== 'boolean')
      throw new TypeError('"keepHistory" expected a boolean');
    this.#keepHistory = options.keepHistory === true;
    const live = this.#live;
    const pipeline = new CommitPipeline(pages, keys, manifest, registry, () => this.#writable(), sealed);
    const cache = new PageCache(pages);
    const records = new RecordIO(
      cache,
      keys,
      () => pipeline.registry,
      (id) => directory.page(id)?.salt,
      recordGates(() => pipeline.manifest),
    );
    this.pipeline = pipeline;
    this.cache = cache;
    this.records = records;
    logs.setLoader((g, to) => logLeaves(pages, pipeline.manifest, g, to));
    const value = async (collection: string, id: string): Promise<Value | undefined> => {
      const loc = directory.get(collection, id);
      return loc && this.#decoder(collection)(await records.open('index', collection, id, loc));
    };
    const lexical = (this.lexical = new LexicalStore({ pipeline, pages, keys, directory, value, live }));
    const fieldIndexes = (this.fieldIndexes = new FieldIndexes({ directory, value, live, pipeline, pages, keys }));
    const storeId = (this.storeId = fromHex(manifest.storeId));
    const list = this.checkpointList;
    const checkpoints = (this.checkpoints = new Checkpoints({ pipeline, keys, logs, storeId, list }, options));
    checkpoints.contribute((draft, g, afterPage) => lexical.persistDirty(draft, g, afterPage));
    checkpoints.contribute((draft, _g, afterPage) => fieldIndexes.persistDirty(draft, afterPage));
    checkpoints.contribute((draft, _g, afterPage) =>
      persistDirectory(draft, { directory, logs, keys }, afterPage, lexical.pendingIds()),
    );
    const blind = (salt: Uint8Array) => leafBlind(keys, salt);
    const target = (this.target = {
      directory,
      logs,
      cache,
      storeId,
      blind,
      onPage: (page) => (lexical.notePage(page), fieldIndexes.notePage(page)),
    });
    const migrationUses = { pipeline, keys, directory, records, cache, lexical, checkpoints, logs, live };
    const migration = (this.migration = new Migration({
      ...migrationUses,
      authority: options.authority,
      current: () => keys.current(),
      closing: () => this.#closing,
      decode: (collection, plaintext) => this.#decoder(collection)(plaintext),
    }));
    // Migration accounting first: it counts a commit's writes before anything else sees them.
    pipeline.on({ prepare: writeGate }); // the policy the commit runs under refuses a write before sealing
    pipeline.on({ prepare: (draft) => migration.accountWrites(draft), applied: (c) => migration.noteCopies(c) });
    pipeline.on({
      prepare: (draft) => {
        // Once per collection a commit writes to (a batch of thousands names a few).
        const named = new Set<string>();
        for (const w of draft.writes)
          if (w.copy !== true && !named.has(w.collection)) {
            named.add(w.collection);
            declareCollection(draft, this.#declared.get(w.collection)!);
          }
        noteDroppedPages(draft, directory);
      },
      sealed: (draft, page) => logHead(target, draft, page),
      applied: (c) => applyCommit(target, c),
    });
    pipeline.on({ applied: (c) => lexical.applied(c) });
    pipeline.on({ applied: (c) => this.fieldIndexes.applied(c) });
    // Checkpoints and compaction write: never for a foreign commit (a read-only store's).
    pipeline.on({
      applied: (c) => void (!c.foreign && c.writes.some((w) => !w.copy) && checkpoints.maybeCheckpoint()),
    });
    const auto = autoCompactor(options.autoCompact, directory, () => this.compact());
    if (auto !== undefined) pipeline.on({ applied: auto });
    pipeline.on({ applied: (c) => this.#shipping.forEach((ship) => ship(c)) });
  }

  /** @throws PqdbError NOT_OPEN once the engine was closed (or replaced and retired). */
  live(): void {
    if (this.#closed) throw new PqdbError('NOT_OPEN', 'the store is closed');
  }

  #writable(): void {
    this.live();
    if (this.readOnly) throw new PqdbError('READ_ONLY', 'the store was opened read-only');
  }

  /** Listens to every durable commit from now on (replication shipping); returns the removal. */
  ship(listener: CommitListener): () => void {
    this.#shipping.add(listener);
    return () => void this.#shipping.delete(listener);
  }

  /** A collection the store opened: its first commit declares it; its index is kept. */
  declare(c: DeclaredCollection): void {
    this.#declared.set(c.name, c);
    this.lexical.declare(c.name, c.indexed);
    this.fieldIndexes.declare(c.name, c.by ?? []);
  }

  /**
   * How a record of `collection` is decoded: through the schema of its version, and, while an
   * upgrade's rewrite is not finished, through the upgrade function for a record of an earlier
   * version (without one: FORMAT_VERSION, never a value of another shape).
   */
  #decoder(collection: string): (plaintext: Uint8Array) => Value {
    const schema = this.#schemaOf(collection);
    const declared = this.#declared.get(collection);
    const mark = this.pipeline.manifest.collections[collection]?.upgrade?.to;
    const target = mark ?? (declared?.upgrade !== undefined ? declared.schema.version : 0);
    if (target === 0) return (plaintext) => decodeValue(schema, plaintext);
    return (plaintext) => {
      const value = decodeValue(schema, plaintext);
      const version = valueVersion(plaintext);
      if (version >= target) return value;
      if (declared?.upgrade === undefined)
        throw new PqdbError(
          'FORMAT_VERSION',
          `a record of collection "${collection}" is at schema version ${version}, which an upgrade to version ${target} rewrites: open the collection with its upgrade function`,
        );
      return declared.upgrade(value, version);
    };
  }

  /** Rewrites the records of `c` written under an earlier schema version through its upgrade (upgrade.ts). */
  async upgradeRecords(
    c: DeclaredCollection,
    onProgress?: (p: { done: number; total: number }) => void,
  ): Promise<UpgradeResult> {
    const { pipeline, keys, records, directory } = this;
    // Loaded on first use (a chunk of its own in a browser bundle: upgrades are rare).
    const { upgradeRecords } = await import('./upgrade');
    return upgradeRecords({ pipeline, keys, records, directory, live: this.#live }, c, onProgress);
  }

  /** The schema history records of `collection` are read through: the declared one, or the stored one when it knows more versions. */
  #schemaOf(collection: string): CompiledSchema {
    const declared = this.#declared.get(collection)?.schema;
    const meta = this.pipeline.manifest.collections[collection];
    const version = meta === undefined ? 0 : (meta.versions?.length ?? 0) + 1;
    if (declared !== undefined && declared.version >= version) return declared;
    let s = this.#schemas.get(collection);
    if (s === undefined || s.version !== version) this.#schemas.set(collection, (s = storedSchema(meta)));
    return s;
  }

  /** Encodes checked operations, then seals and commits them as one page. */
  commit(pending: PendingOp[], requestId?: string): Promise<void> {
    this.live();
    const { pipeline, keys, records, directory } = this;
    return commitOps({ pipeline, keys, records, directory }, pending, requestId);
  }

  /**
   * Runs `fn` in one commit task: its reads see the store as every earlier commit left it, no other
   * write lands until it returns, and the operations it stages then commit together (none when it
   * throws). Reads of an id it staged see the staged value.
   */
  transaction<T>(fn: (tx: ReadTransaction) => Promise<T> | T): Promise<T> {
    this.live();
    const { pipeline, keys, records, directory } = this;
    return pipeline.run(async (draft) => {
      const pending: PendingOp[] = [];
      const staged = new Map<string, PendingOp>();
      const key = (c: DeclaredCollection, id: string) => `${c.name}\u0000${id}`;
      const stage = (op: PendingOp) => {
        checkId(op.id);
        pending.push(op);
        staged.set(key(op.collection, op.id), op);
      };
      const tx: ReadTransaction = {
        get: async (c, id) => {
          const op = staged.get(key(c, checkId(id)));
          if (op !== undefined) return op.kind === 'put' ? op.value : undefined;
          return this.read(c, id) as Promise<Value | undefined>;
        },
        has: (c, id) => {
          const op = staged.get(key(c, checkId(id)));
          return op !== undefined ? op.kind === 'put' : directory.has(c.name, id);
        },
        version: (c, id) => directory.get(c.name, checkId(id))?.sequence,
        put: (c, id, value, options = {}) =>
          stage({ kind: 'put', collection: c, id, value, governance: options.governance }),
        delete: (c, id) => stage({ kind: 'delete', collection: c, id }),
      };
      const result = await fn(tx);
      this.live();
      if (pending.length === 0) {
        draft.discard();
        return result;
      }
      const encoded = encodeOps(pending, pipeline.manifest, pipeline.registry);
      stageOps(draft, records, keys.current(), encoded);
      return result;
    });
  }

  /** The value of record `id` of `c` (WITHHELD with `withhold` when the policy keeps it from reading). */
  read(c: DeclaredCollection, id: string, withhold = false): Promise<Value | undefined | typeof WITHHELD> {
    const { directory, pipeline, records } = this;
    // Through the newest schema history known: a record another writer wrote under a later version reads too.
    const schema = this.#schemaOf(c.name);
    const decode = this.#decoder(c.name);
    return readRecord(
      { directory, pipeline, records },
      { name: c.name, schema, indexed: c.indexed },
      id,
      withhold,
      decode,
    );
  }

  /** The values of records `ids` of `c` (a query's results), as `read` with withholding gives each. */
  readMany(c: DeclaredCollection, ids: readonly string[]): Promise<(Value | undefined | typeof WITHHELD)[]> {
    const { directory, pipeline, records, cache } = this;
    const schema = this.#schemaOf(c.name);
    const decode = this.#decoder(c.name);
    return readRecords(
      { directory, pipeline, records, cache },
      { name: c.name, schema, indexed: c.indexed },
      ids,
      decode,
    );
  }

  exportSealed(collection: string, id: string): Promise<Uint8Array> {
    const { directory, logs, cache, checkpoints, storeId, target } = this;
    return exportSealed({ directory, logs, cache, checkpoints, storeId, blind: target.blind }, collection, id);
  }

  compact(options?: CompactOptions): Promise<CompactResult> {
    const { pages, pipeline, directory, records, keys, cache, checkpoints, readOnly, logs, storeId } = this;
    const { blind } = this.target;
    const keepHistory = this.#keepHistory;
    const uses = { pages, pipeline, directory, records, keys, cache, checkpoints, readOnly, logs, storeId, blind };
    return compact({ ...uses, keepHistory, live: this.#live }, options);
  }

  retireGenerations(): Promise<number[]> {
    const { pipeline, keys, directory, logs, lexical } = this;
    return retireGenerations({ pipeline, keys, directory, logs, lexical });
  }

  backup(dest: CopyDestination): Promise<BackupResult> {
    const { pages, pipeline, directory, keys, checkpoints, logs } = this;
    return backup({ pages, pipeline, directory, keys, checkpoints, logs, live: this.#live }, dest);
  }

  copies(): ManagedCopy[] {
    return listCopies({ pipeline: this.pipeline });
  }

  retireCopy(id: string, locations: Locations | undefined): Promise<{ copy: ManagedCopy; deleted: boolean }> {
    return retireCopy({ pipeline: this.pipeline, live: this.#live }, id, locations, () => this.retireGenerations());
  }

  posture(): Cbom {
    const { pipeline, directory, checkpoints, pages } = this;
    return storePosture({ pipeline, directory, checkpoints, pages });
  }

  info(): StoreInfo {
    const { pipeline, directory, checkpoints, pages, keys } = this;
    return info({ pipeline, directory, checkpoints, pages, keys });
  }

  registry(): ReturnType<typeof registryApi> {
    return registryApi({ pipeline: this.pipeline, directory: this.directory });
  }

  recipients(change: 'add' | 'remove', publicKey: Uint8Array): Promise<void> {
    return recipients(this.pipeline, change, publicKey);
  }

  /** Verifies shipped or followed commits against this (read-only) state: see follow.ts. */
  prepareFollow(next: FollowedCommits): (() => Promise<void>) | undefined {
    const { readOnly, pipeline, keys, logs, storeId } = this;
    return prepareFollow({ live: this.#live, readOnly, pipeline, keys, logs, storeId }, next);
  }

  /** Wipes a replaced state's keys; its pages stay (the state serving now reads them). */
  retire(): void {
    this.#closed = true;
    this.keys.close();
    this.checkpoints.close();
  }

  /** Waits for pending commits and a migration under way, wipes every key and closes the pages. */
  async close(): Promise<void> {
    this.#closing = true;
    await this.pipeline.idle();
    await this.migration.running?.catch(() => undefined);
    await this.pipeline.idle();
    this.retire();
    await this.pages.close();
  }
}
