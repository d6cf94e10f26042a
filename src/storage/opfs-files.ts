// The OPFS page store's files (src/storage/opfs.ts): the sync access handle it uses, the formats of
// the slot and of the commit record (docs/storage.md: "opfs"), and reads and writes whose every
// reported count is checked. What the files hold is the adversary's (DESIGN §11): a slot or a commit
// record is trusted only as far as its CRC and field checks go; the engine authenticates the pages
// and manifest they name.

import { PqdbError } from '../errors';
import { crc32c } from '../_crc32c';
import type { Scratch } from '../_bytes';
import { corruption } from './page-store-base';
import { KIND_COMMIT, KIND_PAGE, RECORD_HEADER_BYTES, parseRecordHeader, recordHeader } from './records';

/** The part of FileSystemSyncAccessHandle the store uses. */
export interface SyncFile {
  read(buffer: Uint8Array, options: { at: number }): number;
  write(buffer: Uint8Array, options: { at: number }): number;
  truncate(size: number): void;
  getSize(): number;
  flush(): void;
  close(): void;
}

/** Where a store's four files are opened: OPFS (openOpfsPageStore) or, in tests, any medium. */
export interface SyncDirectory {
  /** The file `name`, created when missing. @throws PqdbError LOCKED when another handle holds it */
  open(name: string): Promise<SyncFile>;
}

export const KIND = 'opfs';
export const LOGS = ['log-0', 'log-1'] as const;
export const SLOTS = ['slot-a', 'slot-b'] as const;
const SLOT_MAGIC = 'PQDBOPFS';
const FORMAT_VERSION = 2;
/** The record kinds an OPFS log holds. */
export const LOG_KINDS: readonly number[] = [KIND_PAGE, KIND_COMMIT];
/**
 * magic 8, version 4, commit 8, active log 4, committed length 8, has manifest 4, manifest length 4,
 * index entries 4; then the manifest, the entries, the CRC.
 */
const SLOT_HEADER_BYTES = 44;
/** An index entry: page id 4, where its body starts 8, its length 4, its CRC-32C 4. */
export const ENTRY_BYTES = 20;
/** A commit rewrites the live pages into the other log once dead bytes pass both live bytes and this. */
export const REWRITE_DEAD_BYTES = 4 << 20;
/**
 * A commit writes a slot too once the log has grown this much past the newest slot: an open reads
 * (and checks) at most about this much of the log besides the slot.
 */
export const SLOT_EVERY_BYTES = 1 << 20;
/**
 * A commit record's body: commit number 8, where the commit's first record starts 8, has manifest
 * 4, the manifest's length 4, deleted ids 4, page records 4; then the manifest; the deleted ids.
 */
const COMMIT_HEADER_BYTES = 32;

export interface Located {
  /** Where the record's body starts in the active log. */
  readonly at: number;
  readonly length: number;
  readonly crc: number;
}

export interface Slot {
  readonly commit: number;
  readonly log: 0 | 1;
  readonly committed: number;
  readonly manifest: Uint8Array | undefined;
  readonly bytes: number;
}

/** A slot as read: its fields and the page index it holds (id, body offset, length, CRC). */
interface ReadSlot extends Slot {
  readonly entries: DataView;
  readonly count: number;
}

/**
 * The bytes a sync access handle's read or write reports, checked: an integer in [0, asked].
 * Chromium reports a failure of the file below (a full quota among them) not by throwing but by
 * returning base::File's negative error code as an unsigned 32-bit count (4294967288 is
 * FILE_ERROR_NO_SPACE), after writing part of the bytes or none: trusting it would acknowledge a
 * commit that never reached the file.
 */
function counted(n: number, asked: number, what: string): number {
  if (Number.isInteger(n) && n >= 0 && n <= asked) return n;
  const code = Number.isInteger(n) && n > 0x7fffffff && n <= 0xffffffff ? n - 0x100000000 : undefined;
  if (code === -8) throw new PqdbError('QUOTA_EXCEEDED', `${KIND}: ${what}: the origin's storage quota is exhausted`);
  throw new PqdbError(
    'IO_ERROR',
    `${KIND}: ${what}: the file reported ${code !== undefined ? `error ${code}` : `${n} bytes of ${asked}`}`,
  );
}

export function readExactly(file: SyncFile, buf: Uint8Array, at: number, what: string): void {
  for (let done = 0; done < buf.length;) {
    const n = counted(file.read(buf.subarray(done), { at: at + done }), buf.length - done, `reading ${what}`);
    if (n === 0) throw corruption(`${KIND}: ${what} ends before byte ${at + buf.length}`);
    done += n;
  }
}

export function writeAll(file: SyncFile, buf: Uint8Array, at: number): void {
  for (let done = 0; done < buf.length;) {
    const n = counted(file.write(buf.subarray(done), { at: at + done }), buf.length - done, 'a write');
    if (n === 0) throw new PqdbError('IO_ERROR', `${KIND}: a write of ${buf.length - done} bytes wrote nothing`);
    done += n;
  }
}

/** Each call on a sync access handle has a fixed cost: the chunks go in writes of up to 4 MiB. */
export const GATHER_BYTES = 4 << 20;

/**
 * Writes `chunks` one after another from `at`, neighbours gathered into `scratch` (a buffer the
 * caller keeps: a fresh one per commit cost 10× the copy, in page faults and collection).
 */
export function writeGathered(file: SyncFile, chunks: readonly Uint8Array[], at: number, scratch: Scratch): void {
  for (let k = 0; k < chunks.length;) {
    let end = k + 1;
    let n = chunks[k].length;
    while (end < chunks.length && n + chunks[end].length <= GATHER_BYTES) n += chunks[end++].length;
    let buf = chunks[k];
    if (end > k + 1) {
      buf = scratch.get(n).subarray(0, n);
      for (let o = 0, c = k; c < end; o += chunks[c++].length) buf.set(chunks[c], o);
    }
    writeAll(file, buf, at);
    at += n;
    k = end;
  }
}

/** A commit as its log records give it, checked whole. */
export interface LogCommit {
  readonly commit: number;
  /** Where the log ends after it. */
  readonly end: number;
  /** The new manifest, or undefined when the commit leaves it as it is. */
  readonly manifest: Uint8Array | undefined;
  readonly deletes: readonly number[];
  readonly pages: readonly (readonly [number, Located])[];
}

/**
 * The commit record (header and body) of commit `commit`, whose records start at `start` in the
 * log: `pages` page records, then this one.
 */
export function encodeCommitRecord(
  commit: number,
  start: number,
  manifest: Uint8Array | undefined,
  deletes: readonly number[],
  pages: number,
): Uint8Array {
  const m = manifest ?? new Uint8Array(0);
  // One buffer, the header written over its front once the body's CRC is known.
  const out = new Uint8Array(RECORD_HEADER_BYTES + COMMIT_HEADER_BYTES + m.length + 4 * deletes.length);
  const body = out.subarray(RECORD_HEADER_BYTES);
  const v = new DataView(out.buffer, RECORD_HEADER_BYTES);
  v.setFloat64(0, commit, true);
  v.setFloat64(8, start, true);
  v.setUint32(16, manifest === undefined ? 0 : 1, true);
  v.setUint32(20, m.length, true);
  v.setUint32(24, deletes.length, true);
  v.setUint32(28, pages, true);
  body.set(m, COMMIT_HEADER_BYTES);
  deletes.forEach((id, i) => v.setUint32(COMMIT_HEADER_BYTES + m.length + 4 * i, id, true));
  out.set(recordHeader(KIND_COMMIT, 0, body.length, crc32c(body)));
  return out;
}

/**
 * The commits after commit `commit` that `tail` (the log's bytes from offset `from`) holds whole:
 * each its page records, every one with its header and body CRC-32C intact, then its commit record
 * naming the next commit number, where the commit began and how many page records it has. The
 * first record that is not so ends them (a commit a crash cut short, or damage): what follows it is
 * not read.
 */
export function scanCommits(tail: Uint8Array, from: number, commit: number): LogCommit[] {
  const out: LogCommit[] = [];
  let pages: [number, Located][] = [];
  let start = 0;
  for (let off = 0; off + RECORD_HEADER_BYTES <= tail.length;) {
    let h: ReturnType<typeof parseRecordHeader>;
    try {
      h = parseRecordHeader(tail.subarray(off, off + RECORD_HEADER_BYTES), `@${from + off}`, KIND, LOG_KINDS);
    } catch {
      break;
    }
    const at = off + RECORD_HEADER_BYTES;
    if (h.length > tail.length - at) break;
    const body = tail.subarray(at, at + h.length);
    if (crc32c(body) !== h.crc) break;
    off = at + h.length;
    if (h.kind === KIND_PAGE) {
      pages.push([h.id, { at: from + at, length: h.length, crc: h.crc }]);
      continue;
    }
    const c = decodeCommitBody(body);
    if (
      c === undefined ||
      c.commit !== commit + 1 ||
      c.start !== from + start ||
      c.pages !== pages.length ||
      new Set(pages.map(([id]) => id)).size !== pages.length
    )
      break;
    out.push({ commit: c.commit, end: from + off, manifest: c.manifest, deletes: c.deletes, pages });
    commit = c.commit;
    start = off;
    pages = [];
  }
  return out;
}

function decodeCommitBody(
  body: Uint8Array,
): { commit: number; start: number; manifest: Uint8Array | undefined; deletes: number[]; pages: number } | undefined {
  if (body.length < COMMIT_HEADER_BYTES) return undefined;
  const v = new DataView(body.buffer, body.byteOffset, body.length);
  const commit = v.getFloat64(0, true);
  const start = v.getFloat64(8, true);
  const has = v.getUint32(16, true);
  const length = v.getUint32(20, true);
  const count = v.getUint32(24, true);
  if (
    !Number.isSafeInteger(commit) ||
    !Number.isSafeInteger(start) ||
    start < 0 ||
    has > 1 ||
    (has === 0 && length > 0) ||
    body.length !== COMMIT_HEADER_BYTES + length + 4 * count
  )
    return undefined;
  const deletes: number[] = [];
  for (let i = 0; i < count; i++) deletes.push(v.getUint32(COMMIT_HEADER_BYTES + length + 4 * i, true));
  const manifest = has === 1 ? body.slice(COMMIT_HEADER_BYTES, COMMIT_HEADER_BYTES + length) : undefined;
  return { commit, start, manifest, deletes, pages: v.getUint32(28, true) };
}

/** The slot's bytes for commit `s`. */
export function encodeSlot(
  s: Omit<Slot, 'bytes'>,
  index: Iterable<readonly [number, Located]>,
  count: number,
): Uint8Array {
  const m = s.manifest ?? new Uint8Array(0);
  const out = new Uint8Array(SLOT_HEADER_BYTES + m.length + count * ENTRY_BYTES + 4);
  const v = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) out[i] = SLOT_MAGIC.charCodeAt(i);
  v.setUint32(8, FORMAT_VERSION, true);
  v.setFloat64(12, s.commit, true);
  v.setUint32(20, s.log, true);
  v.setFloat64(24, s.committed, true);
  v.setUint32(32, s.manifest === undefined ? 0 : 1, true);
  v.setUint32(36, m.length, true);
  v.setUint32(40, count, true);
  out.set(m, SLOT_HEADER_BYTES);
  let at = SLOT_HEADER_BYTES + m.length;
  for (const [id, loc] of index) {
    v.setUint32(at, id, true);
    v.setFloat64(at + 4, loc.at, true);
    v.setUint32(at + 12, loc.length, true);
    v.setUint32(at + 16, loc.crc, true);
    at += ENTRY_BYTES;
  }
  if (at !== out.length - 4) throw new PqdbError('INTERNAL', `${KIND}: the page index has not ${count} entries`);
  v.setUint32(out.length - 4, crc32c(out.subarray(0, out.length - 4)), true);
  return out;
}

/**
 * The slot in `file`, or undefined when it is empty or torn (fails its CRC: a slot write a crash
 * cut short). @throws FORMAT_VERSION for a slot of another format version; CORRUPTION for a slot
 * whose CRC holds but whose fields do not
 */
export function readSlot(file: SyncFile, name: string): ReadSlot | undefined {
  const size = file.getSize();
  if (size < SLOT_HEADER_BYTES + 4) return undefined;
  const buf = new Uint8Array(size);
  readExactly(file, buf, 0, name);
  const v = new DataView(buf.buffer);
  const length = v.getUint32(36, true);
  const count = v.getUint32(40, true);
  const end = SLOT_HEADER_BYTES + length + count * ENTRY_BYTES;
  if (end + 4 > size || v.getUint32(end, true) !== crc32c(buf.subarray(0, end))) return undefined;
  if (String.fromCharCode(...buf.subarray(0, 8)) !== SLOT_MAGIC) return undefined;
  const version = v.getUint32(8, true);
  if (version !== FORMAT_VERSION)
    throw new PqdbError(
      'FORMAT_VERSION',
      `${KIND}: ${name} is of format version ${version}, this build reads ${FORMAT_VERSION}`,
    );
  const commit = v.getFloat64(12, true);
  const log = v.getUint32(20, true);
  const committed = v.getFloat64(24, true);
  const has = v.getUint32(32, true);
  if (
    !Number.isSafeInteger(commit) ||
    commit < 1 ||
    (log !== 0 && log !== 1) ||
    !Number.isSafeInteger(committed) ||
    committed < 0 ||
    has > 1 ||
    (has === 0 && length > 0)
  )
    throw corruption(`${KIND}: ${name} holds impossible fields`);
  const manifest = has === 1 ? buf.slice(SLOT_HEADER_BYTES, SLOT_HEADER_BYTES + length) : undefined;
  const entries = new DataView(buf.buffer, SLOT_HEADER_BYTES + length, count * ENTRY_BYTES);
  return { commit, log, committed, manifest, bytes: end + 4, entries, count };
}
