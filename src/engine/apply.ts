// Applying a commit to the engine's state (DESIGN §2, §6): the one path by which a commit's pages
// reach the key directory, the per-generation Merkle logs, the page cache and the lexical indexes'
// notes. Opening a store (replay.ts) applies each live commit page with `applyCommitPage`; every
// later commit, made here or by another writer (a follower, a replica: follow.ts verifies it and
// the pipeline installs it), reaches `applyCommit` through the pipeline's `applied` hook. So the
// state after a commit, after following one and after a reopen cannot differ.
//
// Nothing here authenticates: the pages given were sealed by this store's commit, or opened and
// checked against an authenticated manifest before they came (replay.ts, follow.ts).

import { recordLeafHashes } from '../crypto/proofs';
import { HASH_BYTES } from '../crypto/merkle';
import type { Location } from './directory';
import type { MerkleLogs } from './merkle-log';
import { b64 } from '../_encoding';
import type { AppliedCommit, CommitPage, Draft } from './commit';
import { pageSalt, type IndexedOp } from './page-format';

/** What applying a commit page uses: the directory's and the logs' writing side, and the leaf blind. */
export interface PageApplyContext {
  readonly directory: {
    addPage(pageId: number, generation: number, salt: Uint8Array, bytes: number): void;
    set(collection: string, id: string, loc: Location): void;
    delete(collection: string, id: string): void;
  };
  readonly logs: Pick<MerkleLogs, 'size' | 'append'>;
  readonly storeId: Uint8Array;
  /** The blind of the leaves of a page with this commit salt (keys.ts leafBlind). */
  blind(salt: Uint8Array): Uint8Array;
  /** Called for every commit page applied, after the directory and log took it (the lexical indexes' notes). */
  onPage?(page: CommitPage): void;
}

/** What applying a whole commit uses besides: dropping deleted pages and caching written ones. */
export interface ApplyContext extends PageApplyContext {
  readonly directory: PageApplyContext['directory'] & { dropPages(pageIds: readonly number[]): void };
  readonly cache: { put(pageId: number, page: Uint8Array): void; drop(pageId: number): void };
}

/**
 * `applied` hook: a durable commit — this store's or a foreign one — follows into the directory,
 * the logs and the page cache: each commit page is applied (applyCommitPage) and cached, and the
 * pages it deleted leave the directory and the cache.
 */
export function applyCommit(ctx: ApplyContext, commit: AppliedCommit): void {
  for (const page of commit.commitPages) {
    applyCommitPage(ctx, page);
    ctx.cache.put(page.id, page.bytes);
  }
  ctx.directory.dropPages(commit.deletes);
  for (const id of commit.deletes) ctx.cache.drop(id);
}

/**
 * Applies a commit page: every operation becomes a leaf of its generation's log (a delete too, so a
 * dropped delete-only commit changes the log's root); a put becomes the live version of its id and
 * a delete removes the id. The page's leaves are taken from `page.leaves` when a commit (logHead)
 * or a follower computed them, else from `known` (leaf hashes persisted at a checkpoint for this
 * generation, from leaf `knownFrom`: its history floor) where it covers the page, else computed (two kernel passes for the whole page).
 */
export function applyCommitPage(t: PageApplyContext, page: CommitPage, known?: Uint8Array, knownFrom = 0): void {
  const { id: pageId, generation, bytes, ops } = page;
  t.directory.addPage(pageId, generation, pageSalt(bytes).slice(), bytes.length);
  const at = t.logs.size(generation) - knownFrom;
  const leaves =
    page.leaves ??
    (known !== undefined && at >= 0 && (at + ops.length) * HASH_BYTES <= known.length
      ? known.subarray(at * HASH_BYTES, (at + ops.length) * HASH_BYTES)
      : opLeafHashes(t.storeId, generation, bytes, ops, t.blind(pageSalt(bytes))));
  let leafIndex = t.logs.append(generation, leaves, page.appender);
  for (const op of ops) {
    if (op.kind === 'delete') {
      t.directory.delete(op.collection, op.id);
      leafIndex++;
    } else
      t.directory.set(op.collection, op.id, {
        leafIndex: leafIndex++,
        generation,
        pageId,
        offset: op.offset,
        length: op.length,
        sequence: op.sequence,
        suite: bytes[op.offset + 1],
        governance: op.governance,
      });
  }
  t.onPage?.(page);
}

/** The leaf hashes of a commit page's operations, in order: puts and deletes alike (DESIGN §7). */
export function opLeafHashes(
  storeId: Uint8Array,
  generation: number,
  bytes: Uint8Array,
  ops: readonly IndexedOp[],
  blind: Uint8Array,
): Uint8Array {
  const salt = pageSalt(bytes);
  return recordLeafHashes(
    storeId,
    ops.map((op) => {
      const record = op.kind === 'put' ? bytes.subarray(op.offset, op.offset + op.length) : undefined;
      const { collection, id, sequence } = op;
      const governance = op.kind === 'put' ? op.governance : '';
      return { collection, id, sequence, suite: record?.[1] ?? 0, generation, record, governance, salt, blind };
    }),
  );
}

/**
 * `sealed` hook: the commit page's leaf hashes (kept on the page for applyCommitPage) and the size
 * and root its generation's log will have, written into the draft manifest's `heads`.
 */
export function logHead(
  t: {
    readonly logs: Pick<MerkleLogs, 'headAfter'>;
    readonly storeId: Uint8Array;
    blind(salt: Uint8Array): Uint8Array;
  },
  draft: Draft,
  page: CommitPage,
): void {
  page.leaves = opLeafHashes(t.storeId, page.generation, page.bytes, page.ops, t.blind(pageSalt(page.bytes)));
  const { size, root, appender } = t.logs.headAfter(page.generation, page.leaves);
  page.appender = appender; // adopted when the commit is applied: the leaves are hashed into the tree once
  draft.manifest.heads = { ...draft.manifest.heads, [page.generation]: { size, root: b64(root) } };
}
