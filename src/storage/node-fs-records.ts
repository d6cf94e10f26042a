// The records of node-fs segment files (src/storage/node-fs.ts; layout in docs/storage.md) and the
// positioned reads and writes of them.

/// <reference types="node" />
import { readSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { corruption } from './page-store-base';

export const SEGMENT_HEADER_BYTES = 16;
export const SEGMENT_MAGIC = 'PQDBSEG\0';
export { RECORD_HEADER_BYTES, KIND_PAGE, KIND_DELETE, recordHeader, parseRecordHeader } from './records';
/** Bytes written per gathered write (a larger record is written in a call of its own). */
const WRITE_GATHER_BYTES = 4 << 20;
/** Buffers per gathered write: well under IOV_MAX (1,024 on Linux and macOS). */
const WRITE_GATHER_BUFFERS = 512;

/** `buf.length` bytes of file descriptor `fd` at `at`, read synchronously. @throws CORRUPTION when the file is shorter */
export function readSyncExactly(fd: number, buf: Uint8Array, at: number, name: string): void {
  let done = 0;
  while (done < buf.length) {
    const n = readSync(fd, buf, done, buf.length - done, at + done);
    if (n === 0) throw corruption(`node-fs: ${name} ends before byte ${at + buf.length}`);
    done += n;
  }
}

export async function readExactly(
  fh: FileHandle,
  buf: Uint8Array,
  length: number,
  position: number,
  name: string,
): Promise<void> {
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(buf, done, length - done, position + done);
    if (bytesRead === 0) throw corruption(`node-fs: ${name}: unexpected end of file at ${position + done}`);
    done += bytesRead;
  }
}

/**
 * Writes `chunks` back to back from `position` with gathered writes (`writev`, at most
 * WRITE_GATHER_BUFFERS buffers and about WRITE_GATHER_BYTES per call): no chunk is copied into a
 * gather buffer first, which for a large commit cost as much of the thread as its checksums.
 */
export async function writeGathered(fh: FileHandle, chunks: Uint8Array[], position: number): Promise<void> {
  let pos = position;
  let i = 0;
  while (i < chunks.length) {
    const group: Uint8Array[] = [];
    let bytes = 0;
    for (; i < chunks.length && group.length < WRITE_GATHER_BUFFERS; i++) {
      if (group.length > 0 && bytes + chunks[i].length > WRITE_GATHER_BYTES) break;
      group.push(chunks[i]);
      bytes += chunks[i].length;
    }
    await writeAll(fh, group, pos);
    pos += bytes;
  }
}

/** Writes `group` from `position` whole, resuming after a short write. */
async function writeAll(fh: FileHandle, group: Uint8Array[], position: number): Promise<void> {
  let rest = group.filter((c) => c.length > 0);
  let pos = position;
  while (rest.length > 0) {
    let { bytesWritten } = await fh.writev(rest, pos);
    pos += bytesWritten;
    let k = 0;
    while (k < rest.length && bytesWritten >= rest[k].length) bytesWritten -= rest[k++].length;
    rest = rest.slice(k);
    if (bytesWritten > 0) rest[0] = rest[0].subarray(bytesWritten);
  }
}

// Record-sized ranges are read synchronously: a positioned read of a few hundred bytes from the
// OS page cache takes microseconds, a round trip through libuv's thread pool tens to hundreds of
// them (measured: 9-16k sequential random reads/s through it at 1M records, and a read loop that
// sent every 65th read there idled a fifth of its time). A loop of reads that only awaits them
// would never let I/O callbacks run, so a turn of the event loop takes at most `perTurn` of them;
// a read past that waits for a later turn (setImmediate: after the poll phase) in a first-come
// queue, served before any new read of that turn. The caller takes its page's location and
// segment before it waits (the segment pinned), as the thread-pool read does: a reclaim step
// that deletes or moves the page meanwhile cannot take its bytes away.

/** The synchronous reads of one turn of the event loop. */
export class SyncReadTurns {
  /** Synchronous ranged reads granted in this turn of the event loop. */
  #granted = 0;
  /** A turn's reset of #granted is scheduled. */
  #scheduled = false;
  /** Reads waiting for a synchronous read of a later turn, first come first served. */
  readonly #waiting: (() => void)[] = [];

  constructor(readonly perTurn: number) {}

  /** Takes one of this turn's synchronous reads: false when none is left, or reads wait for one. */
  take(): boolean {
    if (this.#waiting.length > 0 || this.#granted >= this.perTurn) return false;
    this.#granted++;
    this.#schedule();
    return true;
  }

  /** Waits for a synchronous read granted in a later turn (the caller holds its segment pinned). */
  wait(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#waiting.push(resolve);
      this.#schedule();
    });
  }

  /** Resets the count at the next turn, granting its reads to the waiting ones first. */
  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      const ready = this.#waiting.splice(0, this.perTurn);
      this.#granted = ready.length;
      if (this.#granted > 0 || this.#waiting.length > 0) this.#schedule();
      for (const grant of ready) grant();
    });
  }
}
