// node-fs PageStore (Node only): a directory of append-only segment files plus a MANIFEST file that
// names what is committed. DESIGN.md §6; the byte layout is in docs/storage.md.
//
// Commit protocol (a commit is visible iff step 3's rename happened):
//   1. append the commit's records (pages, delete tombstones) to the current segment at its
//      committed length, 2. fdatasync the segment, 3. write MANIFEST.tmp (new committed lengths +
//      the user manifest), fsync it, rename it over MANIFEST, fsync the directory.
// Recovery on open: bytes past a segment's committed length belong to a commit that never
// completed and are truncated (reported in `recovery`); segments the manifest does not name are
// removed; a segment shorter than its committed length, or a damaged record header inside the
// committed range, is CORRUPTION — an acknowledged page is never dropped silently.
//
// Single writer, three ways. On Linux the writer holds a host lock (host-lock.ts): a listening
// socket in the abstract namespace, named by the directory's device and inode, that no file
// operation can release and that dies with the process; a second writer on this host gets LOCKED
// whatever happened to the files. Everywhere, a LOCK file created with O_EXCL holding
// "pid\nhostname\ntoken"; a lock whose pid is dead on this host is stale and taken over (two
// processes breaking one stale lock at the same instant can race; a live holder is never
// displaced). A writer let in anyway (another host on a shared file system, another network
// namespace, or a platform without the host lock, after a LOCK deleted while its holder lives) is
// caught by a compare-and-swap of the
// commit counter, checked before a commit writes any byte and again before its MANIFEST is
// replaced: the writer that was overtaken gets CONFLICT and writes nothing, so no acknowledged
// commit is overwritten. (A window of a few system calls between the check and the write remains.)
// Caveats: the CRC-32C framing detects accidents, not tampering (the sealed records carry a MAC);
// a ranged read (`readRange`, one positioned read of part of a page) checks no checksum at all.
// After a failed write or sync the store refuses further commits (IO_ERROR) until reopened: the
// kernel may have dropped dirty pages, so retrying an fsync proves nothing.

/// <reference types="node" />
// (tsconfig.json sets "types": []; this Node-only file opts in to the Node typings.)
import { open, readdir, rename, rm, stat, mkdir, readFile, unlink, type FileHandle } from 'node:fs/promises';
import { readSync } from 'node:fs';
import { join } from 'node:path';
import { PqdbError } from '../errors';
import { LOCK, takeWriterLock, releaseWriterLock, type WriterLock } from './node-fs-lock';
import {
  BasePageStore,
  checkRangeInPage,
  corruption,
  crc32c,
  crc32cAsync,
  mediumError,
  type CheckedBatch,
  type PageStore,
  type PageStoreStats,
  type RecoveryReport,
} from './page-store';

/** Segments roll over once they would grow past this (64 MiB); a single commit may exceed it. */
export const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;
/** The most readPages reads at once (a run of neighbouring pages). */
const READ_RUN_BYTES = 4 << 20;
/** Ranges up to this long are read synchronously (readRange). */
const SYNC_READ_BYTES = 64 << 10;
/** How much of a segment opening reads at a time while it indexes the records. */
const SCAN_WINDOW_BYTES = 1 << 20;
export const SEGMENT_HEADER_BYTES = 16;
export const RECORD_HEADER_BYTES = 24;
export const FORMAT_VERSION = 1;

const SEGMENT_MAGIC = 'PQDBSEG\0';
export const MANIFEST_MAGIC = 'PQDBMAN\0';
const RECORD_MAGIC = 0x31525150; // "PQR1" little-endian
const KIND_PAGE = 1;
const KIND_DELETE = 2;
export const MANIFEST = 'MANIFEST';
export const MANIFEST_TMP = 'MANIFEST.tmp';
export { LOCK, takeWriterLock, releaseWriterLock, type WriterLock };
export const SEGMENT_RE = /^seg-([0-9a-f]{8})\.pqs$/;
/** Records up to this size are gathered into one write; larger ones are written on their own. */
const WRITE_GATHER_BYTES = 1 << 20;

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));
const segmentName = (seq: number): string => `seg-${seq.toString(16).padStart(8, '0')}.pqs`;

/** Options of `openNodeFsPageStore`. */
export interface NodeFsPageStoreOptions {
  /** Create the directory when missing (default true). */
  create?: boolean;
  /** Segment roll-over size in bytes (default 64 MiB). */
  segmentBytes?: number;
  /**
   * Open for reading only (verifiers, status tools): no lock is taken, nothing on disk is changed
   * (what a writer would repair is reported in `recovery` instead), and `commit` rejects with
   * READ_ONLY. Reads see the store as of opening; a writer may hold it meanwhile.
   */
  readOnly?: boolean;
  /** @internal false: no host lock, as for a writer on another host sharing the directory (tests). */
  hostLock?: boolean;
}

interface Location {
  readonly seq: number;
  readonly offset: number; // of the record header
  readonly length: number;
  readonly crc: number;
}

interface Segment {
  readonly seq: number;
  readonly fh: FileHandle;
  committed: number;
}

/** `buf.length` bytes of file descriptor `fd` at `at`, read synchronously. @throws CORRUPTION when the file is shorter */
function readSyncExactly(fd: number, buf: Uint8Array, at: number, name: string): void {
  let done = 0;
  while (done < buf.length) {
    const n = readSync(fd, buf, done, buf.length - done, at + done);
    if (n === 0) throw corruption(`node-fs: ${name} ends before byte ${at + buf.length}`);
    done += n;
  }
}

/**
 * Opens (creating when allowed) the store in directory `dir`, repairing an interrupted commit.
 * @throws PqdbError NOT_FOUND when the directory is missing and not to be created, LOCKED when
 * another process or store holds the directory, CORRUPTION when a
 * committed byte is missing or damaged, FORMAT_VERSION for an unknown format, IO_ERROR otherwise
 * @example
 * const store = await openNodeFsPageStore('/var/lib/app/pqdb');
 * console.log(store.recovery.actions);
 */
export async function openNodeFsPageStore(dir: string, options: NodeFsPageStoreOptions = {}): Promise<PageStore> {
  if (typeof dir !== 'string' || dir.length === 0)
    throw new TypeError(`"dir" expected a non-empty string, got ${typeof dir}`);
  const segmentBytes = options.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
  if (!Number.isInteger(segmentBytes) || segmentBytes < 4096) {
    throw new RangeError(`"segmentBytes" expected an integer >= 4096, got ${segmentBytes}`);
  }
  const readOnly = options.readOnly === true;
  try {
    if (options.create !== false && !readOnly) await mkdir(dir, { recursive: true });
    await stat(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT')
      throw new PqdbError('NOT_FOUND', `no pqdb store at ${dir}: no such directory`);
    throw mediumError(`node-fs page store ${dir}`, e);
  }
  const lock = readOnly ? undefined : await takeWriterLock(dir, options.hostLock !== false);
  const store = new NodeFsPageStore(dir, segmentBytes, readOnly, lock);
  try {
    await store.load();
  } catch (e) {
    await store.close().catch(() => undefined);
    throw mediumError(`node-fs page store ${dir}: open`, e);
  }
  return store;
}

class NodeFsPageStore extends BasePageStore {
  readonly kind = 'node-fs';
  readonly #dir: string;
  readonly #segmentBytes: number;
  readonly #segments = new Map<number, Segment>();
  readonly #index = new Map<number, Location>();
  #manifest: Uint8Array | undefined;
  #commitSeq = 0;
  #manifestFileBytes = 0;
  #failed: unknown;
  readonly #readOnly: boolean;

  /** The writer's locks (undefined: read-only, no lock). */
  readonly #lock?: WriterLock;

  constructor(dir: string, segmentBytes: number, readOnly: boolean, lock?: WriterLock) {
    super();
    this.#dir = dir;
    this.#segmentBytes = segmentBytes;
    this.#readOnly = readOnly;
    this.#lock = lock;
  }

  /** Reads MANIFEST, repairs segment tails, rebuilds the page index. */
  async load(): Promise<void> {
    const actions: string[] = [];
    let truncatedBytes = 0;
    const ro = this.#readOnly;
    if (!ro) {
      await rm(join(this.#dir, MANIFEST_TMP), { force: true }).then(
        () => undefined,
        () => undefined,
      );
    }
    let committed = new Map<number, number>();
    let raw: Uint8Array | undefined;
    try {
      raw = await readFile(join(this.#dir, MANIFEST));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    if (raw !== undefined) {
      const m = decodeManifest(raw);
      committed = m.segments;
      this.#manifest = m.manifest;
      this.#commitSeq = m.commitSeq;
      this.#manifestFileBytes = raw.length;
    }
    const present = new Set<number>();
    for (const name of await readdir(this.#dir)) {
      const match = SEGMENT_RE.exec(name);
      if (!match) continue;
      const seq = parseInt(match[1], 16);
      if (committed.has(seq)) present.add(seq);
      else if (ro)
        actions.push(`${name} is not named by the manifest (an interrupted commit; left in place, read-only)`);
      else {
        await unlink(join(this.#dir, name));
        actions.push(`removed ${name}: not named by the manifest (an interrupted commit)`);
      }
    }
    for (const [seq, length] of [...committed].sort((a, b) => a[0] - b[0])) {
      const name = segmentName(seq);
      if (!present.has(seq)) throw corruption(`node-fs: ${name} is named by the manifest but missing`);
      const fh = await open(join(this.#dir, name), ro ? 'r' : 'r+');
      this.#segments.set(seq, { seq, fh, committed: length });
      const size = (await fh.stat()).size;
      if (size < length) throw corruption(`node-fs: ${name} holds ${size} bytes, the manifest committed ${length}`);
      if (size > length && ro) {
        truncatedBytes += size - length;
        actions.push(
          `${name} has ${size - length} bytes past its committed length ${length}: the tail of a commit that never completed (left in place, read-only)`,
        );
      } else if (size > length) {
        await fh.truncate(length);
        await fh.datasync();
        truncatedBytes += size - length;
        actions.push(`truncated ${name} from ${size} to ${length} bytes: the tail of a commit that never completed`);
      }
      await this.#scan(fh, seq, name, length);
    }
    this.recovery = { clean: actions.length === 0, truncatedBytes, actions };
  }

  async #scan(fh: FileHandle, seq: number, name: string, length: number): Promise<void> {
    const head = new Uint8Array(Math.max(SEGMENT_HEADER_BYTES, RECORD_HEADER_BYTES));
    await readExactly(fh, head, SEGMENT_HEADER_BYTES, 0, name);
    const hv = new DataView(head.buffer);
    for (let i = 0; i < 8; i++) {
      if (head[i] !== SEGMENT_MAGIC.charCodeAt(i)) throw corruption(`node-fs: ${name} is not a pqdb segment`);
    }
    const version = hv.getUint32(8, true);
    if (version !== FORMAT_VERSION)
      throw new PqdbError('FORMAT_VERSION', `node-fs: ${name} has format version ${version}`);
    if (hv.getUint32(12, true) !== seq) throw corruption(`node-fs: ${name} carries another segment number`);
    // Record headers are read through a window of the file (one read per SCAN_WINDOW_BYTES, not per record).
    const window = new Uint8Array(Math.min(SCAN_WINDOW_BYTES, length));
    let windowAt = 0;
    let windowLength = 0;
    let off = SEGMENT_HEADER_BYTES;
    while (off < length) {
      if (length - off < RECORD_HEADER_BYTES)
        throw corruption(`node-fs: ${name} ends inside a record header at ${off}`);
      if (off + RECORD_HEADER_BYTES > windowAt + windowLength) {
        windowAt = off;
        windowLength = Math.min(window.length, length - off);
        await readExactly(fh, window, windowLength, off, name);
      }
      const h = parseRecordHeader(window.subarray(off - windowAt), `${name} @${off}`);
      if (off + RECORD_HEADER_BYTES + h.length > length)
        throw corruption(`node-fs: ${name} @${off}: record runs past the committed length`);
      if (h.kind === KIND_PAGE) this.#index.set(h.id, { seq, offset: off, length: h.length, crc: h.crc });
      else this.#index.delete(h.id);
      off += RECORD_HEADER_BYTES + h.length;
    }
  }

  /** Pages that lie back to back in one segment are read together, up to READ_RUN_BYTES a read. */
  protected override async _readPages(ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
    const out: (Uint8Array | undefined)[] = new Array(ids.length).fill(undefined);
    let i = 0;
    while (i < ids.length) {
      const first = this.#index.get(ids[i]);
      if (first === undefined) {
        i++;
        continue;
      }
      let end = i + 1;
      let bytes = RECORD_HEADER_BYTES + first.length;
      for (let prev = first; end < ids.length; end++) {
        const next = this.#index.get(ids[end]);
        const size = next === undefined ? 0 : RECORD_HEADER_BYTES + next.length;
        if (
          next === undefined ||
          next.seq !== prev.seq ||
          next.offset !== prev.offset + RECORD_HEADER_BYTES + prev.length
        )
          break;
        if (bytes + size > READ_RUN_BYTES) break;
        bytes += size;
        prev = next;
      }
      const name = segmentName(first.seq);
      const run = new Uint8Array(bytes);
      try {
        await readExactly(this.#segments.get(first.seq)!.fh, run, bytes, first.offset, name);
      } catch (e) {
        throw mediumError(`node-fs: read pages ${ids[i]}…${ids[end - 1]}`, e);
      }
      for (let at = 0; i < end; i++) {
        const loc = this.#index.get(ids[i])!;
        out[i] = await this.#checked(ids[i], loc, run.subarray(at, at + RECORD_HEADER_BYTES + loc.length));
        at += RECORD_HEADER_BYTES + loc.length;
      }
    }
    return out;
  }

  protected async _readPage(id: number): Promise<Uint8Array | undefined> {
    const loc = this.#index.get(id);
    if (loc === undefined) return undefined;
    const seg = this.#segments.get(loc.seq)!;
    const name = segmentName(loc.seq);
    const buf = new Uint8Array(RECORD_HEADER_BYTES + loc.length);
    try {
      await readExactly(seg.fh, buf, buf.length, loc.offset, name);
    } catch (e) {
      throw mediumError(`node-fs: read page ${id}`, e);
    }
    return this.#checked(id, loc, buf);
  }

  /**
   * One positioned read of the range, at the page's body in its segment (from the in-memory index)
   * plus `offset`. Neither the record header nor the page's CRC-32C is checked: the checksum covers
   * the whole body, and checking it would mean reading the ~200 KB page this read exists to avoid.
   * The bytes are authenticated one layer up, by the sealed record's AEAD tag (PageStore.readRange);
   * a range past the page's end is CORRUPTION before any read.
   */
  protected override async _readRange(id: number, offset: number, length: number): Promise<Uint8Array | undefined> {
    const loc = this.#index.get(id);
    if (loc === undefined) return undefined;
    checkRangeInPage(this.kind, id, offset, length, loc.length);
    const buf = new Uint8Array(length);
    if (length === 0) return buf;
    try {
      const at = loc.offset + RECORD_HEADER_BYTES + offset;
      const fh = this.#segments.get(loc.seq)!.fh;
      // A record-sized range is read synchronously: a positioned read of a few hundred bytes from
      // the OS page cache takes microseconds, a round trip through libuv's thread pool tens of them
      // (measured: 9-16k sequential random reads/s through it at 1M records).
      if (length <= SYNC_READ_BYTES) readSyncExactly(fh.fd, buf, at, segmentName(loc.seq));
      else await readExactly(fh, buf, length, at, segmentName(loc.seq));
    } catch (e) {
      throw mediumError(`node-fs: read page ${id} [${offset}, ${offset + length})`, e);
    }
    return buf;
  }

  /** A page's record as read (header ‖ body): its header and checksum checked, the body in its own buffer. */
  async #checked(id: number, loc: Location, record: Uint8Array): Promise<Uint8Array> {
    const name = segmentName(loc.seq);
    const h = parseRecordHeader(record, `${name} @${loc.offset}`);
    if (h.kind !== KIND_PAGE || h.id !== id || h.length !== loc.length || h.crc !== loc.crc) {
      throw corruption(`node-fs: page ${id} (${name} @${loc.offset}): record header changed`);
    }
    const body =
      record.byteOffset === 0 && record.length === record.buffer.byteLength
        ? record.subarray(RECORD_HEADER_BYTES)
        : record.slice(RECORD_HEADER_BYTES);
    // In steps: an index page can be megabytes, and its checksum must not hold the event loop.
    if ((await crc32cAsync(body)) !== h.crc)
      throw corruption(`node-fs: page ${id} (${name} @${loc.offset}): checksum mismatch`);
    return body;
  }

  protected async _readManifest(): Promise<Uint8Array | undefined> {
    return this.#manifest && new Uint8Array(this.#manifest);
  }

  protected _listPages(): number[] {
    return [...this.#index.keys()].sort((a, b) => a - b);
  }

  protected _has(id: number): boolean {
    return this.#index.has(id);
  }

  protected async _commit(batch: CheckedBatch): Promise<void> {
    if (this.#readOnly) throw new PqdbError('READ_ONLY', `node-fs page store ${this.#dir} is open read-only`);
    if (this.#failed !== undefined) {
      throw new PqdbError('IO_ERROR', 'node-fs: an earlier write failed; reopen the store', { cause: this.#failed });
    }
    try {
      await this.#commit(batch);
    } catch (e) {
      this.#failed = e;
      throw mediumError('node-fs: commit', e);
    }
  }

  /**
   * Compare-and-swap of the commit counter: the MANIFEST on disk must still be the one this store
   * wrote last. A second writer (one let in by a deleted or misjudged LOCK) has committed otherwise;
   * this writer then stops (CONFLICT) instead of writing over its pages or its manifest.
   */
  async #checkNotOvertaken(): Promise<void> {
    let onDisk = 0;
    try {
      const fh = await open(join(this.#dir, MANIFEST), 'r');
      try {
        const head = new Uint8Array(24);
        const { bytesRead } = await fh.read(head, 0, 24, 0);
        if (bytesRead === 24) {
          const v = new DataView(head.buffer);
          onDisk = v.getUint32(16, true) + v.getUint32(20, true) * 2 ** 32;
        }
      } finally {
        await fh.close();
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    if (onDisk !== this.#commitSeq)
      throw new PqdbError(
        'CONFLICT',
        `node-fs page store ${this.#dir}: another writer committed (commit ${onDisk}, this writer last wrote ${this.#commitSeq}); nothing was written: reopen the store`,
      );
  }

  async #commit(batch: CheckedBatch): Promise<void> {
    await this.#checkNotOvertaken(); // before any byte is written: pages of the other writer stay
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
    let seg = this.#current();
    let created: Segment | undefined;
    if (
      total > 0 &&
      (seg === undefined || (seg.committed > SEGMENT_HEADER_BYTES && seg.committed + total > this.#segmentBytes))
    ) {
      const seq = seg === undefined ? 1 : seg.seq + 1;
      const fh = await open(join(this.#dir, segmentName(seq)), 'w+');
      created = seg = { seq, fh, committed: 0 };
      const head = new Uint8Array(SEGMENT_HEADER_BYTES);
      head.set(ascii(SEGMENT_MAGIC));
      const hv = new DataView(head.buffer);
      hv.setUint32(8, FORMAT_VERSION, true);
      hv.setUint32(12, seq, true);
      records.unshift(head);
      total += SEGMENT_HEADER_BYTES;
    }
    let end = seg?.committed ?? 0;
    try {
      if (total > 0) {
        // Positional writes at the committed length: leftovers of a failed attempt are overwritten.
        await writeGathered(seg!.fh, records, end);
        await seg!.fh.datasync();
        end += total;
      }
      const segments = new Map([...this.#segments].map(([s, g]) => [s, g.committed]));
      if (seg !== undefined) segments.set(seg.seq, end);
      const manifest = batch.manifest ?? this.#manifest;
      const file = encodeManifest(this.#commitSeq + 1, segments, manifest);
      await this.#checkNotOvertaken();
      await this.#replaceManifest(file);
      this.#manifestFileBytes = file.length;
    } catch (e) {
      if (created !== undefined) await created.fh.close().catch(() => undefined);
      throw e;
    }
    // Durable: publish.
    this.#commitSeq++;
    if (created !== undefined) this.#segments.set(created.seq, created);
    let off = seg?.committed ?? 0;
    if (created !== undefined) off += SEGMENT_HEADER_BYTES;
    for (const id of batch.deletes) {
      this.#index.delete(id);
      off += RECORD_HEADER_BYTES;
    }
    batch.pages.forEach((p, i) => {
      this.#index.set(p.id, { seq: seg!.seq, offset: off, length: p.bytes.length, crc: crcs[i] });
      off += RECORD_HEADER_BYTES + p.bytes.length;
    });
    if (seg !== undefined) seg.committed = end;
    if (batch.manifest !== undefined) this.#manifest = batch.manifest;
  }

  #current(): Segment | undefined {
    let last: Segment | undefined;
    for (const s of this.#segments.values()) if (last === undefined || s.seq > last.seq) last = s;
    return last;
  }

  async #replaceManifest(file: Uint8Array): Promise<void> {
    const tmp = join(this.#dir, MANIFEST_TMP);
    const fh = await open(tmp, 'w');
    try {
      await fh.writeFile(file);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, join(this.#dir, MANIFEST));
    const d = await open(this.#dir, 'r');
    try {
      await d.sync(); // makes the rename (and any new segment's directory entry) durable
    } finally {
      await d.close();
    }
  }

  protected async _stats(): Promise<PageStoreStats> {
    let pageBytes = 0;
    for (const loc of this.#index.values()) pageBytes += loc.length;
    let storedBytes = this.#manifestFileBytes;
    for (const s of this.#segments.values()) storedBytes += s.committed;
    return { pageCount: this.#index.size, pageBytes, manifestBytes: this.#manifest?.length ?? 0, storedBytes };
  }

  protected async _close(): Promise<void> {
    const errors: unknown[] = [];
    for (const s of this.#segments.values()) await s.fh.close().catch((e) => errors.push(e));
    this.#segments.clear();
    this.#index.clear();
    if (this.#lock !== undefined) await releaseWriterLock(this.#dir, this.#lock).catch((e) => errors.push(e));
    if (errors.length > 0) throw mediumError('node-fs: close', errors[0]);
  }
}

function recordHeader(kind: number, id: number, length: number, crc: number): Uint8Array {
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

function parseRecordHeader(h: Uint8Array, where: string): { kind: number; id: number; length: number; crc: number } {
  const v = new DataView(h.buffer, h.byteOffset, RECORD_HEADER_BYTES);
  if (v.getUint32(0, true) !== RECORD_MAGIC || v.getUint32(20, true) !== crc32c(h.subarray(0, 20))) {
    throw corruption(`node-fs: ${where}: damaged record header`);
  }
  const kind = h[4];
  if ((kind !== KIND_PAGE && kind !== KIND_DELETE) || h[5] | h[6] | h[7])
    throw corruption(`node-fs: ${where}: unknown record kind ${kind}`);
  return { kind, id: v.getUint32(8, true), length: v.getUint32(12, true), crc: v.getUint32(16, true) };
}

function encodeManifest(
  commitSeq: number,
  segments: Map<number, number>,
  manifest: Uint8Array | undefined,
): Uint8Array {
  const user = manifest ?? new Uint8Array(0);
  const out = new Uint8Array(32 + segments.size * 12 + 4 + user.length + 4);
  const v = new DataView(out.buffer);
  out.set(ascii(MANIFEST_MAGIC));
  v.setUint32(8, FORMAT_VERSION, true);
  v.setUint32(12, manifest === undefined ? 0 : 1, true);
  v.setUint32(16, commitSeq % 2 ** 32, true);
  v.setUint32(20, Math.floor(commitSeq / 2 ** 32), true);
  v.setUint32(24, segments.size, true);
  v.setUint32(28, 0, true);
  let o = 32;
  for (const [seq, length] of [...segments].sort((a, b) => a[0] - b[0])) {
    v.setUint32(o, seq, true);
    v.setUint32(o + 4, length % 2 ** 32, true);
    v.setUint32(o + 8, Math.floor(length / 2 ** 32), true);
    o += 12;
  }
  v.setUint32(o, user.length, true);
  out.set(user, o + 4);
  o += 4 + user.length;
  v.setUint32(o, crc32c(out.subarray(0, o)), true);
  return out;
}

function decodeManifest(raw: Uint8Array): {
  commitSeq: number;
  segments: Map<number, number>;
  manifest: Uint8Array | undefined;
} {
  const bad = (why: string): PqdbError => corruption(`node-fs: ${MANIFEST}: ${why}`);
  if (raw.length < 40) throw bad(`too short (${raw.length} bytes)`);
  for (let i = 0; i < 8; i++) if (raw[i] !== MANIFEST_MAGIC.charCodeAt(i)) throw bad('not a pqdb manifest');
  const v = new DataView(raw.buffer, raw.byteOffset, raw.length);
  const version = v.getUint32(8, true);
  if (version !== FORMAT_VERSION)
    throw new PqdbError('FORMAT_VERSION', `node-fs: ${MANIFEST} has format version ${version}`);
  if (v.getUint32(raw.length - 4, true) !== crc32c(raw.subarray(0, raw.length - 4))) throw bad('checksum mismatch');
  const flags = v.getUint32(12, true);
  const commitSeq = v.getUint32(16, true) + v.getUint32(20, true) * 2 ** 32;
  const n = v.getUint32(24, true);
  if (32 + n * 12 + 8 > raw.length) throw bad('segment table runs past the end');
  const segments = new Map<number, number>();
  let o = 32;
  for (let i = 0; i < n; i++, o += 12)
    segments.set(v.getUint32(o, true), v.getUint32(o + 4, true) + v.getUint32(o + 8, true) * 2 ** 32);
  const len = v.getUint32(o, true);
  if (o + 4 + len + 4 !== raw.length) throw bad('length mismatch');
  const manifest = flags & 1 ? new Uint8Array(raw.subarray(o + 4, o + 4 + len)) : undefined;
  return { commitSeq, segments, manifest };
}

async function readExactly(
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
async function writeGathered(fh: FileHandle, chunks: Uint8Array[], position: number): Promise<void> {
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
