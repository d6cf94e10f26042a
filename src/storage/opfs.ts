// The OPFS page store (browsers, dedicated workers): a store's pages in the Origin Private File
// System, read and written through FileSystemSyncAccessHandle. Four files per store, whatever its
// size (Safari allows about 252 open handles per origin; a file per page or per table does not fit):
//
//   pqdb-<name>/log-0, log-1        append-only page logs in node-fs's record framing (records.ts):
//                                   one is active, the other empty or being rewritten
//   pqdb-<name>/slot-a, slot-b      commit slots, written in turn: "PQDBOPFS", format version,
//                                   commit number, the active log and its committed length, the
//                                   user manifest, the page index (where each live page's record
//                                   lies), a CRC-32C of all of it
//
// A commit appends its records to the active log past its committed length, flushes the log,
// writes the slot not holding the newest commit, and flushes that: the flush of the slot is the
// commit point. Opening takes the valid slot with the highest commit number, takes the page index
// it holds (no read of the log: each call on a sync access handle costs a fixed 0.1-0.3 ms), and
// cuts whatever lies past the committed length (a commit that never reached its slot). A torn slot fails its CRC and the other one,
// a commit older, stands. When dead records outweigh live ones (and pass 4 MiB) a commit writes
// the live pages and its own into the other log instead, and its slot makes that log the active
// one: reclaiming space is a commit like any other. Layout and crash cases: docs/storage.md.
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
  KIND,
  LOGS,
  REWRITE_DEAD_BYTES,
  SLOTS,
  encodeSlot,
  readExactly,
  readSlot,
  writeAll,
  writeGathered,
  type Located,
  type Slot,
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
  const opened: SyncFile[] = [];
  try {
    for (const f of [...LOGS, ...SLOTS]) {
      try {
        opened.push(await dir.open(f));
      } catch (e) {
        throw fsError(`opfs page store ${JSON.stringify(label)}, ${f}`, e);
      }
    }
    return new SyncPageStore(opened as [SyncFile, SyncFile, SyncFile, SyncFile], label);
  } catch (e) {
    for (const h of opened) h.close();
    throw e;
  }
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
  #slot: Slot | undefined; // the newest commit's
  #slotFile: 0 | 1 = 1; // the slot file holding it (the next commit writes the other)
  #liveBytes = 0; // record bytes (headers included) of the live pages in the active log
  #failed: unknown; // a commit that failed past its log write: state on disk unknown until reopen

  constructor(files: [SyncFile, SyncFile, SyncFile, SyncFile], label: string) {
    super();
    this.#label = label;
    this.#logs = [files[0], files[1]];
    this.#slots = [files[2], files[3]];
    this.recovery = this.#recover();
  }

  get #log(): SyncFile {
    return this.#logs[this.#slot?.log ?? 0];
  }

  get #committed(): number {
    return this.#slot?.committed ?? 0;
  }

  #what(): string {
    return `opfs page store ${JSON.stringify(this.#label)}`;
  }

  /** Takes the newest valid slot and the page index it holds, cuts what no slot covers. */
  #recover(): RecoveryReport {
    const slots = SLOTS.map((n, i) => readSlot(this.#slots[i], n));
    const pick = slots[0] !== undefined && (slots[1] === undefined || slots[0].commit > slots[1].commit) ? 0 : 1;
    this.#slot = slots[pick];
    this.#slotFile = this.#slot === undefined ? 1 : pick;
    const actions: string[] = [];
    if (this.#slot === undefined && SLOTS.some((_, i) => this.#slots[i].getSize() > 0))
      throw corruption(`${KIND}: ${this.#what()}: neither commit slot is readable`);
    const log = this.#log;
    const size = log.getSize();
    if (size < this.#committed)
      throw corruption(
        `${KIND}: ${this.#what()}: ${LOGS[this.#slot!.log]} holds ${size} bytes, its commit names ${this.#committed}`,
      );
    // The index the slot holds: each entry a record that lies whole inside the committed length.
    const slot = slots[pick];
    for (let i = 0; slot !== undefined && i < slot.count; i++) {
      const e = i * ENTRY_BYTES;
      const id = slot.entries.getUint32(e, true);
      const at = slot.entries.getFloat64(e + 4, true);
      const length = slot.entries.getUint32(e + 12, true);
      if (!Number.isSafeInteger(at) || at < RECORD_HEADER_BYTES || at + length > this.#committed || this.#index.has(id))
        throw corruption(`${KIND}: ${this.#what()}: ${SLOTS[pick]} indexes page ${id} impossibly`);
      this.#add(id, { at, length, crc: slot.entries.getUint32(e + 16, true) });
    }
    let truncatedBytes = 0;
    if (size > this.#committed) {
      truncatedBytes = size - this.#committed;
      log.truncate(this.#committed);
      actions.push(`cut ${truncatedBytes} bytes no commit covers from ${LOGS[this.#slot?.log ?? 0]}`);
    }
    const other = this.#logs[1 - (this.#slot?.log ?? 0)];
    if (other.getSize() > 0) {
      actions.push(`emptied ${LOGS[1 - (this.#slot?.log ?? 0)]}, a rewrite no commit took`);
      other.truncate(0);
    }
    if (actions.length > 0) {
      log.flush();
      other.flush();
    }
    return { clean: actions.length === 0, truncatedBytes, actions };
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
    const h = parseRecordHeader(record, `page ${id} @${loc.at - RECORD_HEADER_BYTES}`, KIND);
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
    return this.#slot?.manifest?.slice();
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
      const dead = this.#committed - this.#liveBytes;
      if (dead === 0 || dead < min * this.#committed)
        return { segmentsRewritten: 0, bytesCopied: 0, bytesBefore, bytesAfter: bytesBefore };
      await this.#write({ pages: [], deletes: [], manifest: undefined }, true);
      const bytesAfter = (await this._stats()).storedBytes;
      const progress = { segmentsRewritten: 1, bytesCopied: this.#liveBytes, storedBytes: bytesAfter };
      options.onProgress?.(progress);
      return { segmentsRewritten: 1, bytesCopied: this.#liveBytes, bytesBefore, bytesAfter };
    });
  }

  /** One commit: appended to the active log, or (`rewrite`, or when dead bytes outweigh live ones) into the other. */
  async #write(batch: CheckedBatch, force: boolean): Promise<void> {
    if (this.#failed !== undefined)
      throw new PqdbError('IO_ERROR', `${this.#what()}: an earlier commit failed midway; reopen the store`, {
        cause: this.#failed,
      });
    const added = batch.pages.reduce((n, p) => n + RECORD_HEADER_BYTES + p.bytes.length, 0);
    const dead = this.#committed - this.#liveBytes;
    const rewrite = force || (dead > REWRITE_DEAD_BYTES && dead > this.#liveBytes + added);
    const from = this.#slot?.log ?? 0;
    const to: 0 | 1 = rewrite ? ((1 - from) as 0 | 1) : from;
    const log = this.#logs[to];
    const start = rewrite ? 0 : this.#committed;
    // The records and their places, made first: nothing changes until the slot is durable.
    const chunks: Uint8Array[] = [];
    const placed: [number, Located][] = [];
    let at = start;
    const put = (id: number, body: Uint8Array, crc: number) => {
      chunks.push(recordHeader(KIND_PAGE, id, body.length, crc), body);
      placed.push([id, { at: at + RECORD_HEADER_BYTES, length: body.length, crc }]);
      at += RECORD_HEADER_BYTES + body.length;
    };
    const gone = new Set(batch.deletes);
    // A delete is the page's entry leaving the slot's index: nothing goes to the log for it.
    if (rewrite) for (const [id, loc] of this.#index) if (!gone.has(id)) put(id, (await this._readPage(id))!, loc.crc);
    for (const p of batch.pages) put(p.id, p.bytes, crc32c(p.bytes));
    const next: Omit<Slot, 'bytes'> = {
      commit: (this.#slot?.commit ?? 0) + 1,
      log: to,
      committed: at,
      manifest: batch.manifest ?? this.#slot?.manifest,
    };
    // The index as it stands after this commit: the live pages kept, then the ones it places.
    const placedIds = new Set(placed.map(([id]) => id));
    const kept = rewrite ? [] : [...this.#index].filter(([id]) => !gone.has(id) && !placedIds.has(id));
    const slotBytes = encodeSlot(next, [...kept, ...placed], kept.length + placed.length);
    const slotFile: 0 | 1 = this.#slotFile === 0 ? 1 : 0;
    try {
      // A commit that appends nothing (deletes, a manifest) leaves the log as it is: no write, no flush.
      if (rewrite) log.truncate(0);
      if (chunks.length > 0) {
        writeGathered(log, chunks, start);
        log.flush();
      }
    } catch (e) {
      try {
        log.truncate(start); // nothing names these bytes: give them back
      } catch {
        // the next open cuts them
      }
      throw fsError(`${this.#what()}: commit`, e);
    }
    try {
      const slot = this.#slots[slotFile];
      // No truncate: the slot's own length field and CRC end it, whatever older bytes follow.
      writeAll(slot, slotBytes, 0);
      slot.flush();
    } catch (e) {
      // The slot may or may not hold the commit now: only a reopen can tell.
      this.#failed = e;
      throw fsError(`${this.#what()}: commit`, e);
    }
    // Durable: install.
    this.#slot = { ...next, bytes: slotBytes.length };
    this.#slotFile = slotFile;
    if (rewrite) {
      this.#index.clear();
      this.#liveBytes = 0;
    } else for (const id of batch.deletes) this.#drop(id);
    for (const [id, loc] of placed) this.#add(id, loc);
    if (rewrite) {
      try {
        this.#logs[from].truncate(0);
        this.#logs[from].flush();
      } catch {
        // the next open empties it
      }
    }
  }

  protected async _stats(): Promise<PageStoreStats> {
    let pageBytes = 0;
    for (const loc of this.#index.values()) pageBytes += loc.length;
    return {
      pageCount: this.#index.size,
      pageBytes,
      manifestBytes: this.#slot?.manifest?.length ?? 0,
      storedBytes: this.#committed + (this.#slot?.bytes ?? 0),
    };
  }

  protected async _close(): Promise<void> {
    for (const f of [...this.#logs, ...this.#slots]) {
      try {
        f.close();
      } catch {
        // closing a handle twice or after a failure: nothing to keep
      }
    }
  }
}
