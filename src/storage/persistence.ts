// The page's side of storage persistence: `navigator.storage.persist()` exists on pages only, so
// a store in a worker cannot ask for it itself (the worker reports `persisted()` in storageInfo).

import { PqdbError } from '../errors';

/**
 * Asks the browser to keep this origin's storage under pressure (`navigator.storage.persist()`,
 * which workers lack): resolves with whether it is persisted now. Call it from the page.
 * @throws PqdbError UNSUPPORTED (no `persist()` here: a worker, or not a browser)
 */
export async function requestPersistence(): Promise<boolean> {
  const sm = (globalThis as { navigator?: { storage?: { persist?(): Promise<boolean> } } }).navigator?.storage;
  if (typeof sm?.persist !== 'function')
    throw new PqdbError('UNSUPPORTED', 'navigator.storage.persist() is not available here (it is a page API)');
  return sm.persist();
}
