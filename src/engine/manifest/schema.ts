// The store manifest's schema (DESIGN §6, §11): the one persisted description of a store's
// structure. The engine keeps the installed manifest in this form and edits copies of it (drafts,
// src/engine/commit.ts); the verifier and the command line read the same type. How it is sealed is
// in sealing.ts, how every field read back is checked in checks.ts.

import { b64, unb64 } from '../../_encoding';
import type { GenerationRecord } from '../keys';
import type { RegistryRecord } from '../registry';
import type { Schema } from '../codec';

/** The manifest's format (its framing byte and its header's `v`). */
export const MANIFEST_VERSION = 2;

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

/**
 * A record a migration could not read, by its place in the log (its id is not written down: the
 * manifest names no record id) and the PqdbError code (or "ERROR") it failed with.
 */
export interface MigrationFailure {
  generation: number;
  leaf: number;
  code: string;
}

/** A migration as the manifest keeps it (under way in `migration`, finished in `migrations`). */
export interface MigrationRecord {
  id: string;
  collections: string[];
  to: number;
  generation: number;
  fromSuites: number[];
  phase: MigrationPhase;
  /** The last source record (generation, leaf index) the copy reached. */
  cursor: [number, number] | null;
  counts: MigrationCounts;
  startedAt: string;
  finishedAt?: string;
  workMs: number;
  phaseMs: Partial<Record<MigrationPhase, number>>;
  /** The first failures (at most MAX_FAILURES_KEPT; `counts.failed` counts all). */
  failures: MigrationFailure[];
  chunkRecords: number;
}

/** What an inventoried managed copy is (DESIGN §9, docs/authority.md). */
export type CopyKind = 'backup' | 'generation' | 'restore';
/** `retained` (held), `retired` (retirement recorded), `restored-from` (a restore was made from it). */
export type CopyState = 'retained' | 'retired' | 'restored-from';
export const COPY_STATES: readonly CopyState[] = ['retained', 'retired', 'restored-from'];
export const COPY_KINDS: readonly CopyKind[] = ['backup', 'generation', 'restore'];

/**
 * A managed copy as the store's inventory keeps it: a backup written by `store.backup`, a migration's
 * old key generation kept in the store after activation, or (in a restored store) the copy it was
 * restored from. No key or record id is written here.
 */
export interface CopyRecord {
  /** 32 hex digits, random. */
  id: string;
  kind: CopyKind;
  /** When it was made (ISO 8601). */
  time: string;
  /** Where it is: a directory, an IndexedDB database name, a page store kind, or "this store". */
  destination: string;
  /** The location it was written to by name (a directory, a database), which retiring deletes. */
  location?: string;
  /** The key generations whose records it holds. */
  generations: number[];
  /** The suites its records are sealed with. */
  suites: number[];
  /** Live records it holds. */
  records: number;
  /** The commit counter of the store state it holds. */
  commit: number;
  /** SHA-384 (hex) of the signed checkpoint it holds, when it holds one. */
  checkpoint?: string;
  state: CopyState;
  /** When it was retired (state retired). */
  retiredAt?: string;
  /** Restores made from it: when, and the id of the store restored into. */
  restores?: { time: string; storeId: string }[];
  /** For kind `restore`: the id of the store the copy came from. */
  sourceStoreId?: string;
}

/** A history floor: its floor page, the first leaf its log holds, and the page's SHA-384 (base64). */
export interface FloorRef {
  pageId: number;
  size: number;
  hash: string;
}

/** A log page: the leaf hashes [from, to) of its generation's log, written by a checkpoint. */
export interface LogPageRef {
  pageId: number;
  from: number;
  to: number;
}

/**
 * The persisted key directory: a full snapshot and the runs of changes written after it, each a list
 * of sealed directory pages, covering every commit page up to `afterPage`; `dropped` lists commit
 * pages up to `afterPage` deleted since (a retired generation's).
 */
export interface DirectoryRef {
  afterPage: number;
  /** `bytes`: the snapshot's plaintext length (its pages are then read as ranges). */
  snapshots: { kind: 'base' | 'run'; pages: number[]; rows: number; bytes?: number }[];
  dropped?: number[];
}

/** A collection's sealed lexical index as of a checkpoint, and the last commit page it includes. */
export interface IndexRef {
  pageId: number;
  afterPage: number;
  fields?: string[];
}

export interface CollectionMeta {
  /** The current schema (version versions.length + 1). */
  schema: Schema;
  suite: number;
  /** The earlier schema versions its records may still be written under, oldest first. */
  versions?: Schema[];
  /** The string fields its lexical index covers, as last declared (what `collection(name)` opens with). */
  text?: string[];
  /** Its secondary indexes' field lists, as last declared. */
  by?: string[][];
  /**
   * An upgrade to schema version `to` whose rewrite of the records is not finished: a record
   * written under an earlier version reads only through the collection's upgrade function.
   */
  upgrade?: { to: number };
}

/** A key generation as persisted: salt, envelopes and binding in base64 (the root never leaves memory). */
export interface KeyringEntry {
  generation: number;
  suite: number;
  salt: string;
  envelopes: string[];
  bind?: string;
}

export interface Manifest {
  v: 2;
  /** 32 hex digits, derived from the store secret. */
  storeId: string;
  /** Commits made so far: a freshness counter an application can keep elsewhere (minCommit). */
  commit: number;
  nextPageId: number;
  nextSequence: number;
  keyring: KeyringEntry[];
  registry: RegistryRecord[];
  collections: Record<string, CollectionMeta>;
  /** The suite new collections write with unless they name one. */
  defaultSuite: number;
  /** The pages holding the signed checkpoints, oldest first (a page each: the manifest stays small). */
  checkpointPages?: number[];
  /**
   * SHA-384 (base64) of the newest signed checkpoint: checkpoint pages chain to it by their
   * `previous` hashes, so this one hash authenticates every checkpoint page the manifest names.
   */
  lastCheckpoint?: string;
  /**
   * Per generation, the size and root (base64) of its Merkle log after the last commit: the live
   * commit pages are those whose operations give exactly this log (DESIGN §11).
   */
  heads?: Record<string, { size: number; root: string }>;
  /** Per generation, the pages holding its log's leaf hashes as of the last checkpoint. */
  logs?: Record<string, LogPageRef[]>;
  /**
   * Per generation, its log's history floor (src/engine/history-floor.ts): leaves below `size` are
   * no longer stored; the floor page (SHA-384 `hash`, base64) holds the compact range there and the
   * links of older checkpoints. The generation's log pages start at `size`.
   */
  floors?: Record<string, FloorRef>;
  /**
   * Per collection, its secondary indexes sealed as of the last checkpoint or persist
   * (src/engine/field-indexes.ts): the page, the last commit page it covers, the indexes' fields.
   */
  fieldIndexes?: Record<string, { pageId: number; afterPage: number; specs: string[][] }>;
  /** Per collection, the sealed lexical index as of the last checkpoint. */
  indexes?: Record<string, IndexRef>;
  /** The key directory as persisted at the last checkpoint (src/engine/directory/). */
  directory?: DirectoryRef;
  /** Recipient public keys (base64): new key generations are wrapped for each. */
  recipients?: string[];
  /** The migration under way, if any. */
  migration?: MigrationRecord;
  /** Finished migrations with their accounting, oldest first. */
  migrations?: MigrationRecord[];
  /** Retired key generations: roots destroyed, commit pages deleted; their logs and checkpoints stay. */
  retired?: number[];
  /**
   * The pinned authority public keys, the threshold of the first policy and the domain the store
   * pins (both optional), and the current signed policy, base64 (docs/authority.md).
   */
  authority?: { keys: string[]; policy?: string; threshold?: number; domain?: string };
  /** The managed copies inventory, oldest first. */
  copies?: CopyRecord[];
  /** Pages commits deleted while a backup held a pin, still in the page store (pins.ts): not part of it. */
  heldPages?: number[];
  /**
   * The request ids (16 bytes, base64) of the last REQUESTS_KEPT writes given one, oldest first: a
   * write given an id listed here was committed and is not applied again (docs/tabs.md).
   */
  requests?: string[];
  /** Set in a managed copy's manifest only: which copy of which store this is (it opens read-only). */
  copy?: { id: string; of: string; time: string };
}

/** How many request ids a manifest keeps: a retry of a write older than this many others is applied again. */
export const REQUESTS_KEPT = 64;
/** A request id: 16 bytes, base64. */
export const REQUEST_ID = /^[A-Za-z0-9+/]{21}[AQgw]==$/;

/** Notes in draft manifest `m` that the write given `requestId` is in its commit. */
export function noteRequest(m: Manifest, requestId: string): void {
  const ids = (m.requests ?? []).filter((x) => x !== requestId);
  ids.push(requestId);
  m.requests = ids.slice(-REQUESTS_KEPT);
}

/** The key ring's persisted form as the manifest writes it. */
export function keyringEntries(records: readonly GenerationRecord[]): KeyringEntry[] {
  return records.map((r) => ({
    generation: r.generation,
    suite: r.suite,
    salt: b64(r.salt),
    envelopes: r.envelopes.map(b64),
    ...(r.bind !== undefined ? { bind: b64(r.bind) } : {}),
  }));
}

/** The manifest's key ring as the key ring takes it. */
export function generationRecords(m: Pick<Manifest, 'keyring'>): GenerationRecord[] {
  return m.keyring.map((r) => ({
    generation: r.generation,
    suite: r.suite,
    salt: unb64(r.salt),
    envelopes: r.envelopes.map(unb64),
    ...(r.bind !== undefined ? { bind: unb64(r.bind) } : {}),
  }));
}

/** The manifest of a new store: its id (derived from its store secret) and nothing written yet. */
export function newManifest(
  storeId: string,
  keyring: readonly GenerationRecord[],
  registry: RegistryRecord[],
  suite: number,
  recipients: readonly Uint8Array[],
): Manifest {
  return {
    v: 2,
    storeId,
    commit: 0,
    nextPageId: 1,
    nextSequence: 1,
    keyring: keyringEntries(keyring),
    registry,
    collections: {},
    defaultSuite: suite,
    recipients: recipients.map((r) => b64(r)),
  };
}

/** A deep copy to edit (drafts): the manifest is plain JSON data. */
export function cloneManifest(m: Manifest): Manifest {
  return JSON.parse(JSON.stringify(m)) as Manifest;
}

/** The manifest's readable header: what unlocking needs. */
export interface ManifestHeader {
  v: 2;
  storeId: string;
  commit: number;
  /** Per generation (0 = the store secret), its key envelopes. */
  envelopes: [number, string[]][];
}
