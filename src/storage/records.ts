// The record framing of the append-only page logs (node-fs segments, node-fs.ts; the OPFS logs,
// opfs.ts): a 24-byte header — magic "PQR1", kind (a page, a deletion, an OPFS commit), page id,
// body length, the body's CRC-32C and the header's own — then the body. Layout in docs/storage.md.
//
// Security caveat: the CRCs detect accidents only; the pages' bytes are authenticated one layer up.

import { corruption } from './page-store-base';
import { crc32c } from '../_crc32c';

export const RECORD_HEADER_BYTES = 24;
const RECORD_MAGIC = 0x31525150; // "PQR1" little-endian
export const KIND_PAGE = 1;
export const KIND_DELETE = 2;
/** The OPFS logs' commit record (opfs-files.ts): what a commit deletes, its manifest, its pages' count. */
export const KIND_COMMIT = 3;

/** The header of a record of `kind` for page `id` with a body of `length` bytes and CRC-32C `crc`. */
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

/** The kinds node-fs's segments hold. */
const NODE_FS_KINDS: readonly number[] = [KIND_PAGE, KIND_DELETE];

/**
 * The fields of record header `h` (24 bytes) found at `where` in a log of page store `store`.
 * @throws PqdbError CORRUPTION for a damaged header or a kind not in `kinds`
 */
export function parseRecordHeader(
  h: Uint8Array,
  where: string,
  store = 'node-fs',
  kinds: readonly number[] = NODE_FS_KINDS,
): { kind: number; id: number; length: number; crc: number } {
  const v = new DataView(h.buffer, h.byteOffset, RECORD_HEADER_BYTES);
  if (v.getUint32(0, true) !== RECORD_MAGIC || v.getUint32(20, true) !== crc32c(h.subarray(0, 20))) {
    throw corruption(`${store}: ${where}: damaged record header`);
  }
  const kind = h[4];
  if (!kinds.includes(kind) || h[5] | h[6] | h[7]) throw corruption(`${store}: ${where}: unknown record kind ${kind}`);
  return { kind, id: v.getUint32(8, true), length: v.getUint32(12, true), crc: v.getUint32(16, true) };
}
