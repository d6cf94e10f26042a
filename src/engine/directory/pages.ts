// The sealed pages of the persisted key directory (DESIGN §6, docs/format.md "Directory pages"):
// each serialised snapshot (format.ts) is cut into parts of DIRECTORY_PART_BYTES, each sealed in a
// page of its own:
//
//   page   = "PQDD" ‖ version 1 ‖ be32(part i) ‖ be32(parts n) ‖ AES-256-GCM-SIV(K_dir, nonce, aad).encrypt(part)
//   nonce  = be32(page id) ‖ be32(i) ‖ 0^4            aad = bytes 0..13 ‖ be32(page id)
//   K_dir  = HKDF-SHA384(S, "", "pqdb directory key v1", 32), S the store secret
//
// The manifest lists each snapshot's pages in order, so no part can be dropped, repeated, reordered
// or taken from another snapshot or store; a page id is never reused. Nothing is read from a part
// before it authenticates. Ids, collection names and governance states are only inside the sealed
// parts.

import { PqdbError } from '../../errors';
import { gcmsiv, TAG_BYTES } from '../../kernels/aead';
import { DIRECTORY_MAGIC } from '../page-format';

/** Plaintext bytes sealed per directory page. */
export const DIRECTORY_PART_BYTES = 4 << 20;
export const DIRECTORY_KEY_LABEL = 'pqdb directory key v1';
/** Directory pages are written as version 2 (bases in partitions); version 1 pages are read too. */
const VERSION = 2;
const HEAD_BYTES = 13;

/** Where sealed pages go: a draft's page-id allocation and page list (src/engine/commit.ts). */
export interface PageSink {
  pageId(): number;
  addPage(page: { id: number; bytes: Uint8Array }): void;
}

/**
 * Length of page `i` of `n` of a snapshot of `bytes` plaintext bytes: parts of DIRECTORY_PART_BYTES
 * but the last. A range past a page's end (a length the manifest got wrong) is CORRUPTION.
 */
export function directoryPageBytes(bytes: number, i: number, n: number): number {
  const last = bytes - (n - 1) * DIRECTORY_PART_BYTES;
  if (last <= 0 || last > DIRECTORY_PART_BYTES)
    throw new PqdbError('CORRUPTION', 'the persisted key directory has a length that does not fit its pages');
  return HEAD_BYTES + (i < n - 1 ? DIRECTORY_PART_BYTES : last) + TAG_BYTES;
}

function partNonce(pageId: number, part: number): Uint8Array {
  const n = new Uint8Array(12);
  const dv = new DataView(n.buffer);
  dv.setUint32(0, pageId);
  dv.setUint32(4, part);
  return n;
}

function partAad(head: Uint8Array, pageId: number): Uint8Array {
  const aad = new Uint8Array(HEAD_BYTES + 4);
  aad.set(head.subarray(0, HEAD_BYTES));
  new DataView(aad.buffer).setUint32(HEAD_BYTES, pageId);
  return aad;
}

/**
 * Seals a serialised snapshot into directory pages added to `sink`, awaiting `pause()` between
 * pages; returns their ids in order.
 */
export async function sealSnapshot(
  sink: PageSink,
  key: Uint8Array,
  plain: Uint8Array,
  pause: () => Promise<void> = async () => undefined,
  partBytes = DIRECTORY_PART_BYTES,
): Promise<number[]> {
  const n = Math.max(1, Math.ceil(plain.length / partBytes));
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    if (i > 0) await pause();
    const part = plain.subarray(i * partBytes, (i + 1) * partBytes);
    const id = sink.pageId();
    const page = new Uint8Array(HEAD_BYTES + part.length + TAG_BYTES);
    page.set(DIRECTORY_MAGIC);
    page[4] = VERSION;
    const dv = new DataView(page.buffer);
    dv.setUint32(5, i);
    dv.setUint32(9, n);
    gcmsiv(key, partNonce(id, i), partAad(page, id)).encrypt(part, page.subarray(HEAD_BYTES));
    sink.addPage({ id, bytes: page });
    ids.push(id);
  }
  return ids;
}

/**
 * Opens a snapshot's pages (in the manifest's order) into one 8-byte aligned plaintext.
 * @throws PqdbError AUTH_FAILED (a part that does not open), CORRUPTION (framing), FORMAT_VERSION
 */
export function openSnapshot(key: Uint8Array, ids: readonly number[], pages: readonly Uint8Array[]): Uint8Array {
  const lens = pages.map((page, i) => partLength(ids[i], i, pages.length, page));
  const out = new Uint8Array(lens.reduce((n, len) => n + len, 0));
  let at = 0;
  try {
    pages.forEach((page, i) => {
      openPart(key, ids[i], i, page, out.subarray(at, at + lens[i]));
      at += lens[i];
    });
  } catch (e) {
    out.fill(0);
    throw e;
  }
  return out;
}

/**
 * openSnapshot for a snapshot of `bytes` plaintext bytes, reading its pages one at a time (a page
 * is dropped once opened into the plaintext, so the pages and the plaintext are not all held at
 * once). `read` gives page `ids[i]`, or undefined when it is missing.
 * @throws PqdbError CORRUPTION (a page missing, or not of this length), AUTH_FAILED, FORMAT_VERSION
 */
export async function readSnapshot(
  key: Uint8Array,
  ids: readonly number[],
  bytes: number,
  read: (id: number, length: number) => Promise<Uint8Array | undefined>,
): Promise<Uint8Array> {
  const out = new Uint8Array(bytes);
  try {
    for (let i = 0; i < ids.length; i++)
      placePage(key, ids, i, out, await read(ids[i], directoryPageBytes(bytes, i, ids.length)));
  } catch (e) {
    out.fill(0);
    throw e;
  }
  return out;
}

/** readSnapshot with a synchronous `read`. */
export function readSnapshotSync(
  key: Uint8Array,
  ids: readonly number[],
  bytes: number,
  read: (id: number, length: number) => Uint8Array | undefined,
): Uint8Array {
  const out = new Uint8Array(bytes);
  try {
    for (let i = 0; i < ids.length; i++)
      placePage(key, ids, i, out, read(ids[i], directoryPageBytes(bytes, i, ids.length)));
  } catch (e) {
    out.fill(0);
    throw e;
  }
  return out;
}

/** Opens `page`, page `i` of snapshot pages `ids`, into its place in the snapshot's plaintext `out`. */
function placePage(
  key: Uint8Array,
  ids: readonly number[],
  i: number,
  out: Uint8Array,
  page: Uint8Array | undefined,
): void {
  const n = ids.length;
  const pageBytes = directoryPageBytes(out.length, i, n);
  if (page === undefined) throw new PqdbError('CORRUPTION', `directory page ${ids[i]} is missing`);
  const len = partLength(ids[i], i, n, page);
  if (len !== pageBytes - HEAD_BYTES - TAG_BYTES)
    throw new PqdbError('CORRUPTION', `directory page ${ids[i]} is not as long as the manifest says`);
  const at = i * DIRECTORY_PART_BYTES;
  openPart(key, ids[i], i, page, out.subarray(at, at + len));
}

/** The plaintext length of part `i` of `n` in `page` (its framing checked). */
function partLength(id: number, i: number, n: number, page: Uint8Array): number {
  if (page.length < HEAD_BYTES + TAG_BYTES || !DIRECTORY_MAGIC.every((m, k) => page[k] === m))
    throw new PqdbError('CORRUPTION', `page ${id} is not a pqdb directory page`);
  if (page[4] !== 1 && page[4] !== VERSION)
    throw new PqdbError('FORMAT_VERSION', `directory page version ${page[4]} is not supported`);
  const dv = new DataView(page.buffer, page.byteOffset, page.length);
  if (dv.getUint32(5) !== i || dv.getUint32(9) !== n)
    throw new PqdbError('CORRUPTION', `directory page ${id} is not part ${i} of ${n}`);
  return page.length - HEAD_BYTES - TAG_BYTES;
}

/** Opens part `i` (in `page`, page id `id`) into `out`. @throws PqdbError AUTH_FAILED */
function openPart(key: Uint8Array, id: number, i: number, page: Uint8Array, out: Uint8Array): void {
  gcmsiv(key, partNonce(id, i), partAad(page, id)).decrypt(page.subarray(HEAD_BYTES), out);
}
