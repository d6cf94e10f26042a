// node-fs segment reclaim, the planning half (Node only, no I/O): per-segment accounting of live
// and dead bytes, which segment to rewrite next, which of its pages one bounded step moves, and
// which of its delete tombstones must be carried forward. node-fs-reclaim.ts does the writing, with the
// commit protocol; the crash-safety argument is in docs/storage.md ("Space: segment reclaim").
//
// Invariant this file relies on: records are replayed in (segment, offset) order and the last
// record for an id decides it, so a copy appended to a newer segment supersedes the old one, and a
// tombstone matters only while an older segment still holds a page record for its id.

/** The space accounting node-fs keeps per segment (in memory; rebuilt by the scan on open). */
export interface SegmentSpace {
  readonly seq: number;
  /** Committed length, segment header included. */
  committed: number;
  /** Bytes of the live page records in it (record headers included). */
  live: number;
  /** Ids of every page record it holds, live or dead. */
  readonly ids: Set<number>;
  /** Ids of the delete tombstones it holds, in file order. */
  readonly tombs: number[];
}

/** A live page record, as the index locates it. */
export interface LiveRecord {
  readonly id: number;
  readonly offset: number;
  /** Record bytes: header plus body. */
  readonly bytes: number;
}

/** The fraction of a segment's record bytes that is dead (superseded pages, deleted pages, tombstones). */
export function deadFraction(seg: SegmentSpace, headerBytes: number): number {
  const records = seg.committed - headerBytes;
  return records <= 0 ? 0 : (records - seg.live) / records;
}

/**
 * The oldest segment whose reclaimable fraction reaches `minDead`, among those with a sequence
 * number at most `maxSeq` (a call never picks what it wrote itself, so it ends); the segment being
 * appended to (`currentSeq`) only when `includeCurrent`. Reclaimable: dead bytes less
 * `pinned(segment)`, the bytes of its tombstones that would have to be carried forward (asked only
 * of segments that pass on dead bytes alone). Without that, a segment of needed tombstones would
 * be copied forward again and again. Oldest first: removing old segments is what lets later
 * tombstones go.
 */
export function pickVictim<S extends SegmentSpace>(
  segments: Iterable<S>,
  options: {
    currentSeq: number;
    minDead: number;
    maxSeq: number;
    includeCurrent: boolean;
    headerBytes: number;
    pinned: (segment: S) => number;
    /** Segments shorter than this are small… */
    smallBytes?: number;
    /** …and once more than this many are, the oldest small one qualifies whatever its dead fraction. */
    maxSmall?: number;
  },
): S | undefined {
  let best: S | undefined;
  const eligible = [...segments].filter(
    (s) => s.seq <= options.maxSeq && (s.seq !== options.currentSeq || options.includeCurrent),
  );
  // Every writer session appends to a segment of its own, so a store opened often for a few
  // commits gathers small segments (each an open file): merge them, oldest first, into the
  // current one. Each merge takes more than `maxSmall` of them to start, so a byte is copied a
  // few times at most (the merged segment is `maxSmall` times larger than those it took in).
  const small = eligible.filter(
    (s) => s.seq !== options.currentSeq && s.committed > options.headerBytes && s.committed < (options.smallBytes ?? 0),
  );
  if (small.length > (options.maxSmall ?? Infinity)) best = small.reduce((a, b) => (b.seq < a.seq ? b : a));
  for (const s of eligible) {
    if (best !== undefined && s.seq > best.seq) continue;
    const records = s.committed - options.headerBytes;
    if (records <= 0) continue; // an empty segment: nothing to reclaim
    if (deadFraction(s, options.headerBytes) < options.minDead) continue;
    if ((records - s.live - options.pinned(s)) / records < options.minDead) continue;
    best = s;
  }
  return best;
}

/**
 * The live records of `victim` in file order, `locate(id)` giving where the index has each id
 * now (a record is live in the victim iff the index points into it).
 */
export function liveRecords(
  victim: SegmentSpace,
  locate: (id: number) => { seq: number; offset: number; length: number } | undefined,
  recordHeaderBytes: number,
): LiveRecord[] {
  const out: LiveRecord[] = [];
  for (const id of victim.ids) {
    const loc = locate(id);
    if (loc !== undefined && loc.seq === victim.seq)
      out.push({ id, offset: loc.offset, bytes: recordHeaderBytes + loc.length });
  }
  return out.sort((a, b) => a.offset - b.offset);
}

/** The first records of `live` that fit in `stepBytes` (always at least one: a larger page moves alone). */
export function stepOf(live: readonly LiveRecord[], stepBytes: number): LiveRecord[] {
  let total = 0;
  let n = 0;
  for (; n < live.length; n++) {
    if (n > 0 && total + live[n].bytes > stepBytes) break;
    total += live[n].bytes;
  }
  return live.slice(0, n);
}

/**
 * The tombstones of `victim` that must be carried forward when it is removed: those of an id that
 * is not live (a live id's last record is a page record after the tombstone) and that an older
 * segment still holds a page record for (without the tombstone, replay would bring it back).
 * Each id once.
 */
export function neededTombstones(
  victim: SegmentSpace,
  segments: Iterable<SegmentSpace>,
  isLive: (id: number) => boolean,
): number[] {
  const older = [...segments].filter((s) => s.seq < victim.seq);
  const out = new Set<number>();
  for (const id of victim.tombs) {
    if (out.has(id) || isLive(id)) continue;
    if (older.some((s) => s.ids.has(id))) out.add(id);
  }
  return [...out];
}
