// node-fs segments (Node only): the state one open node-fs store keeps — its segment files, the
// page index (id → where its live record is), the manifest and the commit counter — and opening it:
// reading MANIFEST, listing and opening the named segments, scanning their record headers into the
// index and the per-segment space accounting. node-fs.ts composes it with the reads
// (node-fs-reads.ts), the commits (node-fs-commit.ts) and segment reclaim (node-fs-reclaim.ts).
// The byte layout and the recovery rules are in docs/storage.md.
//
// Security caveat: the scan checks each record header's CRC-32C and the committed lengths (accidents
// and planted files are CORRUPTION, never data); it does not authenticate anything.

/// <reference types="node" />
import { constants, open, readdir, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { PqdbError } from '../errors';
import { deadFraction, type SegmentSpace } from './node-fs-reclaim-plan';
import {
  MANIFEST,
  currentCommit,
  readCurrentManifest,
  refreshManifestCopy,
  removeStaleManifests,
} from './node-fs-manifest';
import { FORMAT_VERSION } from './node-fs-manifest';
import {
  KIND_PAGE,
  RECORD_HEADER_BYTES,
  SEGMENT_HEADER_BYTES,
  SEGMENT_MAGIC,
  parseRecordHeader,
  readExactly,
} from './node-fs-records';
import type { WriterLock } from './node-fs-lock';
import type { RecoveryReport } from './page-store';
import { corruption } from './page-store-base';

/** Segments roll over once they would grow past this (64 MiB); a single commit may exceed it. */
export const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;
export const SEGMENT_RE = /^seg-([0-9a-f]{8})\.pqs$/;
/** How much of a segment opening reads at a time while it indexes the records. */
const SCAN_WINDOW_BYTES = 1 << 20;
/** How often a read-only open starts again when a segment vanished under it (a writer reclaimed it). */
const READ_ONLY_OPEN_ATTEMPTS = 5;

/** The file name of segment `seq`. */
export const segmentName = (seq: number): string => `seg-${seq.toString(16).padStart(8, '0')}.pqs`;

/** Where a live page's record is. */
export interface Location {
  readonly seq: number;
  readonly offset: number; // of the record header
  readonly length: number;
  readonly crc: number;
}

export interface Segment extends SegmentSpace {
  readonly fh: FileHandle;
  /** Reads in flight on `fh`: a segment removed by reclaim is closed once they are done. */
  readers: number;
  /** Removed from the store (by reclaim); `fh` closes when the last reader is done. */
  retired: boolean;
  /** Bytes of its tombstones a reclaim step would carry forward, as of `pinnedKey`. */
  pinned: number;
  /** When `pinned` was computed: segments removed so far and its tombstone count then. */
  pinnedKey: string;
}

export const newSegment = (seq: number, fh: FileHandle, committed: number): Segment => ({
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

/** How an open store behaves: segment reclaim's settings and the fault hooks of the tests. */
export interface NodeFsSettings {
  /** Background segment reclaim after commits. */
  readonly auto: boolean;
  /** The dead fraction at which a segment is reclaimed automatically. */
  readonly minDead: number;
  /** The most bytes one reclaim step copies. */
  readonly stepBytes: number;
  readonly beforeSync?: (what: 'segment' | 'manifest' | 'directory') => void | Promise<void>;
  readonly afterLink?: () => Promise<void>;
  readonly afterManifestRead?: () => Promise<void>;
}

/**
 * The state of one open node-fs store, shared by its reads, commits and reclaim steps (each takes
 * it as its context). Changed only in the commit queue, and there only after a write is durable.
 */
export class NodeFsState {
  readonly segments = new Map<number, Segment>();
  readonly index = new Map<number, Location>();
  manifest: Uint8Array | undefined;
  commitSeq = 0;
  manifestFileBytes = 0;
  /** Why commits are refused (a failed write or sync): set once, until reopened. */
  failed: unknown;
  /** Segments removed by reclaim so far: which tombstones are needed changes only then. */
  removals = 0;
  /** The segment this writer appends to: one it created (O_EXCL) in this session, else none yet. */
  own: Segment | undefined;
  /** Above every segment number seen: where the next new segment's number is tried first. */
  nextSeq = 1;

  constructor(
    readonly dir: string,
    readonly segmentBytes: number,
    readonly readOnly: boolean,
    readonly settings: NodeFsSettings,
    /** The writer's locks (undefined: read-only, no lock). */
    readonly lock?: WriterLock,
  ) {}

  /**
   * Reads MANIFEST, repairs segment tails, rebuilds the page index. A read-only open races a
   * writer: when a segment its MANIFEST named is gone and MANIFEST changed meanwhile (the writer
   * reclaimed it away), it starts again from the new MANIFEST, a few times at most.
   */
  async load(): Promise<RecoveryReport> {
    for (let attempt = 1; ; attempt++) {
      try {
        const recovery = await this.#load();
        if (attempt === 1) return recovery;
        const why = `started over ${attempt - 1} time(s): a segment named by MANIFEST vanished as a writer compacted`;
        return { ...recovery, clean: false, actions: [...recovery.actions, why] };
      } catch (e) {
        if (!(e instanceof SegmentVanished)) throw e;
        this.nextSeq = 1;
        for (const seg of this.segments.values()) await seg.fh.close().catch(() => undefined);
        this.segments.clear();
        this.index.clear();
        this.manifest = undefined;
        this.commitSeq = 0;
        this.manifestFileBytes = 0;
        if (attempt >= READ_ONLY_OPEN_ATTEMPTS)
          throw new PqdbError(
            'IO_ERROR',
            `node-fs: ${this.dir}: segments kept vanishing while opening (a writer compacting); try again`,
            { cause: e },
          );
      }
    }
  }

  /** Whether the current commit on disk is no longer the one this open read (a writer committed or reclaimed). */
  async manifestChanged(): Promise<boolean> {
    return (await currentCommit(this.dir)) !== this.commitSeq;
  }

  async #load(): Promise<RecoveryReport> {
    const actions: string[] = [];
    let truncatedBytes = 0;
    const ro = this.readOnly;
    const m = await readCurrentManifest(this.dir);
    await this.settings.afterManifestRead?.();
    const committed = m?.segments ?? new Map<number, number>();
    if (m !== undefined) {
      this.manifest = m.manifest;
      this.commitSeq = m.commitSeq;
      this.manifestFileBytes = m.fileBytes;
    }
    const names = await readdir(this.dir);
    if (!ro) await removeStaleManifests(this.dir, names, this.commitSeq);
    if (!ro && m?.raw !== undefined) {
      await refreshManifestCopy(this.dir, m.raw);
      actions.push(`${MANIFEST} was behind ${m.file} (a commit cut between its link and its rename): copied`);
    }
    // A segment above every named one may be another writer's, made for a commit it has not
    // published yet (it may win); one below was made by a writer that can no longer win, or was
    // reclaimed away: every writer numbers a new segment above all the files it sees.
    const maxNamed = Math.max(0, ...committed.keys());
    const present = new Set<number>();
    for (const name of names) {
      const match = SEGMENT_RE.exec(name);
      if (!match) continue;
      const seq = parseInt(match[1], 16);
      this.nextSeq = Math.max(this.nextSeq, seq + 1);
      if (committed.has(seq)) present.add(seq);
      else if (ro || seq > maxNamed)
        actions.push(
          `${name} is not named by the manifest (an interrupted commit, another writer's or a compacted segment; left in place)`,
        );
      else {
        await unlink(join(this.dir, name)).catch((e) => {
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
        });
        actions.push(`removed ${name}: not named by the manifest (an interrupted commit or a compacted segment)`);
      }
    }
    try {
      await this.#openSegments(committed, present, actions, (n) => (truncatedBytes += n));
    } catch (e) {
      // A writer may have reclaimed a segment away since and reused its number: start again.
      if (m !== undefined && e instanceof PqdbError && e.code === 'CORRUPTION' && (await this.manifestChanged()))
        throw new SegmentVanished(e.message);
      throw e;
    }
    // The files opened are the ones the manifest named unless one was dropped meanwhile: only then
    // may it have been unlinked and its number taken by a writer that lost the compare-and-swap.
    if (m !== undefined && (await currentCommit(this.dir)) !== m.commitSeq) {
      const now = await readCurrentManifest(this.dir);
      for (const seq of committed.keys()) if (!now?.segments.has(seq)) throw new SegmentVanished(segmentName(seq));
    }
    return { clean: actions.length === 0, truncatedBytes, actions };
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
      this.nextSeq = Math.max(this.nextSeq, seq + 1);
      let fh: FileHandle | undefined;
      if (present.has(seq)) {
        try {
          // Never written by this session; not a link or a FIFO someone planted (no blocking open).
          fh = await open(join(this.dir, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          if (code === 'ELOOP') throw corruption(`node-fs: ${name} is a symbolic link`);
          if (code !== 'ENOENT') throw e;
        }
      }
      if (fh === undefined) {
        // Another writer may have reclaimed it away after the manifest was read.
        if (await this.manifestChanged()) throw new SegmentVanished(name);
        throw corruption(`node-fs: ${name} is named by the manifest but missing`);
      }
      this.segments.set(seq, newSegment(seq, fh, length));
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
    const seg = this.segments.get(seq)!;
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
      this.unlive(h.id);
      if (h.kind === KIND_PAGE) {
        this.index.set(h.id, { seq, offset: off, length: h.length, crc: h.crc });
        seg.live += RECORD_HEADER_BYTES + h.length;
        seg.ids.add(h.id);
      } else {
        this.index.delete(h.id);
        seg.tombs.push(h.id);
      }
      off += RECORD_HEADER_BYTES + h.length;
    }
  }

  /** Accounting: the record that makes `id` live now (if any) turns dead. */
  unlive(id: number): void {
    const loc = this.index.get(id);
    if (loc !== undefined) this.segments.get(loc.seq)!.live -= RECORD_HEADER_BYTES + loc.length;
  }

  /**
   * Reads `length` bytes at `position` of `seg`. The caller takes the segment from the map in the
   * same synchronous step as its index lookup, so a reclaim step that moves the page
   * afterwards cannot pull the file from under the read: a removed segment's handle is closed
   * only when its last read is done.
   */
  async readAt(seg: Segment, buf: Uint8Array, length: number, position: number): Promise<void> {
    seg.readers++;
    try {
      await readExactly(seg.fh, buf, length, position, segmentName(seg.seq));
    } finally {
      seg.readers--;
      if (seg.retired && seg.readers === 0) await seg.fh.close().catch(() => undefined);
    }
  }

  /** The newest segment (the one appended to), if any. */
  current(): Segment | undefined {
    let last: Segment | undefined;
    for (const s of this.segments.values()) if (last === undefined || s.seq > last.seq) last = s;
    return last;
  }

  /** Whether `seg` left the store (reclaimed). */
  isRetired(seg: Segment): boolean {
    return seg.retired || !this.segments.has(seg.seq);
  }

  /** `stats().storedBytes`: committed segment bytes plus the MANIFEST file. */
  storedBytes(): number {
    let storedBytes = this.manifestFileBytes;
    for (const s of this.segments.values()) storedBytes += s.committed;
    return storedBytes;
  }

  /** @internal Per-segment space (tests and benchmarks): sequence, committed and live bytes, dead fraction. */
  segmentSpace(): { seq: number; committed: number; live: number; deadFraction: number }[] {
    return [...this.segments.values()]
      .sort((a, b) => a.seq - b.seq)
      .map((s) => ({
        seq: s.seq,
        committed: s.committed,
        live: s.live,
        deadFraction: deadFraction(s, SEGMENT_HEADER_BYTES),
      }));
  }

  /** Closes every segment file; returns the errors met. */
  async closeAll(): Promise<unknown[]> {
    const errors: unknown[] = [];
    for (const s of this.segments.values()) await s.fh.close().catch((e) => errors.push(e));
    this.segments.clear();
    this.index.clear();
    return errors;
  }
}
