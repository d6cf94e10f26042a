// Memory PageStore: the PageStore contract (page-store.ts) held in a `MemoryMedium`, for tests and
// ephemeral stores. The medium outlives the store, so close + reopen behaves like a disk, and it
// carries the writer lock, so a second opener of the same medium gets LOCKED.
//
// Every page is kept with its CRC-32C and checked on read, exactly like the persistent adapters,
// so the fault-injection hook `flipByte` exercises the same CORRUPTION path; a ranged read
// (`readRange`) is a copy of part of a page and, like node-fs's, checks no checksum. Nothing here is
// durable: the medium dies with the process.

import { PqdbError } from '../errors';
import { copyBytes } from '../_args';
import { type CheckedBatch, type PageStore, type PageStoreStats, type PageStoreSupports } from './page-store';
import { BasePageStore, checkPageId, checkRangeInPage, corruption, rangeOf } from './page-store-base';
import { crc32c, crc32cAsync } from '../_crc32c';

/** What the memory page store declares: every read, ranges copied out of memory; no dead space, no writer to follow. */
const MEMORY_SUPPORTS: PageStoreSupports = Object.freeze({
  readPages: true,
  readRange: true,
  partialRanges: true,
  readRangeSync: true,
  blockingReads: true,
  reclaim: false,
  follow: false,
});

/** Per-page bytes the estimate in `stats().storedBytes` charges for framing (id, length, CRC). */
const RECORD_OVERHEAD_BYTES = 12;

interface Stored {
  readonly bytes: Uint8Array;
  readonly crc: number;
}

/**
 * Where a memory store keeps its pages. Pass the same medium to `openMemoryPageStore` again to
 * reopen the store with its contents.
 */
export class MemoryMedium {
  /** @internal */ readonly pages = new Map<number, Stored>();
  /** @internal */ manifest: Stored | undefined;
  /** @internal */ locked = false;
  /** @internal */ readonly quotaBytes: number;

  /** @param quotaBytes commits that would make `storedBytes` exceed this fail with QUOTA_EXCEEDED */
  constructor(options: { quotaBytes?: number } = {}) {
    this.quotaBytes = options.quotaBytes ?? Infinity;
  }

  /**
   * Fault injection for tests: flips bit 0 of byte `offset` of page `id` as stored, as a failing
   * medium would. The next read of the page rejects with CORRUPTION.
   * @throws RangeError when the page does not exist or is shorter than `offset + 1`
   */
  flipByte(id: number, offset = 0): void {
    const p = this.pages.get(checkPageId('id', id));
    if (p === undefined || offset >= p.bytes.length) throw new RangeError(`"id" page ${id} has no byte ${offset}`);
    p.bytes[offset] ^= 1;
  }
}

/** Options of `openMemoryPageStore`. */
export interface MemoryPageStoreOptions {
  /** The medium to open; a new empty one when omitted. */
  medium?: MemoryMedium;
}

/**
 * Opens a store on a memory medium.
 * @throws PqdbError LOCKED when another open store holds the medium
 * @example
 * const medium = new MemoryMedium();
 * const store = await openMemoryPageStore({ medium });
 */
export async function openMemoryPageStore(options: MemoryPageStoreOptions = {}): Promise<PageStore> {
  const medium = options.medium ?? new MemoryMedium();
  if (!(medium instanceof MemoryMedium)) throw new TypeError('"medium" expected MemoryMedium');
  if (medium.locked) throw new PqdbError('LOCKED', 'memory page store is already open');
  medium.locked = true;
  return new MemoryPageStore(medium);
}

class MemoryPageStore extends BasePageStore {
  readonly kind = 'memory';
  readonly supports: PageStoreSupports = MEMORY_SUPPORTS;
  readonly #m: MemoryMedium;

  constructor(medium: MemoryMedium) {
    super();
    this.#m = medium;
  }

  protected async _readPage(id: number): Promise<Uint8Array | undefined> {
    const p = this.#m.pages.get(id);
    if (p === undefined) return undefined;
    if ((await crc32cAsync(p.bytes)) !== p.crc) throw corruption(`memory page ${id}: checksum mismatch`);
    return copyBytes(p.bytes);
  }

  /**
   * A copy of the range as held, without a checksum (see PageStore.readRange: the CRC-32C covers
   * the whole page; the sealed record's AEAD tag covers the range). `flipByte` inside the range
   * therefore comes back as data here, and as AUTH_FAILED from the engine.
   */
  protected override async _readRange(id: number, offset: number, length: number): Promise<Uint8Array | undefined> {
    const p = this.#m.pages.get(id);
    if (p === undefined) return undefined;
    return rangeOf(this.kind, id, p.bytes, offset, length);
  }

  /** readRange's synchronous form, with `block` (a copy out of memory); else not now. */
  protected override _readRangeSync(
    id: number,
    offset: number,
    length: number,
    into: Uint8Array,
    block: boolean,
  ): -1 | 0 | 1 {
    if (!block) return -1;
    const p = this.#m.pages.get(id);
    if (p === undefined) return 0;
    checkRangeInPage(this.kind, id, offset, length, p.bytes.length);
    into.set(p.bytes.subarray(offset, offset + length));
    return 1;
  }

  protected async _readManifest(): Promise<Uint8Array | undefined> {
    const m = this.#m.manifest;
    if (m === undefined) return undefined;
    if (crc32c(m.bytes) !== m.crc) throw corruption('memory manifest: checksum mismatch');
    return copyBytes(m.bytes);
  }

  protected _listPages(): number[] {
    return [...this.#m.pages.keys()].sort((a, b) => a - b);
  }

  protected _has(id: number): boolean {
    return this.#m.pages.has(id);
  }

  protected async _commit(batch: CheckedBatch): Promise<void> {
    const m = this.#m;
    let stored = this.#storedBytes();
    for (const id of batch.deletes) stored -= m.pages.get(id)!.bytes.length + RECORD_OVERHEAD_BYTES;
    for (const p of batch.pages) stored += p.bytes.length + RECORD_OVERHEAD_BYTES;
    if (batch.manifest !== undefined) stored += batch.manifest.length - (m.manifest?.bytes.length ?? 0);
    if (stored > m.quotaBytes) {
      throw new PqdbError(
        'QUOTA_EXCEEDED',
        `memory page store: commit needs ${stored} bytes, quota is ${m.quotaBytes}`,
      );
    }
    // Synchronous from here on: a commit is applied entirely or not at all.
    for (const id of batch.deletes) m.pages.delete(id);
    // The medium keeps its own copies (a batch may hand its buffers over: `transfer`), so what a
    // test does to the medium never reaches a caller's buffers, and the other way round.
    for (const p of batch.pages) m.pages.set(p.id, { bytes: copyBytes(p.bytes), crc: crc32c(p.bytes) });
    if (batch.manifest !== undefined) m.manifest = { bytes: copyBytes(batch.manifest), crc: crc32c(batch.manifest) };
  }

  protected async _stats(): Promise<PageStoreStats> {
    let pageBytes = 0;
    for (const p of this.#m.pages.values()) pageBytes += p.bytes.length;
    const manifestBytes = this.#m.manifest?.bytes.length ?? 0;
    return { pageCount: this.#m.pages.size, pageBytes, manifestBytes, storedBytes: this.#storedBytes() };
  }

  #storedBytes(): number {
    let n = this.#m.manifest?.bytes.length ?? 0;
    for (const p of this.#m.pages.values()) n += p.bytes.length + RECORD_OVERHEAD_BYTES;
    return n;
  }

  protected async _close(): Promise<void> {
    this.#m.locked = false;
  }
}
