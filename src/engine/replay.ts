// Replay (DESIGN §6): the store's in-memory state rebuilt from its pages — the key directory, each
// generation's Merkle log and the signed checkpoints — as opening a store needs it, and the same
// application of one commit page that every later commit goes through (src/engine/store.ts wires
// it as an `applied` hook), so the state after a commit and after a reopen cannot differ.
//
// Pages and manifest change only together (atomic PageStore commits), so the live commit pages are
// the stored pages below `nextPageId` that the manifest does not name as log, index or checkpoint
// pages; pages at or above it were written by a commit whose manifest never landed (never
// acknowledged) and are dropped, or only reported when opened read-only. A log, index or checkpoint
// page below it that the manifest does not name is reported and left alone.

import { PqdbError } from '../errors';
import type { PageStore } from '../storage/page-store';
import { recordLeafHashes, decodeCheckpoint, type Checkpoint } from '../crypto/proofs';
import { HASH_BYTES } from '../crypto/merkle';
import { concatBytes, equalBytes } from '../_bytes';
import type { KeyRing } from './keys';
import type { KeyDirectory } from './directory';
import type { MerkleLogs } from './merkle-log';
import type { Manifest } from './manifest';
import { decodeLogPage, decodePage, pageGeneration, pageKey, pageKind, type IndexedOp } from './page-format';

/** A checkpoint with the signed bytes it was decoded from. */
export type SignedCheckpoint = Checkpoint & { signed: Uint8Array };

/** A commit page to apply: its id, generation, bytes and decoded operations. */
export interface ReplayPage {
  id: number;
  generation: number;
  bytes: Uint8Array;
  ops: readonly IndexedOp[];
}

/** What commit pages are applied to. */
export interface ReplayTarget {
  readonly directory: KeyDirectory;
  readonly logs: MerkleLogs;
  readonly storeId: Uint8Array;
  /** Called for every commit page applied, after the directory and log took it. */
  onPage?(page: ReplayPage): void;
}

/**
 * Applies a commit page: every put becomes a leaf of its generation's log and the live version of
 * its id; a delete removes the id (the log only grows). `known`: leaf hashes persisted at a
 * checkpoint for this generation, taken as they are where they cover the page (otherwise the
 * page's leaves are computed, in two kernel passes for the whole page).
 */
export function applyCommitPage(t: ReplayTarget, page: ReplayPage, known?: Uint8Array): void {
  const { id: pageId, generation, bytes, ops } = page;
  t.directory.addPage(pageId, generation);
  const puts = ops.filter((op): op is Extract<IndexedOp, { kind: 'put' }> => op.kind === 'put');
  const at = t.logs.size(generation);
  const leaves =
    known !== undefined && (at + puts.length) * HASH_BYTES <= known.length
      ? known.subarray(at * HASH_BYTES, (at + puts.length) * HASH_BYTES)
      : recordLeafHashes(
          t.storeId,
          puts.map((op) => {
            const record = bytes.subarray(op.offset, op.offset + op.length);
            return {
              collection: op.collection,
              id: op.id,
              sequence: op.sequence,
              suite: record[1],
              generation,
              record,
              governance: op.governance,
            };
          }),
        );
  let leafIndex = t.logs.append(generation, leaves);
  for (const op of ops) {
    if (op.kind === 'delete') t.directory.delete(op.collection, op.id);
    else
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

/** What replay found besides the state it rebuilt. */
export interface ReplayResult {
  /** Every signed checkpoint, oldest first. */
  checkpoints: SignedCheckpoint[];
  /** What opening repaired (or, read-only, would repair). */
  recovered: string[];
}

/**
 * Rebuilds the directory and the logs from the live pages of `manifest`.
 * @throws PqdbError CORRUPTION (a named page missing or malformed, a log that disagrees with its
 * checkpoint), AUTH_FAILED (a commit page that does not open).
 */
export async function replay(
  pages: PageStore,
  manifest: Manifest,
  keys: KeyRing,
  target: ReplayTarget,
  readOnly: boolean,
): Promise<ReplayResult> {
  const recovered: string[] = [];
  const checkpoints: SignedCheckpoint[] = [];
  // Leaf hashes persisted at the last checkpoint of each generation: replay hashes only the rest.
  const known = new Map<number, Uint8Array>();
  const named = new Set<number>();
  for (const [g, refs] of Object.entries(manifest.logs ?? {})) {
    if (!Array.isArray(refs))
      throw new PqdbError(
        'FORMAT_VERSION',
        'the store lists its Merkle log in a format of an earlier pre-release; recreate it',
      );
    const parts: Uint8Array[] = [];
    let at = 0;
    for (const { pageId, from, to } of refs) {
      const page = await pages.readPage(pageId);
      if (page === undefined) throw new PqdbError('CORRUPTION', `log page ${pageId} is missing`);
      if (from !== at)
        throw new PqdbError('CORRUPTION', `the log pages of generation ${g} are not contiguous at leaf ${at}`);
      parts.push(decodeLogPage(page, Number(g), from, to));
      at = to;
      named.add(pageId);
    }
    known.set(Number(g), concatBytes(parts));
  }
  for (const { pageId } of Object.values(manifest.indexes ?? {})) named.add(pageId);
  for (const pageId of manifest.checkpointPages ?? []) {
    const page = await pages.readPage(pageId);
    const c = page && decodeCheckpoint(page);
    if (page === undefined || c === undefined)
      throw new PqdbError('CORRUPTION', `checkpoint page ${pageId} is missing or malformed`);
    checkpoints.push({ ...c, signed: page });
    named.add(pageId);
  }
  const orphans: number[] = [];
  let unreferenced = 0;
  for (const pageId of await pages.listPages()) {
    if (named.has(pageId)) continue;
    if (pageId >= manifest.nextPageId) {
      orphans.push(pageId); // written by a commit whose manifest never landed: never acknowledged
      continue;
    }
    const bytes = await pages.readPage(pageId);
    if (bytes === undefined) throw new PqdbError('CORRUPTION', `commit page ${pageId} is missing`);
    const kind = pageKind(bytes);
    if (kind !== 'commit' && kind !== undefined) {
      // A log, index or checkpoint page the manifest does not name holds no record: it is left
      // as it is (a restore or a replica may list pages it does not use).
      unreferenced++;
      continue;
    }
    const generation = pageGeneration(bytes);
    const ops = decodePage(pageId, keys.generationKey(generation, 'page', pageKey), bytes);
    applyCommitPage(target, { id: pageId, generation, bytes, ops }, known.get(generation));
  }
  // A retired generation has no commit pages left: its log is the persisted one.
  for (const g of manifest.retired ?? []) target.logs.append(g, known.get(g) ?? new Uint8Array(0));
  // A persisted log must agree with the last checkpoint of its generation.
  const seen = new Set<number>();
  for (const c of [...checkpoints].reverse()) {
    if (seen.has(c.generation)) continue;
    seen.add(c.generation);
    if (target.logs.size(c.generation) >= c.size && !equalBytes(target.logs.rootAt(c.generation, c.size), c.root)) {
      throw new PqdbError(
        'CORRUPTION',
        `the log of generation ${c.generation} does not match its checkpoint of size ${c.size}`,
      );
    }
  }
  if (unreferenced > 0)
    recovered.push(`${unreferenced} log, index or checkpoint page(s) the manifest does not name are ignored`);
  if (orphans.length > 0 && readOnly) {
    recovered.push(
      `${orphans.length} commit page(s) written after the last manifest (an unacknowledged commit) are ignored`,
    );
  } else if (orphans.length > 0) {
    await pages.deletePages(orphans);
    recovered.push(
      `dropped ${orphans.length} commit page(s) written after the last manifest (an unacknowledged commit)`,
    );
  }
  return { checkpoints, recovered };
}
