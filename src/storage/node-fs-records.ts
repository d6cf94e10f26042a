// The records of node-fs segment files (src/storage/node-fs.ts; layout in docs/storage.md) and the
// positioned reads and writes of them.

/// <reference types="node" />
import { readSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { corruption, crc32c } from './page-store';

export const SEGMENT_HEADER_BYTES = 16;
export const RECORD_HEADER_BYTES = 24;
export const SEGMENT_MAGIC = 'PQDBSEG\0';
const RECORD_MAGIC = 0x31525150; // "PQR1" little-endian
export const KIND_PAGE = 1;
export const KIND_DELETE = 2;
/** Records up to this size are gathered into one write; larger ones are written on their own. */
const WRITE_GATHER_BYTES = 1 << 20;

/** `buf.length` bytes of file descriptor `fd` at `at`, read synchronously. @throws CORRUPTION when the file is shorter */
export function readSyncExactly(fd: number, buf: Uint8Array, at: number, name: string): void {
  let done = 0;
  while (done < buf.length) {
    const n = readSync(fd, buf, done, buf.length - done, at + done);
    if (n === 0) throw corruption(`node-fs: ${name} ends before byte ${at + buf.length}`);
    done += n;
  }
}

export function recordHeader(kind: number, id: number, length: number, crc: number): Uint8Array {
  const h = new Uint8Array(RECORD_HEADER_BYTES);
  const v = new DataView(h.buffer);
  v.setUint32(0, RECORD_MAGIC, true);
  h[4] = kind;
  v.setUint32(8, id, true);
  v.setUint32(12, length, true);
  v.setUint32(16, crc, true);
  v.setUint32(20, crc32c(h.subarray(0, 20)), true);
  return h;
}

export function parseRecordHeader(
  h: Uint8Array,
  where: string,
): { kind: number; id: number; length: number; crc: number } {
  const v = new DataView(h.buffer, h.byteOffset, RECORD_HEADER_BYTES);
  if (v.getUint32(0, true) !== RECORD_MAGIC || v.getUint32(20, true) !== crc32c(h.subarray(0, 20))) {
    throw corruption(`node-fs: ${where}: damaged record header`);
  }
  const kind = h[4];
  if ((kind !== KIND_PAGE && kind !== KIND_DELETE) || h[5] | h[6] | h[7])
    throw corruption(`node-fs: ${where}: unknown record kind ${kind}`);
  return { kind, id: v.getUint32(8, true), length: v.getUint32(12, true), crc: v.getUint32(16, true) };
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

/** Writes `chunks` back to back from `position`, gathering small ones into ~1 MiB writes. */
export async function writeGathered(fh: FileHandle, chunks: Uint8Array[], position: number): Promise<void> {
  let pos = position;
  let group: Uint8Array[] = [];
  let groupBytes = 0;
  const flush = async (): Promise<void> => {
    if (groupBytes === 0) return;
    const buf = group.length === 1 ? group[0] : new Uint8Array(groupBytes);
    if (group.length > 1) {
      let o = 0;
      for (const c of group) {
        buf.set(c, o);
        o += c.length;
      }
    }
    await writeAll(fh, buf, pos);
    pos += groupBytes;
    group = [];
    groupBytes = 0;
  };
  for (const c of chunks) {
    if (groupBytes + c.length > WRITE_GATHER_BYTES) await flush();
    group.push(c);
    groupBytes += c.length;
  }
  await flush();
}

async function writeAll(fh: FileHandle, buf: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, position + done);
    done += bytesWritten;
  }
}
