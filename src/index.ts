// pqdb: the embedded engine's universal entry (any runtime). It opens in-memory stores or stores on
// a PageStore you pass; `pqdb` under Node (src/node.ts) adds the file store and in browsers
// (src/browser.ts) the IndexedDB store.

import { openStoreWith, type OpenStoreOptions } from './engine/open';
import type { Store } from './engine/store';

export { PqdbError, ERROR_CODES, type PqdbErrorCode } from './errors';
export { setWasmFlavor, wasmFlavor, simdSupported, type WasmFlavor, type WasmModuleName } from './kernels/wasm-info';
export { wasmBuilds, type WasmBuildInfo } from './kernels/wasm-info';
export { generateRecipient, generateSigner, type OpenStoreOptions, type StorageKind } from './engine/open';
export { deleteStore } from './engine/open';
import { restoreStoreWith, type RestoreOptions, type RestoreResult } from './engine/restore';
import type { PageStore } from './storage/page-store';
export type { AuthorityRequest } from './engine/migration/run';
export { Store } from './engine/store';
export {
  Collection,
  type Transaction,
  type ReadTransaction,
  type CollectionOptions,
  type CollectionInfo,
  type PutOptions,
  type ScanOptions,
} from './engine/collection';
export type { StoreOptions } from './engine/store-options';
export type { MigrateOptions, MigrationStatus, MigrationProgress, AuthorityCheck } from './engine/migration/run';
export type { MigrationCounts, MigrationPhase } from './engine/manifest';
export type { Schema, FieldSpec, FieldType, FieldValue, InferValue, Value, ValueShape } from './engine/codec';
export type { CollectionValue, TextField } from './engine/collection';
export type { SearchOptions } from './engine/lexical';
export type { CompactOptions, CompactProgress, CompactResult, HistoryFloorRaised } from './engine/compact';
export type { Change, WatchOptions, ChangesOptions } from './engine/changes';
export type { LiveQuery } from './engine/collection';
export type { SuiteName } from './crypto/suites';
export type { SuiteState, RegistryEntry } from './engine/registry';
export type {
  Cbom,
  CbomComponent,
  CbomCryptoProperties,
  CbomDependency,
  CbomKeyState,
  CbomProperty,
} from './engine/posture';
export type { Governance } from './crypto/record';
export type {
  PageStore,
  CommitBatch,
  PageStoreStats,
  FollowablePageStore,
  PageStoreView,
  PageStoreSupports,
  ReclaimOptions,
  ReclaimProgress,
  ReclaimResult,
  SegmentCompactOptions,
  SegmentCompactProgress,
  SegmentCompactResult,
} from './storage/page-store';
export type { FollowEvent, FollowOptions } from './engine/follower';
export { openMemoryPageStore } from './storage/memory';
export { verifySealed, openSealed, type VerifiedSealed, type Checkpoint } from './crypto/proofs';
export {
  signPolicy,
  verifyPolicy,
  POLICY_OPERATIONS,
  type PolicyDocument,
  type PolicyRule,
  type PolicyOperation,
  type Policy,
} from './crypto/policy';
export {
  verifyStore,
  formatVerifyReport,
  type VerifyReport,
  type VerifyOptions,
  type VerifyProblem,
} from './engine/verify';

export { VERSION } from './version';
export type { RestoreOptions, RestoreResult } from './engine/restore';
export type { BackupResult, ManagedCopy } from './engine/copies';
export type { CopyKind, CopyState } from './engine/manifest';

/**
 * Makes a new store from a managed copy (written by store.backup), verified, under the current
 * policy and new keys (docs/authority.md). Here (the universal entry) `copy` and `options.storage`
 * are PageStores (or `copy` a backup file's bytes: store.backupFile); the Node and browser entries also
 * take a directory or a database name.
 * @throws TypeError for a location given as a name
 */
export function restoreStore(copy: PageStore | Uint8Array, options: RestoreOptions): Promise<RestoreResult> {
  return restoreStoreWith(undefined, copy, options);
}

/**
 * Opens or creates a store. Here (the universal entry, the package's "default" export condition)
 * `storage` is 'memory' (the default) or a PageStore: the file and IndexedDB stores live in the
 * entries chosen by the "node" and "browser" conditions, so a `location` or storage 'fs' /
 * 'indexeddb' / 'opfs' is refused rather than quietly kept in memory.
 * @throws TypeError for a `location` or storage 'fs' / 'indexeddb' / 'opfs'.
 * @example const store = await openStore({ storage: 'memory', create: true, recipients: [r.publicKey], unlock: r.secretKey })
 */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  const o: Partial<OpenStoreOptions> = typeof options === 'object' && options !== null ? options : {};
  if (o.location !== undefined || o.storage === 'fs' || o.storage === 'indexeddb' || o.storage === 'opfs')
    throw new TypeError(
      `"location" and storage "fs"/"indexeddb"/"opfs" need the "node" or "browser" export condition: this is pqdb's ` +
        `universal ("default") entry, which opens only storage "memory" or a PageStore`,
    );
  return openStoreWith({}, 'memory', options);
}
export { Query, Where, type BetweenOptions } from './engine/query';
