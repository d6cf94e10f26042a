// The key directory (DESIGN §6), in memory and persisted: rows.ts (locations, row columns, the
// partition of a row), table.ts (one collection's table), key-directory.ts (the directory of every
// collection and the live commit pages), format.ts (the snapshot format), pages.ts (sealed directory
// pages), partitions.ts (a base kept in partitions); persistence.ts (the checkpoint contributor,
// above the commit pipeline) is imported from its own path by the composition root.
// The files import one another, never this one.

export {
  checkPart,
  concatRows,
  emptyRows,
  fnv1a,
  partOf,
  Interned,
  type Location,
  type PageInfo,
  type PartSource,
  type Rows,
} from './rows';
export { DirectoryTable } from './table';
export { KeyDirectory } from './key-directory';
export {
  applySnapshot,
  decodeSnapshot,
  encodeSnapshot,
  MAX_PART_BITS,
  type PartsHeader,
  type Snapshot,
  type SnapshotHeader,
} from './format';
export {
  directoryPageBytes,
  openSnapshot,
  readSnapshot,
  readSnapshotSync,
  sealSnapshot,
  DIRECTORY_KEY_LABEL,
  DIRECTORY_PART_BYTES,
  type PageSink,
} from './pages';
export { partSource, sealBase, PART_ROWS } from './partitions';
