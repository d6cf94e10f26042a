// node-fs segment reclaim (Node only): giving back the space of deleted and superseded pages. A
// segment whose bytes are mostly dead has its live pages copied, CRC-checked, into this writer's
// segment, and is dropped from the manifest in the same commit-protocol write that makes the
// copies committed; its file is unlinked after. One bounded step at a time through the commit
// queue, by `reclaim()` and in the background after commits. Which segment and which records:
// node-fs-reclaim-plan.ts. Not the engine's record reclaim (src/engine/compact.ts), which
// calls `reclaim` after its own work. docs/storage.md "Space: segment reclaim".
//
// Security caveat: replay order (the last record for an id wins) makes a copy supersede the
// original, so a kill at any point leaves each acknowledged page exactly once; a page that fails
// its checksum is CORRUPTION and nothing is written.

/// <reference types="node" />
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { PqdbError } from '../errors';
import { adopt, checkNotOvertaken, destination, syncSegment, undoUnpublished, writeManifest } from './node-fs-commit';
import { liveRecords, neededTombstones, pickVictim, stepOf } from './node-fs-reclaim-plan';
import type { NodeFsReads } from './node-fs-reads';
import { KIND_DELETE, RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES, recordHeader, writeGathered } from './node-fs-records';
import { segmentName, type Location, type NodeFsState, type Segment } from './node-fs-segments';
import type { ReclaimOptions, ReclaimResult } from './page-store';
import { mediumError, notOpen } from './page-store-base';

const KIND = 'node-fs';
/** Reclaim rewrites a segment once this fraction of its bytes is dead (default). */
export const DEFAULT_RECLAIM_DEAD_FRACTION = 0.5;
/**
 * The most one reclaim step copies (default): with its fdatasync and MANIFEST replacement, a
 * step of 4 MiB took 45–80 ms (p50) in bench/segcompact.mjs, which is what a commit queued behind
 * it waits.
 */
export const DEFAULT_RECLAIM_STEP_BYTES = 4 << 20;
/** More sealed segments than this below a quarter of `segmentBytes` are merged (node-fs-reclaim-plan.ts pickVictim). */
const MAX_SMALL_SEGMENTS = 16;

export function checkDeadFraction(name: string, v: unknown): number {
  if (typeof v !== 'number' || !(v > 0 && v <= 1))
    throw new RangeError(`"${name}" expected a number in (0, 1], got ${String(v)}`);
  return v;
}

export function checkStepBytes(name: string, v: unknown): number {
  if (!Number.isInteger(v) || (v as number) < 4096)
    throw new RangeError(`"${name}" expected an integer >= 4096, got ${String(v)}`);
  return v as number;
}

/** What one reclaim step did. */
interface StepResult {
  readonly copied: number;
  readonly removed: boolean;
}

/** What reclaim uses of the page store it runs in: whether it is open, and its commit queue. */
export interface ReclaimQueue {
  isOpen(): boolean;
  /** Runs `run` in the commit queue, between commits (BasePageStore._serial). */
  serial<T>(run: () => Promise<T>): Promise<T>;
}

/** Segment reclaim of one open store. */
export class NodeFsReclaim {
  readonly #st: NodeFsState;
  readonly #reads: NodeFsReads;
  readonly #queue: ReclaimQueue;
  /** A background step is queued (at most one at a time). */
  #autoQueued = false;
  /** Why background reclaim stopped (a page that failed its checksum); `reclaim()` still runs. */
  #autoStopped: unknown;

  constructor(st: NodeFsState, reads: NodeFsReads, queue: ReclaimQueue) {
    this.#st = st;
    this.#reads = reads;
    this.#queue = queue;
  }

  /**
   * Segment reclaim (PageStore.compact): one bounded step at a time through the commit queue,
   * until no segment that existed when the first step ran qualifies (so a call ends, whatever it
   * writes), `maxBytes` were copied, or the store is closing. The segment being appended to
   * qualifies too: its copies go to a new segment.
   * @throws as PageStore.compact
   * @example const { bytesBefore, bytesAfter } = await store.compact!({ minDeadFraction: 0.5 });
   */
  async reclaim(options: ReclaimOptions = {}): Promise<ReclaimResult> {
    if (!this.#queue.isOpen()) throw notOpen(KIND);
    if (typeof options !== 'object' || options === null)
      throw new TypeError(`"options" expected an object, got ${options === null ? 'null' : typeof options}`);
    const minDead = checkDeadFraction('minDeadFraction', options.minDeadFraction ?? this.#st.settings.minDead);
    const stepBytes = checkStepBytes('stepBytes', options.stepBytes ?? this.#st.settings.stepBytes);
    const maxBytes = options.maxBytes ?? Infinity;
    if (typeof maxBytes !== 'number' || !(maxBytes >= 0))
      throw new RangeError(`"maxBytes" expected a number >= 0, got ${String(maxBytes)}`);
    const onProgress = options.onProgress;
    if (onProgress !== undefined && typeof onProgress !== 'function')
      throw new TypeError(`"onProgress" expected a function, got ${typeof onProgress}`);
    if (this.#st.readOnly) throw new PqdbError('READ_ONLY', `node-fs page store ${this.#st.dir} is open read-only`);
    const bytesBefore = this.#st.storedBytes();
    let maxSeq: number | undefined;
    let segmentsRewritten = 0;
    let bytesCopied = 0;
    // isOpen is checked in the same tick as the step is queued: close() then waits for it.
    while (this.#queue.isOpen() && bytesCopied < maxBytes) {
      const budget = Math.max(1, Math.min(stepBytes, maxBytes - bytesCopied));
      const step = await this.#queue.serial(async () => {
        if (!this.#queue.isOpen()) return undefined;
        maxSeq ??= this.#st.current()?.seq ?? 0;
        return this.#step({ minDead, stepBytes: budget, maxSeq, includeCurrent: true });
      });
      if (step === undefined) break;
      bytesCopied += step.copied;
      if (step.removed) segmentsRewritten++;
      onProgress?.({ segmentsRewritten, bytesCopied, storedBytes: this.#st.storedBytes() });
    }
    return { segmentsRewritten, bytesCopied, bytesBefore, bytesAfter: this.#st.storedBytes() };
  }

  /**
   * Queues one background reclaim step when a sealed segment qualifies (none is queued yet, the
   * store is healthy and open); the step queues the next. Called after each commit, in the queue.
   */
  schedule(): void {
    if (!this.#st.settings.auto || this.#autoQueued || this.#autoStopped !== undefined) return;
    if (this.#st.failed !== undefined || !this.#queue.isOpen() || this.#st.readOnly) return;
    if (this.#victim(this.#st.settings.minDead, Infinity, false) === undefined) return;
    this.#autoQueued = true;
    void this.#queue.serial(async () => {
      this.#autoQueued = false;
      if (!this.#queue.isOpen() || this.#st.failed !== undefined) return;
      try {
        const step = { minDead: this.#st.settings.minDead, stepBytes: this.#st.settings.stepBytes };
        await this.#step({ ...step, maxSeq: Infinity, includeCurrent: false });
      } catch (e) {
        // A failed write already refuses commits (#failed); anything else (a page that failed its
        // checksum, nothing written) stops the background work instead of retrying it each commit.
        if (this.#st.failed === undefined) this.#autoStopped = e;
        return;
      }
      this.schedule();
    });
  }

  /** The segment the next reclaim step rewrites (node-fs-compact.ts pickVictim). */
  #victim(minDead: number, maxSeq: number, includeCurrent: boolean): Segment | undefined {
    const current = this.#st.current();
    if (current === undefined) return undefined;
    return pickVictim(this.#st.segments.values(), {
      currentSeq: current.seq,
      minDead,
      maxSeq,
      includeCurrent,
      headerBytes: SEGMENT_HEADER_BYTES,
      pinned: (seg) => this.#pinned(seg),
      smallBytes: this.#st.segmentBytes / 4,
      maxSmall: MAX_SMALL_SEGMENTS,
    });
  }

  /**
   * Bytes of `seg`'s tombstones that reclaim would carry forward, recomputed only when a
   * segment was removed or `seg` gained tombstones since (an id written again after its tombstone
   * is counted until then: a few bytes too many, never too few).
   */
  #pinned(seg: Segment): number {
    const key = `${this.#st.removals}:${seg.tombs.length}`;
    if (seg.pinnedKey !== key) {
      const needed = neededTombstones(seg, this.#st.segments.values(), (id) => this.#st.index.has(id));
      seg.pinned = needed.length * RECORD_HEADER_BYTES;
      seg.pinnedKey = key;
    }
    return seg.pinned;
  }

  /**
   * One bounded reclaim step, in the commit queue: copies the victim's first live records (at
   * most `stepBytes`, at least one) to the end of the newest segment — a new one when the victim is
   * the newest or the newest is full — and, when that empties the victim, its still-needed
   * tombstones too. Then the commit protocol: fdatasync, MANIFEST with the new length (and without
   * the victim once empty), rename, directory fsync. Only then the index moves and the victim's file
   * is unlinked. Reading and checking the records writes nothing (CORRUPTION leaves the store as it
   * was); a failure after that refuses commits until reopened, as a failed commit does.
   */
  async #step(o: {
    minDead: number;
    stepBytes: number;
    maxSeq: number;
    includeCurrent: boolean;
  }): Promise<StepResult | undefined> {
    if (this.#st.failed !== undefined)
      throw new PqdbError('IO_ERROR', 'node-fs: an earlier write failed; reopen the store', { cause: this.#st.failed });
    const victim = this.#victim(o.minDead, o.maxSeq, o.includeCurrent);
    if (victim === undefined) return undefined;
    const live = liveRecords(victim, (id) => this.#st.index.get(id), RECORD_HEADER_BYTES);
    const moving = stepOf(live, o.stepBytes);
    const done = moving.length === live.length;
    const tombs = done ? neededTombstones(victim, this.#st.segments.values(), (id) => this.#st.index.has(id)) : [];
    const records: Uint8Array[] = tombs.map((id) => recordHeader(KIND_DELETE, id, 0, 0));
    const moved: { id: number; loc: Location }[] = [];
    for (const r of moving) {
      const loc = this.#st.index.get(r.id)!;
      const record = new Uint8Array(r.bytes);
      try {
        await this.#st.readAt(victim, record, record.length, loc.offset);
      } catch (e) {
        throw mediumError(`node-fs: compact: read page ${r.id}`, e);
      }
      await this.#reads.checked(r.id, loc, record); // its header and CRC-32C, as readPage checks them
      records.push(record); // copied as is: a record header names no segment or offset
      moved.push({ id: r.id, loc });
    }
    try {
      return await this.#writeStep(victim, records, tombs, moved, done);
    } catch (e) {
      this.#st.failed = e;
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
    await checkNotOvertaken(this.#st);
    let total = 0;
    for (const r of records) total += r.length;
    // The victim is never its own destination; and a new segment is numbered above every one seen,
    // so a sequence number is never used twice (a reader's old manifest may still name it).
    const { seg: dest, created } = await destination(this.#st, total, records, victim);
    if (created) total += SEGMENT_HEADER_BYTES;
    let end = dest.committed;
    const progress = { linked: false, seq: total > 0 ? dest.seq : undefined, end: end + total };
    try {
      if (total > 0) {
        await writeGathered(dest.fh, records, end);
        await syncSegment(this.#st, dest.fh, 'segment');
        end += total;
      }
      await writeManifest(
        this.#st,
        this.#st.manifest,
        (segments) => {
          segments.set(dest.seq, end);
          if (done) segments.delete(victim.seq);
        },
        progress,
      );
    } catch (e) {
      if (!progress.linked) await undoUnpublished(this.#st, dest, created);
      else if (created) await dest.fh.close().catch(() => undefined);
      throw e;
    }
    // Durable: publish (the same synchronous step moves the index and the accounting).
    this.#st.commitSeq++;
    if (created) adopt(this.#st, dest);
    let off = dest.committed;
    let copied = 0;
    for (const id of tombs) {
      dest.tombs.push(id);
      off += RECORD_HEADER_BYTES;
      copied += RECORD_HEADER_BYTES;
    }
    for (const { id, loc } of moved) {
      const size = RECORD_HEADER_BYTES + loc.length;
      this.#st.index.set(id, { seq: dest.seq, offset: off, length: loc.length, crc: loc.crc });
      victim.live -= size;
      dest.live += size;
      dest.ids.add(id);
      off += size;
      copied += size;
    }
    dest.committed = end;
    if (done) {
      this.#st.segments.delete(victim.seq);
      this.#st.removals++;
      victim.retired = true; // reads already holding it finish on the open handle
      if (victim.readers === 0) await victim.fh.close().catch(() => undefined);
      // A file left behind (a crash, a failed unlink) is unnamed by MANIFEST and removed on the next open.
      await unlink(join(this.#st.dir, segmentName(victim.seq))).catch(() => undefined);
    }
    return { copied, removed: done };
  }
}
