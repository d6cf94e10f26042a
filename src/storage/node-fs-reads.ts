// node-fs reads (Node only): pages (one positioned read per run of neighbouring records, checked
// against their record header and CRC-32C), ranges (one positioned read of part of a page,
// synchronous when record-sized) and the check of a record read. DESIGN.md §6; docs/storage.md.
//
// Security caveat: a ranged read (`readRange`, `readRangeSync`) checks no checksum at all: the
// CRC-32C covers the whole page, and the bytes are authenticated one layer up by the sealed
// record's AEAD tag (PageStore.readRange).

/// <reference types="node" />
import { KIND_PAGE, RECORD_HEADER_BYTES, parseRecordHeader, readSyncExactly, SyncReadTurns } from './node-fs-records';
import { segmentName, type Location, type NodeFsState, type Segment } from './node-fs-segments';
import { checkRangeInPage, corruption, mediumError } from './page-store-base';
import { crc32cAsync } from '../_crc32c';

const KIND = 'node-fs';
/** The most readPages reads at once (a run of neighbouring pages). */
const READ_RUN_BYTES = 4 << 20;
/** Ranges up to this long are read synchronously (readRange)… */
const SYNC_READ_BYTES = 64 << 10;
/** …this many in one turn of the event loop at most. */
const SYNC_READS_PER_TURN = 64;

/** The reads of one open store, over its state (arguments already checked by BasePageStore). */
export class NodeFsReads {
  readonly #st: NodeFsState;
  /**
   * The buffer a run of pages is read into (made on first use), when no other readPages holds it:
   * each page is then copied out into its own buffer, so a run costs the heap its pages' bytes only
   * (a backup reads every page: one allocation per page instead of two halves the collector's work).
   */
  #scratch: Uint8Array | undefined;
  #scratchFree = true;

  constructor(st: NodeFsState) {
    this.#st = st;
  }

  /** Pages that lie back to back in one segment are read together, up to READ_RUN_BYTES a read. */
  async readPages(ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
    const out: (Uint8Array | undefined)[] = new Array(ids.length).fill(undefined);
    let i = 0;
    while (i < ids.length) {
      const first = this.#st.index.get(ids[i]);
      if (first === undefined) {
        i++;
        continue;
      }
      // The run's locations are taken now, with its segment: later commits or reclaim steps
      // may change the index while the read is in flight.
      const locs = [first];
      let end = i + 1;
      let bytes = RECORD_HEADER_BYTES + first.length;
      for (let prev = first; end < ids.length; end++) {
        const next = this.#st.index.get(ids[end]);
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
      // A run of one page is read into a buffer of its own; a longer one into the scratch buffer
      // when no other read holds it.
      const pooled = locs.length > 1 && bytes <= READ_RUN_BYTES && this.#scratchFree;
      if (pooled) this.#scratchFree = false;
      const run = pooled
        ? (this.#scratch ??= new Uint8Array(READ_RUN_BYTES)).subarray(0, bytes)
        : new Uint8Array(bytes);
      try {
        try {
          await this.#st.readAt(this.#st.segments.get(first.seq)!, run, bytes, first.offset);
        } catch (e) {
          throw mediumError(`node-fs: read pages ${ids[i]}…${ids[end - 1]}`, e);
        }
        for (let at = 0, k = 0; i < end; i++, k++) {
          const loc = locs[k];
          const record = run.subarray(at, at + RECORD_HEADER_BYTES + loc.length);
          out[i] = await this.checked(ids[i], loc, record, pooled);
          at += RECORD_HEADER_BYTES + loc.length;
        }
      } finally {
        if (pooled) this.#scratchFree = true;
      }
    }
    return out;
  }

  async readPage(id: number): Promise<Uint8Array | undefined> {
    const loc = this.#st.index.get(id);
    if (loc === undefined) return undefined;
    const buf = new Uint8Array(RECORD_HEADER_BYTES + loc.length);
    try {
      await this.#st.readAt(this.#st.segments.get(loc.seq)!, buf, buf.length, loc.offset);
    } catch (e) {
      throw mediumError(`node-fs: read page ${id}`, e);
    }
    return this.checked(id, loc, buf);
  }

  /** Record-sized ranges are read synchronously, so many in a turn of the event loop (node-fs-records.ts). */
  readonly #turns = new SyncReadTurns(SYNC_READS_PER_TURN);

  /**
   * readRange's synchronous form (PageStore.readRangeSync): a record-sized range within this turn's
   * reads (none while reads wait for a turn), else -1.
   */
  readRangeSync(id: number, offset: number, length: number, into: Uint8Array, block: boolean): -1 | 0 | 1 {
    if (!block && (length === 0 || length > SYNC_READ_BYTES)) return -1;
    const loc = this.#st.index.get(id);
    if (loc === undefined) return 0;
    checkRangeInPage(KIND, id, offset, length, loc.length);
    if (length === 0) return 1;
    if (!block && !this.#turns.take()) return -1;
    try {
      readSync(this.#st.segments.get(loc.seq)!, loc, offset, into.subarray(0, length));
    } catch (e) {
      throw mediumError(`node-fs: read page ${id} [${offset}, ${offset + length})`, e);
    }
    return 1;
  }

  /**
   * One positioned read of the range, at the page's body in its segment (from the in-memory index)
   * plus `offset`. Neither the record header nor the page's CRC-32C is checked: the checksum covers
   * the whole body, and checking it would mean reading the ~200 KB page this read exists to avoid.
   * The bytes are authenticated one layer up, by the sealed record's AEAD tag (PageStore.readRange);
   * a range past the page's end is CORRUPTION before any read.
   */
  async readRange(id: number, offset: number, length: number): Promise<Uint8Array | undefined> {
    const loc = this.#st.index.get(id);
    if (loc === undefined) return undefined;
    checkRangeInPage(KIND, id, offset, length, loc.length);
    const buf = new Uint8Array(length);
    if (length === 0) return buf;
    try {
      const at = loc.offset + RECORD_HEADER_BYTES + offset;
      const seg = this.#st.segments.get(loc.seq)!;
      if (length > SYNC_READ_BYTES) await this.#st.readAt(seg, buf, length, at);
      // Nothing runs during a synchronous read, so no reclaim step can close the handle under it.
      else if (this.#turns.take()) readSync(seg, loc, offset, buf);
      else {
        seg.readers++;
        try {
          await this.#turns.wait();
          readSync(seg, loc, offset, buf);
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

  /**
   * A page's record as read (header ‖ body): its header and checksum checked, the body in its own
   * buffer (a view of `record`'s when that is the whole buffer and `copy` is not set).
   */
  async checked(id: number, loc: Location, record: Uint8Array, copy = false): Promise<Uint8Array> {
    const name = segmentName(loc.seq);
    const h = parseRecordHeader(record, `${name} @${loc.offset}`);
    if (h.kind !== KIND_PAGE || h.id !== id || h.length !== loc.length || h.crc !== loc.crc) {
      throw corruption(`node-fs: page ${id} (${name} @${loc.offset}): record header changed`);
    }
    const body =
      !copy && record.byteOffset === 0 && record.length === record.buffer.byteLength
        ? record.subarray(RECORD_HEADER_BYTES)
        : record.slice(RECORD_HEADER_BYTES);
    // In steps: an index page can be megabytes, and its checksum must not hold the event loop.
    if ((await crc32cAsync(body)) !== h.crc)
      throw corruption(`node-fs: page ${id} (${name} @${loc.offset}): checksum mismatch`);
    return body;
  }
}

/** One synchronous positioned read of `buf.length` bytes at `offset` of the page at `loc` in `seg`. */
function readSync(seg: Segment, loc: Location, offset: number, buf: Uint8Array): void {
  readSyncExactly(seg.fh.fd, buf, loc.offset + RECORD_HEADER_BYTES + offset, segmentName(loc.seq));
}
