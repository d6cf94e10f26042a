// IndexedDB PageStore (browsers; Node with an IndexedDB implementation such as fake-indexeddb),
// through `idb`. DESIGN.md §6; the database layout is in docs/storage.md.
//
// Database `name`, version 1, three object stores with out-of-line keys:
//   pages  id (number) → Uint8Array            the page bytes
//   index  id (number) → { length, crc }       CRC-32C of the page, checked on every read
//   meta   'manifest'  → { bytes, crc }        the manifest
//          'format'    → 1
// A commit is one readwrite transaction over all three with `{ durability: 'strict' }` (the
// browser flushes to disk before `complete`); requests are issued back to back and nothing but
// the transaction is awaited, so it cannot auto-commit half-way. Pages are written with `add`, so
// a page that exists aborts the whole transaction rather than being overwritten.
//
// Single writer: a Web Lock `pqdb-page-store:<name>` requested with `ifAvailable` and held for the
// store's life, so a second tab, worker or store in the same page gets LOCKED. Under Node (whose
// `navigator.locks`, from Node 22 on, are its own process's) or where it is missing, an in-process
// registry stands in: it cannot see other processes. Caveat: the page index is read once at open and kept in memory; that is sound only
// because the lock keeps every other writer out.

import { openDB, deleteDB, type IDBPDatabase } from 'idb';
import { PqdbError } from '../errors';
import { type CheckedBatch, type PageStore, type PageStoreStats, type PageStoreSupports } from './page-store';
import { BasePageStore, checkRangeInPage, corruption, mediumError, rangeOf } from './page-store-base';
import { crc32c, crc32cAsync } from '../_crc32c';

/**
 * What the IndexedDB page store declares: readRange reads the whole value and copies the range (no
 * partialRanges); readRangeSync always answers -1 (not now); a deleted page is freed at once.
 */
const IDB_SUPPORTS: PageStoreSupports = Object.freeze({
  readPages: true,
  readRange: true,
  partialRanges: false,
  readRangeSync: true,
  blockingReads: false,
  reclaim: false,
  follow: false,
});

export const DB_VERSION = 1;
export const FORMAT_VERSION = 1;
const PAGES = 'pages';
const INDEX = 'index';
const META = 'meta';
/** Per-page bytes `stats().storedBytes` charges for the index entry and key (an estimate). */
const RECORD_OVERHEAD_BYTES = 24;

interface IndexEntry {
  length: number;
  crc: number;
}

/** Options of `openIndexedDbPageStore`. */
export interface IndexedDbPageStoreOptions {
  /** The Web Locks manager (default `navigator.locks`; an in-process registry when absent). */
  locks?: LockManager | null;
}

/** The Web Lock name guarding database `name`. */
export const lockName = (name: string): string => `pqdb-page-store:${name}`;

/**
 * Opens (creating when missing) the store in IndexedDB database `name`.
 * @throws PqdbError LOCKED when another store (tab, worker, this page) holds it, FORMAT_VERSION
 * for an unknown layout, IO_ERROR when IndexedDB fails
 * @example
 * const store = await openIndexedDbPageStore('my-app-pqdb');
 */
export async function openIndexedDbPageStore(
  name: string,
  options: IndexedDbPageStoreOptions = {},
): Promise<PageStore> {
  if (typeof name !== 'string' || name.length === 0)
    throw new TypeError(`"name" expected a non-empty string, got ${typeof name}`);
  const locks = lockManager(options);
  const release = await acquire(lockName(name), locks);
  if (release === undefined) throw lockedError(name, locks);
  let db: IDBPDatabase | undefined;
  try {
    let store: IndexedDbPageStore | undefined;
    db = await openDB(name, DB_VERSION, {
      upgrade(d, oldVersion, _newVersion, tx) {
        if (oldVersion === 0) {
          d.createObjectStore(PAGES);
          d.createObjectStore(INDEX);
          d.createObjectStore(META);
          void tx.objectStore(META).put(FORMAT_VERSION, 'format');
        }
      },
      terminated() {
        store?.terminate();
      },
    });
    const tx = db.transaction([INDEX, META], 'readonly');
    const [keys, entries, format] = await Promise.all([
      tx.objectStore(INDEX).getAllKeys(),
      tx.objectStore(INDEX).getAll(),
      tx.objectStore(META).get('format'),
      tx.done,
    ]);
    if (format !== FORMAT_VERSION)
      throw new PqdbError('FORMAT_VERSION', `indexeddb page store "${name}" has format ${String(format)}`);
    const index = new Map<number, IndexEntry>();
    keys.forEach((k, i) => index.set(k as number, entries[i] as IndexEntry));
    store = new IndexedDbPageStore(name, db, index, release);
    return store;
  } catch (e) {
    db?.close();
    await release();
    throw mediumError(`indexeddb page store "${name}": open`, e);
  }
}

/**
 * Deletes the IndexedDB database `name` if it holds a pqdb page store (the layout this adapter
 * creates), holding the store's Web Lock meanwhile so no tab or worker has it open. Connections
 * opened outside pqdb delay the deletion until they close.
 * @throws PqdbError NOT_FOUND (no such database, or not a pqdb one), LOCKED (a tab or worker holds
 * the store), IO_ERROR
 * @example await deleteIndexedDbStore('my-app-pqdb');
 */
export async function deleteIndexedDbStore(name: string, options: IndexedDbPageStoreOptions = {}): Promise<void> {
  if (typeof name !== 'string' || name.length === 0)
    throw new TypeError(`"location" expected a non-empty string, got ${typeof name}`);
  const locks = lockManager(options);
  const release = await acquire(lockName(name), locks);
  if (release === undefined) throw lockedError(name, locks);
  const notFound = (why: string) =>
    new PqdbError('NOT_FOUND', `no pqdb store in IndexedDB database "${name}": ${why}; nothing was deleted`);
  try {
    const factory = (globalThis as { indexedDB?: IDBFactory }).indexedDB;
    if (factory === undefined) throw new PqdbError('IO_ERROR', 'indexeddb: this runtime has no IndexedDB');
    const listed = await factory.databases().catch(() => undefined);
    if (listed !== undefined && !listed.some((d) => d.name === name)) throw notFound('no such database');
    let ours = false;
    let empty = false;
    try {
      // No version: an existing database opens as it is, without an upgrade.
      const db = await openDB(name);
      try {
        const stores = [...db.objectStoreNames].sort().join();
        empty = stores === '';
        ours = stores === [INDEX, META, PAGES].sort().join() && (await db.get(META, 'format')) === FORMAT_VERSION;
      } finally {
        db.close();
      }
      // Without databases() the open above made an empty database where there was none: it goes.
      if (empty) await deleteDB(name);
    } catch (e) {
      throw mediumError(`indexeddb page store "${name}": delete`, e);
    }
    if (empty) throw notFound('no such database');
    if (!ours) throw notFound('its object stores are not those of a pqdb page store');
    await deleteDB(name).catch((e) => {
      throw mediumError(`indexeddb page store "${name}": delete`, e);
    });
  } finally {
    await release();
  }
}

/**
 * The Web Locks to hold the store with: `options.locks`, else a browser's `navigator.locks`. Node
 * has a `navigator.locks` too (from 22 on), but its locks are its own process's, not a browser's
 * tabs': under Node the in-process registry stands in, as before Node had them.
 */
function lockManager(options: IndexedDbPageStoreOptions): LockManager | undefined {
  if (options.locks !== undefined) return options.locks ?? undefined;
  const g = globalThis as { navigator?: { locks?: LockManager }; process?: { versions?: { node?: string } } };
  if (g.process?.versions?.node !== undefined) return undefined;
  return g.navigator?.locks ?? undefined;
}

/** LOCKED, naming who holds the store: another tab or worker (Web Locks), or another store here. */
function lockedError(name: string, locks: LockManager | undefined): PqdbError {
  const who =
    locks !== undefined
      ? 'another tab or worker of this origin (or another store in this page) has it open'
      : 'another store in this process has it open';
  return new PqdbError('LOCKED', `indexeddb page store "${name}" is held by another writer: ${who}`);
}

const localLocks = new Set<string>();

/**
 * Takes the exclusive lock if free; returns its release function, or undefined when held. The
 * release resolves once the lock manager has let the lock go (Firefox does so a task after the
 * holder's promise settles: a reopen right after close() would otherwise find it held).
 */
function acquire(name: string, locks: LockManager | undefined): Promise<(() => Promise<void>) | undefined> {
  if (locks === undefined) {
    if (localLocks.has(name)) return Promise.resolve(undefined);
    localLocks.add(name);
    return Promise.resolve(async () => void localLocks.delete(name));
  }
  return new Promise((resolve, reject) => {
    let letGo!: () => void;
    const held = new Promise<void>((r) => (letGo = r));
    const granted = locks.request(name, { ifAvailable: true, mode: 'exclusive' }, async (lock) => {
      if (lock === null) return resolve(undefined);
      resolve(() => {
        letGo();
        return granted.then(
          () => undefined,
          () => undefined,
        );
      });
      await held; // the lock is held until this promise settles
    });
    granted.catch(reject);
  });
}

class IndexedDbPageStore extends BasePageStore {
  readonly kind = 'indexeddb';
  /** A range costs the whole value (IndexedDB cannot read part of one): no partialRanges. */
  readonly supports: PageStoreSupports = IDB_SUPPORTS;
  readonly #name: string;
  readonly #db: IDBPDatabase;
  readonly #index: Map<number, IndexEntry>;
  readonly #release: () => Promise<void>;
  #terminated = false;

  constructor(name: string, db: IDBPDatabase, index: Map<number, IndexEntry>, release: () => Promise<void>) {
    super();
    this.#name = name;
    this.#db = db;
    this.#index = index;
    this.#release = release;
  }

  /** The browser closed the connection (database deleted, storage cleared). */
  terminate(): void {
    this.#terminated = true;
  }

  #live(): void {
    if (this.#terminated)
      throw new PqdbError('IO_ERROR', `indexeddb page store "${this.#name}": the browser closed the database`);
  }

  protected async _readPage(id: number): Promise<Uint8Array | undefined> {
    this.#live();
    const entry = this.#index.get(id);
    if (entry === undefined) return undefined;
    let value: unknown;
    try {
      value = await this.#db.get(PAGES, id);
    } catch (e) {
      throw mediumError(`indexeddb: read page ${id}`, e);
    }
    return this.#checked(id, entry, value);
  }

  /**
   * The value read for page `id` (indexed as `entry`) once its length and CRC-32C match; undefined
   * when the page was deleted meanwhile. A fresh structured clone: the caller owns it.
   */
  async #checked(id: number, entry: IndexEntry, value: unknown): Promise<Uint8Array | undefined> {
    if (value === undefined && !this.#index.has(id)) return undefined;
    if (!(value instanceof Uint8Array) || value.length !== entry.length || (await crc32cAsync(value)) !== entry.crc) {
      throw corruption(`indexeddb "${this.#name}": page ${id}: checksum mismatch`);
    }
    return value;
  }

  /** Pages read in one transaction (their gets in flight together), each checked as readPage does. */
  protected override async _readPages(ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
    this.#live();
    let values: unknown[];
    try {
      const tx = this.#db.transaction(PAGES, 'readonly');
      values = await Promise.all(ids.map((id) => (this.#index.has(id) ? tx.store.get(id) : undefined)));
      await tx.done;
    } catch (e) {
      throw mediumError(`indexeddb: read ${ids.length} pages`, e);
    }
    const out: (Uint8Array | undefined)[] = [];
    for (let i = 0; i < ids.length; i++) {
      const entry = this.#index.get(ids[i]);
      out.push(entry === undefined ? undefined : await this.#checked(ids[i], entry, values[i]));
    }
    return out;
  }

  /**
   * IndexedDB cannot read part of a value: a get structured-clones the whole stored Uint8Array. So
   * a range is the whole page, read and checked (length, CRC-32C) as readPage does, then copied.
   * Implemented rather than left to readRangeOf's fallback so the contract is the same method on
   * every adapter, and a range past the page's end is refused from the in-memory index before
   * anything is read. Reading part of a page for real would need pages stored as Blobs (a new
   * database layout, version 2).
   */
  protected override async _readRange(id: number, offset: number, length: number): Promise<Uint8Array | undefined> {
    const entry = this.#index.get(id);
    if (entry === undefined) return undefined;
    checkRangeInPage(this.kind, id, offset, length, entry.length);
    const page = await this._readPage(id);
    return page === undefined ? undefined : rangeOf(this.kind, id, page, offset, length);
  }

  protected async _readManifest(): Promise<Uint8Array | undefined> {
    this.#live();
    let value: { bytes?: unknown; crc?: unknown } | undefined;
    try {
      value = await this.#db.get(META, 'manifest');
    } catch (e) {
      throw mediumError('indexeddb: read manifest', e);
    }
    if (value === undefined) return undefined;
    if (!(value.bytes instanceof Uint8Array) || crc32c(value.bytes) !== value.crc) {
      throw corruption(`indexeddb "${this.#name}": manifest: checksum mismatch`);
    }
    return value.bytes;
  }

  protected _listPages(): number[] {
    return [...this.#index.keys()].sort((a, b) => a - b);
  }

  protected _has(id: number): boolean {
    return this.#index.has(id);
  }

  protected async _commit(batch: CheckedBatch): Promise<void> {
    this.#live();
    // Checksums first, in steps (nothing but IDB may be awaited once the transaction is open).
    const added: { id: number; entry: { length: number; crc: number } }[] = [];
    for (const p of batch.pages)
      added.push({ id: p.id, entry: { length: p.bytes.length, crc: await crc32cAsync(p.bytes) } });
    let tx;
    const requests: Promise<unknown>[] = [];
    try {
      tx = this.#db.transaction([PAGES, INDEX, META], 'readwrite', { durability: 'strict' });
      requests.push(tx.done);
      const pages = tx.objectStore(PAGES);
      const index = tx.objectStore(INDEX);
      // Requests go out back to back; only the transaction is awaited (no other await inside it).
      for (const id of batch.deletes) requests.push(pages.delete(id), index.delete(id));
      batch.pages.forEach((p, i) => requests.push(pages.add(p.bytes, p.id), index.add(added[i].entry, p.id)));
      if (batch.manifest !== undefined) {
        requests.push(tx.objectStore(META).put({ bytes: batch.manifest, crc: crc32c(batch.manifest) }, 'manifest'));
      }
      await Promise.all(requests);
    } catch (e) {
      for (const r of requests) r.catch(() => undefined); // settled by the abort below; not unhandled
      // Nothing of a failed commit may land: abort (a no-op error if it already aborted itself).
      try {
        tx?.abort();
      } catch {
        // already finished
      }
      // A quota failure surfaces as an AbortError on the requests with the cause on tx.error.
      const cause = tx?.error ?? e;
      throw mediumError(`indexeddb "${this.#name}": commit`, cause);
    }
    for (const id of batch.deletes) this.#index.delete(id);
    for (const a of added) this.#index.set(a.id, a.entry);
  }

  protected async _stats(): Promise<PageStoreStats> {
    let pageBytes = 0;
    for (const e of this.#index.values()) pageBytes += e.length;
    const manifest = await this._readManifest();
    const manifestBytes = manifest?.length ?? 0;
    return {
      pageCount: this.#index.size,
      pageBytes,
      manifestBytes,
      storedBytes: pageBytes + this.#index.size * RECORD_OVERHEAD_BYTES + manifestBytes,
    };
  }

  protected async _close(): Promise<void> {
    try {
      this.#db.close();
    } finally {
      await this.#release();
    }
  }
}
