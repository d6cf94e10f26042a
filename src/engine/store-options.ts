// The options of Store.open (openStore adds `location` and `storage`).

import type { SuiteName } from '../crypto/suites';
import type { AuthorityCheck } from './migration/copy';
import type { PageStore } from '../storage/page-store';
import type { AppliedCommit, CommitPipeline } from './commit';
import type { FollowOptions } from './follower';

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
   * Default { records: 10000, ms: 60000 }; false turns them off. Without `signer` the same rule
   * persists the key directory (no signature): what keeps the next open short.
   */
  autoCheckpoint?: { records?: number; ms?: number } | false;
  /**
   * Automatic compaction (src/engine/compact.ts): after a commit, once the commit pages hold at
   * least `minDeadBytes` bytes of dead records and those are at least `deadRatio` of the commit
   * pages' bytes, a compaction is queued (one at a time, beside reads and writes). Default
   * { deadRatio: 0.5, minDeadBytes: 64 MiB }; false turns it off.
   */
  autoCompact?: { deadRatio?: number; minDeadBytes?: number } | false;
  /**
   * Keep every leaf of the Merkle logs (default false). By default a compaction raises the
   * history floor of the current key generation's log (docs/format.md, "History floor"): the leaf
   * hashes of operations below its first live commit page stop costing disk once a signed
   * checkpoint covers them, and consistency proofs from older checkpoints are kept as links. With
   * true, the whole log stays (48 bytes per operation ever made): what an auditor who must rebuild
   * old checkpoints' trees leaf by leaf needs (docs/security.md, "Dropped history").
   */
  keepHistory?: boolean;
  /**
   * Current authority (DESIGN §9): asked whether a migration may run (false: AUTHORITY_DENIED) and for
   * every record it copies (false withholds it, counted as withheld). Default: all are allowed.
   */
  authority?: AuthorityCheck;
  /**
   * Open for reading only: nothing is written (no repair, no migration resumed); writes reject
   * with READ_ONLY. Use with a read-only page store (openNodeFsPageStore(dir, { readOnly: true })).
   */
  readOnly?: boolean;
  /**
   * With `readOnly`, on a page store that follows its writer (the postgres one opened with
   * `readOnly: true`; others are a TypeError): the store follows the writer's commits as they land
   * (docs/postgres.md, src/engine/follower.ts). Commits that only add records are verified and taken
   * in place; any other (a checkpoint, a migration step, a key or registry change) opens the engine
   * state anew from the pages. Reads under way finish on the state they started on; `info().commit`
   * says where the store stands. `onCommit` hears each commit taken, `onError` each one refused
   * (AUTH_FAILED, CORRUPTION, ROLLBACK: the store keeps its last good state) and each failure of the
   * medium (IO_ERROR); `close()` stops following.
   * @example openStore({ storage: reader, unlock, readOnly: true, follow: { onCommit: ({ commit }) => log(commit) } })
   */
  follow?: boolean | FollowOptions;
  /**
   * The store id the caller expects (from `info().storeId`): opening another store, even one whose
   * keys were wrapped to the same recipient, fails with AUTH_FAILED.
   */
  storeId?: string;
  /**
   * A commit counter the store is known to have reached (from `info().commit`, kept elsewhere):
   * opening an older copy of the store fails with ROLLBACK.
   */
  minCommit?: number;
  /**
   * The authority's ML-DSA-87 public key(s) (from `generateSigner()`), pinned when the store is
   * created: only policies they sign are accepted (`store.setPolicy`, docs/authority.md). On an
   * existing store, when given, they must equal the pinned ones (else AUTH_FAILED).
   */
  authorityPublicKey?: Uint8Array | readonly Uint8Array[];
  /**
   * With `authorityPublicKey` at creation: how many of the pinned keys must sign the first policy
   * (default 1; later versions need the threshold of the version in force).
   */
  authorityThreshold?: number;
  /**
   * With `authorityPublicKey` at creation: a domain the store pins. A policy governs the stores it
   * names in `stores` (their ids) and those pinning the `domain` it names (docs/authority.md).
   */
  authorityDomain?: string;
  /**
   * @internal How this platform opens and deletes stores by location name (set by openStore in the
   * Node and browser entries): backups and restores to a directory or database name use it.
   */
  locations?: Locations;
}

/** How a platform opens and deletes page stores by location name. */
export interface Locations {
  /** What a location names here: "directory" or "IndexedDB database". */
  readonly kind: string;
  /** Opens the page store at `location`: to create a store there, or to read one. */
  open(location: string, mode: 'create' | 'read'): Promise<PageStore>;
  /** Deletes the store at `location`; false when there is none. */
  remove(location: string): Promise<boolean>;
  /** Serves replicas of a store (Node). */
  serve?(source: ReplicationSource, options: ServeReplicationOptions): Promise<ReplicationServer>;
}

/**
 * What a primary reads of the store it serves (src/replication/primary.ts): its sealed pages and
 * manifest, the commit queue to take a consistent page set in, and the durable commits from now on
 * (`ship`, registered by the engine; it returns its removal).
 */
export interface ReplicationSource {
  /** Read only: pages are listed and read (page digests read them in batches). */
  readonly pages: PageStore;
  readonly pipeline: Pick<CommitPipeline, 'manifest' | 'sealedManifest' | 'exclusive'>;
  ship(listener: (commit: AppliedCommit) => void): () => void;
}

/** Options of `store.serveReplication`. */
export interface ServeReplicationOptions {
  /** The address to listen on (default 127.0.0.1). */
  host?: string;
  /** The port (0: any free one). */
  port?: number;
  /** This primary's ML-DSA-87 identity key pair (from generateSigner()). */
  identity: { publicKey: Uint8Array; secretKey: Uint8Array };
  /** The replicas' ML-DSA-87 public keys: no other peer completes a handshake. */
  trustedPeers: readonly Uint8Array[];
  /**
   * Connections not yet authenticated the server holds at once (default 32). One that arrives at
   * the bound ends the oldest (a silent one first), so idle connections cannot keep a replica out.
   */
  maxHandshakes?: number;
  /** The same bound per source address (an IPv4 address, an IPv6 /64; default 4). */
  maxHandshakesPerSource?: number;
  /** Each handshake must finish within this (default 10,000 ms). */
  handshakeTimeoutMs?: number;
}

/** A replication server: its port, how many replicas follow, and close(). */
export interface ReplicationServer {
  readonly port: number;
  followers(): { connected: number; live: number };
  close(): Promise<void>;
}
