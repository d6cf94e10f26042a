// pqdb for browsers: the universal entry plus the IndexedDB store (default storage 'indexeddb') and,
// in dedicated workers, the OPFS store (storage 'opfs').

import { locationsOf, openStoreWith, type OpenStoreOptions } from './engine/open';
import type { Store } from './engine/store';
import { openIndexedDbPageStore, deleteIndexedDbStore } from './storage/indexeddb';
import { openOpfsPageStore } from './storage/opfs';
import { restoreStoreWith, type RestoreOptions, type RestoreResult } from './engine/restore';
import type { PageStore } from './storage/page-store';

export * from './index';
export { openIndexedDbPageStore } from './storage/indexeddb';
export { openOpfsPageStore, deleteOpfsPageStore, opfsAvailable } from './storage/opfs';

/** Stores by IndexedDB database name: backups, restores and the copies retireCopy deletes. */
const locations = locationsOf('IndexedDB database', (name) => openIndexedDbPageStore(name), deleteIndexedDbStore);

/**
 * Opens or creates a store; `location` is the IndexedDB database name.
 * @example const store = await openStore({ location: 'app', create: true, recipients: [r.publicKey], unlock: r.secretKey })
 */
export function openStore(options: OpenStoreOptions): Promise<Store> {
  return openStoreWith(
    { indexeddb: (name) => openIndexedDbPageStore(name), opfs: (name) => openOpfsPageStore(name) },
    'indexeddb',
    options,
    locations,
  );
}

/**
 * Makes a new store in IndexedDB database `options.location` from the managed copy in database
 * `copy` (written by store.backup): verified, under the current policy and new keys (docs/authority.md).
 * @example const { store, restored } = await restoreStore('app-backup-1', { location: 'app-2', unlock, live, signer, signerPublicKey })
 */
export function restoreStore(copy: string | PageStore, options: RestoreOptions): Promise<RestoreResult> {
  return restoreStoreWith(locations, copy, options);
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
