// pqdb: the embedded engine's universal entry (any runtime). It opens in-memory stores or stores on
// a PageStore you pass; `pqdb` under Node (src/node.ts) adds the file store and in browsers
// (src/browser.ts) the IndexedDB store.

import { openStoreWith, type OpenStoreOptions } from './engine/open';
import type { Store } from './engine/store';

export { PqdbError, ERROR_CODES, type PqdbErrorCode } from './errors';
export { setWasmFlavor, wasmFlavor, simdSupported, type WasmFlavor, type WasmModuleName } from './wasm/loader';
export { wasmBuilds, type WasmBuildInfo } from './wasm/builds';
export { generateRecipient, generateSigner, type OpenStoreOptions, type StorageKind } from './engine/open';
export {
  Store,
  Collection,
  type Transaction,
  type PutOptions,
  type ScanOptions,
  type StoreOptions,
  type MigrateOptions,
  type MigrationStatus,
  type MigrationProgress,
  type MigrationCounts,
  type MigrationPhase,
  type AuthorityCheck,
} from './engine/store';
export type { Schema, FieldSpec, Value } from './engine/codec';
export type { PageStore, CommitBatch, PageStoreStats } from './storage/page-store';
export { openMemoryPageStore } from './storage/memory';
export { verifySealed, openSealed, type VerifiedSealed, type Checkpoint } from './crypto/proofs';
export {
  verifyStore,
  formatVerifyReport,
  type VerifyReport,
  type VerifyOptions,
  type VerifyProblem,
} from './engine/verify';

/** The pqdb release this build belongs to. */
export const VERSION = '0.1.0';

/**
 * Opens or creates a store. Here (the universal entry) `storage` is 'memory' or a PageStore.
 * @example const store = await openStore({ storage: 'memory', create: true, recipients: [r.publicKey], unlock: r.secretKey })
 */
export function openStore(options: OpenStoreOptions): Promise<Store> {
  return openStoreWith({}, 'memory', options);
}
