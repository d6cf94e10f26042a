// pqdb for Node.js: the universal entry plus the file store (default storage 'fs').

import { locationsOf, openStoreWith, type OpenStoreOptions } from './engine/open';
import type { Store } from './engine/store';
import { openNodeFsPageStore } from './storage/node-fs';
import { deleteNodeFsStore } from './storage/node-fs-delete';
import { restoreStoreWith, type RestoreOptions, type RestoreResult } from './engine/restore';
import type { PageStore } from './storage/page-store';
import type { Locations } from './engine/store-options';
import { followPrimary, servePrimary, type OpenReplicaOptions } from './replication/node';
import type { Replica } from './replication/replica';

export type { OpenReplicaOptions } from './replication/node';
export type { Replica, ReplicaStatus, ReplicaCollection } from './replication/replica';
export type { ServeReplicationOptions, ReplicationServer } from './engine/store-options';

export * from './index';
export { openNodeFsPageStore } from './storage/node-fs';

/** Stores by directory: backups, restores and the copies retireCopy deletes. */
const locations: Locations = {
  ...locationsOf(
    'directory',
    (dir, mode) => openNodeFsPageStore(dir, { create: mode === 'create', readOnly: mode === 'read' }),
    deleteNodeFsStore,
  ),
  serve: servePrimary,
};

/**
 * Opens a read-only replica in directory `options.location` (its own file store, created when
 * missing) following `options.primary` over the post-quantum channel; after a restart it resumes
 * from its own applied watermark (docs/replication.md).
 * @example const replica = await openReplica({ location: './replica', unlock, identity, primary: { host, port, publicKey } })
 */
export async function openReplica(options: OpenReplicaOptions): Promise<Replica> {
  if (typeof options?.location !== 'string' || options.location.length === 0)
    throw new TypeError('"location" expected a non-empty string');
  const pages = await openNodeFsPageStore(options.location, { create: true });
  try {
    return await followPrimary(pages, options);
  } catch (e) {
    await pages.close();
    throw e;
  }
}

/**
 * Opens or creates a store; `location` is a directory (created with `create: true` when missing).
 * @example const store = await openStore({ location: './data/app', create: true, recipients: [r.publicKey], unlock: r.secretKey })
 */
export function openStore(options: OpenStoreOptions): Promise<Store> {
  const readOnly = options?.readOnly === true; // a reader takes no lock: it never waits for the writer, nor it for a reader
  const create = options?.create === true && !readOnly; // opening without create makes no directory
  return openStoreWith({ fs: (dir) => openNodeFsPageStore(dir, { create, readOnly }) }, 'fs', options, locations);
}

/**
 * Makes a new store at `options.location` (a directory) from the managed copy in directory `copy`
 * (written by store.backup): verified, under the current policy and new keys (docs/authority.md).
 * @example const { store, restored } = await restoreStore('./backups/app-1', { location: './data/app-2', unlock, live, signer, signerPublicKey })
 */
export function restoreStore(copy: string | PageStore | Uint8Array, options: RestoreOptions): Promise<RestoreResult> {
  return restoreStoreWith(locations, copy, options);
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
