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
// Segment compaction (`compact`, and automatically after commits): a segment whose bytes are
// mostly dead has its live pages copied, CRC-checked, into this writer's segment, and is dropped
// from the manifest in the same commit-protocol write that makes the copies committed; its file is
// unlinked after. Replay order (the last record for an id wins) makes a copy supersede the
// original, so a kill at any point leaves each acknowledged page exactly once (docs/storage.md).
// Caveats: the CRC-32C framing detects accidents, not tampering (the sealed records carry a MAC);
// a ranged read (`readRange`, one positioned read of part of a page) checks no checksum at all.
// After a failed write or sync the store refuses further commits (IO_ERROR) until reopened: the
// kernel may have dropped dirty pages, so retrying an fsync proves nothing.

/// <reference types="node" />
// (tsconfig.json sets "types": []; this Node-only file opts in to the Node typings.)
import { constants, open, readdir, stat, mkdir, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { PqdbError } from '../errors';
import { LOCK, takeWriterLock, releaseWriterLock, checkWriterLock, type WriterLock } from './node-fs-lock';
import { deadFraction, liveRecords, neededTombstones, pickVictim, stepOf, type SegmentSpace } from './node-fs-compact';
import {
  FORMAT_VERSION,
  MANIFEST,
  MANIFEST_MAGIC,
  MANIFEST_TMP,
  MANIFEST_FILE_RE,
  MANIFEST_TMP_RE,
  currentCommit,
  encodeManifest,
  publishManifest,
  readCurrentManifest,
  refreshManifestCopy,
  removeStaleManifests,
  type SyncHook,
} from './node-fs-manifest';
import {
  KIND_DELETE,
  KIND_PAGE,
  RECORD_HEADER_BYTES,
  SEGMENT_HEADER_BYTES,
  SEGMENT_MAGIC,
  parseRecordHeader,
  readExactly,
  readSyncExactly,
  recordHeader,
  SyncReadTurns,
  writeGathered,
} from './node-fs-records';
import {
  BasePageStore,
  checkRangeInPage,
  corruption,
  mediumError,
  notOpen,
  type CheckedBatch,
  type SegmentCompactOptions,
  type SegmentCompactResult,
  type PageStore,
  type PageStoreStats,
  type RecoveryReport,
} from './page-store';
import { crc32cAsync } from '../_crc32c';

/** Segments roll over once they would grow past this (64 MiB); a single commit may exceed it. */
export const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;
/** The most readPages reads at once (a run of neighbouring pages). */
const READ_RUN_BYTES = 4 << 20;
/** Ranges up to this long are read synchronously (readRange)… */
const SYNC_READ_BYTES = 64 << 10;
/** …this many in one turn of the event loop at most. */
const SYNC_READS_PER_TURN = 64;
/** How much of a segment opening reads at a time while it indexes the records. */
const SCAN_WINDOW_BYTES = 1 << 20;
export { SEGMENT_HEADER_BYTES, RECORD_HEADER_BYTES, FORMAT_VERSION, MANIFEST_MAGIC, MANIFEST, MANIFEST_TMP };
export { MANIFEST_FILE_RE, MANIFEST_TMP_RE };
export { LOCK, takeWriterLock, releaseWriterLock, type WriterLock };
export const SEGMENT_RE = /^seg-([0-9a-f]{8})\.pqs$/;
/** Compaction rewrites a segment once this fraction of its bytes is dead (default). */
export const DEFAULT_COMPACT_DEAD_FRACTION = 0.5;
/**
 * The most one compaction step copies (default): with its fdatasync and MANIFEST replacement, a
 * step of 4 MiB took 45–80 ms (p50) in bench/segcompact.mjs, which is what a commit queued behind
 * it waits.
 */
export const DEFAULT_COMPACT_STEP_BYTES = 4 << 20;
/** More sealed segments than this below a quarter of `segmentBytes` are merged (node-fs-compact.ts pickVictim). */
const MAX_SMALL_SEGMENTS = 16;
/** How often a read-only open starts again when a segment vanished under it (a writer compacted). */
const READ_ONLY_OPEN_ATTEMPTS = 5;

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));
const segmentName = (seq: number): string => `seg-${seq.toString(16).padStart(8, '0')}.pqs`;

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
   * Compact in the background of the commit queue (default true): after a commit leaves a sealed
   * segment (not the one being appended to) at least `compactDeadFraction` dead, one bounded step
   * of `compactStepBytes` is queued, then the next, until none qualifies; commits called meanwhile
   * run between the steps. `compact()` works either way.
   */
  autoCompact?: boolean;
  /** The dead fraction in (0, 1] at which a segment is rewritten automatically (default 0.5). */
  compactDeadFraction?: number;
  /** The most bytes one compaction step copies (default 4 MiB; at least 4096). */
  compactStepBytes?: number;
  /** @internal false: no host lock, as for a writer on another host sharing the directory (tests). */
  hostLock?: boolean;
  /**
   * @internal Fault injection (tests): awaited before each fdatasync/fsync of a commit or a
   * compaction step; a throw stands for the failed sync.
   */
  beforeSync?: (what: 'segment' | 'manifest' | 'directory') => void | Promise<void>;
  /** @internal Fault injection (tests): awaited right after a commit's manifest link, before the listing. */
  afterLink?: () => Promise<void>;
  /** @internal Fault injection (tests): awaited after an open read the current manifest. */
  afterManifestRead?: () => Promise<void>;
}

interface Location {
  readonly seq: number;
  readonly offset: number; // of the record header
  readonly length: number;
  readonly crc: number;
}

interface Segment extends SegmentSpace {
  readonly fh: FileHandle;
  /** Reads in flight on `fh`: a segment removed by compaction is closed once they are done. */
  readers: number;
  /** Removed from the store (by compaction); `fh` closes when the last reader is done. */
  retired: boolean;
  /** Bytes of its tombstones a compaction would carry forward, as of `pinnedKey`. */
  pinned: number;
  /** When `pinned` was computed: segments removed so far and its tombstone count then. */
  pinnedKey: string;
}

const newSegment = (seq: number, fh: FileHandle, committed: number): Segment => ({
  seq,
  fh,
  committed,
  live: 0,
  ids: new Set(),
  tombs: [],
  readers: 0,
  retired: false,
  pinned: 0,
  pinnedKey: '',
});

/** Thrown inside a read-only open when a segment its MANIFEST named vanished and MANIFEST changed since. */
class SegmentVanished extends Error {}

/**
 * Opens (creating when allowed) the store in directory `dir`, repairing an interrupted commit.
 * @throws PqdbError NOT_FOUND when the directory is missing and not to be created, LOCKED when
 * another process or store holds the directory, CORRUPTION when a
 * committed byte is missing or damaged, FORMAT_VERSION for an unknown format, IO_ERROR otherwise
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
  const compaction: CompactionSettings = {
    auto: options.autoCompact !== false,
    minDead: checkDeadFraction('compactDeadFraction', options.compactDeadFraction ?? DEFAULT_COMPACT_DEAD_FRACTION),
    stepBytes: checkStepBytes('compactStepBytes', options.compactStepBytes ?? DEFAULT_COMPACT_STEP_BYTES),
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
  const store = new NodeFsPageStore(dir, segmentBytes, readOnly, compaction, lock);
  try {
    await store.load();
  } catch (e) {
    await store.close().catch(() => undefined);
    throw mediumError(`node-fs page store ${dir}: open`, e);
  }
  return store;
}

interface CompactionSettings {
  readonly auto: boolean;
  readonly minDead: number;
  readonly stepBytes: number;
  readonly beforeSync?: (what: 'segment' | 'manifest' | 'directory') => void | Promise<void>;
  readonly afterLink?: () => Promise<void>;
  readonly afterManifestRead?: () => Promise<void>;
}

function checkDeadFraction(name: string, v: unknown): number {
  if (typeof v !== 'number' || !(v > 0 && v <= 1))
    throw new RangeError(`"${name}" expected a number in (0, 1], got ${String(v)}`);
  return v;
}

function checkStepBytes(name: string, v: unknown): number {
  if (!Number.isInteger(v) || (v as number) < 4096)
    throw new RangeError(`"${name}" expected an integer >= 4096, got ${String(v)}`);
  return v as number;
}

/** What one compaction step did. */
interface StepResult {
  readonly copied: number;
  readonly removed: boolean;
}

class NodeFsPageStore extends BasePageStore {
  readonly kind = 'node-fs';
  readonly partialRanges = true;
  readonly blockingReads = true;
  readonly #dir: string;
  readonly #segmentBytes: number;
  readonly #segments = new Map<number, Segment>();
  readonly #index = new Map<number, Location>();
  #manifest: Uint8Array | undefined;
  #commitSeq = 0;
  #manifestFileBytes = 0;
  #failed: unknown;
  readonly #readOnly: boolean;
  readonly #compaction: CompactionSettings;
  /** A background compaction step is queued (at most one at a time). */
  #autoQueued = false;
  /** Why background compaction stopped (a page that failed its checksum); `compact()` still runs. */
  #autoStopped: unknown;
  /** Segments removed by compaction so far: which tombstones are needed changes only then. */
  #removals = 0;
  /** The segment this writer appends to: one it created (O_EXCL) in this session, else none yet. */
  #own: Segment | undefined;
  /** Above every segment number seen: where the next new segment's number is tried first. */
  #nextSeq = 1;

  /** The writer's locks (undefined: read-only, no lock). */
  readonly #lock?: WriterLock;

  constructor(dir: string, segmentBytes: number, readOnly: boolean, compaction: CompactionSettings, lock?: WriterLock) {
    super();
    this.#dir = dir;
    this.#segmentBytes = segmentBytes;
    this.#readOnly = readOnly;
    this.#compaction = compaction;
    this.#lock = lock;
  }

  /**
   * Reads MANIFEST, repairs segment tails, rebuilds the page index. A read-only open races a
   * writer: when a segment its MANIFEST named is gone and MANIFEST changed meanwhile (the writer
   * compacted it away), it starts again from the new MANIFEST, a few times at most.
   */
  async load(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#load();
        if (attempt > 1) {
          const why = `started over ${attempt - 1} time(s): a segment named by MANIFEST vanished as a writer compacted`;
          this.recovery = { ...this.recovery, clean: false, actions: [...this.recovery.actions, why] };
        }
        return;
      } catch (e) {
        if (!(e instanceof SegmentVanished)) throw e;
        this.#nextSeq = 1;
        for (const seg of this.#segments.values()) await seg.fh.close().catch(() => undefined);
        this.#segments.clear();
        this.#index.clear();
        this.#manifest = undefined;
        this.#commitSeq = 0;
        this.#manifestFileBytes = 0;
        if (attempt >= READ_ONLY_OPEN_ATTEMPTS)
          throw new PqdbError(
            'IO_ERROR',
            `node-fs: ${this.#dir}: segments kept vanishing while opening (a writer compacting); try again`,
            { cause: e },
          );
      }
    }
  }

  /** Whether the current commit on disk is no longer the one this open read (a writer committed or compacted). */
  async #manifestChanged(): Promise<boolean> {
    return (await currentCommit(this.#dir)) !== this.#commitSeq;
  }

  async #load(): Promise<void> {
    const actions: string[] = [];
    let truncatedBytes = 0;
    const ro = this.#readOnly;
    const m = await readCurrentManifest(this.#dir);
    await this.#compaction.afterManifestRead?.();
    const committed = m?.segments ?? new Map<number, number>();
    if (m !== undefined) {
      this.#manifest = m.manifest;
      this.#commitSeq = m.commitSeq;
      this.#manifestFileBytes = m.fileBytes;
    }
    const names = await readdir(this.#dir);
    if (!ro) await removeStaleManifests(this.#dir, names, this.#commitSeq);
    if (!ro && m?.raw !== undefined) {
      await refreshManifestCopy(this.#dir, m.raw);
      actions.push(`${MANIFEST} was behind ${m.file} (a commit cut between its link and its rename): copied`);
    }
    // A segment above every named one may be another writer's, made for a commit it has not
    // published yet (it may win); one below was made by a writer that can no longer win, or was
    // compacted away: every writer numbers a new segment above all the files it sees.
    const maxNamed = Math.max(0, ...committed.keys());
    const present = new Set<number>();
    for (const name of names) {
      const match = SEGMENT_RE.exec(name);
      if (!match) continue;
      const seq = parseInt(match[1], 16);
      this.#nextSeq = Math.max(this.#nextSeq, seq + 1);
      if (committed.has(seq)) present.add(seq);
      else if (ro || seq > maxNamed)
        actions.push(
          `${name} is not named by the manifest (an interrupted commit, another writer's or a compacted segment; left in place)`,
        );
      else {
        await unlink(join(this.#dir, name)).catch((e) => {
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
        });
        actions.push(`removed ${name}: not named by the manifest (an interrupted commit or a compacted segment)`);
      }
    }
    try {
      await this.#openSegments(committed, present, actions, (n) => (truncatedBytes += n));
    } catch (e) {
      // A writer may have compacted a segment away since and reused its number: start again.
      if (m !== undefined && e instanceof PqdbError && e.code === 'CORRUPTION' && (await this.#manifestChanged()))
        throw new SegmentVanished(e.message);
      throw e;
    }
    // The files opened are the ones the manifest named unless one was dropped meanwhile: only then
    // may it have been unlinked and its number taken by a writer that lost the compare-and-swap.
    if (m !== undefined && (await currentCommit(this.#dir)) !== m.commitSeq) {
      const now = await readCurrentManifest(this.#dir);
      for (const seq of committed.keys()) if (!now?.segments.has(seq)) throw new SegmentVanished(segmentName(seq));
    }
    this.recovery = { clean: actions.length === 0, truncatedBytes, actions };
  }

  /** Opens and indexes the segments `committed` names (those of them `present` in the listing). */
  async #openSegments(
    committed: ReadonlyMap<number, number>,
    present: ReadonlySet<number>,
    actions: string[],
    addTruncated: (bytes: number) => void,
  ): Promise<void> {
    for (const [seq, length] of [...committed].sort((a, b) => a[0] - b[0])) {
      const name = segmentName(seq);
      this.#nextSeq = Math.max(this.#nextSeq, seq + 1);
      let fh: FileHandle | undefined;
      if (present.has(seq)) {
        try {
          // Never written by this session; not a link or a FIFO someone planted (no blocking open).
          fh = await open(join(this.#dir, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          if (code === 'ELOOP') throw corruption(`node-fs: ${name} is a symbolic link`);
          if (code !== 'ENOENT') throw e;
        }
      }
      if (fh === undefined) {
        // Another writer may have compacted it away after the manifest was read.
        if (await this.#manifestChanged()) throw new SegmentVanished(name);
        throw corruption(`node-fs: ${name} is named by the manifest but missing`);
      }
      this.#segments.set(seq, newSegment(seq, fh, length));
      const st = await fh.stat();
      if (!st.isFile()) throw corruption(`node-fs: ${name} is not a regular file`);
      const size = st.size;
      if (size < length) throw corruption(`node-fs: ${name} holds ${size} bytes, the manifest committed ${length}`);
      if (size > length) {
        // Never truncated: the bytes may be another writer's commit in progress in its own segment.
        addTruncated(size - length);
        actions.push(
          `${name} has ${size - length} bytes past its committed length ${length}: an unfinished commit (ignored, left in place)`,
        );
      }
      await this.#scan(fh, seq, name, length);
    }
  }

  async #scan(fh: FileHandle, seq: number, name: string, length: number): Promise<void> {
    const head = new Uint8Array(Math.max(SEGMENT_HEADER_BYTES, RECORD_HEADER_BYTES));
    await readExactly(fh, head, SEGMENT_HEADER_BYTES, 0, name);
    const hv = new DataView(head.buffer);
    for (let i = 0; i < 8; i++) {
      if (head[i] !== SEGMENT_MAGIC.charCodeAt(i)) throw corruption(`node-fs: ${name} is not a pqdb segment`);
    }
    const version = hv.getUint32(8, true);
    if (version !== FORMAT_VERSION)
      throw new PqdbError('FORMAT_VERSION', `node-fs: ${name} has format version ${version}`);
    if (hv.getUint32(12, true) !== seq) throw corruption(`node-fs: ${name} carries another segment number`);
    const seg = this.#segments.get(seq)!;
    // Record headers are read through a window of the file (one read per SCAN_WINDOW_BYTES, not per record).
    const window = new Uint8Array(Math.min(SCAN_WINDOW_BYTES, length));
    let windowAt = 0;
    let windowLength = 0;
    let off = SEGMENT_HEADER_BYTES;
    while (off < length) {
      if (length - off < RECORD_HEADER_BYTES)
        throw corruption(`node-fs: ${name} ends inside a record header at ${off}`);
      if (off + RECORD_HEADER_BYTES > windowAt + windowLength) {
        windowAt = off;
        windowLength = Math.min(window.length, length - off);
        await readExactly(fh, window, windowLength, off, name);
      }
      const h = parseRecordHeader(window.subarray(off - windowAt), `${name} @${off}`);
      if (off + RECORD_HEADER_BYTES + h.length > length)
        throw corruption(`node-fs: ${name} @${off}: record runs past the committed length`);
      this.#unlive(h.id);
      if (h.kind === KIND_PAGE) {
        this.#index.set(h.id, { seq, offset: off, length: h.length, crc: h.crc });
        seg.live += RECORD_HEADER_BYTES + h.length;
        seg.ids.add(h.id);
      } else {
        this.#index.delete(h.id);
        seg.tombs.push(h.id);
      }
      off += RECORD_HEADER_BYTES + h.length;
    }
  }

  /** Accounting: the record that makes `id` live now (if any) turns dead. */
  #unlive(id: number): void {
    const loc = this.#index.get(id);
    if (loc !== undefined) this.#segments.get(loc.seq)!.live -= RECORD_HEADER_BYTES + loc.length;
  }

  /**
   * Step 3 of the commit protocol for the next commit number: the manifest names the segments'
   * committed lengths as `edit` leaves them and the user manifest `user`; it becomes current only
   * if no other writer committed since this one's last commit (node-fs-manifest.ts).
   * @throws PqdbError CONFLICT
   */
  async #writeManifest(
    user: Uint8Array | undefined,
    edit: (segments: Map<number, number>) => void,
    progress: { linked: boolean; seq?: number; end?: number },
  ): Promise<void> {
    const segments = new Map([...this.#segments].map(([s, g]) => [s, g.committed]));
    edit(segments);
    const file = encodeManifest(this.#commitSeq + 1, segments, user);
    const sync: SyncHook = async (fh, what) => {
      await this.#compaction.beforeSync?.(what);
      await fh.sync();
    };
    const { seq, end } = progress;
    // The host lock's key still names this writer's lock (put back if deleted; LOCKED if another
    // writer of this host took a replaced one's name).
    if (this.#lock !== undefined) await checkWriterLock(this.#lock);
    await publishManifest(this.#dir, this.#commitSeq, file, sync, {
      linked: (maybe) => (progress.linked = maybe),
      carries: (top) => seq !== undefined && (top.segments.get(seq) ?? -1) >= end!,
      afterLink: this.#compaction.afterLink,
    });
    this.#manifestFileBytes = file.length;
  }

  /**
   * After a commit (or compaction step) failed before its commit point (its link surely not made), nothing names the bytes it
   * wrote: a segment this session created for it is unlinked, and this writer's own segment is cut
   * back to its committed length (only this session ever wrote into either file), so a full disk
   * does not fill up further with each retry. Best effort: the store refuses commits from now on.
   */
  async #undoUnpublished(seg: Segment | undefined, created: boolean): Promise<void> {
    if (seg === undefined) return;
    if (created) {
      await seg.fh.close().catch(() => undefined);
      await unlink(join(this.#dir, segmentName(seg.seq))).catch(() => undefined);
    } else if (seg === this.#own) await seg.fh.truncate(seg.committed).catch(() => undefined);
  }

  /**
   * Reads `length` bytes at `position` of `seg`. The caller takes the segment from the map in the
   * same synchronous step as its index lookup, so a compaction that moves the page
   * afterwards cannot pull the file from under the read: a removed segment's handle is closed
   * only when its last read is done.
   */
  async #readAt(seg: Segment, buf: Uint8Array, length: number, position: number): Promise<void> {
    seg.readers++;
    try {
      await readExactly(seg.fh, buf, length, position, segmentName(seg.seq));
    } finally {
      seg.readers--;
      if (seg.retired && seg.readers === 0) await seg.fh.close().catch(() => undefined);
    }
  }

  /** Pages that lie back to back in one segment are read together, up to READ_RUN_BYTES a read. */
  protected override async _readPages(ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
    const out: (Uint8Array | undefined)[] = new Array(ids.length).fill(undefined);
    let i = 0;
    while (i < ids.length) {
      const first = this.#index.get(ids[i]);
      if (first === undefined) {
        i++;
        continue;
      }
      // The run's locations are taken now, with its segment: later commits or compaction steps
      // may change the index while the read is in flight.
      const locs = [first];
      let end = i + 1;
      let bytes = RECORD_HEADER_BYTES + first.length;
      for (let prev = first; end < ids.length; end++) {
        const next = this.#index.get(ids[end]);
        const size = next === undefined ? 0 : RECORD_HEADER_BYTES + next.length;
        if (
          next === undefined ||
          next.seq !== prev.seq ||
          next.offset !== prev.offset + RECORD_HEADER_BYTES + prev.length
        )
          break;
        if (bytes + size > READ_RUN_BYTES) break;
        bytes += size;
        locs.push(next);
        prev = next;
      }
      const run = new Uint8Array(bytes);
      try {
        await this.#readAt(this.#segments.get(first.seq)!, run, bytes, first.offset);
      } catch (e) {
        throw mediumError(`node-fs: read pages ${ids[i]}…${ids[end - 1]}`, e);
      }
      for (let at = 0, k = 0; i < end; i++, k++) {
        const loc = locs[k];
        out[i] = await this.#checked(ids[i], loc, run.subarray(at, at + RECORD_HEADER_BYTES + loc.length));
        at += RECORD_HEADER_BYTES + loc.length;
      }
    }
    return out;
  }

  protected async _readPage(id: number): Promise<Uint8Array | undefined> {
    const loc = this.#index.get(id);
    if (loc === undefined) return undefined;
    const buf = new Uint8Array(RECORD_HEADER_BYTES + loc.length);
    try {
      await this.#readAt(this.#segments.get(loc.seq)!, buf, buf.length, loc.offset);
    } catch (e) {
      throw mediumError(`node-fs: read page ${id}`, e);
    }
    return this.#checked(id, loc, buf);
  }

  /** Record-sized ranges are read synchronously, so many in a turn of the event loop (node-fs-records.ts). */
  readonly #turns = new SyncReadTurns(SYNC_READS_PER_TURN);

  /**
   * readRange's synchronous form (PageStore.readRangeSync): a record-sized range within this turn's
   * reads (none while reads wait for a turn), else -1.
   */
  protected override _readRangeSync(
    id: number,
    offset: number,
    length: number,
    into: Uint8Array,
    block: boolean,
  ): -1 | 0 | 1 {
    if (!block && (length === 0 || length > SYNC_READ_BYTES)) return -1;
    const loc = this.#index.get(id);
    if (loc === undefined) return 0;
    checkRangeInPage(this.kind, id, offset, length, loc.length);
    if (length === 0) return 1;
    if (!block && !this.#turns.take()) return -1;
    try {
      this.#readSync(this.#segments.get(loc.seq)!, loc, offset, into.subarray(0, length));
    } catch (e) {
      throw mediumError(`node-fs: read page ${id} [${offset}, ${offset + length})`, e);
    }
    return 1;
  }

  /** One synchronous positioned read of `buf.length` bytes at `offset` of the page at `loc` in `seg`. */
  #readSync(seg: Segment, loc: Location, offset: number, buf: Uint8Array): void {
    readSyncExactly(seg.fh.fd, buf, loc.offset + RECORD_HEADER_BYTES + offset, segmentName(loc.seq));
  }

  /**
   * One positioned read of the range, at the page's body in its segment (from the in-memory index)
   * plus `offset`. Neither the record header nor the page's CRC-32C is checked: the checksum covers
   * the whole body, and checking it would mean reading the ~200 KB page this read exists to avoid.
   * The bytes are authenticated one layer up, by the sealed record's AEAD tag (PageStore.readRange);
   * a range past the page's end is CORRUPTION before any read.
   */
  protected override async _readRange(id: number, offset: number, length: number): Promise<Uint8Array | undefined> {
    const loc = this.#index.get(id);
    if (loc === undefined) return undefined;
    checkRangeInPage(this.kind, id, offset, length, loc.length);
    const buf = new Uint8Array(length);
    if (length === 0) return buf;
    try {
      const at = loc.offset + RECORD_HEADER_BYTES + offset;
      const seg = this.#segments.get(loc.seq)!;
      if (length > SYNC_READ_BYTES) await this.#readAt(seg, buf, length, at);
      // Nothing runs during a synchronous read, so no compaction step can close the handle under it.
      else if (this.#turns.take()) this.#readSync(seg, loc, offset, buf);
      else {
        seg.readers++;
        try {
          await this.#turns.wait();
          this.#readSync(seg, loc, offset, buf);
        } finally {
          seg.readers--;
          if (seg.retired && seg.readers === 0) await seg.fh.close().catch(() => undefined);
        }
      }
    } catch (e) {
      throw mediumError(`node-fs: read page ${id} [${offset}, ${offset + length})`, e);
    }
    return buf;
  }

  /** A page's record as read (header ‖ body): its header and checksum checked, the body in its own buffer. */
  async #checked(id: number, loc: Location, record: Uint8Array): Promise<Uint8Array> {
    const name = segmentName(loc.seq);
    const h = parseRecordHeader(record, `${name} @${loc.offset}`);
    if (h.kind !== KIND_PAGE || h.id !== id || h.length !== loc.length || h.crc !== loc.crc) {
      throw corruption(`node-fs: page ${id} (${name} @${loc.offset}): record header changed`);
    }
    const body =
      record.byteOffset === 0 && record.length === record.buffer.byteLength
        ? record.subarray(RECORD_HEADER_BYTES)
        : record.slice(RECORD_HEADER_BYTES);
    // In steps: an index page can be megabytes, and its checksum must not hold the event loop.
    if ((await crc32cAsync(body)) !== h.crc)
      throw corruption(`node-fs: page ${id} (${name} @${loc.offset}): checksum mismatch`);
    return body;
  }

  protected async _readManifest(): Promise<Uint8Array | undefined> {
    return this.#manifest && new Uint8Array(this.#manifest);
  }

  protected _listPages(): number[] {
    return [...this.#index.keys()].sort((a, b) => a - b);
  }

  protected _has(id: number): boolean {
    return this.#index.has(id);
  }

  protected async _commit(batch: CheckedBatch): Promise<void> {
    if (this.#readOnly) throw new PqdbError('READ_ONLY', `node-fs page store ${this.#dir} is open read-only`);
    if (this.#failed !== undefined) {
      throw new PqdbError('IO_ERROR', 'node-fs: an earlier write failed; reopen the store', { cause: this.#failed });
    }
    try {
      await this.#commit(batch);
    } catch (e) {
      this.#failed = e;
      throw mediumError('node-fs: commit', e);
    }
    this.#scheduleCompaction();
  }

  /**
   * The early half of the compare-and-swap: the current commit on disk must still be the one this
   * store made last, else another writer (let in by a deleted or misjudged LOCK) has committed and
   * this one stops (CONFLICT) before writing anything. The manifest's link decides in the end.
   */
  async #checkNotOvertaken(): Promise<void> {
    const onDisk = await currentCommit(this.#dir);
    if (onDisk !== this.#commitSeq)
      throw new PqdbError(
        'CONFLICT',
        `node-fs page store ${this.#dir}: another writer committed (commit ${onDisk}, this writer last wrote ${this.#commitSeq}); nothing was written: reopen the store`,
      );
  }

  /**
   * Where `bytes` more go: this writer's own segment while it has room (and is not `avoid`), else a
   * new one, created with its header first in `records`.
   */
  async #destination(
    total: number,
    records: Uint8Array[],
    avoid?: Segment,
  ): Promise<{ seg: Segment; created: boolean }> {
    const own = this.#own;
    if (own !== undefined && own !== avoid && !this.#retired(own)) {
      if (own.committed === SEGMENT_HEADER_BYTES || own.committed + total <= this.#segmentBytes) {
        // Only this writer appends to it, and it writes nothing after a failure: its end is its
        // committed length. A file that grew anyway was written by someone else.
        const size = (await own.fh.stat()).size;
        if (size !== own.committed)
          throw new PqdbError(
            'CONFLICT',
            `node-fs page store ${this.#dir}: ${segmentName(own.seq)} holds ${size} bytes, this writer wrote ${own.committed}; another writer wrote into it: reopen the store`,
          );
        return { seg: own, created: false };
      }
    }
    return { seg: await this.#createSegment(records), created: true };
  }

  #retired(seg: Segment): boolean {
    return seg.retired || !this.#segments.has(seg.seq);
  }

  async #commit(batch: CheckedBatch): Promise<void> {
    await this.#checkNotOvertaken();
    const records: Uint8Array[] = [];
    let total = 0;
    for (const id of batch.deletes) {
      records.push(recordHeader(KIND_DELETE, id, 0, 0));
      total += RECORD_HEADER_BYTES;
    }
    const crcs: number[] = [];
    for (const p of batch.pages) {
      const crc = await crc32cAsync(p.bytes);
      crcs.push(crc);
      records.push(recordHeader(KIND_PAGE, p.id, p.bytes.length, crc), p.bytes);
      total += RECORD_HEADER_BYTES + p.bytes.length;
    }
    let seg: Segment | undefined;
    let created = false;
    if (total > 0) {
      ({ seg, created } = await this.#destination(total, records));
      if (created) total += SEGMENT_HEADER_BYTES;
    }
    let end = seg?.committed ?? 0;
    const progress = { linked: false, seq: seg?.seq, end: end + total };
    try {
      if (seg !== undefined) {
        await writeGathered(seg.fh, records, end); // at the end of a file only this writer writes
        await this.#sync(seg.fh, 'segment');
        end += total;
      }
      await this.#writeManifest(
        batch.manifest ?? this.#manifest,
        (segments) => {
          if (seg !== undefined) segments.set(seg.seq, end);
        },
        progress,
      );
    } catch (e) {
      if (!progress.linked) await this.#undoUnpublished(seg, created);
      else if (created) await seg!.fh.close().catch(() => undefined);
      throw e;
    }
    // Durable: publish.
    this.#commitSeq++;
    if (created) this.#adopt(seg!);
    let off = seg?.committed ?? 0;
    for (const id of batch.deletes) {
      this.#unlive(id);
      this.#index.delete(id);
      seg!.tombs.push(id);
      off += RECORD_HEADER_BYTES;
    }
    batch.pages.forEach((p, i) => {
      this.#index.set(p.id, { seq: seg!.seq, offset: off, length: p.bytes.length, crc: crcs[i] });
      seg!.live += RECORD_HEADER_BYTES + p.bytes.length;
      seg!.ids.add(p.id);
      off += RECORD_HEADER_BYTES + p.bytes.length;
    });
    if (seg !== undefined) seg.committed = end;
    if (batch.manifest !== undefined) this.#manifest = batch.manifest;
  }

  /** A segment this writer created is committed: it is the one appended to from now on. */
  #adopt(seg: Segment): void {
    seg.committed = SEGMENT_HEADER_BYTES; // its header was written with the first records
    this.#segments.set(seg.seq, seg);
    this.#own = seg;
  }

  /**
   * Creates a new segment file with O_EXCL, numbered above every segment this writer has seen (the
   * next number when another writer took one), and puts its header first in `records`. A file
   * another writer made is never opened for writing, and none is ever truncated.
   */
  async #createSegment(records: Uint8Array[]): Promise<Segment> {
    for (let tries = 0; ; tries++) {
      const seq = this.#nextSeq++;
      if (seq > 0xffffffff)
        throw new PqdbError('IO_ERROR', `node-fs page store ${this.#dir}: segment numbers exhausted`);
      let fh: FileHandle;
      try {
        fh = await open(join(this.#dir, segmentName(seq)), 'wx+');
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST' && tries < 1000) continue;
        throw e;
      }
      const head = new Uint8Array(SEGMENT_HEADER_BYTES);
      head.set(ascii(SEGMENT_MAGIC));
      const hv = new DataView(head.buffer);
      hv.setUint32(8, FORMAT_VERSION, true);
      hv.setUint32(12, seq, true);
      records.unshift(head);
      return newSegment(seq, fh, 0);
    }
  }

  async #sync(fh: FileHandle, what: 'segment'): Promise<void> {
    await this.#compaction.beforeSync?.(what);
    await fh.datasync();
  }

  #current(): Segment | undefined {
    let last: Segment | undefined;
    for (const s of this.#segments.values()) if (last === undefined || s.seq > last.seq) last = s;
    return last;
  }

  /**
   * Segment compaction (PageStore.compact): one bounded step at a time through the commit queue,
   * until no segment that existed when the first step ran qualifies (so a call ends, whatever it
   * writes), `maxBytes` were copied, or the store is closing. The segment being appended to
   * qualifies too: its copies go to a new segment.
   * @throws as PageStore.compact
   * @example const { bytesBefore, bytesAfter } = await store.compact!({ minDeadFraction: 0.5 });
   */
  async compact(options: SegmentCompactOptions = {}): Promise<SegmentCompactResult> {
    if (!this.isOpen) throw notOpen(this.kind);
    if (typeof options !== 'object' || options === null)
      throw new TypeError(`"options" expected an object, got ${options === null ? 'null' : typeof options}`);
    const minDead = checkDeadFraction('minDeadFraction', options.minDeadFraction ?? this.#compaction.minDead);
    const stepBytes = checkStepBytes('stepBytes', options.stepBytes ?? this.#compaction.stepBytes);
    const maxBytes = options.maxBytes ?? Infinity;
    if (typeof maxBytes !== 'number' || !(maxBytes >= 0))
      throw new RangeError(`"maxBytes" expected a number >= 0, got ${String(maxBytes)}`);
    const onProgress = options.onProgress;
    if (onProgress !== undefined && typeof onProgress !== 'function')
      throw new TypeError(`"onProgress" expected a function, got ${typeof onProgress}`);
    if (this.#readOnly) throw new PqdbError('READ_ONLY', `node-fs page store ${this.#dir} is open read-only`);
    const bytesBefore = this.#storedBytes();
    let maxSeq: number | undefined;
    let segmentsRewritten = 0;
    let bytesCopied = 0;
    // isOpen is checked in the same tick as the step is queued: close() then waits for it.
    while (this.isOpen && bytesCopied < maxBytes) {
      const budget = Math.max(1, Math.min(stepBytes, maxBytes - bytesCopied));
      const step = await this._serial(async () => {
        if (!this.isOpen) return undefined;
        maxSeq ??= this.#current()?.seq ?? 0;
        return this.#compactStep({ minDead, stepBytes: budget, maxSeq, includeCurrent: true });
      });
      if (step === undefined) break;
      bytesCopied += step.copied;
      if (step.removed) segmentsRewritten++;
      onProgress?.({ segmentsRewritten, bytesCopied, storedBytes: this.#storedBytes() });
    }
    return { segmentsRewritten, bytesCopied, bytesBefore, bytesAfter: this.#storedBytes() };
  }

  /**
   * Queues one background compaction step when a sealed segment qualifies (none is queued yet, the
   * store is healthy and open); the step queues the next. Called after each commit, in the queue.
   */
  #scheduleCompaction(): void {
    if (!this.#compaction.auto || this.#autoQueued || this.#autoStopped !== undefined) return;
    if (this.#failed !== undefined || !this.isOpen || this.#readOnly) return;
    if (this.#victim(this.#compaction.minDead, Infinity, false) === undefined) return;
    this.#autoQueued = true;
    void this._serial(async () => {
      this.#autoQueued = false;
      if (!this.isOpen || this.#failed !== undefined) return;
      try {
        const step = { minDead: this.#compaction.minDead, stepBytes: this.#compaction.stepBytes };
        await this.#compactStep({ ...step, maxSeq: Infinity, includeCurrent: false });
      } catch (e) {
        // A failed write already refuses commits (#failed); anything else (a page that failed its
        // checksum, nothing written) stops the background work instead of retrying it each commit.
        if (this.#failed === undefined) this.#autoStopped = e;
        return;
      }
      this.#scheduleCompaction();
    });
  }

  /** The segment the next compaction step rewrites (node-fs-compact.ts pickVictim). */
  #victim(minDead: number, maxSeq: number, includeCurrent: boolean): Segment | undefined {
    const current = this.#current();
    if (current === undefined) return undefined;
    return pickVictim(this.#segments.values(), {
      currentSeq: current.seq,
      minDead,
      maxSeq,
      includeCurrent,
      headerBytes: SEGMENT_HEADER_BYTES,
      pinned: (seg) => this.#pinned(seg),
      smallBytes: this.#segmentBytes / 4,
      maxSmall: MAX_SMALL_SEGMENTS,
    });
  }

  /**
   * Bytes of `seg`'s tombstones that compaction would carry forward, recomputed only when a
   * segment was removed or `seg` gained tombstones since (an id written again after its tombstone
   * is counted until then: a few bytes too many, never too few).
   */
  #pinned(seg: Segment): number {
    const key = `${this.#removals}:${seg.tombs.length}`;
    if (seg.pinnedKey !== key) {
      const needed = neededTombstones(seg, this.#segments.values(), (id) => this.#index.has(id));
      seg.pinned = needed.length * RECORD_HEADER_BYTES;
      seg.pinnedKey = key;
    }
    return seg.pinned;
  }

  /**
   * One bounded compaction step, in the commit queue: copies the victim's first live records (at
   * most `stepBytes`, at least one) to the end of the newest segment — a new one when the victim is
   * the newest or the newest is full — and, when that empties the victim, its still-needed
   * tombstones too. Then the commit protocol: fdatasync, MANIFEST with the new length (and without
   * the victim once empty), rename, directory fsync. Only then the index moves and the victim's file
   * is unlinked. Reading and checking the records writes nothing (CORRUPTION leaves the store as it
   * was); a failure after that refuses commits until reopened, as a failed commit does.
   */
  async #compactStep(o: {
    minDead: number;
    stepBytes: number;
    maxSeq: number;
    includeCurrent: boolean;
  }): Promise<StepResult | undefined> {
    if (this.#failed !== undefined)
      throw new PqdbError('IO_ERROR', 'node-fs: an earlier write failed; reopen the store', { cause: this.#failed });
    const victim = this.#victim(o.minDead, o.maxSeq, o.includeCurrent);
    if (victim === undefined) return undefined;
    const live = liveRecords(victim, (id) => this.#index.get(id), RECORD_HEADER_BYTES);
    const moving = stepOf(live, o.stepBytes);
    const done = moving.length === live.length;
    const tombs = done ? neededTombstones(victim, this.#segments.values(), (id) => this.#index.has(id)) : [];
    const records: Uint8Array[] = tombs.map((id) => recordHeader(KIND_DELETE, id, 0, 0));
    const moved: { id: number; loc: Location }[] = [];
    for (const r of moving) {
      const loc = this.#index.get(r.id)!;
      const record = new Uint8Array(r.bytes);
      try {
        await this.#readAt(victim, record, record.length, loc.offset);
      } catch (e) {
        throw mediumError(`node-fs: compact: read page ${r.id}`, e);
      }
      await this.#checked(r.id, loc, record); // its header and CRC-32C, as readPage checks them
      records.push(record); // copied as is: a record header names no segment or offset
      moved.push({ id: r.id, loc });
    }
    try {
      return await this.#writeStep(victim, records, tombs, moved, done);
    } catch (e) {
      this.#failed = e;
      throw mediumError('node-fs: compact', e);
    }
  }

  async #writeStep(
    victim: Segment,
    records: Uint8Array[],
    tombs: readonly number[],
    moved: readonly { id: number; loc: Location }[],
    done: boolean,
  ): Promise<StepResult> {
    await this.#checkNotOvertaken();
    let total = 0;
    for (const r of records) total += r.length;
    // The victim is never its own destination; and a new segment is numbered above every one seen,
    // so a sequence number is never used twice (a reader's old manifest may still name it).
    const { seg: dest, created } = await this.#destination(total, records, victim);
    if (created) total += SEGMENT_HEADER_BYTES;
    let end = dest.committed;
    const progress = { linked: false, seq: total > 0 ? dest.seq : undefined, end: end + total };
    try {
      if (total > 0) {
        await writeGathered(dest.fh, records, end);
        await this.#sync(dest.fh, 'segment');
        end += total;
      }
      await this.#writeManifest(
        this.#manifest,
        (segments) => {
          segments.set(dest.seq, end);
          if (done) segments.delete(victim.seq);
        },
        progress,
      );
    } catch (e) {
      if (!progress.linked) await this.#undoUnpublished(dest, created);
      else if (created) await dest.fh.close().catch(() => undefined);
      throw e;
    }
    // Durable: publish (the same synchronous step moves the index and the accounting).
    this.#commitSeq++;
    if (created) this.#adopt(dest);
    let off = dest.committed;
    let copied = 0;
    for (const id of tombs) {
      dest.tombs.push(id);
      off += RECORD_HEADER_BYTES;
      copied += RECORD_HEADER_BYTES;
    }
    for (const { id, loc } of moved) {
      const size = RECORD_HEADER_BYTES + loc.length;
      this.#index.set(id, { seq: dest.seq, offset: off, length: loc.length, crc: loc.crc });
      victim.live -= size;
      dest.live += size;
      dest.ids.add(id);
      off += size;
      copied += size;
    }
    dest.committed = end;
    if (done) {
      this.#segments.delete(victim.seq);
      this.#removals++;
      victim.retired = true; // reads already holding it finish on the open handle
      if (victim.readers === 0) await victim.fh.close().catch(() => undefined);
      // A file left behind (a crash, a failed unlink) is unnamed by MANIFEST and removed on the next open.
      await unlink(join(this.#dir, segmentName(victim.seq))).catch(() => undefined);
    }
    return { copied, removed: done };
  }

  #storedBytes(): number {
    let storedBytes = this.#manifestFileBytes;
    for (const s of this.#segments.values()) storedBytes += s.committed;
    return storedBytes;
  }

  /** @internal Per-segment space (tests and benchmarks): sequence, committed and live bytes, dead fraction. */
  segmentSpace(): { seq: number; committed: number; live: number; deadFraction: number }[] {
    return [...this.#segments.values()]
      .sort((a, b) => a.seq - b.seq)
      .map((s) => ({
        seq: s.seq,
        committed: s.committed,
        live: s.live,
        deadFraction: deadFraction(s, SEGMENT_HEADER_BYTES),
      }));
  }

  protected async _stats(): Promise<PageStoreStats> {
    let pageBytes = 0;
    for (const loc of this.#index.values()) pageBytes += loc.length;
    const storedBytes = this.#storedBytes();
    return { pageCount: this.#index.size, pageBytes, manifestBytes: this.#manifest?.length ?? 0, storedBytes };
  }

  protected async _close(): Promise<void> {
    const errors: unknown[] = [];
    for (const s of this.#segments.values()) await s.fh.close().catch((e) => errors.push(e));
    this.#segments.clear();
    this.#index.clear();
    if (this.#lock !== undefined) await releaseWriterLock(this.#dir, this.#lock).catch((e) => errors.push(e));
    if (errors.length > 0) throw mediumError('node-fs: close', errors[0]);
  }
}
