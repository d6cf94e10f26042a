// Shipped pages opened before a replica persists them (docs/replication.md, "Verified before it is
// applied"). Opening a store on a staged commit reads the pages its manifest, checkpoints and key
// directory name, and replays the commit pages past the directory; the commit pages the persisted
// directory already covers are not read then (a read opens them later; those past it the open
// replays, and their leaf hashes, record bytes included, must give the manifest's log heads).
// Without this check a primary that is trusted but misbehaves could plant a damaged copy of a
// covered page: the replica would keep it, and a read of it would fail (never return something
// wrong) even after the honest primary is back. So every shipped page is opened here under the
// keys of the store just verified, in the role its id has (DESIGN §11 "roles from the manifest, not
// from magic bytes", as the verifier decides them: src/engine/verify/directory.ts):
//
//   log page        one the manifest names: its head against the range the manifest gives (leaf
//                   hashes: no AEAD; the proofs and checkpoint roots they give authenticate them)
//   index page      one the manifest names: every part (AES-GCM-SIV under its generation's lexical
//                   key, bound to its id)
//   checkpoint and directory snapshot pages the manifest names: opened and checked by the open
//   partition page  one of the persisted directory's base: every partition opens and is checked
//   commit page     one the directory covers: whatever its first bytes say, its sealed index opens
//                   (AES-GCM-SIV under its generation's page key, bound to its id), it is the page
//                   the directory kept (generation, length, commit salt), and every record version
//                   in it opens (its AEAD, and the sequence its index names); one past the directory
//                   the open replayed as a commit page, and it must be one
//
// A page up to the directory's end that none of these names (a superseded page) and a page past
// the manifest's page counter (a commit that never completed on the primary) are no part of the
// store: they are not kept.

import { equalBytes } from '../_bytes';
import { PqdbError } from '../errors';
import { decodeFloorPage } from '../engine/history-floor';
import { FIELD_INDEX_KEY_LABEL, fieldIndexBinding } from '../engine/field-index';
import { sha384 } from '../kernels/sha2';
import { unb64 } from '../_encoding';
import type { PageStore } from '../storage/page-store';
import type { CommitPipeline } from '../engine/commit';
import type { KeyRing } from '../engine/keys';

/** What checking shipped pages uses of the engine verified on them. */
export interface ShippedContext {
  readonly pipeline: Pick<CommitPipeline, 'manifest'>;
  readonly pages: PageStore;
  readonly keys: KeyRing;
}
import type { PageInfo } from '../engine/directory';
import { directoryRoles } from '../engine/verify/directory';
import {
  decodeIndexPage,
  decodeLogPage,
  decodePage,
  indexPageGeneration,
  lexicalKey,
  pageGeneration,
  pageKey,
  pageKind,
  pageSalt,
} from '../engine/page-format';
import { openStored } from '../engine/records';

type Page = { id: number; bytes: Uint8Array };

const rethrow = (e: unknown): never => {
  throw e;
};

/**
 * The shipped pages of `p`'s store worth keeping, each opened under `p`'s keys in the role its id
 * has in `p`'s manifest and persisted key directory.
 * @throws PqdbError AUTH_FAILED (a page or record that does not open), CORRUPTION (bad framing, a
 * page that is not what its place needs), FORMAT_VERSION
 */
export async function checkShipped(p: ShippedContext, pages: readonly Page[]): Promise<Page[]> {
  const m = p.pipeline.manifest;
  const logs = new Map<number, { g: number; from: number; to: number }>();
  for (const [g, refs] of Object.entries(m.logs ?? {}))
    for (const { pageId, from, to } of refs) logs.set(pageId, { g: Number(g), from, to });
  const indexes = new Map<number, string>();
  const byIndexes = new Map<number, string>();
  for (const [name, { pageId }] of Object.entries(m.indexes ?? {})) indexes.set(pageId, name);
  for (const [name, { pageId }] of Object.entries(m.fieldIndexes ?? {})) byIndexes.set(pageId, name);
  const floors = new Map<number, { g: number; size: number; hash: string }>();
  for (const [g, { pageId, size, hash }] of Object.entries(m.floors ?? {}))
    floors.set(pageId, { g: Number(g), size, hash });
  const opened = new Set<number>(m.checkpointPages ?? []); // checked by the open
  for (const s of m.directory?.snapshots ?? []) for (const id of s.pages) opened.add(id);
  // The open read these snapshots already; they open again here to give the pages' roles.
  const roles = await directoryRoles(p.pages, m.directory, p.keys, (_where, e) => rethrow(e));
  const after = roles.afterPage;
  const kept: Page[] = [];
  let parts = false;
  for (const page of pages) {
    const { id, bytes } = page;
    if (id >= m.nextPageId) continue;
    const log = logs.get(id);
    const index = indexes.get(id);
    const floor = floors.get(id);
    const by = byIndexes.get(id);
    const info = roles.covered.get(id);
    const part = roles.parts.has(id);
    const named =
      log !== undefined || index !== undefined || floor !== undefined || by !== undefined || opened.has(id) || part;
    if (!named && info === undefined && id <= after) continue; // no part of the store
    kept.push(page);
    try {
      if (log !== undefined) decodeLogPage(bytes, log.g, log.from, log.to);
      else if (floor !== undefined) {
        if (!equalBytes(sha384(bytes), unb64(floor.hash)))
          throw new PqdbError('CORRUPTION', 'it is not the history floor page the manifest names');
        decodeFloorPage(bytes, floor.g, floor.size);
      } else if (by !== undefined)
        decodeIndexPage(id, p.keys.storeKey(FIELD_INDEX_KEY_LABEL), fieldIndexBinding(by), bytes).fill(0);
      else if (index !== undefined)
        decodeIndexPage(id, p.keys.generationKey(indexPageGeneration(bytes), 'lexical', lexicalKey), index, bytes).fill(
          0,
        );
      else if (opened.has(id)) continue;
      else if (part) parts = true;
      else if (info !== undefined) openCommitPage(p, id, bytes, info);
      else if (pageKind(bytes) !== 'commit') throw new PqdbError('CORRUPTION', 'it is not a commit page');
    } catch (e) {
      if (e instanceof PqdbError)
        throw new PqdbError(e.code, `shipped page ${id} does not open: ${e.message}`, { cause: e });
      throw e;
    }
  }
  if (parts) {
    // A shipped partition of the directory's base: every partition opens and is checked.
    const read = new Map<number, Uint8Array | undefined>();
    for (const id of roles.parts) read.set(id, await p.pages.readPage(id));
    try {
      roles.checkParts((id) => read.get(id));
    } catch (e) {
      if (e instanceof PqdbError)
        throw new PqdbError(e.code, `a shipped directory partition does not open: ${e.message}`, { cause: e });
      throw e;
    }
  }
  return kept;
}

/** Opens commit page `id` (the directory lists it as `info`): its index and every record version in it. */
function openCommitPage(p: Pick<ShippedContext, 'keys'>, id: number, page: Uint8Array, info: PageInfo): void {
  const { generation, salt } = info;
  const ops = decodePage(id, p.keys.generationKey(generation, 'page', pageKey), page);
  if (pageGeneration(page) !== generation || page.length !== info.bytes || !equalBytes(pageSalt(page), salt))
    throw new PqdbError('CORRUPTION', `it is not the commit page the key directory lists`);
  for (const op of ops)
    if (op.kind === 'put')
      openStored('verify', page.subarray(op.offset, op.offset + op.length), { ...op, generation, salt }, p.keys).fill(
        0,
      );
}
