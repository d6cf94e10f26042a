// Shipped pages opened before a replica persists them (docs/replication.md, "Verified before it is
// applied"). Opening a store on a staged commit reads the pages its manifest, checkpoints and key
// directory name, and replays the commit pages past the directory; the commit pages the persisted
// directory already covers are not read then (a read opens them later; those past it the open
// replays, and their leaf hashes, record bytes included, must give the manifest's log heads).
// Without this check a primary that is trusted but misbehaves could plant a damaged copy of a
// covered page: the replica would keep it, and a read of it would fail (never return something
// wrong) even after the honest primary is back. So every shipped page is opened here under the keys of the store just verified:
//
//   commit page   one the directory covers: its sealed index (AES-GCM-SIV under its generation's
//                 page key, bound to its id), then every record version in it (its AEAD, and the
//                 sequence its index names)
//   index page    every part (AES-GCM-SIV under its generation's lexical key, bound to its id)
//   log page      its head against the range the manifest names (leaf hashes: no AEAD; the
//                 proofs and checkpoint roots they give are what authenticates them)
//   directory and checkpoint pages: opened and checked by the open itself
//
// A page past the manifest's page counter (a commit that never completed on the primary) is no
// part of the store: it is not kept.

import { PqdbError } from '../errors';
import type { Parts } from '../engine/parts';
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

/**
 * The shipped pages of `p`'s store worth keeping, each opened under `p`'s keys.
 * @throws PqdbError AUTH_FAILED (a page or record that does not open), CORRUPTION (bad framing, a
 * page of the wrong kind for its place), FORMAT_VERSION
 */
export function checkShipped(p: Parts, pages: readonly Page[]): Page[] {
  const m = p.pipeline.manifest;
  const logs = new Map<number, { g: number; from: number; to: number }>();
  for (const [g, refs] of Object.entries(m.logs ?? {}))
    for (const { pageId, from, to } of refs) logs.set(pageId, { g: Number(g), from, to });
  const indexes = new Map<number, string>();
  for (const [name, { pageId }] of Object.entries(m.indexes ?? {})) indexes.set(pageId, name);
  const after = m.directory?.afterPage ?? 0;
  const kept: Page[] = [];
  for (const page of pages) {
    const { id, bytes } = page;
    if (id >= m.nextPageId) continue;
    kept.push(page);
    const where = `shipped page ${id}`;
    try {
      const log = logs.get(id);
      const index = indexes.get(id);
      if (log !== undefined) decodeLogPage(bytes, log.g, log.from, log.to);
      else if (index !== undefined)
        decodeIndexPage(id, p.keys.generationKey(indexPageGeneration(bytes), 'lexical', lexicalKey), index, bytes).fill(
          0,
        );
      else if (pageKind(bytes) === 'commit') {
        // Past the directory the open replayed it: its leaves, record bytes included, gave the heads.
        if (id <= after) openCommitPage(p, id, bytes);
      } else if (pageKind(bytes) === undefined) throw new PqdbError('CORRUPTION', 'it is not a pqdb page');
    } catch (e) {
      if (e instanceof PqdbError) throw new PqdbError(e.code, `${where} does not open: ${e.message}`, { cause: e });
      throw e;
    }
  }
  return kept;
}

/** Opens a commit page's index and every record version in it. */
function openCommitPage(p: Parts, id: number, page: Uint8Array): void {
  const generation = pageGeneration(page);
  const ops = decodePage(id, p.keys.generationKey(generation, 'page', pageKey), page);
  const salt = pageSalt(page);
  for (const op of ops)
    if (op.kind === 'put')
      openStored('verify', page.subarray(op.offset, op.offset + op.length), { ...op, generation, salt }, p.keys).fill(
        0,
      );
}
