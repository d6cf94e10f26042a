// Direct edits of an IndexedDB page store's object stores (layout in src/storage/indexeddb.ts and
// docs/storage.md): what an attacker with access to the origin's IndexedDB can do, checksums made
// to match. Used by the tamper cases in Node (fake-indexeddb) and in Chromium (real IndexedDB).

import { openDB } from 'idb';
import { crc32c } from '../../src/_crc32c';
import type { RawMedium } from './tamper';

/** The raw medium of IndexedDB database `name`; every call opens and closes its own connection. */
export function indexedDbRaw(name: string): RawMedium {
  const withDb = async <T>(body: (db: Awaited<ReturnType<typeof openDB>>) => Promise<T>): Promise<T> => {
    const db = await openDB(name);
    try {
      return await body(db);
    } finally {
      db.close();
    }
  };
  return {
    pages: () =>
      withDb(async (db) => {
        const tx = db.transaction('pages', 'readonly');
        const [ids, bytes] = await Promise.all([tx.store.getAllKeys(), tx.store.getAll(), tx.done]);
        return new Map(ids.map((id, i) => [id as number, bytes[i] as Uint8Array]));
      }),
    manifest: () =>
      withDb(async (db) => ((await db.get('meta', 'manifest')) as { bytes: Uint8Array } | undefined)?.bytes),
    setPage: (id, bytes) =>
      withDb(async (db) => {
        const tx = db.transaction(['pages', 'index'], 'readwrite');
        if (bytes === undefined)
          await Promise.all([tx.objectStore('pages').delete(id), tx.objectStore('index').delete(id)]);
        else
          await Promise.all([
            tx.objectStore('pages').put(bytes.slice(), id),
            tx.objectStore('index').put({ length: bytes.length, crc: crc32c(bytes) }, id),
          ]);
        await tx.done;
      }),
    setManifest: (bytes) =>
      withDb((db) => db.put('meta', { bytes: bytes.slice(), crc: crc32c(bytes) }, 'manifest').then(() => undefined)),
  };
}
