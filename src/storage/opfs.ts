// The OPFS page store (browsers, dedicated workers): a store's pages in the Origin Private File
// System, read and written through FileSystemSyncAccessHandle. Four files per store, whatever its
// size (Safari allows about 252 open handles per origin; a file per page or per table does not fit):
//
//   pqdb-<name>/log-0, log-1        append-only logs in node-fs's record framing (records.ts): each
//                                   commit's page records, then its commit record (the commit
//                                   number, where the commit began, its manifest, its deletes, how
//                                   many pages it wrote); one log is active, the other empty or
//                                   being rewritten
//   pqdb-<name>/slot-a, slot-b      checkpoints of the page index, written in turn: "PQDBOPFS",
//                                   format version, commit number, the active log and the length
//                                   it covers, the manifest, where each live page's record lies,
//                                   a CRC-32C of all of it
//
// A commit appends its records and its commit record to the active log in one write and flushes
// it once: that flush is the commit point (each call on a sync access handle costs a fixed
// 0.1-0.3 ms, so a commit makes two). Opening takes the valid slot with the highest commit number
// and its page index, reads the log past what the slot covers in one read, applies the commits it
// holds whole (every record's CRC intact, each commit record naming the next commit number and
// where it began) and cuts the rest. A commit writes a slot as well once the log has grown 1 MiB
// past the newest, and closing writes one, so an open reads little of the log; a torn slot fails
// its CRC and the other one, older, stands with more of the log to read. When dead records
// outweigh live ones (and pass 4 MiB) a commit writes the live pages and its own into the other
// log instead, and the slot naming that log is its commit point: reclaiming space is a commit like
// any other. Layout and crash cases: docs/storage.md.
//
// The sync access handle is exclusive: a second open of the same store, in this or another tab or
// worker, fails to get it and is LOCKED. No `readwrite-unsafe`, `createWritable`,
// SharedArrayBuffer or cross-origin isolation is needed.
//
// Security caveat: what the files hold is the adversary's (DESIGN §11). The CRCs catch accidents;
// pages and manifest are sealed and authenticated one layer up, so a page put back from an older
// copy or a rolled-back slot is caught there, not here.

import { PqdbError } from '../errors';
import { crc32c } from '../_crc32c';
import { Scratch } from '../_bytes';
import { KIND_PAGE, RECORD_HEADER_BYTES, parseRecordHeader, recordHeader } from './records';
import {
  type CheckedBatch,
  type PageStore,
  type PageStoreStats,
  type PageStoreSupports,
  type ReclaimOptions,
  type ReclaimResult,
  type RecoveryReport,
} from './page-store';
import { BasePageStore, checkRangeInPage, corruption } from './page-store-base';
import {
  ENTRY_BYTES,
  GATHER_BYTES,
  KIND,
  LOGS,
  LOG_KINDS,
  REWRITE_DEAD_BYTES,
  SLOTS,
  SLOT_EVERY_BYTES,
  encodeCommitRecord,
  encodeSlot,
  readExactly,
  readSlot,
  scanCommits,
  writeAll,
  writeGathered,
  type LogCommit,
  type Located,
  type SyncDirectory,
  type SyncFile,
} from './opfs-files';

export type { SyncDirectory, SyncFile } from './opfs-files';

/** Whether this context can open OPFS page stores (a dedicated worker with sync access handles). */
export function opfsAvailable(): boolean {
  const g = globalThis as { FileSystemFileHandle?: { prototype: object }; navigator?: { storage?: object } };
  return (
    typeof g.navigator?.storage === 'object' &&
    typeof (g.navigator.storage as { getDirectory?: unknown }).getDirectory === 'function' &&
    g.FileSystemFileHandle !== undefined &&
    'createSyncAccessHandle' in g.FileSystemFileHandle.prototype
  );
}

/** The OPFS directory name of store `name`. @throws TypeError for a name OPFS cannot hold */
function directoryName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > 200)
    throw new TypeError('"name" expected a string of 1 to 200 characters');
  return `pqdb-${encodeURIComponent(name)}`;
}

type FsDirectory = {
  getDirectoryHandle(n: string, o?: { create?: boolean }): Promise<FsDirectory>;
  getFileHandle(n: string, o?: { create?: boolean }): Promise<{ createSyncAccessHandle(): Promise<SyncFile> }>;
  removeEntry(n: string, o?: { recursive?: boolean }): Promise<void>;
};

async function opfsRoot(): Promise<FsDirectory> {
  if (!opfsAvailable())
    throw new PqdbError(
      'UNSUPPORTED',
      'the OPFS page store needs a dedicated worker with FileSystemSyncAccessHandle (see opfsAvailable)',
    );
  const storage = (globalThis as unknown as { navigator: { storage: { getDirectory(): Promise<FsDirectory> } } })
    .navigator.storage;
  return storage.getDirectory();
}

/** A DOMException of the file system API as a PqdbError. */
function fsError(what: string, e: unknown): PqdbError {
  const name = (e as { name?: string }).name;
  if (e instanceof PqdbError) return e;
  if (name === 'NoModificationAllowedError')
    return new PqdbError('LOCKED', `${what}: another tab or worker has this store open`, { cause: e });
  if (name === 'QuotaExceededError')
    return new PqdbError('QUOTA_EXCEEDED', `${what}: the origin's storage quota is exhausted`, { cause: e });
  if (name === 'NotFoundError') return new PqdbError('NOT_FOUND', `${what}: not found`, { cause: e });
  return new PqdbError('IO_ERROR', `${what}: ${(e as Error).message ?? String(e)}`, { cause: e });
}

/**
 * Opens (creating when missing) the OPFS page store `name` in this origin. Dedicated workers only.
 * @throws PqdbError UNSUPPORTED (no sync access handles here), LOCKED (open elsewhere),
 * CORRUPTION, FORMAT_VERSION, IO_ERROR
 * @example const pages = await openOpfsPageStore('notes'); // in a dedicated worker
 */
export async function openOpfsPageStore(name: string): Promise<PageStore> {
  const dirName = directoryName(name);
  const root = await opfsRoot();
  let dir: FsDirectory;
  try {
    dir = await root.getDirectoryHandle(dirName, { create: true });
  } catch (e) {
    throw fsError(`opfs page store ${JSON.stringify(name)}`, e);
  }
  return openSyncPageStore(
    {
      open: async (file) => (await dir.getFileHandle(file, { create: true })).createSyncAccessHandle(),
    },
    name,
  );
}

/**
 * Deletes the OPFS page store `name` (nothing when there is none).
 * @throws PqdbError LOCKED while it is open, UNSUPPORTED, IO_ERROR
 */
export async function deleteOpfsPageStore(name: string): Promise<void> {
  const dirName = directoryName(name);
  const root = await opfsRoot();
  try {
    await root.removeEntry(dirName, { recursive: true });
  } catch (e) {
    const err = fsError(`opfs page store ${JSON.stringify(name)}`, e);
    if (err.code !== 'NOT_FOUND') throw err;
  }
}

/**
 * @internal The store over any SyncDirectory (openOpfsPageStore passes OPFS; the Node tests a
 * directory of files): opens its four files and recovers it.
 */
export async function openSyncPageStore(dir: SyncDirectory, label: string): Promise<PageStore> {
  // The four at once: each open is a round trip to the browser's process (~4 ms in Chromium).
  const names = [...LOGS, ...SLOTS];
  const opened = await Promise.allSettled(names.map((f) => dir.open(f)));
  const failed = opened.findIndex((r) => r.status === 'rejected');
  if (failed < 0) {
    const files = opened.map((r) => (r as PromiseFulfilledResult<SyncFile>).value);
    try {
      return new SyncPageStore(files as [SyncFile, SyncFile, SyncFile, SyncFile], label);
    } catch (e) {
      for (const h of files) h.close();
      throw e;
    }
  }
  for (const r of opened) if (r.status === 'fulfilled') r.value.close();
  throw fsError(
    `opfs page store ${JSON.stringify(label)}, ${names[failed]}`,
    (opened[failed] as PromiseRejectedResult).reason,
  );
}

const SUPPORTS: PageStoreSupports = Object.freeze({
  readPages: true,
  readRange: true,
  // readRange reads only the range, but each call on a sync access handle has a fixed cost of
  // 0.1-0.3 ms (Chromium) whatever its size: a record costs what its page costs, so the engine's
  // page cache reads the page once and keeps it for the next records in it.
  partialRanges: false,
  readRangeSync: true,
  blockingReads: true,
  reclaim: true,
  follow: false,
});

class SyncPageStore extends BasePageStore {
  readonly kind = KIND;
  readonly supports = SUPPORTS;
  readonly #label: string;
  readonly #logs: [SyncFile, SyncFile];
  readonly #slots: [SyncFile, SyncFile];
  readonly #index = new Map<number, Located>();
  readonly #gather = new Scratch(0, GATHER_BYTES); // a commit's records, gathered for its write
  #active: 0 | 1 = 0; // the log the commits are in
  #end = 0; // where the active log's last commit ends
  #commit = 0; // the newest commit's number
  #manifest: Uint8Array | undefined; // the newest commit's
  #slotFile: 0 | 1 = 1; // the slot file holding the newest slot (the next slot goes to the other)
  #slotAt = 0; // where in the active log the newest slot's commit ends (the log is read from there at an open)
  #slotBytes = 0;
  #liveBytes = 0; // record bytes (headers included) of the live pages in the active log
  #failed: unknown; // a commit that failed past its first write: state on disk unknown until reopen

  constructor(files: [SyncFile, SyncFile, SyncFile, SyncFile], label: string) {
    super();
    this.#label = label;
    this.#logs = [files[0], files[1]];
    this.#slots = [files[2], files[3]];
    this.recovery = this.#recover();
  }

  get #log(): SyncFile {
    return this.#logs[this.#active];
  }

  #what(): string {
    return `opfs page store ${JSON.stringify(this.#label)}`;
  }

  /**
   * Takes the newest valid slot and the page index it holds, then the commits the active log holds
   * whole past it, and cuts whatever follows them (a commit a crash cut short).
   */
  #recover(): RecoveryReport {
    const slots = SLOTS.map((n, i) => readSlot(this.#slots[i], n));
    const pick = slots[0] !== undefined && (slots[1] === undefined || slots[0].commit > slots[1].commit) ? 0 : 1;
    const slot = slots[pick];
    const actions: string[] = [];
    if (slot === undefined && SLOTS.some((_, i) => this.#slots[i].getSize() > 0))
      throw corruption(`${KIND}: ${this.#what()}: neither commit slot is readable`);
    if (slot !== undefined) {
      this.#slotFile = pick;
      this.#active = slot.log;
      this.#commit = slot.commit;
      this.#end = this.#slotAt = slot.committed;
      this.#manifest = slot.manifest;
      this.#slotBytes = slot.bytes;
    }
    const log = this.#log;
    const size = log.getSize();
    if (size < this.#end)
      throw corruption(
        `${KIND}: ${this.#what()}: ${LOGS[this.#active]} holds ${size} bytes, its slot names ${this.#end}`,
      );
    // The index the slot holds: each entry a record that lies whole inside what the slot covers.
    for (let i = 0; slot !== undefined && i < slot.count; i++) {
      const e = i * ENTRY_BYTES;
      const id = slot.entries.getUint32(e, true);
      const at = slot.entries.getFloat64(e + 4, true);
      const length = slot.entries.getUint32(e + 12, true);
      if (!Number.isSafeInteger(at) || at < RECORD_HEADER_BYTES || at + length > this.#end || this.#index.has(id))
        throw corruption(`${KIND}: ${this.#what()}: ${SLOTS[pick]} indexes page ${id} impossibly`);
      this.#add(id, { at, length, crc: slot.entries.getUint32(e + 16, true) });
    }
    // The commits after the slot's: in one read (each call on a handle has its fixed cost).
    if (size > this.#end) {
      const tail = new Uint8Array(size - this.#end);
      readExactly(log, tail, this.#end, LOGS[this.#active]);
      for (const c of scanCommits(tail, this.#end, this.#commit)) this.#apply(c);
    }
    let truncatedBytes = 0;
    if (size > this.#end) {
      truncatedBytes = size - this.#end;
      log.truncate(this.#end);
      actions.push(`cut ${truncatedBytes} bytes of ${LOGS[this.#active]} that hold no whole commit`);
    }
    const other = this.#logs[1 - this.#active];
    if (other.getSize() > 0) {
      actions.push(`emptied ${LOGS[1 - this.#active]}, a rewrite no commit took`);
      other.truncate(0);
    }
    if (actions.length > 0) {
      log.flush();
      other.flush();
    }
    return { clean: actions.length === 0, truncatedBytes, actions };
  }

  /** Installs commit `c` of the active log (after it is durable, or as an open finds it). */
  #apply(c: LogCommit): void {
    for (const id of c.deletes) this.#drop(id);
    for (const [id, loc] of c.pages) (this.#drop(id), this.#add(id, loc));
    if (c.manifest !== undefined) this.#manifest = c.manifest;
    this.#commit = c.commit;
    this.#end = c.end;
  }

  #add(id: number, loc: Located): void {
    this.#index.set(id, loc);
    this.#liveBytes += RECORD_HEADER_BYTES + loc.length;
  }

  #drop(id: number): void {
    const old = this.#index.get(id);
    if (old === undefined) return;
    this.#index.delete(id);
    this.#liveBytes -= RECORD_HEADER_BYTES + old.length;
  }

  /** The body of page `id`, its header and CRC-32C checked. */
  protected async _readPage(id: number): Promise<Uint8Array | undefined> {
    const loc = this.#index.get(id);
    if (loc === undefined) return undefined;
    const record = new Uint8Array(RECORD_HEADER_BYTES + loc.length);
    readExactly(this.#log, record, loc.at - RECORD_HEADER_BYTES, `page ${id}`);
    const h = parseRecordHeader(record, `page ${id} @${loc.at - RECORD_HEADER_BYTES}`, KIND, LOG_KINDS);
    if (h.kind !== KIND_PAGE || h.id !== id || h.length !== loc.length || h.crc !== loc.crc)
      throw corruption(`${KIND}: page ${id}: record header changed`);
    const body = record.subarray(RECORD_HEADER_BYTES);
    if (crc32c(body) !== h.crc) throw corruption(`${KIND}: page ${id}: checksum mismatch`);
    return body;
  }

  /** The range as stored, without a checksum (PageStore.readRange: the AEAD tag covers it). */
  protected override async _readRange(id: number, offset: number, length: number): Promise<Uint8Array | undefined> {
    const into = new Uint8Array(length);
    return this._readRangeSync(id, offset, length, into, true) === 0 ? undefined : into;
  }

  protected override _readRangeSync(
    id: number,
    offset: number,
    length: number,
    into: Uint8Array,
    block: boolean,
  ): -1 | 0 | 1 {
    // Without `block`, not now (as memory): a loop of reads goes through readRange, so it awaits.
    if (!block) return -1;
    const loc = this.#index.get(id);
    if (loc === undefined) return 0;
    checkRangeInPage(KIND, id, offset, length, loc.length);
    if (length > 0) readExactly(this.#log, into.subarray(0, length), loc.at + offset, `page ${id}`);
    return 1;
  }

  protected async _readManifest(): Promise<Uint8Array | undefined> {
    return this.#manifest?.slice();
  }

  protected _listPages(): number[] {
    return [...this.#index.keys()].sort((a, b) => a - b);
  }

  protected _has(id: number): boolean {
    return this.#index.has(id);
  }

  protected async _commit(batch: CheckedBatch): Promise<void> {
    return this.#write(batch, false);
  }

  /**
   * Gives back the space of deleted pages: once at least `minDeadFraction` (default 0.5) of the
   * active log is dead, one commit writes its live pages into the other log and makes that one
   * active (one step: the live bytes are copied at once, `maxBytes` and `stepBytes` aside).
   * @throws as commit
   */
  async reclaim(options: ReclaimOptions = {}): Promise<ReclaimResult> {
    const min = options.minDeadFraction ?? 0.5;
    if (typeof min !== 'number' || !(min > 0 && min <= 1))
      throw new RangeError('"minDeadFraction" expected a number in (0, 1]');
    if (options.onProgress !== undefined && typeof options.onProgress !== 'function')
      throw new TypeError('"onProgress" expected a function');
    return this._serial(async () => {
      const bytesBefore = (await this._stats()).storedBytes;
      const dead = this.#end - this.#liveBytes;
      if (dead === 0 || dead < min * this.#end)
        return { segmentsRewritten: 0, bytesCopied: 0, bytesBefore, bytesAfter: bytesBefore };
      await this.#write({ pages: [], deletes: [], manifest: undefined }, true);
      const bytesAfter = (await this._stats()).storedBytes;
      const progress = { segmentsRewritten: 1, bytesCopied: this.#liveBytes, storedBytes: bytesAfter };
      options.onProgress?.(progress);
      return { segmentsRewritten: 1, bytesCopied: this.#liveBytes, bytesBefore, bytesAfter };
    });
  }

  /**
   * One commit: its records and its commit record appended to the active log in one write, then one
   * flush, the commit point; or (`rewrite`, or when dead bytes outweigh live ones) the live pages
   * and its own written into the other log, whose slot is then the commit point.
   */
  async #write(batch: CheckedBatch, force: boolean): Promise<void> {
    if (this.#failed !== undefined)
      throw new PqdbError('IO_ERROR', `${this.#what()}: an earlier commit failed midway; reopen the store`, {
        cause: this.#failed,
      });
    const added = batch.pages.reduce((n, p) => n + RECORD_HEADER_BYTES + p.bytes.length, 0);
    const dead = this.#end - this.#liveBytes;
    const rewrite = force || (dead > REWRITE_DEAD_BYTES && dead > this.#liveBytes + added);
    const from = this.#active;
    const to: 0 | 1 = rewrite ? ((1 - from) as 0 | 1) : from;
    const log = this.#logs[to];
    const start = rewrite ? 0 : this.#end;
    // The records and their places, made first: nothing changes until the commit is durable.
    const chunks: Uint8Array[] = [];
    const placed: [number, Located][] = [];
    let at = start;
    const put = (id: number, body: Uint8Array, crc: number) => {
      chunks.push(recordHeader(KIND_PAGE, id, body.length, crc), body);
      placed.push([id, { at: at + RECORD_HEADER_BYTES, length: body.length, crc }]);
      at += RECORD_HEADER_BYTES + body.length;
    };
    const gone = new Set(batch.deletes);
    if (rewrite) for (const [id, loc] of this.#index) if (!gone.has(id)) put(id, (await this._readPage(id))!, loc.crc);
    for (const p of batch.pages) put(p.id, p.bytes, crc32c(p.bytes));
    // A rewrite's log holds only live pages: what it deletes is simply not there.
    const deletes = rewrite ? [] : batch.deletes.filter((id) => this.#index.has(id));
    const number = this.#commit + 1;
    const record = encodeCommitRecord(number, start, batch.manifest, deletes, placed.length);
    chunks.push(record);
    const end = at + record.length;
    const commit: LogCommit = { commit: number, end, manifest: batch.manifest, deletes, pages: placed };
    try {
      if (rewrite) log.truncate(0);
      writeGathered(log, chunks, start, this.#gather);
      log.flush();
    } catch (e) {
      // Perhaps written in part or whole: cut back, or nobody can tell whether it committed.
      try {
        log.truncate(start);
        log.flush();
      } catch {
        if (!rewrite) this.#failed = e;
      }
      throw fsError(`${this.#what()}: commit`, e);
    }
    if (rewrite) {
      // The slot naming the other log is the commit point; the old log is emptied after it.
      try {
        this.#writeSlot(to, end, commit.commit, batch.manifest ?? this.#manifest, placed);
      } catch (e) {
        this.#failed = e; // the slot may or may not hold the commit now: only a reopen can tell
        throw fsError(`${this.#what()}: commit`, e);
      }
      this.#index.clear();
      this.#liveBytes = 0;
      this.#active = to;
      this.#apply(commit);
      try {
        this.#logs[from].truncate(0);
        this.#logs[from].flush();
      } catch {
        // the next open empties it
      }
      return;
    }
    this.#apply(commit);
    // Durable. A slot now and then keeps what an open reads of the log short; one that fails leaves
    // the newest slot and the log standing (the commit is in the log), and the next commit tries again.
    if (end - this.#slotAt >= SLOT_EVERY_BYTES) this.#trySlot();
  }

  /** Writes and flushes the slot of commit `commit` ending at `end` in log `log` into the slot file not holding the newest. */
  #writeSlot(
    log: 0 | 1,
    end: number,
    commit: number,
    manifest: Uint8Array | undefined,
    index: readonly (readonly [number, Located])[],
  ): void {
    const bytes = encodeSlot({ commit, log, committed: end, manifest }, index, index.length);
    const file: 0 | 1 = this.#slotFile === 0 ? 1 : 0;
    const slot = this.#slots[file];
    // No truncate: the slot's own length field and CRC end it, whatever older bytes follow.
    writeAll(slot, bytes, 0);
    slot.flush();
    this.#slotFile = file;
    this.#slotAt = end;
    this.#slotBytes = bytes.length;
  }

  /** A slot of the state as it stands, when the log has grown past the newest one; a failure is let be. */
  #trySlot(): void {
    if (this.#end === this.#slotAt) return;
    try {
      this.#writeSlot(this.#active, this.#end, this.#commit, this.#manifest, [...this.#index]);
    } catch {
      // The other slot file may be torn now: the newest slot still stands, and the log holds the rest.
    }
  }

  protected async _stats(): Promise<PageStoreStats> {
    let pageBytes = 0;
    for (const loc of this.#index.values()) pageBytes += loc.length;
    return {
      pageCount: this.#index.size,
      pageBytes,
      manifestBytes: this.#manifest?.length ?? 0,
      storedBytes: this.#end + this.#slotBytes,
    };
  }

  protected async _close(): Promise<void> {
    if (this.#failed === undefined) this.#trySlot(); // the next open then reads no log
    for (const f of [...this.#logs, ...this.#slots]) {
      try {
        f.close();
      } catch {
        // closing a handle twice or after a failure: nothing to keep
      }
    }
  }
}
