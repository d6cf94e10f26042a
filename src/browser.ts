// pqdb for browsers: the universal entry plus the IndexedDB store (default storage 'indexeddb') and,
// in dedicated workers, the OPFS store (storage 'opfs').

import { locationsOf, openStoreWith, type OpenStoreOptions } from './engine/open';
import type { Store } from './engine/store';
import { openIndexedDbPageStore, deleteIndexedDbStore } from './storage/indexeddb';
import { restoreStoreWith, type RestoreOptions, type RestoreResult } from './engine/restore';
import type { PageStore } from './storage/page-store';
import type { WorkerStore, WorkerOpenOptions, WorkerRestoreOptions } from './worker/client';

// The worker engine's page-side types, as pqdb/client names them.
export type { WorkerStore, WorkerCollection, WorkerOpenOptions, WorkerRestoreOptions } from './client';
export type { WorkerTransaction, StorageInfo } from './client';

export * from './index';
export { openIndexedDbPageStore } from './storage/indexeddb';
export { requestPersistence } from './storage/persistence';

/** The OPFS store, loaded when a store asks for it (an app on IndexedDB does not carry it). */
async function openOpfs(name: string): Promise<PageStore> {
  return (await import('./storage/opfs')).openOpfsPageStore(name);
}

/** Stores by IndexedDB database name: backups, restores and the copies retireCopy deletes. */
const locations = locationsOf('IndexedDB database', (name) => openIndexedDbPageStore(name), deleteIndexedDbStore);

/**
 * Opens or creates a store; `location` is the IndexedDB database name (or, with storage 'opfs' in
 * a dedicated worker, the OPFS store name). With `worker`, the store opens in that dedicated worker
 * (running serveWorkerEngine from pqdb/worker) and a WorkerStore answers here (docs/worker.md).
 * @example const store = await openStore({ location: 'app', create: true, recipients: [r.publicKey], unlock: r.secretKey })
 * @example const store = await openStore({ worker: new URL('./db-worker.js', import.meta.url), location: 'app', unlock })
 */
export function openStore(options: WorkerOpenOptions): Promise<WorkerStore>;
export function openStore(options: OpenStoreOptions): Promise<Store>;
export function openStore(options: OpenStoreOptions | WorkerOpenOptions): Promise<Store | WorkerStore> {
  if (typeof options === 'object' && options !== null && 'worker' in options && options.worker !== undefined)
    return import('./worker/client').then((m) => m.WorkerStore.open(options)); // a page on its own thread does not carry it
  return openStoreWith(
    { indexeddb: (name) => openIndexedDbPageStore(name), opfs: openOpfs },
    'indexeddb',
    options as OpenStoreOptions,
    locations,
  );
}

/**
 * Makes a new store in IndexedDB database `options.location` from the managed copy in database
 * `copy` (written by store.backup): verified, under the current policy and new keys (docs/authority.md).
 * With `worker`, the restore runs in that worker (on OPFS with storage 'auto' where it can) and a
 * WorkerStore serves the new store (docs/worker.md).
 * @example const { store, restored } = await restoreStore('app-backup-1', { location: 'app-2', unlock, live, signer, signerPublicKey })
 */
export function restoreStore(
  copy: string | Uint8Array,
  options: WorkerRestoreOptions,
): Promise<{ store: WorkerStore } & Omit<RestoreResult, 'store'>>;
export function restoreStore(copy: string | PageStore | Uint8Array, options: RestoreOptions): Promise<RestoreResult>;
export function restoreStore(
  copy: string | PageStore | Uint8Array,
  options: RestoreOptions | WorkerRestoreOptions,
): Promise<RestoreResult | ({ store: WorkerStore } & Omit<RestoreResult, 'store'>)> {
  if (typeof options === 'object' && options !== null && 'worker' in options && options.worker !== undefined) {
    const o = options;
    return import('./worker/client').then((m) => m.WorkerStore.restore(copy as string | Uint8Array, o));
  }
  return restoreStoreWith(locations, copy, options as RestoreOptions);
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
