// The store manifest (DESIGN §6, §11): schema.ts (the persisted schema and the edits of it),
// sealing.ts (its framing, sealing and unlocking), checks.ts (every field read back checked before
// use). The files import one another, never this one.

export {
  cloneManifest,
  generationRecords,
  keyringEntries,
  newManifest,
  COPY_KINDS,
  COPY_STATES,
  MANIFEST_VERSION,
  REQUESTS_KEPT,
  REQUEST_ID,
  noteRequest,
  type CollectionMeta,
  type CopyKind,
  type CopyRecord,
  type CopyState,
  type DirectoryRef,
  type IndexRef,
  type KeyringEntry,
  type LogPageRef,
  type Manifest,
  type ManifestHeader,
  type MigrationCounts,
  type MigrationFailure,
  type MigrationPhase,
  type MigrationRecord,
} from './schema';
export {
  encodeManifest,
  readManifest,
  unlockManifest,
  MANIFEST_KEY_LABEL,
  STORE_ID_LABEL,
  type SealedManifest,
} from './sealing';
