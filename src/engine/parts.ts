// The engine's parts, wired once per store (src/engine/store.ts); each module's context is a view
// of them. `internals` hands a store's parts to the engine modules that work across stores (a
// backup reads one store and writes another, a restore reads a copy into a new store): it is not
// exported from the package.

import type { PageStore } from '../storage/page-store';
import type { KeyRing } from './keys';
import type { CommitPipeline } from './commit';
import type { KeyDirectory } from './directory';
import type { MerkleLogs } from './merkle-log';
import type { PageCache } from './page-cache';
import type { RecordIO } from './records';
import type { LexicalStore } from './lexical-store';
import type { Checkpoints } from './checkpoints';
import type { Store } from './store';

export interface Parts {
  readonly pages: PageStore;
  readonly keys: KeyRing;
  readonly pipeline: CommitPipeline;
  readonly directory: KeyDirectory;
  readonly logs: MerkleLogs;
  readonly cache: PageCache;
  readonly records: RecordIO;
  readonly storeId: Uint8Array;
  readonly lexical: LexicalStore;
  readonly checkpoints: Checkpoints;
  /** True when the store was opened read-only. */
  readonly readOnly: boolean;
  live(): void;
}

/** Each open store's parts. */
export const internals = new WeakMap<Store, Parts>();

/** The parts of `store`. @throws TypeError for anything that is not a pqdb store */
export function partsOf(store: unknown): Parts {
  const p = internals.get(store as Store);
  if (p === undefined) throw new TypeError('expected a pqdb store (from openStore)');
  return p;
}
