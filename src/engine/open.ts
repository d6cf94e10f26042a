// openStore: picks the page store for `location`/`storage` and opens the engine on it. The platform
// entries (src/node.ts, src/browser.ts) pass the adapters they can load; the universal entry knows
// only the in-memory store and PageStore instances.

import { PqdbError } from '../errors';
import type { PageStore } from '../storage/page-store';
import { openMemoryPageStore } from '../storage/memory';
import { ml_dsa87 } from '../kernels/mldsa';
import { generateRecipient as makeRecipient, type EnvelopeType } from '../crypto/envelope';
import { Store, type StoreOptions } from './store';
import type { Locations } from './store-options';

export type StorageKind = 'memory' | 'fs' | 'indexeddb' | 'opfs';

export interface OpenStoreOptions extends StoreOptions {
  /** A directory (fs), a database name (indexeddb) or a store name (opfs); ignored for memory. */
  location?: string;
  /**
   * Which page store; the platform default when omitted (fs in Node, indexeddb in browsers). 'opfs'
   * runs in dedicated workers only (docs/storage.md).
   */
  storage?: StorageKind | PageStore;
}

export type PageStoreOpeners = Partial<Record<StorageKind, (location: string) => Promise<PageStore>>>;

/** A platform's Locations from its page store opener and its delete (which is NOT_FOUND when there is no store). */
export function locationsOf(
  kind: string,
  open: Locations['open'],
  remove: (location: string) => Promise<void>,
): Locations {
  return {
    kind,
    open,
    async remove(location) {
      try {
        await remove(location);
        return true;
      } catch (e) {
        if (e instanceof PqdbError && e.code === 'NOT_FOUND') return false;
        throw e;
      }
    },
  };
}

export async function openStoreWith(
  openers: PageStoreOpeners,
  defaultKind: StorageKind,
  options: OpenStoreOptions,
  locations?: Locations,
): Promise<Store> {
  if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
  const storage = options.storage ?? defaultKind;
  let pages: PageStore;
  if (typeof storage === 'object') pages = storage;
  else if (storage === 'memory') pages = await openMemoryPageStore();
  else {
    const open = openers[storage];
    if (open === undefined) throw new RangeError(`storage "${storage}" is not available on this platform`);
    if (typeof options.location !== 'string' || options.location.length === 0)
      throw new TypeError('"location" expected a non-empty string');
    pages = await open(options.location);
  }
  try {
    return await Store.open(pages, locations !== undefined ? { ...options, locations } : options);
  } catch (e) {
    if (typeof storage !== 'object') await pages.close();
    throw e;
  }
}

/**
 * Deletes the store at `location`. The universal entry has only in-memory stores, which go when
 * closed: it refuses. `pqdb` under Node deletes a file store, in browsers an IndexedDB database.
 * @throws TypeError always (here)
 */
export async function deleteStore(location: string): Promise<void> {
  throw new TypeError(
    `deleteStore(${JSON.stringify(location)}) needs the Node or browser build of pqdb: this entry has only memory stores, which go when closed`,
  );
}

/** A recipient key pair for store envelopes: hybrid ML-KEM-1024 + X25519 by default. */
export function generateRecipient(type: EnvelopeType = 'hybrid'): { publicKey: Uint8Array; secretKey: Uint8Array } {
  const { publicKey, secretKey } = makeRecipient(type);
  return { publicKey, secretKey };
}

/** An ML-DSA-87 signer key pair for checkpoints. */
export function generateSigner(): { publicKey: Uint8Array; secretKey: Uint8Array } {
  return ml_dsa87.keygen();
}
