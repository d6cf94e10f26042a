// The pqdb store (DESIGN §6): a log-structured engine over a PageStore. Every commit appends one
// commit page (a sealed index plus the sealed records of the commit) and replaces the manifest in
// the same atomic PageStore commit. An in-memory key directory maps (collection, id) to the
// record's page and place; it is rebuilt from the live pages when the store opens.
//
// Records are sealed with the collection's suite under data keys derived from the current key
// generation's root and the record's governance state (src/engine/keys.ts); the storage layer only
// ever sees sealed bytes. The registry gates writes (quarantined suites refuse them) and reads
// (retired suites refuse them).

import { PqdbError } from '../errors';
import { bytes } from '../_args';
import type { PageStore } from '../storage/page-store';
import { sealRecord, sealedLength, openRecord, canonicalGovernanceText, type Governance } from '../crypto/record';
import { utf8Length } from '../_utf8';
import { yieldToEventLoop } from '../_yield';
import { suite as suiteOf, DEFAULT_SUITE, type SuiteName } from '../crypto/suites';
import { LexicalIndex, type SearchOptions } from './lexical';
import {
  compileSchema,
  encodeValueInto,
  decodeValue,
  ValueWriter,
  type CompiledSchema,
  type Schema,
  type Value,
} from './codec';
import { KeyRing, type GenerationRecord } from './keys';
import { Registry, type RegistryRecord, type SuiteState, type RegistryEntry } from './registry';
import {
  recordLeafHashes,
  signCheckpoint,
  checkpointHash,
  decodeCheckpoint,
  encodeExport,
  leafData,
  type Checkpoint,
} from '../crypto/proofs';
import { MerkleHashTree, MerkleAppender, HASH_BYTES } from '../crypto/merkle';
import {
  encodePage,
  decodePage,
  pageGeneration,
  pageKey,
  metaKey,
  lexicalKey,
  encodeManifest,
  readManifestJson,
  verifyManifest,
  encodeLogPage,
  decodeLogPage,
  encodeIndexPage,
  decodeIndexPageAsync,
  indexPageGeneration,
  INDEX_PART_BYTES,
  type PageWriteOp,
  type IndexedOp,
} from './page-format';
import { concatBytes, equalBytes } from '../_bytes';

/** Bound of the cache of sealed commit pages (they hold only ciphertext). */
const PAGE_CACHE_BYTES = 64 * 1024 * 1024;
const b64 = (b: Uint8Array) => btoa(String.fromCharCode(...b));
const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

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

/** Asked whether a record may be migrated now (DESIGN §9 current authority). */
export type AuthorityCheck = (record: { collection: string; id: string; governance: Governance }) => boolean;

/** The phases of a live migration, in order (DESIGN §8). */
export type MigrationPhase = 'copying' | 'indexing' | 'verifying' | 'activating' | 'done';

/** A migration's accounting: copied + superseded + deleted + withheld + failed + inserted = total. */
export interface MigrationCounts {
  /** Re-encrypted into the new generation by the migration. */
  copied: number;
  /** Updated by a write before the migration reached them. */
  superseded: number;
  /** Deleted before the migration reached them. */
  deleted: number;
  /** Refused by the authority check (left in their old generation). */
  withheld: number;
  /** Could not be read (left in their old generation; listed in `failures`). */
  failed: number;
  /** New ids written to the migrated collections during the migration. */
  inserted: number;
  /** Records at the start plus those inserted during. */
  total: number;
}

export interface MigrationProgress extends MigrationCounts {
  phase: MigrationPhase;
}

export interface MigrationStatus extends MigrationProgress {
  /** Collections migrated. */
  collections: string[];
  /** Target suite. */
  to: SuiteName;
  /** The key generation records are copied into. */
  generation: number;
  /** The last source record (generation, leaf index) the copy reached. */
  cursor: [number, number] | null;
  startedAt: string;
  finishedAt?: string;
  /** Milliseconds of migration work (in every process that worked on it), per phase and in all. */
  workMs: number;
  phaseMs: Partial<Record<MigrationPhase, number>>;
  /** The first failures (collection/id: reason). */
  failures: string[];
  /** True while this process is working on it. */
  running: boolean;
}

export interface MigrateOptions {
  /** Only this collection (default: every collection). */
  collection?: string;
  /** The target suite. */
  to: SuiteName;
  /** Records per copy commit (default 256): bounds the event-loop time of each step. */
  chunkRecords?: number;
  /** Aborting pauses the migration after the current step; migrate() then rejects with ABORTED. */
  signal?: AbortSignal;
  onProgress?: (p: MigrationProgress) => void;
  /** Overrides the store's authority check for this migration. */
  authority?: AuthorityCheck;
}

/** A log page: the leaf hashes [from, to) of its generation's log, written by a checkpoint. */
export interface LogPageRef {
  pageId: number;
  from: number;
  to: number;
}

/** Source records of a migration still to visit, in (generation, leaf index) order. */
/**
 * The records a migration still has to visit, in log order: entry i is id ids[i] of collection
 * names[cols[i]], leaf leaves[i] of generation gens[i]. Parallel arrays, not an object per record:
 * 100,000 small objects alive for the whole copy made the collector's work (and pauses) larger.
 */
type SourceQueue = {
  ids: string[];
  gens: Int32Array;
  leaves: Int32Array;
  cols: Uint32Array;
  names: readonly string[];
  pos: number;
};

interface MigrationRecord {
  id: string;
  collections: string[];
  to: number;
  generation: number;
  fromSuites: number[];
  phase: MigrationPhase;
  cursor: [number, number] | null;
  counts: MigrationCounts;
  startedAt: string;
  finishedAt?: string;
  workMs: number;
  phaseMs: Partial<Record<MigrationPhase, number>>;
  failures: string[];
  chunkRecords: number;
}

interface Location {
  /** Index of the record's leaf in its generation's Merkle log. */
  leafIndex: number;
  generation: number;
  pageId: number;
  offset: number;
  length: number;
  sequence: number;
  governance: string;
}

interface CollectionMeta {
  schema: Schema;
  suite: number;
}

interface ManifestJson {
  v: 1;
  storeId: string;
  macGeneration: number;
  nextPageId: number;
  nextSequence: number;
  keyring: { generation: number; suite: number; salt: string; envelopes: string[] }[];
  registry: RegistryRecord[];
  collections: Record<string, CollectionMeta>;
  /** The suite new collections write with unless they name one. */
  defaultSuite: number;
  /** The pages holding the signed checkpoints, oldest first (a page each: the manifest stays small). */
  checkpointPages?: number[];
  /** Per generation, the page holding its log's leaf hashes as of the last checkpoint. */
  logs?: Record<string, LogPageRef[]>;
  /** Per collection, the sealed lexical index as of the last checkpoint and the last commit page it includes. */
  indexes?: Record<string, { pageId: number; afterPage: number; fields?: string[] }>;
  /** Recipient public keys (base64): new key generations are wrapped for each. */
  recipients?: string[];
  /** The migration under way, if any. */
  migration?: MigrationRecord;
  /** Finished migrations with their accounting, oldest first. */
  migrations?: MigrationRecord[];
  /** Retired key generations: roots destroyed, commit pages deleted; their logs and checkpoints stay. */
  retired?: number[];
}

export interface PutOptions {
  governance?: Governance;
}

export interface ScanOptions {
  prefix?: string;
  limit?: number;
}

/** Operations collected by `store.batch`; they commit together or not at all. */
export interface Transaction {
  put(collection: Collection, id: string, value: Value, options?: PutOptions): void;
  delete(collection: Collection, id: string): void;
}

type PendingOp =
  | { kind: 'put'; collection: Collection; id: string; value: Value; governance?: Governance }
  | { kind: 'delete'; collection: Collection; id: string };

export class Collection {
  /** @internal The lexical index, once built (see search). */
  lexical?: Promise<LexicalIndex>;

  /** @internal */
  constructor(
    readonly store: Store,
    readonly name: string,
    /** @internal */ readonly schema: CompiledSchema,
    /** String fields indexed for search(), if any. */
    readonly indexed: readonly string[] = [],
  ) {}

  /**
   * Ids (with values) of records whose indexed text fields contain the query's words: `mode` 'all'
   * (default) or 'any', `prefix` to match the last word as typed, at most `limit` (default 100).
   * The index is built from the records on first use after opening and kept current by every commit.
   * @throws TypeError when the collection was opened without `index: { text: [...] }`.
   */
  async search(query: string, options: SearchOptions = {}): Promise<{ id: string; value: Value }[]> {
    if (this.indexed.length === 0)
      throw new TypeError(`collection "${this.name}" has no lexical index (open it with index: { text: [...] })`);
    if (typeof query !== 'string') throw new TypeError('"query" expected a string');
    const index = await this.store.lexicalOf(this);
    const out: { id: string; value: Value }[] = [];
    for (const id of index.search(query, options)) {
      const value = await this.get(id);
      if (value !== undefined) out.push({ id, value });
    }
    return out;
  }

  /**
   * Seals and stores `value` under `id` in one commit (durable when the promise resolves).
   * @throws PqdbError SCHEMA_MISMATCH (nothing written), SUITE_QUARANTINED, NOT_OPEN, IO_ERROR.
   */
  async put(id: string, value: Value, options: PutOptions = {}): Promise<void> {
    return this.store.commitOps([{ kind: 'put', collection: this, id, value, governance: options?.governance }]);
  }

  /** The value stored under `id`, or undefined. @throws PqdbError AUTH_FAILED, CORRUPTION, SUITE_RETIRED */
  async get(id: string): Promise<Value | undefined> {
    return this.store.read(this, id);
  }

  /** True when a record is stored under `id` (answered from the key directory: nothing is decrypted). */
  has(id: string): boolean {
    return this.store.has(this.name, checkId(id));
  }

  /** Deletes `id`; true when it existed. */
  async delete(id: string): Promise<boolean> {
    checkId(id);
    if (!this.store.has(this.name, id)) return false;
    await this.store.commitOps([{ kind: 'delete', collection: this, id }]);
    return true;
  }

  /** Records in id order, optionally only ids starting with `prefix`, at most `limit`. */
  async *scan(options: ScanOptions = {}): AsyncGenerator<{ id: string; value: Value }> {
    const ids = this.store.ids(this.name, options.prefix ?? '');
    const limit = options.limit ?? Infinity;
    let n = 0;
    for (const id of ids) {
      if (n >= limit) return;
      const value = await this.get(id);
      if (value === undefined) continue;
      n++;
      yield { id, value };
    }
  }

  /**
   * A self-verifying sealed export of `id`: header ‖ ciphertext ‖ inclusion proof ‖ signed
   * checkpoint ‖ signer key id. Verify it anywhere with verifySealed(bytes, signerPublicKey).
   */
  exportSealed(id: string): Promise<Uint8Array> {
    return this.store.exportSealed(this, id);
  }

  /** Number of live records. */
  get size(): number {
    return this.store.count(this.name);
  }
}

/** The last element of `list` that satisfies `test`. */
function lastWhere<T>(list: readonly T[], test: (x: T) => boolean): T | undefined {
  for (let i = list.length - 1; i >= 0; i--) if (test(list[i])) return list[i];
  return undefined;
}

/** Puts `target` back to the JSON snapshot `saved` (fields added since are removed). */
function restore(target: object, saved: string): void {
  for (const k of Object.keys(target)) delete (target as Record<string, unknown>)[k];
  Object.assign(target, JSON.parse(saved));
}

function checkId(id: unknown): string {
  if (typeof id !== 'string' || id.length === 0) throw new TypeError('"id" expected a non-empty string');
  if (utf8Length(id) > 1024) throw new RangeError('"id" is limited to 1,024 UTF-8 bytes');
  return id;
}

export class Store {
  #pages: PageStore;
  #keys: KeyRing;
  #registry: Registry;
  #manifest: ManifestJson;
  #dir = new Map<string, Map<string, Location>>();
  #collections = new Map<string, Collection>();
  #queue: Promise<unknown> = Promise.resolve();
  #open = true;
  #signer?: Uint8Array;
  #recovered: string[] = [];
  #storeIdBytes?: Uint8Array;
  /** Per generation: the leaf hashes of its Merkle log, in append order (48 bytes each). */
  #leaves = new Map<number, { buf: Uint8Array; n: number }>();
  /** While opening: leaf hashes read from log pages, by generation. */
  #known = new Map<number, Uint8Array>();
  /** Collections whose index must be built from the records next time (a load failed). */
  #indexFromRecords = new Set<string>();
  /** Generation of every live commit page (retiring a generation deletes its pages). */
  #commitPages = new Map<number, number>();
  /** Per generation: the compact range (frontier) of its log, for checkpoint roots. */
  #appenders = new Map<number, MerkleAppender>();
  /** Trees built for proofs, by "generation/size" (cleared when the log grows). */
  #trees = new Map<string, MerkleHashTree>();
  #signerPublic?: Uint8Array;
  /** Recently read commit pages (immutable, so never stale), bounded by PAGE_CACHE_BYTES. */
  #pageCache = new Map<number, Uint8Array>();
  #pageCacheBytes = 0;
  /** Per collection: ids committed after its persisted lexical index, while the index is not loaded. */
  #indexPending = new Map<string, Set<string>>();
  /** Collections whose loaded index changed since it was last persisted. */
  #indexDirty = new Set<string>();
  #auto: { records: number; ms: number } | undefined;
  #lastCheckpointAt = Date.now();
  #autoError?: unknown;
  /** Every signed checkpoint with its decoded fields, oldest first (read from their pages on open). */
  #checkpoints: (Checkpoint & { signed: Uint8Array })[] = [];
  #readOnly = false;
  #closing = false;
  #authority?: AuthorityCheck;
  /** The migration this process is running, and the hooks its caller gave. */
  #migrationRun?: Promise<MigrationStatus>;
  #migrationHooks: { signal?: AbortSignal; onProgress?: (p: MigrationProgress) => void; authority?: AuthorityCheck } =
    {};
  #migrationError?: unknown;
  /** Source records still to visit, in (generation, leaf index) order, and the next position. */
  #migrationQueue?: SourceQueue;
  /** While an index is being rebuilt: the collection and the ids committed meanwhile. */
  #reindexing?: { name: string; touched: Set<string> };
  /** When the migration's work time was last accounted (performance.now()). */
  #migrationMark = 0;

  private constructor(
    pages: PageStore,
    keys: KeyRing,
    registry: Registry,
    manifest: ManifestJson,
    signer?: Uint8Array,
  ) {
    this.#pages = pages;
    this.#keys = keys;
    this.#registry = registry;
    this.#manifest = manifest;
    this.#signer = signer === undefined ? undefined : new Uint8Array(signer);
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
    let store: Store;
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
      const storeId = new Uint8Array(16);
      globalThis.crypto.getRandomValues(storeId);
      const manifest: ManifestJson = {
        v: 1,
        storeId: hex(storeId),
        macGeneration: g,
        nextPageId: 1,
        nextSequence: 1,
        keyring: [],
        registry: [],
        collections: {},
        defaultSuite: suite.id,
        recipients: recipients.map((r) => b64(bytes('recipients[]', r))),
      };
      store = new Store(pages, keys, registry, manifest, options.signer);
      store.#configure(options);
      await store.#enqueue(() => store.#commit([], []));
    } else {
      const json = readManifestJson(raw) as ManifestJson;
      if (json.v !== 1) throw new PqdbError('FORMAT_VERSION', `store manifest format ${json.v} is not supported`);
      const records: GenerationRecord[] = json.keyring.map((r) => ({
        generation: r.generation,
        suite: r.suite,
        salt: unb64(r.salt),
        envelopes: r.envelopes.map(unb64),
      }));
      const keys = new KeyRing(records, options.keyCacheSize);
      keys.unlock(options.unlock);
      verifyManifest(raw, keys.generationKey(json.macGeneration, 'meta', metaKey));
      store = new Store(pages, keys, new Registry({ records: json.registry }), json, options.signer);
      store.#configure(options);
      await store.#rebuild();
      // An unfinished migration resumes where its durable cursor stands.
      if (json.migration !== undefined && !store.#readOnly) store.#resumeMigration();
    }
    return store;
  }

  #configure(options: StoreOptions): void {
    this.#signerPublic = options.signerPublicKey;
    this.#readOnly = options.readOnly === true;
    if (options.authority !== undefined && typeof options.authority !== 'function')
      throw new TypeError('"authority" expected a function');
    this.#authority = options.authority;
    const auto = options.autoCheckpoint ?? {};
    if (auto !== false && this.#signer !== undefined) {
      if (typeof auto !== 'object' || auto === null)
        throw new TypeError('"autoCheckpoint" expected { records?, ms? } or false');
      const records = auto.records ?? 10_000;
      const ms = auto.ms ?? 60_000;
      if (!(records >= 1) || !(ms >= 0)) throw new RangeError('"autoCheckpoint" expected records >= 1 and ms >= 0');
      this.#auto = { records, ms };
    }
  }

  /**
   * Replays the live commit pages into the key directory. Pages and manifest change only together
   * (atomic PageStore commits), so the live pages are exactly the stored ids below nextPageId; the
   * manifest need not list them (it stays small however many commits there are).
   */
  async #rebuild(): Promise<void> {
    const orphans: number[] = [];
    // Leaf hashes persisted at the last checkpoint of each generation: replay hashes only the rest.
    const logPages = new Set<number>();
    for (const [g, refs] of Object.entries(this.#manifest.logs ?? {})) {
      if (!Array.isArray(refs))
        throw new PqdbError(
          'FORMAT_VERSION',
          'the store lists its Merkle log in a format of an earlier pre-release; recreate it',
        );
      const parts: Uint8Array[] = [];
      let at = 0;
      for (const { pageId, from, to } of refs) {
        const page = await this.#pages.readPage(pageId);
        if (page === undefined) throw new PqdbError('CORRUPTION', `log page ${pageId} is missing`);
        if (from !== at)
          throw new PqdbError('CORRUPTION', `the log pages of generation ${g} are not contiguous at leaf ${at}`);
        parts.push(decodeLogPage(page, Number(g), from, to));
        at = to;
        logPages.add(pageId);
      }
      this.#known.set(Number(g), concatBytes(parts));
    }
    for (const { pageId } of Object.values(this.#manifest.indexes ?? {})) logPages.add(pageId);
    for (const pageId of this.#manifest.checkpointPages ?? []) {
      const page = await this.#pages.readPage(pageId);
      const c = page && decodeCheckpoint(page);
      if (page === undefined || c === undefined)
        throw new PqdbError('CORRUPTION', `checkpoint page ${pageId} is missing or malformed`);
      this.#checkpoints.push({ ...c, signed: page });
      logPages.add(pageId);
    }
    for (const pageId of await this.#pages.listPages()) {
      if (logPages.has(pageId)) continue;
      if (pageId >= this.#manifest.nextPageId) {
        // Written by a commit whose manifest never landed: never acknowledged, so dropped.
        orphans.push(pageId);
        continue;
      }
      const page = await this.#pages.readPage(pageId);
      if (page === undefined) throw new PqdbError('CORRUPTION', `commit page ${pageId} is missing`);
      const g = pageGeneration(page);
      const key = this.#keys.generationKey(g, 'page', pageKey);
      this.#applyPage(pageId, g, page, decodePage(pageId, key, page));
    }
    // A retired generation has no commit pages left: its log is the persisted one.
    for (const g of this.#manifest.retired ?? []) {
      const known = this.#known.get(g) ?? new Uint8Array(0);
      this.#leaves.set(g, { buf: known, n: known.length / HASH_BYTES });
      this.#appender(g).appendHashes(known);
    }
    this.#known.clear();
    // A persisted log must agree with the last checkpoint of its generation.
    const seen = new Set<number>();
    for (const c of [...this.#checkpoints].reverse()) {
      if (seen.has(c.generation)) continue;
      seen.add(c.generation);
      const log = this.#log(c.generation);
      const root = () =>
        log.length === c.size * HASH_BYTES
          ? this.#appender(c.generation).root()
          : this.#tree(c.generation, c.size).root();
      if (log.length >= c.size * HASH_BYTES && !equalBytes(root(), c.root)) {
        throw new PqdbError(
          'CORRUPTION',
          `the log of generation ${c.generation} does not match its checkpoint of size ${c.size}`,
        );
      }
    }
    if (orphans.length > 0 && this.#readOnly) {
      this.#recovered.push(
        `${orphans.length} commit page(s) written after the last manifest (an unacknowledged commit) are ignored`,
      );
    } else if (orphans.length > 0) {
      await this.#pages.deletePages(orphans);
      this.#recovered.push(
        `dropped ${orphans.length} commit page(s) written after the last manifest (an unacknowledged commit)`,
      );
    }
  }

  /** What opening the store repaired, at this layer and in the page store below. */
  get recovery(): { clean: boolean; actions: string[] } {
    const actions = [...this.#pages.recovery.actions, ...this.#recovered];
    return { clean: actions.length === 0, actions };
  }

  /** Applies a commit page's operations to the key directory and appends its puts to the log. */
  #applyPage(pageId: number, generation: number, page: Uint8Array, ops: readonly IndexedOp[]): void {
    const storeId = this.#storeId;
    this.#commitPages.set(pageId, generation);
    const puts = ops.filter((op): op is Extract<IndexedOp, { kind: 'put' }> => op.kind === 'put');
    let log = this.#leaves.get(generation);
    if (log === undefined) this.#leaves.set(generation, (log = { buf: new Uint8Array(HASH_BYTES * 1024), n: 0 }));
    // Every put is a leaf of its generation's log (deletes leave the log as it is: it only grows).
    // Hashes persisted at a checkpoint are taken as they are; the others are computed for the whole
    // page in two kernel passes.
    const known = this.#known.get(generation);
    const leaves =
      known !== undefined && (log.n + puts.length) * HASH_BYTES <= known.length
        ? known.subarray(log.n * HASH_BYTES, (log.n + puts.length) * HASH_BYTES)
        : recordLeafHashes(
            storeId,
            puts.map((op) => {
              const record = page.subarray(op.offset, op.offset + op.length);
              return {
                collection: op.collection,
                id: op.id,
                sequence: op.sequence,
                suite: record[1],
                generation,
                record,
                governance: op.governance,
              };
            }),
          );
    if ((log.n + puts.length) * HASH_BYTES > log.buf.length) {
      const grown = new Uint8Array(Math.max(log.buf.length * 2, (log.n + puts.length) * HASH_BYTES));
      grown.set(log.buf.subarray(0, log.n * HASH_BYTES));
      log.buf = grown;
    }
    log.buf.set(leaves, log.n * HASH_BYTES);
    this.#appender(generation).appendHashes(leaves);
    this.#trees.clear();
    const indexes = this.#manifest.indexes;
    for (const op of ops) {
      const snapshot = indexes?.[op.collection];
      // A migration's copy changes no value, so a persisted index stays right for it.
      const copy = op.kind === 'put' && op.copy === true;
      if (
        !copy &&
        snapshot !== undefined &&
        pageId > snapshot.afterPage &&
        this.#collections.get(op.collection)?.lexical === undefined
      ) {
        let pending = this.#indexPending.get(op.collection);
        if (pending === undefined) this.#indexPending.set(op.collection, (pending = new Set()));
        pending.add(op.id);
      }
      let m = this.#dir.get(op.collection);
      if (m === undefined) this.#dir.set(op.collection, (m = new Map()));
      if (op.kind === 'delete') m.delete(op.id);
      else
        m.set(op.id, {
          leafIndex: log.n++,
          generation,
          pageId,
          offset: op.offset,
          length: op.length,
          sequence: op.sequence,
          governance: op.governance,
        });
    }
  }

  /** The store id's bytes, parsed once from the manifest's hex (it never changes). */
  get #storeId(): Uint8Array {
    return (this.#storeIdBytes ??= Uint8Array.from(this.#manifest.storeId.match(/../g)!, (h) => parseInt(h, 16)));
  }

  #live(): void {
    if (!this.#open) throw new PqdbError('NOT_OPEN', 'the store is closed');
  }

  #writable(): void {
    if (this.#readOnly) throw new PqdbError('READ_ONLY', 'the store was opened read-only');
  }

  #enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** The manifest as persisted now. */
  /** The manifest, keyring and registry refreshed, MACed; `without`: generations left out of the keyring. */
  #manifestBytes(without?: ReadonlySet<number>): Uint8Array {
    this.#manifest.keyring = this.#keys
      .records()
      .filter((r) => without?.has(r.generation) !== true)
      .map((r) => ({ generation: r.generation, suite: r.suite, salt: b64(r.salt), envelopes: r.envelopes.map(b64) }));
    this.#manifest.registry = this.#registry.records();
    return encodeManifest(this.#manifest, this.#keys.generationKey(this.#manifest.macGeneration, 'meta', metaKey));
  }

  /** Appends one commit page (if there are operations) and the manifest in one atomic PageStore commit. */
  async #commit(ops: PageWriteOp[], collections: Collection[], mutate?: (m: ManifestJson) => void): Promise<void> {
    const m = this.#manifest;
    const saved = JSON.stringify(m);
    mutate?.(m);
    for (const c of collections) {
      m.collections[c.name] = {
        schema: c.schema.source as Schema,
        suite: m.collections[c.name]?.suite ?? m.defaultSuite,
      };
    }
    let page: { id: number; bytes: Uint8Array } | undefined;
    let key: Uint8Array | undefined;
    let indexed: IndexedOp[] = [];
    let pageGen = 0;
    if (ops.length > 0) {
      const id = m.nextPageId++;
      const g = this.#keys.current();
      key = this.#keys.generationKey(g, 'page', pageKey);
      const encoded = encodePage(id, g, key, ops);
      page = { id, bytes: encoded.bytes };
      indexed = encoded.index;
      pageGen = g;
    }
    try {
      await this.#pages.commit({ pages: page ? [page] : [], manifest: this.#manifestBytes(), transfer: true });
    } catch (e) {
      restore(m, saved); // the commit did not happen: nothing changes
      throw e;
    }
    if (page !== undefined) {
      this.#applyPage(page.id, pageGen, page.bytes, indexed);
      this.#cachePage(page.id, page.bytes);
    }
  }

  /** @internal Checks and encodes operations, then seals and commits them as one page. */
  commitOps(pending: PendingOp[]): Promise<void> {
    this.#live();
    // Everything is checked before anything is written: a bad value writes nothing. The plaintexts
    // of the whole commit share one buffer.
    const w = new ValueWriter();
    const spans = pending.map(() => [0, 0]);
    const checked: { p: PendingOp; i: number; suiteId?: number; governance?: string }[] = pending.map((p, i) => {
      if (!(p.collection instanceof Collection) || p.collection.store !== this)
        throw new TypeError('"collection" expected a collection of this store');
      checkId(p.id);
      if (p.kind === 'delete') return { p, i };
      const start = w.n;
      spans[i] = [start, start + encodeValueInto(p.collection.schema, p.value, w)];
      const suiteId = this.#manifest.collections[p.collection.name]?.suite ?? this.#manifest.defaultSuite;
      this.#registry.checkWrite(suiteId);
      return { p, i, suiteId, governance: canonicalGovernanceText(p.governance) };
    });
    const plaintextOf = (i: number) => w.buf.subarray(spans[i][0], spans[i][1]);
    return this.#enqueue(async () => {
      this.#live();
      this.#writable();
      // The suite is read again here: a migration may have changed it since the call.
      for (const c of checked) {
        if (c.suiteId === undefined) continue;
        c.suiteId = this.#manifest.collections[c.p.collection.name]?.suite ?? this.#manifest.defaultSuite;
        this.#registry.checkWrite(c.suiteId);
      }
      // Sealing happens in commit order, so write sequences (and so nonces) are unique and ordered.
      const g = this.#keys.current();
      const base = this.#manifest.nextSequence;
      // Records seal straight into the page. The keyed AEAD is looked up as each record seals, not
      // before: the key cache may evict (and wipe) an entry when a commit holds more governance
      // states than it has room for.
      const ops: PageWriteOp[] = checked.map((c, i) => {
        const sequence = base + i;
        const { collection, id } = c.p;
        if (c.p.kind === 'delete') return { kind: 'delete', collection: collection.name, id, sequence };
        const address = { collection: collection.name, id, generation: g, sequence };
        return {
          kind: 'put',
          collection: collection.name,
          id,
          sequence,
          governance: c.governance!,
          length: sealedLength(c.suiteId!, spans[c.i][1] - spans[c.i][0]),
          seal: (slot: Uint8Array) =>
            void sealRecord(
              c.suiteId!,
              this.#keys.aeadFor(c.suiteId!, g, c.governance!),
              address,
              plaintextOf(c.i),
              0,
              slot,
            ),
        };
      });
      this.#manifest.nextSequence = base + ops.length;
      try {
        await this.#commit(ops, [...new Set(checked.map((c) => c.p.collection))], (m) =>
          this.#accountWrites(
            m,
            checked.map((c) => c.p),
          ),
        );
      } catch (e) {
        this.#manifest.nextSequence = base;
        throw e;
      }
      // Built lexical indexes follow the commit (indexes not built yet will read the records).
      const re = this.#reindexing;
      for (const c of checked) {
        if (re !== undefined && re.name === c.p.collection.name) re.touched.add(c.p.id);
        const lexical = c.p.collection.lexical;
        if (lexical === undefined) continue;
        const index = await lexical;
        if (c.p.kind === 'delete') index.remove(c.p.id);
        else index.update(c.p.id, c.p.value);
        this.#indexDirty.add(c.p.collection.name);
      }
      this.#maybeCheckpoint();
    });
  }

  /** Queues an automatic checkpoint when enough records or time passed since the last one. */
  #maybeCheckpoint(): void {
    if (this.#auto === undefined || this.#signerPublic === undefined) return;
    const g = this.#keys.current();
    const size = this.#appender(g).size;
    const last = this.#lastCheckpoint(g)?.size ?? 0;
    const due =
      size - last >= this.#auto.records || (size > last && Date.now() - this.#lastCheckpointAt >= this.#auto.ms);
    if (!due) return;
    this.#lastCheckpointAt = Date.now(); // one queued checkpoint at a time
    this.checkpoint().then(
      () => (this.#autoError = undefined),
      (e) => (this.#autoError = e),
    );
  }

  /** The newest checkpoint of generation `g`. */
  #lastCheckpoint(g: number): Checkpoint | undefined {
    return lastWhere(this.#checkpoints, (c) => c.generation === g);
  }

  /** @internal */
  has(collection: string, id: string): boolean {
    return this.#dir.get(collection)?.has(id) ?? false;
  }

  /** @internal Number of live records of a collection. */
  count(collection: string): number {
    return this.#dir.get(collection)?.size ?? 0;
  }

  /** @internal Sorted ids with a prefix. */
  ids(collection: string, prefix: string): string[] {
    const m = this.#dir.get(collection);
    if (m === undefined) return [];
    return [...m.keys()].filter((id) => id.startsWith(prefix)).sort();
  }

  /** @internal */
  async read(c: Collection, id: string): Promise<Value | undefined> {
    this.#live();
    checkId(id);
    const loc = this.#dir.get(c.name)?.get(id);
    if (loc === undefined) return undefined;
    const page = await this.#page(loc.pageId);
    const blob = page.subarray(loc.offset, loc.offset + loc.length);
    const { plaintext, header } = openRecord(blob, c.name, id, (suite, generation) => {
      this.#registry.checkRead(suite.id);
      return this.#keys.aeadFor(suite.id, generation, loc.governance);
    });
    if (header.sequence !== loc.sequence)
      throw new PqdbError('CORRUPTION', `record ${c.name}/${id} is not the version its index names`);
    return decodeValue(c.schema, plaintext);
  }

  /** A commit page, from the cache or the page store. */
  async #page(pageId: number): Promise<Uint8Array> {
    const hit = this.#pageCache.get(pageId);
    if (hit !== undefined) {
      this.#pageCache.delete(pageId);
      this.#pageCache.set(pageId, hit);
      return hit;
    }
    const page = await this.#pages.readPage(pageId);
    if (page === undefined) throw new PqdbError('CORRUPTION', `commit page ${pageId} is missing`);
    this.#cachePage(pageId, page);
    return page;
  }

  /** Adds a commit page to the cache, evicting the least recently used beyond PAGE_CACHE_BYTES. */
  #cachePage(pageId: number, page: Uint8Array): void {
    if (this.#pageCache.has(pageId)) return;
    this.#pageCache.set(pageId, page);
    this.#pageCacheBytes += page.length;
    while (this.#pageCacheBytes > PAGE_CACHE_BYTES && this.#pageCache.size > 1)
      this.#uncachePage(this.#pageCache.keys().next().value as number);
  }

  #uncachePage(pageId: number): void {
    const p = this.#pageCache.get(pageId);
    if (p === undefined) return;
    this.#pageCache.delete(pageId);
    this.#pageCacheBytes -= p.length;
  }

  /** Generation g's key for lexical index pages. */
  #lexicalKey(g: number): Uint8Array {
    return this.#keys.generationKey(g, 'lexical', lexicalKey);
  }

  /**
   * Reads and opens collection `name`'s index page `pageId`: its plaintext (the caller wipes it)
   * and the generation it is sealed under; undefined, without opening it, when that is `skip`.
   * @throws PqdbError CORRUPTION when the page is missing; AUTH_FAILED when it does not open.
   */
  async #openIndexPage(
    name: string,
    pageId: number,
    skip?: number,
  ): Promise<{ generation: number; bytes: Uint8Array } | undefined> {
    const page = await this.#pages.readPage(pageId);
    if (page === undefined) throw new PqdbError('CORRUPTION', `lexical index page ${pageId} is missing`);
    const generation = indexPageGeneration(page);
    if (generation === skip) return undefined;
    return {
      generation,
      bytes: await decodeIndexPageAsync(pageId, this.#lexicalKey(generation), name, page, yieldToEventLoop),
    };
  }

  /** A new index page of collection `name` holding `plaintext`, sealed under generation g (its id taken from the manifest). */
  async #sealIndexPage(
    name: string,
    g: number,
    plaintext: Uint8Array | readonly Uint8Array[],
  ): Promise<{ id: number; bytes: Uint8Array }> {
    const id = this.#manifest.nextPageId++;
    return { id, bytes: await encodeIndexPage(id, g, this.#lexicalKey(g), name, plaintext, yieldToEventLoop) };
  }

  /** Adds to `pages` a log page of generation g's leaves not yet in one (if any), and its entry to `logs`. */
  async #pushLogPage(
    g: number,
    logs: Record<string, LogPageRef[]>,
    pages: { id: number; bytes: Uint8Array }[],
  ): Promise<void> {
    const log = this.#log(g);
    const size = log.length / HASH_BYTES;
    const persistedTo = logs[g]?.at(-1)?.to ?? 0;
    if (size <= persistedTo) return;
    const id = this.#manifest.nextPageId++;
    pages.push({
      id,
      bytes: await encodeLogPage(g, persistedTo, log.subarray(persistedTo * HASH_BYTES), yieldToEventLoop),
    });
    logs[g] = [...(logs[g] ?? []), { pageId: id, from: persistedTo, to: size }];
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
    const existing = this.#manifest.collections[name];
    if (
      existing !== undefined &&
      JSON.stringify(compileSchema(existing.schema).source) !== JSON.stringify(schema.source)
    ) {
      throw new RangeError(`collection "${name}" exists with another schema`);
    }
    if (options.suite !== undefined && existing === undefined) {
      // A collection names the suite it writes with; a decrypt-only suite becomes active for it
      // (persisted with the collection's first commit). Quarantined and retired suites stay as they are.
      const id = suiteOf(options.suite).id;
      if (this.#registry.state(id) === 'decrypt-only') this.#registry.setState(id, 'active');
      this.#manifest.collections[name] = { schema: schema.source as Schema, suite: id };
    }
    const text = options.index?.text ?? [];
    if (!Array.isArray(text) || text.some((f) => schema.fields.find((x) => x.name === f)?.type !== 'string')) {
      throw new TypeError('"index.text" expected names of string fields of the schema');
    }
    let c = this.#collections.get(name);
    if (c === undefined) {
      this.#collections.set(name, (c = new Collection(this, name, schema, text)));
      // The index of an empty collection starts built: commits keep it current from the first put.
      if (text.length > 0 && this.count(name) === 0 && this.#manifest.indexes?.[name] === undefined) {
        c.lexical = Promise.resolve(new LexicalIndex({ text }));
      }
    }
    return c;
  }

  /**
   * @internal The collection's lexical index, loaded or built on first use. A failed load is not
   * kept: the next use builds the index from the records (the ids to re-index after the persisted
   * page may be lost with the failed attempt).
   */
  lexicalOf(c: Collection): Promise<LexicalIndex> {
    return (c.lexical ??= this.buildIndex(c).catch((e: unknown) => {
      c.lexical = undefined;
      this.#indexFromRecords.add(c.name);
      throw e;
    }));
  }

  /**
   * @internal A collection's lexical index, in memory (it holds plaintext terms): loaded from the
   * sealed index page of the last checkpoint and brought up to date with the ids committed since,
   * or built from the records when there is none (or it indexes other fields).
   */
  async buildIndex(c: Collection): Promise<LexicalIndex> {
    const snapshot = this.#manifest.indexes?.[c.name];
    const pending = this.#indexPending.get(c.name) ?? new Set<string>();
    this.#indexPending.delete(c.name);
    const sameFields =
      snapshot?.fields === undefined ||
      (snapshot.fields.length === c.indexed.length && c.indexed.every((f) => snapshot.fields!.includes(f)));
    if (snapshot !== undefined && sameFields && !this.#indexFromRecords.has(c.name)) {
      const { bytes } = (await this.#openIndexPage(c.name, snapshot.pageId))!;
      let index: LexicalIndex | undefined;
      try {
        index = await LexicalIndex.deserializeAsync(bytes, { text: c.indexed }, yieldToEventLoop);
      } catch (e) {
        if (!(e instanceof RangeError)) throw e; // other fields than persisted: build anew below
      } finally {
        bytes.fill(0);
      }
      if (index !== undefined) {
        for (const id of pending) {
          const value = await this.read(c, id);
          if (value === undefined) index.remove(id);
          else index.update(id, value);
        }
        if (pending.size > 0) this.#indexDirty.add(c.name);
        return index;
      }
    }
    const index = new LexicalIndex({ text: c.indexed });
    for (const id of [...(this.#dir.get(c.name)?.keys() ?? [])]) index.update(id, await this.read(c, id));
    this.#indexDirty.add(c.name);
    this.#indexFromRecords.delete(c.name);
    return index;
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
    if (ops.length > 0) await this.commitOps(ops);
  }

  /** The crypto registry: list states, change them (durably). */
  get registry(): { list(): RegistryEntry[]; setState(suite: SuiteName | number, state: SuiteState): Promise<void> } {
    return {
      list: () => this.#registry.list(),
      setState: (suite, state) =>
        this.#enqueue(async () => {
          this.#live();
          this.#writable();
          const inUse =
            [...this.#dir.values()].some((m) => m.size > 0) &&
            Object.values(this.#manifest.collections).some((c) => c.suite === suiteOf(suite).id);
          const before = this.#registry.records();
          this.#registry.setState(suite, state, { inUse });
          try {
            await this.#commit([], []);
          } catch (e) {
            this.#registry = new Registry({ records: before });
            throw e;
          }
        }),
    };
  }

  /** Wraps the store's roots for another recipient (no record is re-encrypted). */
  addRecipient(publicKey: Uint8Array): Promise<void> {
    return this.#enqueue(async () => {
      this.#live();
      this.#writable();
      this.#keys.addRecipient(publicKey);
      const b = b64(publicKey);
      await this.#commit([], [], (m) => void (m.recipients = [...new Set([...(m.recipients ?? []), b])]));
    });
  }

  /** Drops a recipient's envelopes. */
  removeRecipient(publicKey: Uint8Array): Promise<void> {
    return this.#enqueue(async () => {
      this.#live();
      this.#writable();
      this.#keys.removeRecipient(publicKey);
      const b = b64(publicKey);
      await this.#commit([], [], (m) => void (m.recipients = (m.recipients ?? []).filter((x) => x !== b)));
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
    return {
      ...(this.#autoError !== undefined
        ? { autoCheckpointError: String((this.#autoError as Error)?.message ?? this.#autoError) }
        : {}),
      storeId: this.#manifest.storeId,
      storage: this.#pages.kind,
      generations: this.#keys.generations(),
      collections: Object.fromEntries([...this.#dir.entries()].map(([k, m]) => [k, m.size])),
      commits: this.#manifest.nextPageId - 1,
    };
  }

  // ---- verifiable batches (DESIGN §7) -------------------------------------------------------------

  /** The leaf hashes of a generation's log (48·n bytes). */
  #log(generation: number): Uint8Array {
    const log = this.#leaves.get(generation);
    return log === undefined ? new Uint8Array(0) : log.buf.subarray(0, log.n * HASH_BYTES);
  }

  /** The compact range of a generation's whole log (its root in O(log n)). */
  #appender(generation: number): MerkleAppender {
    let a = this.#appenders.get(generation);
    if (a === undefined) this.#appenders.set(generation, (a = new MerkleAppender()));
    return a;
  }

  /** The tree of the first `size` leaves of a generation (cached: proofs for many records reuse it). */
  #tree(generation: number, size: number): MerkleHashTree {
    const key = `${generation}/${size}`;
    let t = this.#trees.get(key);
    if (t === undefined) {
      t = new MerkleHashTree(this.#log(generation).subarray(0, size * HASH_BYTES));
      if (this.#trees.size >= 4) this.#trees.clear();
      this.#trees.set(key, t);
    }
    return t;
  }

  /**
   * Signs a checkpoint of the current generation's log (store id, generation, tree size, root,
   * hash of the previous checkpoint) with ML-DSA-87 and stores it durably.
   * @throws PqdbError NOT_OPEN; TypeError when the store was opened without signer keys.
   */
  checkpoint(): Promise<Checkpoint & { signed: Uint8Array }> {
    return this.#enqueue(async () => {
      this.#live();
      this.#writable();
      if (this.#signer === undefined || this.#signerPublic === undefined)
        throw new TypeError('checkpoints need the "signer" and "signerPublicKey" options');
      const g = this.#keys.current();
      // The root comes from the generation's compact range, kept current by every commit: no
      // rehashing of the log, however long it is.
      const tree = this.#appender(g);
      const list = this.#manifest.checkpointPages ?? [];
      const last = this.#checkpoints.at(-1);
      const previous = last !== undefined ? checkpointHash(last.signed) : new Uint8Array(48);
      const c: Checkpoint = { storeId: this.#storeId, generation: g, size: tree.size, root: tree.root(), previous };
      const signed = signCheckpoint(c, this.#signer, this.#signerPublic);
      // The log's leaf hashes go with the checkpoint, so reopening does not rehash every record.
      const logs = { ...(this.#manifest.logs ?? {}) };
      const saved = {
        checkpointPages: list,
        logs: this.#manifest.logs,
        indexes: this.#manifest.indexes,
        nextPageId: this.#manifest.nextPageId,
      };
      const afterPage = this.#manifest.nextPageId - 1;
      const checkpointPage = { id: this.#manifest.nextPageId++, bytes: signed };
      const pages = [checkpointPage];
      const deletes: number[] = [];
      // Only the leaves added since the last log page are written: a checkpoint costs what it adds.
      await this.#pushLogPage(g, logs, pages);
      // Lexical indexes changed since they were last persisted go with the checkpoint, sealed.
      const indexes = { ...(this.#manifest.indexes ?? {}) };
      const dirty = [...this.#indexDirty];
      for (const name of dirty) {
        const lexical = this.#collections.get(name)?.lexical;
        if (lexical === undefined) continue;
        const parts = await (await lexical).serializeParts(INDEX_PART_BYTES, yieldToEventLoop);
        const page = await this.#sealIndexPage(name, g, parts);
        for (const p of parts) p.fill(0);
        pages.push(page);
        if (indexes[name] !== undefined) deletes.push(indexes[name].pageId);
        indexes[name] = { pageId: page.id, afterPage, fields: [...(await lexical).fields] };
      }
      this.#manifest.checkpointPages = [...list, checkpointPage.id];
      this.#manifest.logs = logs;
      this.#manifest.indexes = indexes;
      try {
        await this.#pages.commit({ pages, deletes, manifest: this.#manifestBytes(), transfer: true });
      } catch (e) {
        Object.assign(this.#manifest, saved);
        throw e;
      }
      for (const name of dirty) this.#indexDirty.delete(name);
      this.#checkpoints.push({ ...c, signed });
      this.#lastCheckpointAt = Date.now();
      return { ...c, signed };
    });
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
    return this.#enqueue(async () => {
      this.#live();
      this.#writable();
      if (this.#manifest.migration !== undefined)
        throw new PqdbError(
          'GENERATION_IN_USE',
          'a migration is under way: retire the older generations once it is done',
        );
      const current = this.#keys.current();
      const old = this.#keys.generations().filter((g) => g < current);
      if (old.length === 0) return [];
      let inUse = 0;
      let example = '';
      for (const [name, m] of this.#dir) {
        let n = 0;
        for (const [id, loc] of m) {
          if (++n % 8192 === 0) await yieldToEventLoop();
          if (loc.generation === current) continue;
          if (inUse++ === 0) example = `${name}/${id} (generation ${loc.generation})`;
        }
      }
      if (inUse > 0)
        throw new PqdbError(
          'GENERATION_IN_USE',
          `${inUse} live record(s) are still in an older generation, such as ${example}: migrate them (or delete them) first`,
        );
      const retiring = new Set(old);
      const m = this.#manifest;
      const saved = JSON.stringify(m);
      const afterPage = m.nextPageId - 1; // every commit page so far: what an index persisted here covers
      const pages: { id: number; bytes: Uint8Array }[] = [];
      const deletes = [...this.#commitPages].filter(([, g]) => retiring.has(g)).map(([id]) => id);
      // Each retired log is kept whole in log pages: its commit pages, which it could be recomputed
      // from, are going.
      const logs = { ...(m.logs ?? {}) };
      for (const g of old) await this.#pushLogPage(g, logs, pages);
      // A persisted index is made whole by re-indexing the ids written after it, found in the
      // commit pages after its `afterPage`. If some of those pages are going, the index is brought
      // up to date (loaded if need be) and persisted now; otherwise a page sealed under a retiring
      // generation is sealed again, unchanged.
      const indexes = { ...(m.indexes ?? {}) };
      const lastDeleted = deletes.reduce((a, b) => Math.max(a, b), 0);
      const persisted: string[] = [];
      for (const [name, snapshot] of Object.entries(indexes)) {
        if (snapshot.afterPage < lastDeleted) {
          let c = this.#collections.get(name);
          const fields = c !== undefined && c.indexed.length > 0 ? c.indexed : (snapshot.fields ?? []);
          if (c === undefined || c.indexed.length === 0) {
            if (fields.length === 0 || m.collections[name] === undefined) {
              deletes.push(snapshot.pageId); // nothing to load it with: rebuilt from the records when next used
              delete indexes[name];
              continue;
            }
            c = new Collection(this, name, compileSchema(m.collections[name].schema), fields);
            this.#collections.set(name, c);
          }
          const index = await this.lexicalOf(c);
          const parts = await index.serializeParts(INDEX_PART_BYTES, yieldToEventLoop);
          try {
            const page = await this.#sealIndexPage(name, current, parts);
            pages.push(page);
            indexes[name] = { pageId: page.id, afterPage, fields: [...index.fields] };
          } finally {
            for (const p of parts) p.fill(0);
          }
          deletes.push(snapshot.pageId);
          persisted.push(name);
          continue;
        }
        // Older generations are all retiring, so only a page of the current one stays as it is.
        const opened = await this.#openIndexPage(name, snapshot.pageId, current);
        if (opened === undefined) continue;
        try {
          const page = await this.#sealIndexPage(name, current, opened.bytes);
          pages.push(page);
          indexes[name] = { ...snapshot, pageId: page.id };
        } finally {
          opened.bytes.fill(0);
        }
        deletes.push(snapshot.pageId);
      }
      m.logs = logs;
      m.indexes = indexes;
      m.retired = [...(m.retired ?? []), ...old];
      if (retiring.has(m.macGeneration)) m.macGeneration = current;
      try {
        await this.#pages.commit({ pages, deletes, manifest: this.#manifestBytes(retiring), transfer: true });
      } catch (e) {
        restore(m, saved);
        throw e;
      }
      for (const g of old) this.#keys.discardGeneration(g);
      for (const name of persisted) this.#indexDirty.delete(name);
      for (const id of deletes) {
        this.#commitPages.delete(id);
        this.#uncachePage(id);
      }
      return old;
    });
  }

  /** Every signed checkpoint, oldest first. */
  checkpoints(): (Checkpoint & { signed: Uint8Array })[] {
    return this.#checkpoints.map((c) => ({ ...c, signed: c.signed.slice() }));
  }

  /**
   * Consistency proof between two checkpoints (by position in checkpoints()) of one generation.
   * @throws RangeError for unknown positions or checkpoints of different generations.
   */
  consistencyProof(from: number, to: number): Uint8Array[] {
    const list = this.checkpoints();
    const a = list[from];
    const b = list[to];
    if (a === undefined || b === undefined || a.generation !== b.generation || a.size > b.size)
      throw new RangeError('"from" and "to" expected checkpoints of one generation, oldest first');
    return this.#tree(b.generation, b.size).consistencyProof(a.size);
  }

  /** @internal A self-verifying export of one record (checkpointing first when none covers it). */
  async exportSealed(c: Collection, id: string): Promise<Uint8Array> {
    this.#live();
    checkId(id);
    const loc = this.#dir.get(c.name)?.get(id);
    if (loc === undefined) throw new RangeError(`no record "${id}" in collection "${c.name}"`);
    let cp = lastWhere(this.#checkpoints, (x) => x.generation === loc.generation && x.size > loc.leafIndex);
    if (cp === undefined) cp = await this.checkpoint();
    if (cp.generation !== loc.generation || cp.size <= loc.leafIndex)
      throw new PqdbError('NOT_OPEN', 'no checkpoint covers this record');
    const page = await this.#page(loc.pageId);
    const record = page.slice(loc.offset, loc.offset + loc.length);
    const proof = this.#tree(loc.generation, cp.size).inclusionProof(loc.leafIndex);
    return encodeExport({
      leafData: leafData(this.#storeId, c.name, id, loc.sequence, record[1], loc.generation, record, loc.governance),
      record,
      governance: loc.governance,
      leafIndex: loc.leafIndex,
      proof,
      signedCheckpoint: cp.signed,
    });
  }

  /** The data key of (suite, generation, governance) for opening exports (see openSealed). */
  dataKeyFor(
    suite: number,
    generation: number,
    governance: string,
  ): { key: Uint8Array; aead: ReturnType<KeyRing['aeadFor']>['aead'] } {
    this.#live();
    return this.#keys.aeadFor(suite, generation, governance);
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
    if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
    const target = suiteOf(options.to);
    const chunk = options.chunkRecords ?? 256;
    if (!Number.isInteger(chunk) || chunk < 1 || chunk > 100_000)
      throw new RangeError('"chunkRecords" expected an integer in 1..100000');
    if (options.collection !== undefined && this.#manifest.collections[options.collection] === undefined)
      throw new RangeError(`no collection "${options.collection}"`);
    if (options.authority !== undefined && typeof options.authority !== 'function')
      throw new TypeError('"authority" expected a function');
    const hooks = { signal: options.signal, onProgress: options.onProgress, authority: options.authority };
    const current = this.#manifest.migration;
    if (current !== undefined) {
      const same =
        current.to === target.id &&
        (options.collection === undefined ? true : current.collections.includes(options.collection));
      if (!same)
        return Promise.reject(
          new RangeError(
            `a migration of ${current.collections.join(', ')} to ${suiteOf(current.to).name} is under way`,
          ),
        );
      this.#migrationHooks = hooks;
      return (this.#migrationRun ??= this.#runMigration());
    }
    this.#migrationHooks = hooks;
    const run = this.#enqueue(() => this.#prepareMigration(target.id, options.collection, chunk)).then(() =>
      this.#runMigration(),
    );
    this.#migrationRun = run;
    return run;
  }

  /** The migration under way (or the last finished one), with its accounting; undefined if none. */
  migration(): MigrationStatus | undefined {
    const m = this.#manifest.migration ?? this.#manifest.migrations?.at(-1);
    return m === undefined ? undefined : this.#status(m);
  }

  #status(m: MigrationRecord): MigrationStatus {
    return {
      phase: m.phase,
      ...m.counts,
      collections: [...m.collections],
      to: suiteOf(m.to).name,
      generation: m.generation,
      cursor: m.cursor,
      startedAt: m.startedAt,
      finishedAt: m.finishedAt,
      workMs: m.workMs,
      phaseMs: { ...m.phaseMs },
      failures: [...m.failures],
      running: this.#migrationRun !== undefined && this.#manifest.migration === m,
    };
  }

  /** Opens generation g+1 under the target suite and records the migration, in one commit. */
  async #prepareMigration(to: number, collection: string | undefined, chunkRecords: number): Promise<void> {
    this.#live();
    this.#writable();
    const state = this.#registry.state(to);
    if (state === 'quarantined' || state === 'retired') this.#registry.checkWrite(to); // refuses
    const listed = (this.#manifest.recipients ?? []).map(unb64);
    const sole = listed.length === 0 ? this.#keys.soleRecipient() : undefined;
    const recipients = sole !== undefined ? [sole] : listed;
    if (recipients.length === 0) {
      throw new TypeError(
        "the store does not list its recipients' public keys: add them with addRecipient(publicKey) before migrating",
      );
    }
    const names = collection !== undefined ? [collection] : Object.keys(this.#manifest.collections);
    const fromSuites = [...new Set(names.map((n) => this.#manifest.collections[n].suite))];
    const total = names.reduce((n, name) => n + (this.#dir.get(name)?.size ?? 0), 0);
    const registry = this.#registry.records();
    const g = this.#keys.createGeneration(to, recipients);
    if (state === 'decrypt-only') this.#registry.setState(to, 'active');
    const id = new Uint8Array(8);
    globalThis.crypto.getRandomValues(id);
    try {
      await this.#commit([], [], (m) => {
        for (const n of names) m.collections[n] = { ...m.collections[n], suite: to };
        if (collection === undefined) m.defaultSuite = to;
        if (sole !== undefined) m.recipients = [b64(sole)];
        m.migration = {
          id: hex(id),
          collections: names,
          to,
          generation: g,
          fromSuites,
          phase: 'copying',
          cursor: null,
          counts: { copied: 0, superseded: 0, deleted: 0, withheld: 0, failed: 0, inserted: 0, total },
          startedAt: new Date().toISOString(),
          workMs: 0,
          phaseMs: {},
          failures: [],
          chunkRecords,
        };
      });
    } catch (e) {
      this.#keys.discardGeneration(g);
      this.#registry = new Registry({ records: registry });
      throw e;
    }
    this.#migrationQueue = undefined;
  }

  #resumeMigration(): void {
    this.#migrationRun = this.#runMigration();
    this.#migrationRun.catch((e) => (this.#migrationError = e));
  }

  /** Runs the migration's remaining phases; each step is one queued task, so writes interleave. */
  async #runMigration(): Promise<MigrationStatus> {
    this.#migrationMark = performance.now();
    try {
      for (;;) {
        const m = this.#manifest.migration;
        if (m === undefined) throw new PqdbError('NOT_OPEN', 'no migration under way');
        if (this.#closing)
          throw new PqdbError('NOT_OPEN', 'the store is closing; the migration resumes when it is reopened');
        if (this.#migrationHooks.signal?.aborted)
          throw new PqdbError('ABORTED', 'the migration was paused; migrate() or reopening resumes it');
        const phase = m.phase;
        let next: MigrationPhase | undefined;
        if (phase === 'copying') next = (await this.#enqueue(() => this.#copyChunk())) ? undefined : 'indexing';
        else if (phase === 'indexing') {
          await this.#rebuildIndexes(m);
          next = 'verifying';
        } else if (phase === 'verifying') {
          await this.#verifyMigrated(m);
          next = 'activating';
        } else if (phase === 'activating') {
          if (this.#signer !== undefined && this.#signerPublic !== undefined) await this.checkpoint();
          next = 'done';
        }
        if (next !== undefined) await this.#enqueue(() => this.#advance(next!));
        this.#report();
        if (next === 'done') return this.#status(this.#manifest.migrations!.at(-1)!);
        await yieldToEventLoop(); // let reads and other work in
      }
    } finally {
      this.#migrationRun = undefined;
      this.#migrationQueue = undefined;
    }
  }

  #report(): void {
    const m = this.#manifest.migration ?? this.#manifest.migrations?.at(-1);
    if (m !== undefined) this.#migrationHooks.onProgress?.({ phase: m.phase, ...m.counts });
  }

  /** Persists the move to the next phase (and, at 'done', activation: registry, history). */
  async #advance(next: MigrationPhase): Promise<void> {
    this.#live();
    const registry = this.#registry.records();
    try {
      await this.#commit([], [], (mm) => {
        const r = mm.migration!;
        this.#accountWork(r);
        r.phase = next;
        if (next !== 'done') return;
        r.finishedAt = new Date().toISOString();
        // Activation: old suites no longer used by any collection stop writing (they keep decrypting).
        for (const s of r.fromSuites) {
          const used = s === r.to || s === mm.defaultSuite || Object.values(mm.collections).some((c) => c.suite === s);
          if (!used && this.#registry.state(s) === 'active') this.#registry.setState(s, 'decrypt-only');
        }
        mm.migrations = [...(mm.migrations ?? []), r];
        delete mm.migration;
      });
    } catch (e) {
      this.#registry = new Registry({ records: registry });
      throw e;
    }
  }

  /**
   * Adds the wall-clock time since the last accounting to the migration's work time (and its
   * phase's): the time a process spent migrating, commits included; an outage adds nothing.
   */
  #accountWork(r: MigrationRecord): void {
    const now = performance.now();
    const ms = now - this.#migrationMark;
    this.#migrationMark = now;
    r.workMs += ms;
    r.phaseMs[r.phase] = (r.phaseMs[r.phase] ?? 0) + ms;
  }

  /** Source records to visit: live records of the migrated collections outside the target generation, after the cursor. */
  async #sourceQueue(m: MigrationRecord): Promise<SourceQueue> {
    // Per source generation, slot = leaf index: the id and its collection's number.
    const byGen = new Map<number, { ids: (string | undefined)[]; cols: Uint32Array; n: number }>();
    let n = 0;
    for (let c = 0; c < m.collections.length; c++) {
      // Built in steps: entries changed meanwhile are checked again when the copy reaches them.
      for (const [id, loc] of this.#dir.get(m.collections[c]) ?? []) {
        if (++n % 2048 === 0) await yieldToEventLoop();
        if (loc.generation === m.generation) continue;
        if (
          m.cursor !== null &&
          (loc.generation < m.cursor[0] || (loc.generation === m.cursor[0] && loc.leafIndex <= m.cursor[1]))
        )
          continue;
        let slots = byGen.get(loc.generation);
        if (slots === undefined) {
          const size = Math.max(this.#log(loc.generation).length / HASH_BYTES, loc.leafIndex + 1);
          byGen.set(
            loc.generation,
            (slots = { ids: new Array<string | undefined>(size), cols: new Uint32Array(size), n: 0 }),
          );
        }
        slots.ids[loc.leafIndex] = id;
        slots.cols[loc.leafIndex] = c;
        slots.n++;
      }
    }
    let total = 0;
    for (const slots of byGen.values()) total += slots.n;
    const q: SourceQueue = {
      ids: new Array<string>(total),
      gens: new Int32Array(total),
      leaves: new Int32Array(total),
      cols: new Uint32Array(total),
      names: m.collections,
      pos: 0,
    };
    let k = 0;
    for (const g of [...byGen.keys()].sort((a, b) => a - b)) {
      const slots = byGen.get(g)!;
      for (let i = 0; i < slots.ids.length; i++) {
        if (i % 8192 === 8191) await yieldToEventLoop();
        const id = slots.ids[i];
        if (id === undefined) continue;
        q.ids[k] = id;
        q.gens[k] = g;
        q.leaves[k] = i;
        q.cols[k] = slots.cols[i];
        k++;
      }
    }
    return q;
  }

  /** Copies up to chunkRecords source records into the target generation in one commit; false when none are left. */
  async #copyChunk(): Promise<boolean> {
    this.#live();
    const m = this.#manifest.migration!;
    const queue = (this.#migrationQueue ??= await this.#sourceQueue(m));
    const authority = this.#migrationHooks.authority ?? this.#authority;
    const g = this.#keys.current();
    if (g !== m.generation)
      throw new PqdbError('CORRUPTION', `the migration targets generation ${m.generation}, the store writes ${g}`);
    const base = this.#manifest.nextSequence;
    const ops: PageWriteOp[] = [];
    const plaintexts: Uint8Array[] = [];
    const delta = { copied: 0, withheld: 0, failed: 0 };
    const failures: string[] = [];
    let cursor = m.cursor;
    let visited = 0;
    while (ops.length < m.chunkRecords && queue.pos < queue.ids.length) {
      // Reads get in every 64 records (this runs inside the commit queue: no write changes the
      // directory meanwhile).
      if (++visited % 64 === 0) await yieldToEventLoop();
      const at = queue.pos++;
      const it = {
        g: queue.gens[at],
        leaf: queue.leaves[at],
        collection: queue.names[queue.cols[at]],
        id: queue.ids[at],
      };
      cursor = [it.g, it.leaf];
      const loc = this.#dir.get(it.collection)?.get(it.id);
      // Updated or deleted since the queue was built: counted when that write committed.
      if (loc === undefined || loc.generation !== it.g || loc.leafIndex !== it.leaf) continue;
      let plaintext: Uint8Array;
      try {
        const page = await this.#page(loc.pageId);
        const opened = openRecord(
          page.subarray(loc.offset, loc.offset + loc.length),
          it.collection,
          it.id,
          (suite, generation) => this.#keys.aeadFor(suite.id, generation, loc.governance),
        );
        if (opened.header.sequence !== loc.sequence)
          throw new PqdbError('CORRUPTION', 'the record is not the version its index names');
        plaintext = opened.plaintext;
      } catch (e) {
        delta.failed++;
        if (m.failures.length + failures.length < 100)
          failures.push(`${it.collection}/${it.id}: ${e instanceof Error ? e.message : String(e)}`);
        continue;
      }
      if (
        authority !== undefined &&
        !authority({ collection: it.collection, id: it.id, governance: JSON.parse(loc.governance) as Governance })
      ) {
        plaintext.fill(0);
        delta.withheld++;
        continue;
      }
      plaintexts.push(plaintext);
      const sequence = base + ops.length;
      const address = { collection: it.collection, id: it.id, generation: g, sequence };
      const governance = loc.governance;
      ops.push({
        kind: 'put',
        copy: true,
        collection: it.collection,
        id: it.id,
        sequence,
        governance,
        length: sealedLength(m.to, plaintext.length),
        // The key is looked up as the record seals (see commitOps): reads between here and the
        // commit may evict and wipe a cached one.
        seal: (slot: Uint8Array) =>
          void sealRecord(m.to, this.#keys.aeadFor(m.to, g, governance), address, plaintext, 0, slot),
      });
      delta.copied++;
    }
    this.#manifest.nextSequence = base + ops.length;
    try {
      await this.#commit(ops, [], (mm) => {
        const r = mm.migration!;
        r.cursor = cursor;
        r.counts.copied += delta.copied;
        r.counts.withheld += delta.withheld;
        r.counts.failed += delta.failed;
        r.failures.push(...failures);
        this.#accountWork(r);
      });
    } catch (e) {
      this.#manifest.nextSequence = base;
      this.#migrationQueue = undefined; // rebuilt from the durable cursor on the next step
      throw e;
    } finally {
      for (const p of plaintexts) p.fill(0);
    }
    return queue.pos < queue.ids.length;
  }

  /** Counts writes to migrated collections that reach records before the copy does (inside the commit). */
  #accountWrites(m: ManifestJson, ops: readonly PendingOp[]): void {
    const r = m.migration;
    if (r === undefined || r.phase === 'done') return;
    const seen = new Set<string>();
    for (const op of ops) {
      const name = op.collection.name;
      if (!r.collections.includes(name)) continue;
      const key = `${name}\u0000${op.id}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const loc = this.#dir.get(name)?.get(op.id);
      if (loc === undefined) {
        if (op.kind === 'put') {
          r.counts.inserted++;
          r.counts.total++;
        }
        continue;
      }
      const ahead =
        loc.generation !== r.generation &&
        (r.cursor === null ||
          loc.generation > r.cursor[0] ||
          (loc.generation === r.cursor[0] && loc.leafIndex > r.cursor[1]));
      if (!ahead || r.phase !== 'copying') continue;
      if (op.kind === 'put') r.counts.superseded++;
      else r.counts.deleted++;
    }
  }

  /** Rebuilds the lexical index of each migrated collection opened with one, from the records, in small steps. */
  async #rebuildIndexes(m: MigrationRecord): Promise<void> {
    for (const name of m.collections) {
      // The fields: those the collection was opened with, else those of its persisted index.
      let c = this.#collections.get(name);
      const snapshot = this.#manifest.indexes?.[name];
      const fields = c !== undefined && c.indexed.length > 0 ? c.indexed : (snapshot?.fields ?? []);
      if (fields.length === 0) continue;
      if (c === undefined)
        this.#collections.set(
          name,
          (c = new Collection(this, name, compileSchema(this.#manifest.collections[name].schema), fields)),
        );
      // A migration changes no value: an index kept current by the commits (or persisted, plus the
      // writes since) is the index of the migrated records. One in memory is persisted at the
      // activation checkpoint; a persisted one that is not loaded is sealed again, unchanged, under
      // the target generation (its page is opened and sealed again, never parsed into an index),
      // and still covers what it covered. Only a collection without one is indexed anew.
      if (c.lexical !== undefined) {
        await c.lexical;
        this.#indexDirty.add(name);
        continue;
      }
      if (
        snapshot !== undefined &&
        (snapshot.fields === undefined ||
          (snapshot.fields.length === fields.length && fields.every((f) => snapshot.fields!.includes(f))))
      ) {
        await this.#resealIndex(name, m.generation);
        continue;
      }
      const fresh = new LexicalIndex({ text: fields });
      const touched = new Set<string>();
      this.#reindexing = { name, touched };
      try {
        const ids = [...(this.#dir.get(name)?.keys() ?? [])]; // any order: no sort of every id
        for (let i = 0; i < ids.length; i += 64) {
          this.#live();
          for (const id of ids.slice(i, i + 64)) fresh.update(id, await this.read(c, id));
          await yieldToEventLoop();
        }
        // Ids written while the index was rebuilt are read again until none is left, then it takes over.
        while (touched.size > 0) {
          const again = [...touched];
          touched.clear();
          for (const id of again) fresh.update(id, await this.read(c, id));
        }
        c.lexical = Promise.resolve(fresh);
        this.#indexDirty.add(name);
      } finally {
        this.#reindexing = undefined;
      }
    }
  }

  /**
   * Seals collection `name`'s persisted index page again under generation `g`, in its own commit
   * (the old page is deleted in it). The content and so `afterPage` stay. Nothing to do when the
   * page is already of generation `g` (resealed before a restart, or written by a checkpoint).
   */
  async #resealIndex(name: string, g: number): Promise<void> {
    const snapshot = this.#manifest.indexes?.[name];
    if (snapshot === undefined) return;
    let opened: { bytes: Uint8Array } | undefined;
    try {
      opened = await this.#openIndexPage(name, snapshot.pageId, g);
    } catch (e) {
      if (this.#manifest.indexes?.[name]?.pageId !== snapshot.pageId) return; // a checkpoint replaced it meanwhile
      throw e;
    }
    if (opened === undefined) return;
    const { bytes } = opened;
    try {
      await this.#enqueue(async () => {
        this.#live();
        if (this.#manifest.indexes?.[name]?.pageId !== snapshot.pageId) return; // replaced meanwhile by a checkpoint
        const saved = { indexes: this.#manifest.indexes, nextPageId: this.#manifest.nextPageId };
        const page = await this.#sealIndexPage(name, g, bytes);
        this.#manifest.indexes = { ...this.#manifest.indexes, [name]: { ...snapshot, pageId: page.id } };
        try {
          await this.#pages.commit({
            pages: [page],
            deletes: [snapshot.pageId],
            manifest: this.#manifestBytes(),
            transfer: true,
          });
        } catch (e) {
          Object.assign(this.#manifest, saved);
          throw e;
        }
      });
    } finally {
      bytes.fill(0);
    }
  }

  /** Decrypts every live record of the migrated collections; all must open, and only withheld or failed ones may be left behind. */
  async #verifyMigrated(m: MigrationRecord): Promise<void> {
    let behind = 0;
    const problems: string[] = [];
    for (const name of m.collections) {
      const c =
        this.#collections.get(name) ??
        new Collection(this, name, compileSchema(this.#manifest.collections[name].schema));
      const ids = [...(this.#dir.get(name)?.keys() ?? [])];
      for (let i = 0; i < ids.length; i += 128) {
        this.#live();
        for (const id of ids.slice(i, i + 128)) {
          const loc = this.#dir.get(name)?.get(id);
          if (loc === undefined) continue;
          if (loc.generation !== m.generation) behind++;
          try {
            await this.read(c, id);
          } catch (e) {
            if (problems.length < 20) problems.push(`${name}/${id}: ${e instanceof Error ? e.message : String(e)}`);
          }
        }
        await yieldToEventLoop();
      }
    }
    if (behind > m.counts.withheld + m.counts.failed)
      problems.push(
        `${behind} records remain outside generation ${m.generation}, but only ${m.counts.withheld + m.counts.failed} were withheld or failed`,
      );
    if (problems.length > 0) throw new PqdbError('CORRUPTION', `migration verification failed: ${problems.join('; ')}`);
  }

  /** Waits for pending commits, wipes every key and releases the storage. Idempotent. */
  async close(): Promise<void> {
    if (!this.#open) return;
    this.#closing = true;
    await this.#queue;
    await this.#migrationRun?.catch(() => undefined);
    await this.#queue;
    this.#open = false;
    this.#keys.close();
    this.#signer?.fill(0);
    await this.#pages.close();
  }
}
