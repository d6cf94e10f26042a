// pqdb for browsers: the universal entry plus the IndexedDB store (default storage 'indexeddb').

import { openStoreWith, type OpenStoreOptions } from './engine/open';
import type { Store } from './engine/store';
import { openIndexedDbPageStore } from './storage/indexeddb';

export * from './index';
export { openIndexedDbPageStore } from './storage/indexeddb';

/**
 * Opens or creates a store; `location` is the IndexedDB database name.
 * @example const store = await openStore({ location: 'app', create: true, recipients: [r.publicKey], unlock: r.secretKey })
 */
export function openStore(options: OpenStoreOptions): Promise<Store> {
  return openStoreWith({ indexeddb: (name) => openIndexedDbPageStore(name) }, 'indexeddb', options);
}
