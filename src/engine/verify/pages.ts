// The verifier's page step: every page the store lists is read once and checked for the role the
// manifest and the persisted key directory (directory.ts) give it — log pages decoded against the
// range the manifest names, checkpoint pages kept for the checkpoint step, lexical index pages
// opened, the directory's partitions checked against their base — and every other page below the
// page counter that the directory lists, or that was written after it, must open as a commit page
// under its generation's page key (and be the page the directory kept). Each commit page's records
// are decrypted and its operations' Merkle leaves recomputed for the generation step.

import { PqdbError } from '../../errors';
import { recordLeafHashes } from '../../crypto/proofs';
import { concatBytes, equalBytes } from '../../_bytes';
import { openStored } from '../records';
import { leafBlind, type KeyRing } from '../keys';
import type { PageInfo } from '../directory';
import type { Manifest } from '../manifest';
import {
  decodePage,
  pageGeneration,
  pageKey,
  lexicalKey,
  decodeLogPage,
  decodeIndexPage,
  indexPageGeneration,
  pageKind,
  pageSalt,
  type IndexedOp,
} from '../page-format';
import { directoryRoles } from './directory';
import { decodeFloorPage, type HistoryFloor } from '../history-floor';
import { FIELD_INDEX_KEY_LABEL, fieldIndexBinding } from '../field-index';
import { sha384 } from '../../kernels/sha2';
import { unb64 } from '../../_encoding';
import type { OpenedStore, VerifyRun } from './run';

/** What the page step read, for the steps after it. */
export interface PagesRead {
  /**
   * Per generation, its persisted log (the log pages' leaf hashes, when all of them read), from its
   * history floor on (`floors`).
   */
  readonly persisted: Map<number, Uint8Array>;
  /** Per generation with a history floor, the floor page as decoded (its proofs unchecked). */
  readonly floors: Map<number, HistoryFloor>;
  /** Per generation, the leaf hashes of each commit page, in page order. */
  readonly leaves: Map<number, Uint8Array[]>;
  /** Each commit page's operations: its generation, its place in `leaves`, and (kind, collection, id). */
  readonly pageOps: { g: number; part: number; ops: (readonly ['put' | 'delete', string, string])[] }[];
  /** The signed checkpoints, in the manifest's order (undefined: the page failed, reported). */
  readonly signedCheckpoints: (Uint8Array | undefined)[];
}

/** Reads and checks every page of the store. Never throws for bad data. */
export async function readPages(run: VerifyRun, store: OpenedStore): Promise<PagesRead> {
  const { pages, options, counts } = run;
  const { manifest, keys } = store;
  const special = new Map<number, string>();
  const persisted = new Map<number, Uint8Array>();
  const logParts = new Map<number, (Uint8Array | undefined)[]>();
  for (const [g, refs] of Object.entries(manifest.logs ?? {})) {
    logParts.set(
      Number(g),
      refs.map(() => undefined),
    );
    refs.forEach(({ pageId, from, to }, i) => special.set(pageId, `log:${g}:${i}:${from}:${to}`));
  }
  for (const [name, { pageId }] of Object.entries(manifest.indexes ?? {})) special.set(pageId, `index:${name}`);
  for (const [g, { pageId }] of Object.entries(manifest.floors ?? {})) special.set(pageId, `floor:${g}`);
  const byRefs = keys !== undefined ? (manifest as Manifest).fieldIndexes : undefined;
  for (const [name, { pageId }] of Object.entries(byRefs ?? {})) special.set(pageId, `by:${name}`);
  const floors = new Map<number, HistoryFloor>();
  const checkpointPages = manifest.checkpointPages ?? [];
  checkpointPages.forEach((pageId, i) => special.set(pageId, `checkpoint:${i}`));
  // The persisted key directory first: it gives the roles of the pages it covers.
  const directory = keys !== undefined ? (manifest as Manifest).directory : undefined;
  directory?.snapshots.forEach((s, i) => s.pages.forEach((pageId, k) => special.set(pageId, `directory:${i}:${k}`)));
  const roles = keys !== undefined ? await directoryRoles(pages, directory, keys, run.fail) : undefined;
  for (const pageId of roles?.parts ?? []) if (!special.has(pageId)) special.set(pageId, 'part');
  const partPages = new Map<number, Uint8Array>();
  let unnamed = 0;
  const signedCheckpoints: (Uint8Array | undefined)[] = checkpointPages.map(() => undefined);
  let ids: number[] = [];
  try {
    ids = await pages.listPages();
  } catch (e) {
    run.fail('pages', e);
  }
  const listed = new Set(ids);
  // Deleted by a commit while a backup pinned them (pins.ts): not part of the store.
  const held = new Set(keys !== undefined ? ((manifest as Manifest).heldPages ?? []) : []);
  for (const pageId of special.keys())
    if (!listed.has(pageId))
      run.fail(`page ${pageId}`, new PqdbError('CORRUPTION', `page ${pageId} named by the manifest is missing`));
  const leaves = new Map<number, Uint8Array[]>();
  const pageOps: PagesRead['pageOps'] = [];
  let done = 0;
  for (const pageId of ids) {
    options.onProgress?.({ phase: 'pages', done: done++, total: ids.length });
    if (pageId >= manifest.nextPageId) {
      counts.pages++;
      continue; // written by a commit that never completed: never acknowledged, not part of the store
    }
    if (held.has(pageId)) {
      unnamed++;
      continue;
    }
    const role = special.get(pageId);
    let page: Uint8Array | undefined;
    if (roles?.heads.has(pageId) === true) {
      page = roles.heads.get(pageId); // read by the directory step (and reported there when it failed)
      if (page === undefined) continue;
    } else
      try {
        page = await pages.readPage(pageId);
        if (page === undefined) throw new PqdbError('CORRUPTION', `page ${pageId} is listed but unreadable`);
      } catch (e) {
        run.fail(`page ${pageId}`, e);
        continue;
      }
    counts.pages++;
    // A page below the directory's end that neither the manifest nor the directory names is not
    // part of the store (open ignores it too): a superseded log, index or checkpoint page, or a
    // deleted page put back. It is never taken for a commit page.
    const info = roles?.covered.get(pageId);
    if (role === undefined && roles !== undefined && info === undefined && pageId <= roles.afterPage) {
      unnamed++;
      continue;
    }
    try {
      if (role?.startsWith('log:')) {
        const [, g, i, from, to] = role.split(':').map(Number);
        logParts.get(g)![i] = decodeLogPage(page, g, from, to);
        counts.logPages++;
      } else if (role?.startsWith('floor:')) {
        const g = Number(role.slice(6));
        const ref = manifest.floors![g];
        if (!equalBytes(sha384(page), unb64(ref.hash)))
          throw new PqdbError(
            'CORRUPTION',
            `the history floor page of generation ${g} is not the one the manifest names`,
          );
        floors.set(g, decodeFloorPage(page, g, ref.size));
      } else if (role?.startsWith('checkpoint:')) {
        signedCheckpoints[Number(role.slice(11))] = page;
      } else if (role?.startsWith('directory:')) {
        counts.directoryPages++; // opened by the directory step
      } else if (role === 'part' || (keys === undefined && pageKind(page) === 'directory')) {
        // A base's partition (checked below); without the key, found by its kind (unauthenticated).
        counts.directoryPages++;
        partPages.set(pageId, page);
      } else if (role?.startsWith('by:')) {
        counts.indexPages++;
        if (keys !== undefined)
          decodeIndexPage(pageId, keys.storeKey(FIELD_INDEX_KEY_LABEL), fieldIndexBinding(role.slice(3)), page).fill(0);
      } else if (role?.startsWith('index:')) {
        const name = role.slice(6);
        counts.indexPages++;
        if (keys !== undefined)
          decodeIndexPage(
            pageId,
            keys.generationKey(indexPageGeneration(page), 'lexical', lexicalKey),
            name,
            page,
          ).fill(0);
      } else {
        // A live commit page (the directory lists it, or it was written after the directory): it
        // must open as one under its generation's page key, and be what the directory kept.
        counts.commitPages++;
        if (keys === undefined) continue;
        const g = info?.generation ?? pageGeneration(page);
        const ops = decodePage(pageId, keys.generationKey(g, 'page', pageKey), page);
        if (info !== undefined) checkListed(pageId, page, info);
        if (options.decryptRecords !== false) checkRecords(run, pageId, g, page, ops, keys);
        const hashes = leafHashes(store.storeId, keys, g, page, ops);
        let list = leaves.get(g);
        if (list === undefined) leaves.set(g, (list = []));
        list.push(hashes);
        // Where its leaves sit is known once the log is placed (compacted pages leave gaps).
        pageOps.push({ g, part: list.length - 1, ops: ops.map((op) => [op.kind, op.collection, op.id] as const) });
      }
    } catch (e) {
      run.fail(`page ${pageId}`, e);
    }
  }
  options.onProgress?.({ phase: 'pages', done: ids.length, total: ids.length });
  // Each base's partitions, and every commit page the directory lists is there but for those the
  // manifest lists as dropped since.
  roles?.checkParts((id) => partPages.get(id));
  partPages.clear();
  for (const id of roles?.covered.keys() ?? [])
    if (!listed.has(id))
      run.fail(`page ${id}`, new PqdbError('CORRUPTION', `commit page ${id} the key directory names is missing`));
  if (unnamed > 0)
    run.notes.push(`${unnamed} page(s) the manifest and the key directory do not name are not part of the store`);
  for (const [g, parts] of logParts) {
    const refs = manifest.logs![g];
    const floor = manifest.floors?.[g]?.size ?? 0;
    const contiguous = refs.every((r, i) => r.from === (i === 0 ? floor : refs[i - 1].to));
    if (!contiguous)
      run.problem(`generation ${g}`, 'CORRUPTION', `the log pages of generation ${g} are not contiguous`);
    else if (parts.every((p) => p !== undefined)) persisted.set(g, concatBytes(parts as Uint8Array[]));
  }
  for (const g of Object.keys(manifest.floors ?? {}).map(Number)) {
    if (!floors.has(g))
      persisted.delete(g); // its floor page failed (reported): the log cannot be placed
    else if (manifest.logs?.[g] === undefined) persisted.set(g, new Uint8Array(0)); // floored to its end
  }
  return { persisted, floors, leaves, pageOps, signedCheckpoints };
}

/** A listed commit page is the one the directory kept: its generation, length and commit salt. */
function checkListed(pageId: number, page: Uint8Array, info: PageInfo): void {
  if (pageGeneration(page) !== info.generation || page.length !== info.bytes || !equalBytes(pageSalt(page), info.salt))
    throw new PqdbError('CORRUPTION', `commit page ${pageId} is not the page the key directory lists`);
}

/** Decrypts every record version of a commit page (each failure reported). */
function checkRecords(run: VerifyRun, pageId: number, g: number, page: Uint8Array, ops: IndexedOp[], ring: KeyRing) {
  for (const op of ops) {
    if (op.kind !== 'put') continue;
    try {
      const blob = page.subarray(op.offset, op.offset + op.length);
      openStored('verify', blob, { ...op, generation: g, salt: pageSalt(page) }, ring).fill(0);
      run.counts.recordsDecrypted++;
    } catch (e) {
      run.fail(`record ${op.collection}/${op.id} (page ${pageId})`, e);
    }
  }
}

/** The Merkle leaves of a commit page's operations: every operation is a leaf, a delete too (its leaf has no record). */
function leafHashes(storeId: Uint8Array, keys: KeyRing, g: number, page: Uint8Array, ops: IndexedOp[]): Uint8Array {
  const salt = pageSalt(page);
  const blind = leafBlind(keys, salt);
  return recordLeafHashes(
    storeId,
    ops.map((op) => {
      const record = op.kind === 'put' ? page.subarray(op.offset, op.offset + op.length) : undefined;
      const governance = op.kind === 'put' ? op.governance : '';
      const { collection, id, sequence } = op;
      return { collection, id, sequence, suite: record?.[1] ?? 0, generation: g, record, governance, salt, blind };
    }),
  );
}
