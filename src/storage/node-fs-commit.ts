// node-fs commits (Node only): the commit protocol's writing half — append a commit's records to
// this writer's own segment (or a new one, created O_EXCL), fdatasync it, publish the manifest by
// compare-and-swap (node-fs-manifest.ts) — and, only once that is durable, the change of the
// in-memory state. Segment reclaim (node-fs-reclaim.ts) writes its steps with the same functions.
// The protocol and its crash cases are in node-fs.ts's header and docs/storage.md.
//
// Security caveat: a writer writes only into files it created in this session and truncates only
// those; another writer let in anyway is caught by the compare-and-swap (CONFLICT).

/// <reference types="node" />
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { PqdbError } from '../errors';
import { checkWriterLock } from './node-fs-lock';
import { FORMAT_VERSION, currentCommit, encodeManifest, publishManifest, type SyncHook } from './node-fs-manifest';
import {
  KIND_DELETE,
  KIND_PAGE,
  RECORD_HEADER_BYTES,
  SEGMENT_HEADER_BYTES,
  SEGMENT_MAGIC,
  recordHeader,
  writeGathered,
} from './node-fs-records';
import { newSegment, segmentName, type NodeFsState, type Segment } from './node-fs-segments';
import type { CheckedBatch } from './page-store';
import { crc32cAsync } from '../_crc32c';

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));

/**
 * Step 3 of the commit protocol for the next commit number: the manifest names the segments'
 * committed lengths as `edit` leaves them and the user manifest `user`; it becomes current only
 * if no other writer committed since this one's last commit (node-fs-manifest.ts).
 * @throws PqdbError CONFLICT
 */
export async function writeManifest(
  st: NodeFsState,
  user: Uint8Array | undefined,
  edit: (segments: Map<number, number>) => void,
  progress: { linked: boolean; seq?: number; end?: number },
): Promise<void> {
  const segments = new Map([...st.segments].map(([s, g]) => [s, g.committed]));
  edit(segments);
  const file = encodeManifest(st.commitSeq + 1, segments, user);
  const sync: SyncHook = async (fh, what) => {
    await st.settings.beforeSync?.(what);
    await fh.sync();
  };
  const { seq, end } = progress;
  // The host lock's key still names this writer's lock (put back if deleted; LOCKED if another
  // writer of this host took a replaced one's name).
  if (st.lock !== undefined) await checkWriterLock(st.lock);
  await publishManifest(st.dir, st.commitSeq, file, sync, {
    linked: (maybe) => (progress.linked = maybe),
    carries: (top) => seq !== undefined && (top.segments.get(seq) ?? -1) >= end!,
    afterLink: st.settings.afterLink,
  });
  st.manifestFileBytes = file.length;
}

/**
 * After a commit (or reclaim step) failed before its commit point (its link surely not made), nothing names the bytes it
 * wrote: a segment this session created for it is unlinked, and this writer's own segment is cut
 * back to its committed length (only this session ever wrote into either file), so a full disk
 * does not fill up further with each retry. Best effort: the store refuses commits from now on.
 */
export async function undoUnpublished(st: NodeFsState, seg: Segment | undefined, created: boolean): Promise<void> {
  if (seg === undefined) return;
  if (created) {
    await seg.fh.close().catch(() => undefined);
    await unlink(join(st.dir, segmentName(seg.seq))).catch(() => undefined);
  } else if (seg === st.own) await seg.fh.truncate(seg.committed).catch(() => undefined);
}

/**
 * The early half of the compare-and-swap: the current commit on disk must still be the one this
 * store made last, else another writer (let in by a deleted or misjudged LOCK) has committed and
 * this one stops (CONFLICT) before writing anything. The manifest's link decides in the end.
 */
export async function checkNotOvertaken(st: NodeFsState): Promise<void> {
  const onDisk = await currentCommit(st.dir);
  if (onDisk !== st.commitSeq)
    throw new PqdbError(
      'CONFLICT',
      `node-fs page store ${st.dir}: another writer committed (commit ${onDisk}, this writer last wrote ${st.commitSeq}); nothing was written: reopen the store`,
    );
}

/**
 * Where `bytes` more go: this writer's own segment while it has room (and is not `avoid`), else a
 * new one, created with its header first in `records`.
 */
export async function destination(
  st: NodeFsState,
  total: number,
  records: Uint8Array[],
  avoid?: Segment,
): Promise<{ seg: Segment; created: boolean }> {
  const own = st.own;
  if (own !== undefined && own !== avoid && !st.isRetired(own)) {
    if (own.committed === SEGMENT_HEADER_BYTES || own.committed + total <= st.segmentBytes) {
      // Only this writer appends to it, and it writes nothing after a failure: its end is its
      // committed length. A file that grew anyway was written by someone else.
      const size = (await own.fh.stat()).size;
      if (size !== own.committed)
        throw new PqdbError(
          'CONFLICT',
          `node-fs page store ${st.dir}: ${segmentName(own.seq)} holds ${size} bytes, this writer wrote ${own.committed}; another writer wrote into it: reopen the store`,
        );
      return { seg: own, created: false };
    }
  }
  return { seg: await createSegment(st, records), created: true };
}

/** Writes one checked batch by the commit protocol; the state changes only once it is durable. */
export async function commitBatch(st: NodeFsState, batch: CheckedBatch): Promise<void> {
  await checkNotOvertaken(st);
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
    ({ seg, created } = await destination(st, total, records));
    if (created) total += SEGMENT_HEADER_BYTES;
  }
  let end = seg?.committed ?? 0;
  const progress = { linked: false, seq: seg?.seq, end: end + total };
  try {
    if (seg !== undefined) {
      await writeGathered(seg.fh, records, end); // at the end of a file only this writer writes
      await syncSegment(st, seg.fh, 'segment');
      end += total;
    }
    await writeManifest(
      st,
      batch.manifest ?? st.manifest,
      (segments) => {
        if (seg !== undefined) segments.set(seg.seq, end);
      },
      progress,
    );
  } catch (e) {
    if (!progress.linked) await undoUnpublished(st, seg, created);
    else if (created) await seg!.fh.close().catch(() => undefined);
    throw e;
  }
  // Durable: publish.
  st.commitSeq++;
  if (created) adopt(st, seg!);
  let off = seg?.committed ?? 0;
  for (const id of batch.deletes) {
    st.unlive(id);
    st.index.delete(id);
    seg!.tombs.push(id);
    off += RECORD_HEADER_BYTES;
  }
  batch.pages.forEach((p, i) => {
    st.index.set(p.id, { seq: seg!.seq, offset: off, length: p.bytes.length, crc: crcs[i] });
    seg!.live += RECORD_HEADER_BYTES + p.bytes.length;
    seg!.ids.add(p.id);
    off += RECORD_HEADER_BYTES + p.bytes.length;
  });
  if (seg !== undefined) seg.committed = end;
  if (batch.manifest !== undefined) st.manifest = batch.manifest;
}

/** A segment this writer created is committed: it is the one appended to from now on. */
export function adopt(st: NodeFsState, seg: Segment): void {
  seg.committed = SEGMENT_HEADER_BYTES; // its header was written with the first records
  st.segments.set(seg.seq, seg);
  st.own = seg;
}

/**
 * Creates a new segment file with O_EXCL, numbered above every segment this writer has seen (the
 * next number when another writer took one), and puts its header first in `records`. A file
 * another writer made is never opened for writing, and none is ever truncated.
 */
export async function createSegment(st: NodeFsState, records: Uint8Array[]): Promise<Segment> {
  for (let tries = 0; ; tries++) {
    const seq = st.nextSeq++;
    if (seq > 0xffffffff) throw new PqdbError('IO_ERROR', `node-fs page store ${st.dir}: segment numbers exhausted`);
    let fh: FileHandle;
    try {
      fh = await open(join(st.dir, segmentName(seq)), 'wx+');
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

/** fdatasync of a segment written (after the fault hook of the tests). */
export async function syncSegment(st: NodeFsState, fh: FileHandle, what: 'segment'): Promise<void> {
  await st.settings.beforeSync?.(what);
  await fh.datasync();
}
