// pqdb for Node.js: the universal entry plus the file store (default storage 'fs').

import { openStoreWith, type OpenStoreOptions } from './engine/open';
import type { Store } from './engine/store';
import { openNodeFsPageStore } from './storage/node-fs';

export * from './index';
export { openNodeFsPageStore } from './storage/node-fs';

/**
 * Opens or creates a store; `location` is a directory (created when needed).
 * @example const store = await openStore({ location: './data/app', create: true, recipients: [r.publicKey], unlock: r.secretKey })
 */
export function openStore(options: OpenStoreOptions): Promise<Store> {
  return openStoreWith({ fs: (dir) => openNodeFsPageStore(dir) }, 'fs', options);
}
