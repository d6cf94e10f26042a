// pqdb/client: what a page needs to use stores served by an engine in a dedicated worker
// (docs/worker.md), without the engine: no kernels, no page stores, no sealing, a tenth of the
// `pqdb` browser entry. The worker's script runs serveWorkerEngine() from pqdb/worker; the page's
// openStore and restoreStore here take `worker` and talk to it over a MessagePort, as the `pqdb`
// entry's do when given one.

import { WorkerStore, type WorkerOpenOptions, type WorkerRestoreOptions } from './worker/client';
import type { RestoreResult } from './engine/restore';

export { PqdbError, ERROR_CODES, type PqdbErrorCode } from './errors';
export { requestPersistence } from './storage/persistence';
export type {
  WorkerStore,
  WorkerCollection,
  WorkerOpenOptions,
  WorkerRestoreOptions,
  WorkerTransaction,
} from './worker/client';
export type { StorageInfo } from './worker/serve';
export type { Schema, FieldSpec, FieldType, FieldValue, InferValue, Value, ValueShape } from './engine/codec';
export type { CollectionValue, TextField } from './engine/collection';
export type { SearchOptions } from './engine/lexical';
export type { MigrateOptions, MigrationStatus, MigrationProgress } from './engine/migration/run';
export type { RestoreResult } from './engine/restore';
export type { BackupResult, ManagedCopy } from './engine/copies';
export type { SuiteName } from './crypto/suites';
export type { Change, WatchOptions, ChangesOptions } from './engine/changes';
export type { LiveQuery } from './engine/collection';

/**
 * Opens or creates a store in dedicated worker `options.worker` (a Worker running
 * serveWorkerEngine, or the URL of its module script), as `openStore({ worker, … })` from pqdb.
 * @throws TypeError when `worker` is missing or not a Worker or URL; the worker's PqdbErrors as they are
 * @example const store = await openStore({ worker: new URL('./db-worker.js', import.meta.url), location: 'app', unlock })
 */
export function openStore(options: WorkerOpenOptions): Promise<WorkerStore> {
  return WorkerStore.open(options);
}

/**
 * Restores managed copy `copy` (an IndexedDB database in the worker, as store.backup wrote it, or
 * a backup file's bytes, as store.backupFile made them) into a new store in `options.worker`, which
 * then serves it, as `restoreStore(copy, { worker, … })` from pqdb.
 */
export function restoreStore(
  copy: string | Uint8Array,
  options: WorkerRestoreOptions,
): Promise<{ store: WorkerStore } & Omit<RestoreResult, 'store'>> {
  return WorkerStore.restore(copy, options);
}
