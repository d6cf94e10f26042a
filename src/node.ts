// pqdb for Node.js: the universal entry plus the file store (default storage 'fs').

import { openStoreWith, type OpenStoreOptions } from './engine/open';
import type { Store } from './engine/store';
import { openNodeFsPageStore } from './storage/node-fs';
import { deleteNodeFsStore } from './storage/node-fs-delete';

export * from './index';
export { openNodeFsPageStore } from './storage/node-fs';

/**
 * Opens or creates a store; `location` is a directory (created with `create: true` when missing).
 * @example const store = await openStore({ location: './data/app', create: true, recipients: [r.publicKey], unlock: r.secretKey })
 */
export function openStore(options: OpenStoreOptions): Promise<Store> {
  const create = options?.create === true && options.readOnly !== true; // opening without create makes no directory
  return openStoreWith({ fs: (dir) => openNodeFsPageStore(dir, { create }) }, 'fs', options);
}

/**
 * Deletes the file store in directory `location` (the directory goes too), only if it holds a pqdb
 * store and nothing else, and only while no writer has it open.
 * @throws PqdbError NOT_FOUND (no pqdb store there), LOCKED (a writer holds it), IO_ERROR
 * @example await deleteStore('./data/app')
 */
export function deleteStore(location: string): Promise<void> {
  return deleteNodeFsStore(location);
}
