// pqdb/worker: the engine in a dedicated worker (docs/worker.md). The worker's script calls
// serveWorkerEngine(); a page then opens stores in it with `openStore({ worker, … })` from pqdb.
// Every seal, open, signature and commit runs on the worker's thread, on OPFS where the worker can
// get a sync access handle and on IndexedDB elsewhere.

import { openStore, restoreStore } from './browser';
import { openOpfsPageStore } from './storage/opfs';
import { opfsAvailable } from './storage/opfs';
import type { OpenStoreOptions } from './engine/open';
import type { Store } from './engine/store';
import { serveConnections, type ServeWorkerOptions, type StorageInfo, type WorkerPlatform } from './worker/serve';
import { bridgePort } from './worker/bridge';
import type { LockManagerLike, PortLike, TabsPlatform } from './worker/tabs';

export type { ServeWorkerOptions, StorageInfo } from './worker/serve';
export { openOpfsPageStore, deleteOpfsPageStore, opfsAvailable } from './storage/opfs';

type StorageManagerLike = {
  persisted?(): Promise<boolean>;
  estimate?(): Promise<{ usage?: number; quota?: number }>;
};

/** Web Locks and BroadcastChannel where the worker has both: one tab serves each store to the others (docs/tabs.md). */
function browserTabs(): TabsPlatform | undefined {
  const locks = (globalThis as { navigator?: { locks?: LockManagerLike } }).navigator?.locks;
  if (locks === undefined || typeof BroadcastChannel !== 'function') return undefined;
  return { locks, channel: (name) => new BroadcastChannel(name) as unknown as PortLike };
}

const tabs = browserTabs();

const browserWorker: WorkerPlatform = {
  bridge: tabs && ((port, options) => bridgePort(port, browserWorker, tabs, options)),
  open(options: OpenStoreOptions & { storage?: unknown }) {
    const storage = options.storage ?? 'auto';
    if (storage !== 'auto' && storage !== 'opfs' && storage !== 'indexeddb' && storage !== 'memory')
      throw new TypeError('"storage" expected "auto", "opfs", "indexeddb" or "memory"');
    return openStore({ ...options, storage: storage === 'auto' ? (opfsAvailable() ? 'opfs' : 'indexeddb') : storage });
  },
  async restore(copy, options) {
    // The new store goes where `storage` says, as open's: an OPFS store is given as its PageStore.
    const storage: unknown = options.storage ?? 'auto';
    if (storage !== 'auto' && storage !== 'opfs' && storage !== 'indexeddb')
      throw new TypeError('"storage" expected "auto", "opfs" or "indexeddb"');
    const opfs = storage === 'opfs' || (storage === 'auto' && opfsAvailable());
    if (opfs && typeof options.location !== 'string') throw new TypeError('"location" expected a store name');
    if (!opfs) return restoreStore(copy, { ...options, storage: undefined } as Parameters<typeof restoreStore>[1]);
    const pages = await openOpfsPageStore(options.location!);
    try {
      return await restoreStore(copy, { ...options, storage: pages } as Parameters<typeof restoreStore>[1]);
    } catch (e) {
      await pages.close(); // a store given as a PageStore is the caller's to close
      throw e;
    }
  },
  async storageInfo(store: Store): Promise<StorageInfo> {
    const sm = (globalThis as { navigator?: { storage?: StorageManagerLike } }).navigator?.storage;
    const [persisted, estimate] = await Promise.all([
      sm?.persisted?.().catch(() => undefined),
      sm?.estimate?.().then(
        ({ usage, quota }) => ({ usage, quota }),
        () => undefined,
      ),
    ]);
    return { pageStore: store.info().storage, persisted, estimate };
  },
};

/**
 * Serves the stores pages open in this dedicated worker (`openStore({ worker })` on the page).
 * `options` completes what a page cannot send: an authority check, a key unwrapped here.
 * @example // worker.js
 * import { serveWorkerEngine } from 'pqdb/worker';
 * serveWorkerEngine();
 */
export function serveWorkerEngine(options?: ServeWorkerOptions): void {
  serveConnections(globalThis as unknown as Parameters<typeof serveConnections>[0], browserWorker, options);
}
