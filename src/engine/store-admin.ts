// The store's administrative operations that are plain edits of the manifest through the commit
// pipeline (src/engine/store.ts delegates to them): registry states, recipients, and the summary
// `info()` gives.

import { suite as suiteOf, type SuiteName } from '../crypto/suites';
import { checkpointHash } from '../crypto/proofs';
import { b64, hex } from '../_encoding';
import type { RegistryEntry, SuiteState } from './registry';
import type { PageStore } from '../storage/page-store';
import type { CommitPipeline } from './commit';
import type { KeyDirectory } from './directory';
import type { KeyRing } from './keys';
import type { Checkpoints } from './checkpoints';

/** What the registry edits use of the engine. */
export interface RegistryContext {
  readonly pipeline: Pick<CommitPipeline, 'registry' | 'run'>;
  readonly directory: Pick<KeyDirectory, 'any' | 'usesSuite'>;
}

/** What `info()` reads of the engine. */
export interface InfoContext {
  readonly pipeline: Pick<CommitPipeline, 'manifest' | 'failure'>;
  readonly directory: Pick<KeyDirectory, 'counts'>;
  readonly checkpoints: Pick<Checkpoints, 'autoError' | 'list'>;
  readonly pages: Pick<PageStore, 'kind'>;
  readonly keys: Pick<KeyRing, 'generations'>;
}

/** What `store.info()` reports. */
export interface StoreInfo {
  storeId: string;
  storage: string;
  generations: number[];
  collections: Record<string, number>;
  commits: number;
  commit: number;
  checkpoint?: { generation: number; size: number; hash: string };
  autoCheckpointError?: string;
  /** The last failure of a step run after a durable commit (an index update, replication shipping): the commit stays durable. */
  afterCommitError?: string;
}

/** The crypto registry as a store shows it: list states, change them (durably). */
export interface StoreRegistry {
  list(): RegistryEntry[];
  setState(suite: SuiteName | number, state: SuiteState): Promise<void>;
}

/** The crypto registry: list states, change them (durably). */
export function registryApi(p: RegistryContext): StoreRegistry {
  return {
    list: () => p.pipeline.registry.list(),
    setState: (suite, state) =>
      p.pipeline.run((draft) => {
        const id = suiteOf(suite).id;
        // In use: a collection writes with it, a live record (withheld or failed by a migration) is
        // sealed with it, or a managed copy not retired holds records sealed with it.
        const writes = Object.values(draft.manifest.collections).some((c) => c.suite === id);
        const held = (draft.manifest.copies ?? []).some((c) => c.state !== 'retired' && c.suites.includes(id));
        const inUse = (writes && p.directory.any()) || p.directory.usesSuite(id) || held;
        draft.registry.setState(suite, state, { inUse });
      }),
  };
}

/** Wraps the store's roots for another recipient, or drops a recipient's envelopes. */
export function recipients(
  pipeline: Pick<CommitPipeline, 'run'>,
  change: 'add' | 'remove',
  publicKey: Uint8Array,
): Promise<void> {
  return pipeline.run((draft) => {
    const m = draft.manifest;
    if (change === 'add') {
      draft.keyring.addRecipient(publicKey);
      m.recipients = [...new Set([...(m.recipients ?? []), b64(publicKey)])];
    } else {
      draft.keyring.removeRecipient(publicKey);
      const b = b64(publicKey);
      m.recipients = (m.recipients ?? []).filter((x) => x !== b);
    }
  });
}

/** Store id, page store kind and counts. */
export function info(p: InfoContext): StoreInfo {
  const error = p.checkpoints.autoError;
  const failed = p.pipeline.failure;
  const last = p.checkpoints.list.at(-1);
  return {
    ...(error !== undefined ? { autoCheckpointError: String((error as Error)?.message ?? error) } : {}),
    ...(failed !== undefined ? { afterCommitError: String((failed.error as Error)?.message ?? failed.error) } : {}),
    storeId: p.pipeline.manifest.storeId,
    storage: p.pages.kind,
    generations: p.keys.generations(),
    collections: p.directory.counts(),
    commits: p.pipeline.manifest.nextPageId - 1,
    commit: p.pipeline.manifest.commit,
    ...(last !== undefined
      ? { checkpoint: { generation: last.generation, size: last.size, hash: hex(checkpointHash(last.signed)) } }
      : {}),
  };
}

/** What opening a store repaired, at the engine's layer (`recovered`) and in the page store below. */
export function recoveryOf(p: { readonly pages: Pick<PageStore, 'recovery'>; readonly recovered: readonly string[] }): {
  clean: boolean;
  actions: string[];
} {
  const actions = [...p.pages.recovery.actions, ...p.recovered];
  return { clean: actions.length === 0, actions };
}
