// Backup files: a page store's pages and manifest in one byte string (docs/storage.md, "Backup
// files"), so a managed copy can leave the browser as a download and come back from a file
// (`store.backupFile()`, `restoreStore(bytes, …)`). The file adds nothing to trust: it carries the
// sealed pages and the sealed manifest as the page store held them, and a restore verifies every
// page, signature and chain before it takes anything (src/engine/restore.ts). What is checked here
// is the framing, so that a truncated or mangled file is CORRUPTION with a clear message rather than
// a store that fails somewhere inside: every length is bounded by what remains and by the page
// store's own limits, page ids are strictly ascending (so none is given twice), and a CRC-32C over
// the whole file catches accidents (it is not a MAC: the sealed records are authenticated above).
//
//   magic "PQDBFILE" (8) · version u8 = 1 · page count u32 · manifest length u32 · manifest
//   · per page: id u32 · length u32 · bytes · CRC-32C u32 of every byte before it
// Integers little-endian.

import { PqdbError } from '../errors';
import { crc32c } from '../_crc32c';
import { openMemoryPageStore } from './memory';
import { readPagesOf } from './page-store-base';
import { MAX_MANIFEST_BYTES, MAX_PAGE_BYTES, MAX_PAGE_ID, type PageStore } from './page-store';

const MAGIC = new TextEncoder().encode('PQDBFILE');
const VERSION = 1;
/** Magic, version, page count, manifest length. */
const HEADER_BYTES = MAGIC.length + 1 + 4 + 4;
/** Pages read from the source page store at a time while a file is written. */
const READ_BATCH = 256;

const bad = (message: string) => new PqdbError('CORRUPTION', `not a pqdb backup file: ${message}`);

/**
 * `write` run on a fresh memory page store (a backup written into it), then that store as one
 * backup file; the memory store is closed on every path.
 */
export async function backupFileOf<T>(
  write: (pages: PageStore) => Promise<T>,
): Promise<{ result: T; file: Uint8Array }> {
  const pages = await openMemoryPageStore();
  try {
    const result = await write(pages);
    return { result, file: await writeBackupFile(pages) };
  } finally {
    await pages.close();
  }
}

/**
 * The pages and manifest of `pages` as one backup file.
 * @throws PqdbError NOT_FOUND when the page store has no manifest; its read errors (CORRUPTION, IO_ERROR)
 */
export async function writeBackupFile(pages: PageStore): Promise<Uint8Array> {
  const manifest = await pages.readManifest();
  if (manifest === undefined) throw new PqdbError('NOT_FOUND', 'the page store holds no store to write to a file');
  const ids = await pages.listPages();
  const read: Uint8Array[] = [];
  for (let i = 0; i < ids.length; i += READ_BATCH) {
    const batch = ids.slice(i, i + READ_BATCH);
    const got = await readPagesOf(pages, batch);
    got.forEach((bytes, j) => {
      if (bytes === undefined) throw new PqdbError('IO_ERROR', `page ${batch[j]} went while the file was written`);
      read.push(bytes);
    });
  }
  let size = HEADER_BYTES + manifest.length + 4;
  for (const p of read) size += 8 + p.length;
  const out = new Uint8Array(size);
  const dv = new DataView(out.buffer);
  out.set(MAGIC, 0);
  let at = MAGIC.length;
  out[at++] = VERSION;
  dv.setUint32(at, ids.length, true);
  dv.setUint32(at + 4, manifest.length, true);
  at += 8;
  out.set(manifest, at);
  at += manifest.length;
  read.forEach((bytes, i) => {
    dv.setUint32(at, ids[i], true);
    dv.setUint32(at + 4, bytes.length, true);
    out.set(bytes, at + 8);
    at += 8 + bytes.length;
  });
  dv.setUint32(at, crc32c(out.subarray(0, at)), true);
  return out;
}

/**
 * A memory page store holding the pages and manifest of backup file `file` (written by
 * writeBackupFile), its framing checked first. The caller closes it.
 * @throws PqdbError CORRUPTION when `file` is not a whole backup file of a version this build reads
 */
export async function openBackupFile(file: Uint8Array): Promise<PageStore> {
  if (!(file instanceof Uint8Array)) throw new TypeError('a backup file expected a Uint8Array');
  if (file.length < HEADER_BYTES + 4) throw bad(`${file.length} bytes is shorter than any`);
  for (let i = 0; i < MAGIC.length; i++) if (file[i] !== MAGIC[i]) throw bad('it does not start with "PQDBFILE"');
  const dv = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const end = file.length - 4;
  if (crc32c(file.subarray(0, end)) !== dv.getUint32(end, true))
    throw bad('its checksum does not match (truncated or changed)');
  let at = MAGIC.length;
  const version = file[at++];
  if (version !== VERSION) throw bad(`version ${version} (this build reads version ${VERSION})`);
  const count = dv.getUint32(at, true);
  const manifestLength = dv.getUint32(at + 4, true);
  at += 8;
  if (manifestLength === 0 || manifestLength > MAX_MANIFEST_BYTES || manifestLength > end - at)
    throw bad(`a manifest of ${manifestLength} bytes`);
  const manifest = file.slice(at, at + manifestLength);
  at += manifestLength;
  if (count > (end - at) / 8) throw bad(`${count} pages in ${end - at} bytes`);
  const pages: { id: number; bytes: Uint8Array }[] = [];
  let last = -1;
  for (let i = 0; i < count; i++) {
    if (end - at < 8) throw bad(`page ${i} of ${count} is cut off`);
    const id = dv.getUint32(at, true);
    const length = dv.getUint32(at + 4, true);
    at += 8;
    if (id <= last || id > MAX_PAGE_ID) throw bad(`page id ${id} after ${last} (ids ascend, each once)`);
    if (length > MAX_PAGE_BYTES || length > end - at) throw bad(`page ${id} of ${length} bytes`);
    pages.push({ id, bytes: file.subarray(at, at + length) });
    at += length;
    last = id;
  }
  if (at !== end) throw bad(`${end - at} bytes after the last page`);
  const store = await openMemoryPageStore();
  try {
    await store.commit({ pages, manifest, transfer: true }); // the views are this function's own: no copy
  } catch (e) {
    await store.close();
    // The page store's own checks of what the file gave (an empty page, say) are the file's fault.
    throw e instanceof TypeError || e instanceof RangeError ? bad(e.message) : e;
  }
  return store;
}
