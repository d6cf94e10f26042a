// pqdb for browsers: the universal entry plus the IndexedDB store (default storage 'indexeddb').

import { openStoreWith, type OpenStoreOptions } from './engine/open';
import type { Store } from './engine/store';
import { openIndexedDbPageStore, deleteIndexedDbStore } from './storage/indexeddb';

export * from './index';
export { openIndexedDbPageStore } from './storage/indexeddb';

/**
 * Opens or creates a store; `location` is the IndexedDB database name.
 * @example const store = await openStore({ location: 'app', create: true, recipients: [r.publicKey], unlock: r.secretKey })
 */
export function openStore(options: OpenStoreOptions): Promise<Store> {
  return openStoreWith({ indexeddb: (name) => openIndexedDbPageStore(name) }, 'indexeddb', options);
}

/**
 * Deletes the IndexedDB database `location` if it holds a pqdb store, only while no tab or worker
 * has the store open.
 * @throws PqdbError NOT_FOUND (no pqdb store there), LOCKED (a tab or worker holds it), IO_ERROR
 * @example await deleteStore('app')
 */
export function deleteStore(location: string): Promise<void> {
  return deleteIndexedDbStore(location);
}
