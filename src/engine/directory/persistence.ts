// Persisting the key directory at a checkpoint (DESIGN §6): a run of the changes since the last
// snapshot, or a new base in partitions, sealed into the draft together with the log pages, and
// the `prepare` hook that lists the commit pages a commit deletes as dropped.

import { pauseIfSpent } from '../../_yield';
import { b64 } from '../../_encoding';
import type { MerkleLogs } from '../merkle-log';
import type { KeyRing } from '../keys';
import type { Draft } from '../commit';
import type { KeyDirectory } from './key-directory';
import { encodeSnapshot } from './format';
import { sealSnapshot, DIRECTORY_KEY_LABEL } from './pages';
import { sealBase } from './partitions';

/** What persisting the directory needs of a store's parts. */
export interface PersistContext {
  readonly directory: KeyDirectory;
  readonly logs: MerkleLogs;
  readonly keys: KeyRing;
}

/**
 * Checkpoint contributor: persists the directory as of `afterPage` (every commit page so far) in the
 * draft — a run of the changes since the last snapshot, or a new base (whose commit deletes the old
 * snapshots' pages) when none is tracked — together with log pages holding every generation's
 * leaves so far, so an open starts from both. `pending`: the lexical indexes' ids to re-index.
 */
export async function persistDirectory(
  draft: Draft,
  ctx: PersistContext,
  afterPage: number,
  pending?: Record<string, string[]>,
): Promise<void> {
  const m = draft.manifest;
  const logs = { ...(m.logs ?? {}) };
  const sizes: Record<string, number> = {};
  const frontiers: Record<string, string[]> = {};
  for (const g of ctx.keys.generations()) {
    await ctx.logs.pushLogPage(g, logs, draft);
    if (ctx.logs.size(g) === 0) continue;
    sizes[g] = ctx.logs.size(g);
    frontiers[g] = ctx.logs.frontier(g).map(b64);
  }
  m.logs = logs;
  const old = m.directory;
  const changes = old !== undefined ? ctx.directory.changes() : undefined;
  const kind = changes !== undefined ? 'run' : 'base';
  if (changes !== undefined && changes.ids.size === 0 && changes.added.length === 0 && changes.dropped.length === 0) {
    // Nothing changed since the last snapshot: no commit page was added after it either.
    m.directory = { ...old!, afterPage, dropped: [] };
    return;
  }
  const key = ctx.keys.storeKey(DIRECTORY_KEY_LABEL);
  if (kind === 'base') {
    // A new base in partitions: the old base's partitions and its runs go with the commit.
    const base = await sealBase(draft, key, ctx.directory, afterPage, sizes, pending, frontiers, pauseIfSpent);
    for (const s of old?.snapshots ?? []) for (const id of s.pages) draft.deletePage(id);
    for (const id of ctx.directory.partPages) draft.deletePage(id);
    m.directory = {
      afterPage,
      snapshots: [{ kind, pages: base.pages, rows: base.rows, bytes: base.bytes }],
      dropped: [],
    };
    draft.afterCommit(() => (ctx.directory.basePersisted(base.partPages), ctx.directory.persisted(true)));
    return;
  }
  const { bytes, rows } = await encodeSnapshot(ctx.directory, kind, afterPage, sizes, pending, frontiers, pauseIfSpent);
  let ids: number[];
  try {
    ids = await sealSnapshot(draft, key, bytes, pauseIfSpent);
  } finally {
    bytes.fill(0);
  }
  m.directory = {
    afterPage,
    snapshots: [...old!.snapshots, { kind, pages: ids, rows, bytes: bytes.length }],
    dropped: [],
  };
  draft.afterCommit(() => ctx.directory.persisted(false));
}

/**
 * `prepare` hook: commit pages a commit deletes that the persisted directory covers are listed in
 * it as dropped, so an open does not look for them.
 */
export function noteDroppedPages(draft: Draft, directory: KeyDirectory): void {
  const ref = draft.manifest.directory;
  if (ref === undefined || draft.deletes.length === 0) return;
  const dropped = draft.deletes.filter((id) => id <= ref.afterPage && directory.page(id) !== undefined);
  if (dropped.length > 0) draft.manifest.directory = { ...ref, dropped: [...(ref.dropped ?? []), ...dropped] };
}
