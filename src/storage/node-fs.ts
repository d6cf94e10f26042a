// node-fs PageStore (Node only): a directory of append-only segment files plus a MANIFEST file that
// names what is committed. DESIGN.md §6; the byte layout is in docs/storage.md.
//
// Commit protocol (a commit is visible iff step 3's link happened):
//   1. append the commit's records (pages, delete tombstones) to a segment file this writer created
//      (O_EXCL) in this session, at its end, 2. fdatasync the segment, 3. publish the manifest
//      (node-fs-manifest.ts): link a temporary file of this writer's own to MANIFEST-<commit>, which
//      exactly one writer can create, copy it over MANIFEST with a rename, fsync the directory.
// A writer never writes into a file it did not create in this session, and truncates only such a
// file, back to its committed length after a commit failed before its link (a segment created for
// that commit is unlinked): bytes past a segment's committed length (an unfinished commit, or
// another writer's) are ignored.
// Recovery on open: segments no manifest can name any more are removed; a segment shorter than its
// committed length, or a damaged record header inside the committed range, is CORRUPTION — an
// acknowledged page is never dropped silently.
//
// Single writer, three ways. On Linux the writer holds a host lock (host-lock.ts): a listening
// socket in the abstract namespace, named from a key only the store's owner can read, that no file
// operation can release and that dies with the process; a second writer on this host gets LOCKED
// whatever happened to the files. Everywhere, a LOCK file created with O_EXCL holding
// "pid\nhostname\ntoken"; a lock whose pid is dead on this host is stale and taken over (two
// processes breaking one stale lock at the same instant can race; a live holder is never
// displaced). A writer let in anyway (another host on a shared file system, another network
// namespace, or a platform without the host lock, after a LOCK deleted while its holder lives) is
// caught by the manifest's compare-and-swap: of two writers that both started from commit k, the
// one that links MANIFEST-<k+1> second gets CONFLICT and its commit is not made; as each wrote only
// into its own segment files, nothing the winner wrote is touched.
// Segment reclaim (`reclaim`, and automatically after commits; node-fs-reclaim.ts): a segment whose
// bytes are mostly dead has its live pages copied, CRC-checked, into this writer's segment, and is
// dropped from the manifest in the same commit-protocol write that makes the copies committed; its
// file is unlinked after. Replay order (the last record for an id wins) makes a copy supersede the
// original, so a kill at any point leaves each acknowledged page exactly once (docs/storage.md).
//
// Files: this one opens the store and composes the parts, each over the store's state
// (node-fs-segments.ts: segments, index, opening and recovery): node-fs-reads.ts (reads),
// node-fs-commit.ts (the commit protocol's writes), node-fs-reclaim.ts and node-fs-reclaim-plan.ts
// (segment reclaim), node-fs-manifest.ts (the MANIFEST file and its compare-and-swap),
// node-fs-records.ts (record framing), node-fs-lock.ts and host-lock.ts (the locks).
// Caveats: the CRC-32C framing detects accidents, not tampering (the sealed records carry a MAC);
// a ranged read (`readRange`, one positioned read of part of a page) checks no checksum at all.
// After a failed write or sync the store refuses further commits (IO_ERROR) until reopened: the
// kernel may have dropped dirty pages, so retrying an fsync proves nothing.

/// <reference types="node" />
// (tsconfig.json sets "types": []; this Node-only file opts in to the Node typings.)
import { stat, mkdir } from 'node:fs/promises';
import { PqdbError } from '../errors';
import { LOCK, takeWriterLock, releaseWriterLock, type WriterLock } from './node-fs-lock';
import {
  FORMAT_VERSION,
  MANIFEST,
  MANIFEST_MAGIC,
  MANIFEST_TMP,
  MANIFEST_FILE_RE,
  MANIFEST_TMP_RE,
} from './node-fs-manifest';
import { RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES } from './node-fs-records';
import { commitBatch } from './node-fs-commit';
import { NodeFsReads } from './node-fs-reads';
import {
  DEFAULT_RECLAIM_DEAD_FRACTION,
  DEFAULT_RECLAIM_STEP_BYTES,
  NodeFsReclaim,
  checkDeadFraction,
  checkStepBytes,
} from './node-fs-reclaim';
import { DEFAULT_SEGMENT_BYTES, NodeFsState, type NodeFsSettings } from './node-fs-segments';
import type {
  CheckedBatch,
  PageStore,
  PageStoreStats,
  PageStoreSupports,
  ReclaimOptions,
  ReclaimResult,
} from './page-store';
import { BasePageStore, mediumError } from './page-store-base';

export { SEGMENT_HEADER_BYTES, RECORD_HEADER_BYTES, FORMAT_VERSION, MANIFEST_MAGIC, MANIFEST, MANIFEST_TMP };
export { MANIFEST_FILE_RE, MANIFEST_TMP_RE };
export { LOCK, takeWriterLock, releaseWriterLock, type WriterLock };
export { DEFAULT_SEGMENT_BYTES, SEGMENT_RE } from './node-fs-segments';
export { DEFAULT_RECLAIM_DEAD_FRACTION, DEFAULT_RECLAIM_STEP_BYTES };
/** @deprecated The former name of DEFAULT_RECLAIM_DEAD_FRACTION. */
export const DEFAULT_COMPACT_DEAD_FRACTION = DEFAULT_RECLAIM_DEAD_FRACTION;
/** @deprecated The former name of DEFAULT_RECLAIM_STEP_BYTES. */
export const DEFAULT_COMPACT_STEP_BYTES = DEFAULT_RECLAIM_STEP_BYTES;

/** What a node-fs page store declares (PageStoreSupports): every read, and segment reclaim. */
const NODE_FS_SUPPORTS: PageStoreSupports = Object.freeze({
  readPages: true,
  readRange: true,
  partialRanges: true,
  readRangeSync: true,
  blockingReads: true,
  reclaim: true,
  follow: false,
});

/** Options of `openNodeFsPageStore`. */
export interface NodeFsPageStoreOptions {
  /** Create the directory when missing (default true). */
  create?: boolean;
  /** Segment roll-over size in bytes (default 64 MiB). */
  segmentBytes?: number;
  /**
   * Open for reading only (verifiers, status tools): no lock is taken, nothing on disk is changed
   * (what a writer would repair is reported in `recovery` instead), and `commit` rejects with
   * READ_ONLY. Reads see the store as of opening; a writer may hold it meanwhile.
   */
  readOnly?: boolean;
  /**
   * Segment reclaim in the background of the commit queue (default true): after a commit leaves a
   * sealed segment (not the one being appended to) at least `reclaimDeadFraction` dead, one bounded
   * step of `reclaimStepBytes` is queued, then the next, until none qualifies; commits called
   * meanwhile run between the steps. `reclaim()` works either way.
   */
  autoReclaim?: boolean;
  /** The dead fraction in (0, 1] at which a segment is reclaimed automatically (default 0.5). */
  reclaimDeadFraction?: number;
  /** The most bytes one reclaim step copies (default 4 MiB; at least 4096). */
  reclaimStepBytes?: number;
  /** @deprecated The former name of `autoReclaim` (used when `autoReclaim` is not given). */
  autoCompact?: boolean;
  /** @deprecated The former name of `reclaimDeadFraction` (used when it is not given). */
  compactDeadFraction?: number;
  /** @deprecated The former name of `reclaimStepBytes` (used when it is not given). */
  compactStepBytes?: number;
  /** @internal false: no host lock, as for a writer on another host sharing the directory (tests). */
  hostLock?: boolean;
  /**
   * @internal Fault injection (tests): awaited before each fdatasync/fsync of a commit or a
   * reclaim step; a throw stands for the failed sync.
   */
  beforeSync?: (what: 'segment' | 'manifest' | 'directory') => void | Promise<void>;
  /** @internal Fault injection (tests): awaited right after a commit's manifest link, before the listing. */
  afterLink?: () => Promise<void>;
  /** @internal Fault injection (tests): awaited after an open read the current manifest. */
  afterManifestRead?: () => Promise<void>;
}

/**
 * Opens (creating when allowed) the store in directory `dir`, repairing an interrupted commit.
 * @throws PqdbError NOT_FOUND when the directory is missing and not to be created, LOCKED when
 * another process or store holds the directory, CORRUPTION when a
 * committed byte is missing or damaged, FORMAT_VERSION for an unknown format, IO_ERROR otherwise;
 * RangeError for a reclaim option out of range
 * @example
 * const store = await openNodeFsPageStore('/var/lib/app/pqdb');
 * console.log(store.recovery.actions);
 */
export async function openNodeFsPageStore(dir: string, options: NodeFsPageStoreOptions = {}): Promise<PageStore> {
  if (typeof dir !== 'string' || dir.length === 0)
    throw new TypeError(`"dir" expected a non-empty string, got ${typeof dir}`);
  const segmentBytes = options.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
  if (!Number.isInteger(segmentBytes) || segmentBytes < 4096) {
    throw new RangeError(`"segmentBytes" expected an integer >= 4096, got ${segmentBytes}`);
  }
  const readOnly = options.readOnly === true;
  const dead = options.reclaimDeadFraction !== undefined ? 'reclaimDeadFraction' : 'compactDeadFraction';
  const step = options.reclaimStepBytes !== undefined ? 'reclaimStepBytes' : 'compactStepBytes';
  const settings: NodeFsSettings = {
    auto: (options.autoReclaim ?? options.autoCompact) !== false,
    minDead: checkDeadFraction(dead, options[dead] ?? DEFAULT_RECLAIM_DEAD_FRACTION),
    stepBytes: checkStepBytes(step, options[step] ?? DEFAULT_RECLAIM_STEP_BYTES),
    beforeSync: options.beforeSync,
    afterLink: options.afterLink,
    afterManifestRead: options.afterManifestRead,
  };
  try {
    if (options.create !== false && !readOnly) await mkdir(dir, { recursive: true });
    await stat(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT')
      throw new PqdbError('NOT_FOUND', `no pqdb store at ${dir}: no such directory`);
    throw mediumError(`node-fs page store ${dir}`, e);
  }
  const lock = readOnly ? undefined : await takeWriterLock(dir, options.hostLock !== false);
  const store = new NodeFsPageStore(new NodeFsState(dir, segmentBytes, readOnly, settings, lock));
  try {
    await store.load();
  } catch (e) {
    await store.close().catch(() => undefined);
    throw mediumError(`node-fs page store ${dir}: open`, e);
  }
  return store;
}

/** The node-fs page store: BasePageStore's checks and queue over the state and its parts. */
class NodeFsPageStore extends BasePageStore {
  readonly kind = 'node-fs';
  readonly supports = NODE_FS_SUPPORTS;
  readonly #st: NodeFsState;
  readonly #reads: NodeFsReads;
  readonly #reclaim: NodeFsReclaim;

  constructor(st: NodeFsState) {
    super();
    this.#st = st;
    this.#reads = new NodeFsReads(st);
    this.#reclaim = new NodeFsReclaim(st, this.#reads, {
      isOpen: () => this.isOpen,
      serial: (run) => this._serial(run),
    });
  }

  /** Reads MANIFEST, repairs what a writer may, rebuilds the page index (NodeFsState.load). */
  async load(): Promise<void> {
    this.recovery = await this.#st.load();
  }

  protected override _readPages(ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
    return this.#reads.readPages(ids);
  }

  protected _readPage(id: number): Promise<Uint8Array | undefined> {
    return this.#reads.readPage(id);
  }

  protected override _readRangeSync(
    id: number,
    offset: number,
    length: number,
    into: Uint8Array,
    block: boolean,
  ): -1 | 0 | 1 {
    return this.#reads.readRangeSync(id, offset, length, into, block);
  }

  protected override _readRange(id: number, offset: number, length: number): Promise<Uint8Array | undefined> {
    return this.#reads.readRange(id, offset, length);
  }

  protected async _readManifest(): Promise<Uint8Array | undefined> {
    return this.#st.manifest && new Uint8Array(this.#st.manifest);
  }

  protected _listPages(): number[] {
    return [...this.#st.index.keys()].sort((a, b) => a - b);
  }

  protected _has(id: number): boolean {
    return this.#st.index.has(id);
  }

  protected async _commit(batch: CheckedBatch): Promise<void> {
    const st = this.#st;
    if (st.readOnly) throw new PqdbError('READ_ONLY', `node-fs page store ${st.dir} is open read-only`);
    if (st.failed !== undefined) {
      throw new PqdbError('IO_ERROR', 'node-fs: an earlier write failed; reopen the store', { cause: st.failed });
    }
    try {
      await commitBatch(st, batch);
    } catch (e) {
      st.failed = e;
      throw mediumError('node-fs: commit', e);
    }
    this.#reclaim.schedule();
  }

  /**
   * Segment reclaim (PageStore.reclaim, node-fs-reclaim.ts): one bounded step at a time through the
   * commit queue, until no segment that existed when the first step ran qualifies, `maxBytes` were
   * copied, or the store is closing.
   * @throws as PageStore.reclaim
   * @example const { bytesBefore, bytesAfter } = await store.reclaim!({ minDeadFraction: 0.5 });
   */
  reclaim(options: ReclaimOptions = {}): Promise<ReclaimResult> {
    return this.#reclaim.reclaim(options);
  }

  /** @deprecated The former name of `reclaim`. */
  compact(options: ReclaimOptions = {}): Promise<ReclaimResult> {
    return this.#reclaim.reclaim(options);
  }

  /** @internal Per-segment space (tests and benchmarks): sequence, committed and live bytes, dead fraction. */
  segmentSpace(): { seq: number; committed: number; live: number; deadFraction: number }[] {
    return this.#st.segmentSpace();
  }

  protected async _stats(): Promise<PageStoreStats> {
    let pageBytes = 0;
    for (const loc of this.#st.index.values()) pageBytes += loc.length;
    const storedBytes = this.#st.storedBytes();
    return { pageCount: this.#st.index.size, pageBytes, manifestBytes: this.#st.manifest?.length ?? 0, storedBytes };
  }

  protected async _close(): Promise<void> {
    const st = this.#st;
    const errors = await st.closeAll();
    if (st.lock !== undefined) await releaseWriterLock(st.dir, st.lock).catch((e) => errors.push(e));
    if (errors.length > 0) throw mediumError('node-fs: close', errors[0]);
  }
}
