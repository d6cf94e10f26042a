// Store locations for the engine suites in Node, the one place that makes, reopens and disposes a
// store: memory (a MemoryMedium), node-fs (a temporary directory) and IndexedDB over fake-indexeddb
// (a database name). `STORE_FIXTURES` lists all three for `describe.each`; a test about one adapter
// (files edited in a node-fs directory, a child process writing one) takes that adapter's fixture
// on its own. `postgresStoreFixture` (a store name in a throwaway PostgreSQL cluster, see
// support/postgres.ts) is added by the suites that start a cluster. The Chromium page (browser-tests/page/store.ts) runs the shared cases on real
// IndexedDB with its own factory of the same `StoreFixture` shape.
//
// Every fixture keeps the stores and page stores opened through it and closes them in `dispose()`
// before it removes the location, so a failed test leaves no lock held and no database blocked.
import 'fake-indexeddb/auto';
import { afterEach } from 'vitest';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deleteDB, openDB } from 'idb';
import { openStore, openMemoryPageStore, openNodeFsPageStore } from '../../src/node';
import type { Store, StoreOptions } from '../../src/engine/store';
import type { PageStore } from '../../src/storage/page-store';
import { MemoryMedium } from '../../src/storage/memory';
import { RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES } from '../../src/storage/node-fs';
import { openIndexedDbPageStore } from '../../src/storage/indexeddb';
import { openPostgresPageStore } from '../../src/storage/postgres';
import { freshStoreName, type PostgresCluster } from './postgres';
import type { StoreFixture } from '../cases/_store';
import type { RawMedium } from '../cases/tamper';
import { indexedDbRaw } from '../cases/_idb-raw';
import { crc32c } from '../../src/_crc32c';

/** A store location with the hooks the Node suites need besides the shared ones. */
export interface NodeStoreFixture extends StoreFixture {
  /**
   * Opens the store at this location; with `wrap`, on `wrap(page store)` (a fault-injecting
   * wrapper). With `readOnly`, node-fs opens its page store read-only. When opening fails, the page
   * store is closed again, so the location is free for the next open.
   */
  open(options: StoreOptions, wrap?: (pages: PageStore) => PageStore): Promise<Store>;
  /** Opens the location's page store for writing (no store open on it), to change stored pages. */
  writablePages(): Promise<PageStore>;
  /**
   * Flips bit 0 of byte `offset` of page `id` as the medium stores it, below the page checksum (the
   * next read of the page is CORRUPTION). Called while nothing is open on the location.
   */
  flipStoredByte(id: number, offset: number): Promise<void>;
  /** Every stored page (id → its bytes, ascending), as the medium holds them now: a store may be open. */
  storedPages(): Promise<Map<number, Uint8Array>>;
}

export interface MemoryStoreFixture extends NodeStoreFixture {
  readonly medium: MemoryMedium;
  /** The medium's pages and manifest, edited directly (the tamper cases). */
  readonly raw: RawMedium;
}

export interface NodeFsStoreFixture extends NodeStoreFixture {
  /** The store's directory (for the CLI, child processes and edits of its files). */
  readonly dir: string;
  /** A new location holding a copy of this directory. Called while no writer is open on it. */
  copy(): Promise<NodeFsStoreFixture>;
}

export interface IndexedDbStoreFixture extends NodeStoreFixture {
  /** The IndexedDB database name. */
  readonly name: string;
  /** The database's object stores, edited directly (the tamper cases). */
  readonly raw: RawMedium;
}

/** The members every adapter's fixture shares: what is opened through them is tracked, `dispose` closes it all. */
type Tracked = Pick<NodeStoreFixture, 'open' | 'pages' | 'writablePages' | 'dispose'>;

/**
 * Builds a fixture from the adapter's `openPages` (its page store, writable or for reading), an
 * optional `openNamed` (how `openStore` opens the location by name), `remove` and the rest.
 */
function tracked<F extends NodeStoreFixture>(
  openPages: (writable: boolean) => Promise<PageStore>,
  openNamed: ((options: StoreOptions) => Promise<Store>) | undefined,
  remove: () => Promise<void>,
  rest: Omit<F, keyof Tracked>,
): F {
  const stores: Store[] = [];
  const pageStores: PageStore[] = [];
  const pages = async (writable: boolean): Promise<PageStore> => {
    const p = await openPages(writable);
    pageStores.push(p);
    return p;
  };
  return {
    ...rest,
    async open(options, wrap) {
      let store: Store;
      if (wrap === undefined && openNamed !== undefined && options.readOnly !== true) store = await openNamed(options);
      else {
        const inner = await openPages(options.readOnly !== true);
        try {
          store = await openStore({ ...options, storage: wrap === undefined ? inner : wrap(inner) });
        } catch (e) {
          await inner.close(); // a PageStore passed in stays the caller's to close
          throw e;
        }
      }
      stores.push(store);
      return store;
    },
    pages: () => pages(false),
    writablePages: () => pages(true),
    async dispose() {
      for (const s of stores.splice(0)) await s.close().catch(() => undefined);
      for (const p of pageStores.splice(0)) await p.close().catch(() => undefined);
      await remove();
    },
  } as F;
}

/** A fresh memory location: a MemoryMedium (the memory page store has no read-only mode). */
export async function memoryStoreFixture(): Promise<MemoryStoreFixture> {
  const medium = new MemoryMedium();
  return tracked<MemoryStoreFixture>(
    () => openMemoryPageStore({ medium }),
    undefined,
    async () => undefined,
    {
      medium,
      raw: {
        pages: async () => new Map([...medium.pages].map(([id, p]) => [id, p.bytes.slice()])),
        manifest: async () => medium.manifest?.bytes.slice(),
        setPage: async (id, bytes) =>
          void (bytes === undefined
            ? medium.pages.delete(id)
            : medium.pages.set(id, { bytes: bytes.slice(), crc: crc32c(bytes) })),
        setManifest: async (bytes) => void (medium.manifest = { bytes: bytes.slice(), crc: crc32c(bytes) }),
      },
      flipStoredByte: async (id: number, offset: number) => medium.flipByte(id, offset),
      storedPages: async () =>
        new Map([...medium.pages.keys()].sort((a, b) => a - b).map((id) => [id, medium.pages.get(id)!.bytes.slice()])),
    },
  );
}

/** A fresh node-fs location: a new temporary directory, opened as `openStore({ storage: 'fs' })` does. */
export async function nodeFsStoreFixture(): Promise<NodeFsStoreFixture> {
  return fsFixtureAt(await mkdtemp(join(tmpdir(), 'pqdb-store-')));
}

function fsFixtureAt(dir: string): NodeFsStoreFixture {
  return tracked<NodeFsStoreFixture>(
    (writable) => openNodeFsPageStore(dir, writable ? {} : { readOnly: true, create: false }),
    (options) => openStore({ ...options, storage: 'fs', location: dir }),
    () => rm(dir, { recursive: true, force: true }),
    {
      dir,
      flipStoredByte: (id: number, offset: number) => flipFsPageByte(dir, id, offset),
      // A read-only page store takes no lock: it reads beside a writer, as of opening.
      async storedPages() {
        const pages = await openNodeFsPageStore(dir, { readOnly: true, create: false });
        try {
          const out = new Map<number, Uint8Array>();
          for (const id of await pages.listPages()) out.set(id, (await pages.readPage(id))!);
          return out;
        } finally {
          await pages.close();
        }
      },
      async copy() {
        const to = await mkdtemp(join(tmpdir(), 'pqdb-store-'));
        await cp(dir, to, { recursive: true });
        return fsFixtureAt(to);
      },
    },
  );
}

/** Walks the segments as docs/storage.md describes and flips a body byte of page `id`'s last record. */
async function flipFsPageByte(dir: string, id: number, offset: number): Promise<void> {
  let hit: { file: string; at: number } | undefined;
  for (const name of (await readdir(dir)).filter((n) => n.endsWith('.pqs')).sort()) {
    const buf = await readFile(join(dir, name));
    let off = SEGMENT_HEADER_BYTES;
    while (off + RECORD_HEADER_BYTES <= buf.length) {
      const kind = buf[off + 4];
      const rid = buf.readUInt32LE(off + 8);
      const len = buf.readUInt32LE(off + 12);
      if (kind === 1 && rid === id && offset < len)
        hit = { file: join(dir, name), at: off + RECORD_HEADER_BYTES + offset };
      off += RECORD_HEADER_BYTES + len;
    }
  }
  if (!hit) throw new RangeError(`"id" page ${id} has no byte ${offset} on disk`);
  const buf = await readFile(hit.file);
  buf[hit.at] ^= 1;
  await writeFile(hit.file, buf);
}

let databases = 0;

/** A fresh IndexedDB location (fake-indexeddb): a new database name (the page store has no read-only mode). */
export async function indexedDbStoreFixture(): Promise<IndexedDbStoreFixture> {
  const name = `pqdb-store-${databases++}`;
  return tracked<IndexedDbStoreFixture>(
    () => openIndexedDbPageStore(name),
    undefined,
    () => deleteDB(name),
    {
      name,
      raw: indexedDbRaw(name),
      // Through a second, raw connection, as the PageStore conformance fixture does (docs/storage.md).
      async flipStoredByte(id: number, offset: number) {
        const db = await openDB(name);
        try {
          const bytes = (await db.get('pages', id)) as Uint8Array | undefined;
          if (bytes === undefined || offset >= bytes.length)
            throw new RangeError(`"id" page ${id} has no byte ${offset}`);
          bytes[offset] ^= 1;
          await db.put('pages', bytes, id);
        } finally {
          db.close();
        }
      },
      // Through a raw connection too: the page store's lock would keep a second page store out.
      async storedPages() {
        const db = await openDB(name);
        try {
          const tx = db.transaction('pages', 'readonly');
          const [ids, bytes] = await Promise.all([tx.store.getAllKeys(), tx.store.getAll(), tx.done]);
          return new Map(ids.map((id, i) => [id as number, bytes[i] as Uint8Array]));
        } finally {
          db.close();
        }
      },
    },
  );
}

export interface PostgresStoreFixture extends NodeStoreFixture {
  /** The store name (the tables' `store` column). */
  readonly name: string;
  readonly cluster: PostgresCluster;
}

/**
 * A fresh PostgreSQL location: a new store name in `cluster`'s test database. Its page store opens
 * read-only (no lock, a snapshot) for `pages()` and `open({ readOnly: true })`; stored bytes are
 * edited as the superuser, below the page checksum.
 */
export async function postgresStoreFixture(cluster: PostgresCluster): Promise<PostgresStoreFixture> {
  const name = freshStoreName('store');
  const { connectionString, admin } = cluster;
  return tracked<PostgresStoreFixture>(
    (writable) => openPostgresPageStore({ connectionString, name, readOnly: !writable }),
    undefined,
    async () => {
      await admin.query('DELETE FROM pqdb_pages WHERE store = $1', [name]).catch(() => undefined);
      await admin.query('DELETE FROM pqdb_manifest WHERE store = $1', [name]).catch(() => undefined);
    },
    {
      name,
      cluster,
      async flipStoredByte(id: number, offset: number) {
        const r = await admin.query(
          `UPDATE pqdb_pages SET bytes = set_byte(bytes, $3, get_byte(bytes, $3) # 1)
            WHERE store = $1 AND id = $2 AND length(bytes) > $3`,
          [name, id, offset],
        );
        if (r.rowCount !== 1) throw new RangeError(`"id" page ${id} has no byte ${offset}`);
      },
      async storedPages() {
        const r = await admin.query('SELECT id, bytes FROM pqdb_pages WHERE store = $1 ORDER BY id', [name]);
        return new Map(r.rows.map((row: { id: string; bytes: Buffer }) => [Number(row.id), new Uint8Array(row.bytes)]));
      },
    },
  );
}

/** Every adapter, for `describe.each(STORE_FIXTURES)('… (%s)', (name, factory) => …)`. */
export const STORE_FIXTURES: [string, () => Promise<NodeStoreFixture>][] = [
  ['memory', memoryStoreFixture],
  ['node-fs', nodeFsStoreFixture],
  ['indexeddb (fake-indexeddb)', indexedDbStoreFixture],
];

/**
 * Wraps a fixture maker so that every fixture it makes during a test is disposed after that test
 * (its stores closed first). Call it in a `describe` body.
 * @example
 * const fresh = perTest(factory);
 * it('reopens', async () => { const f = await fresh(); const store = await f.open({ create: true, … }); });
 */
export function perTest<A extends unknown[], F extends { dispose(): Promise<void> }>(
  make: (...args: A) => Promise<F>,
): (...args: A) => Promise<F> {
  const made: F[] = [];
  afterEach(async () => {
    for (const f of made.splice(0)) await f.dispose();
  });
  return async (...args) => {
    const f = await make(...args);
    made.push(f);
    return f;
  };
}

/**
 * Replaces stored page `id` with `bytes` through the page store (a delete, then a write of the id:
 * ids can be reused after deletion), so its checksum matches the new bytes. Nothing may be open on
 * the location.
 */
export async function replacePage(fixture: NodeStoreFixture, id: number, bytes: Uint8Array): Promise<void> {
  const pages = await fixture.writablePages();
  try {
    await pages.commit({ deletes: [id] });
    await pages.commit({ pages: [{ id, bytes }] });
  } finally {
    await pages.close();
  }
}
