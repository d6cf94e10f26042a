// Replay (DESIGN §6): the store's in-memory state rebuilt from its pages — the key directory, each
// generation's Merkle log and the signed checkpoints — as opening a store needs it, each commit page
// applied by apply.ts's applyCommitPage, the step every later commit goes through too, so the
// state after a commit and after a reopen cannot differ.
//
// Pages and manifest change only together (atomic PageStore commits), so a page's role comes from
// the manifest and the persisted key directory, never from its magic bytes: the live commit pages
// are those the directory lists (up to its `afterPage`, not read here) and the stored pages after
// `afterPage` and below `nextPageId` that the manifest does not name as log, index, checkpoint or
// directory pages — each of those must open as a commit page. Pages at or above `nextPageId` were
// written by a commit whose manifest never landed (never acknowledged) and are dropped, or only
// reported when opened read-only. A page up to `afterPage` that neither the manifest nor the
// directory names (a superseded page put back) is reported and left alone.

import { PqdbError } from '../errors';
import { supportsOf, type PageStore } from '../storage/page-store';
import { readPagesOf, readRangeOf } from '../storage/page-store-base';
import { decodeCheckpoint, checkpointHash, type Checkpoint } from '../crypto/proofs';
import { HASH_BYTES } from '../crypto/merkle';
import { concatBytes, equalBytes } from '../_bytes';
import type { KeyRing } from './keys';
import { checkPart, concatRows, type KeyDirectory, type Rows } from './directory';
import type { MerkleLogs } from './merkle-log';
import { type Manifest } from './manifest';
import { unb64 } from '../_encoding';
import type { CommitPage } from './commit';
import { applyCommitPage, type PageApplyContext } from './apply';
import { decodeLogPage, decodePage, pageGeneration, pageKey, pageKind } from './page-format';
import { decodeFloorPage, type HistoryFloor } from './history-floor';
import { sha384 } from '../kernels/sha2';
import {
  applySnapshot,
  decodeSnapshot,
  partSource,
  readSnapshot,
  openSnapshot,
  DIRECTORY_KEY_LABEL,
  type Snapshot,
} from './directory';

/** Commit pages replay reads at a time. */
const REPLAY_READ_PAGES = 64;

/** A checkpoint with the signed bytes it was decoded from. */
export type SignedCheckpoint = Checkpoint & { signed: Uint8Array };

/** A commit page to apply: its id, generation, bytes and decoded operations (apply.ts). */
export type ReplayPage = CommitPage;

/** What replay rebuilds: the whole directory and logs, and the rest of what applying a page uses. */
export interface ReplayTarget extends PageApplyContext {
  readonly directory: KeyDirectory;
  readonly logs: MerkleLogs;
}

/** What replay found besides the state it rebuilt. */
export interface ReplayResult {
  /** Every signed checkpoint, oldest first. */
  checkpoints: SignedCheckpoint[];
  /** What opening repaired (or, read-only, would repair). */
  recovered: string[];
  /** Ids the lexical indexes must re-index, as the persisted directory kept them. */
  pending?: Record<string, string[]>;
  /** Per generation, its log's size where the persisted directory ends. */
  persistedLogs?: Record<string, number>;
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
  // Under a persisted directory they are not read (the logs start from its compact ranges), but for
  // a retired generation the directory does not cover.
  const known = new Map<number, Uint8Array>();
  const named = new Set<number>();
  const covered = manifest.directory !== undefined;
  // History floors: each generation's log goes on from the compact range its floor page holds.
  const floors = await readFloors(pages, manifest);
  for (const f of floors.values()) named.add(manifest.floors![f.generation].pageId);
  for (const [g, refs] of Object.entries(manifest.logs ?? {})) {
    if (!Array.isArray(refs))
      throw new PqdbError(
        'FORMAT_VERSION',
        'the store lists its Merkle log in a format of an earlier pre-release; recreate it',
      );
    for (const { pageId } of refs) named.add(pageId);
    if (!covered || (manifest.retired ?? []).includes(Number(g)))
      known.set(Number(g), await logLeaves(pages, manifest, Number(g)));
  }
  // A log not restored from the persisted directory starts at its floor (held leaves from there).
  const restoreFloor = (g: number) => {
    const f = floors.get(g);
    if (f !== undefined && target.logs.size(g) === 0) target.logs.restore(g, f.size, f.frontier, f);
  };
  if (!covered) for (const g of floors.keys()) restoreFloor(g);
  for (const { pageId } of Object.values(manifest.indexes ?? {})) named.add(pageId);
  for (const { pageId } of Object.values(manifest.fieldIndexes ?? {})) named.add(pageId);
  // Deleted by a commit while a backup pinned them (pins.ts): not part of the store.
  const held = manifest.heldPages ?? [];
  for (const pageId of held) named.add(pageId);
  for (const pageId of manifest.checkpointPages ?? []) {
    const page = await pages.readPage(pageId);
    const c = page && decodeCheckpoint(page);
    if (page === undefined || c === undefined)
      throw new PqdbError('CORRUPTION', `checkpoint page ${pageId} is missing or malformed`);
    checkpoints.push({ ...c, signed: page });
    named.add(pageId);
  }
  // The persisted directory: every commit page up to `afterPage` is in it and is not read.
  const persisted = await loadDirectory(pages, manifest, keys, target, named, floors);
  const afterPage = persisted?.afterPage ?? 0;
  const orphans: number[] = [];
  const live: number[] = [];
  let unreferenced = 0;
  let found = 0;
  for (const pageId of await pages.listPages()) {
    if (named.has(pageId)) continue;
    if (pageId >= manifest.nextPageId)
      orphans.push(pageId); // its commit's manifest never landed: never acknowledged
    else if (pageId > afterPage) live.push(pageId);
    else if (target.directory.page(pageId) !== undefined) found++;
    else unreferenced++;
  }
  if (persisted !== undefined && found !== target.directory.pages().length) {
    const listed = new Set(await pages.listPages());
    const missing = target.directory.pages().find(([id]) => !listed.has(id))?.[0];
    throw new PqdbError('CORRUPTION', `commit page ${missing} is missing`);
  }
  // Read in runs (neighbouring pages in one read where the medium can), applied in page order.
  for (let from = 0; from < live.length; from += REPLAY_READ_PAGES) {
    const ids = live.slice(from, from + REPLAY_READ_PAGES);
    const read = await readPagesOf(pages, ids);
    for (let k = 0; k < ids.length; k++) {
      const pageId = ids[k];
      const bytes = read[k];
      read[k] = undefined;
      if (bytes === undefined) throw new PqdbError('CORRUPTION', `commit page ${pageId} is missing`);
      // Its place makes it a live commit page, whatever its first bytes say: the engine never
      // leaves another page there, so a log, index, checkpoint or directory page in it was put there.
      const kind = pageKind(bytes);
      if (kind !== 'commit')
        throw new PqdbError(
          'CORRUPTION',
          `commit page ${pageId} holds ${kind === undefined ? 'no pqdb page' : `a ${kind} page`}`,
        );
      const generation = pageGeneration(bytes);
      const ops = decodePage(pageId, keys.generationKey(generation, 'page', pageKey), bytes);
      applyCommitPage(
        target,
        { id: pageId, generation, bytes, ops },
        known.get(generation),
        target.logs.floorOf(generation),
      );
    }
  }
  // A retired generation has no commit pages left: its log is the persisted one.
  for (const g of manifest.retired ?? [])
    if (target.logs.size(g) === 0) {
      restoreFloor(g);
      target.logs.append(g, known.get(g) ?? new Uint8Array(0));
    }
  // The live commit pages must give exactly the logs the manifest names: a page dropped, put back
  // from an older copy, taken from elsewhere or swapped changes a log's size or root.
  const heads = manifest.heads ?? {};
  for (const g of new Set([...Object.keys(heads).map(Number), ...keys.generations(), ...(manifest.retired ?? [])])) {
    const head = heads[g];
    const size = target.logs.size(g);
    if ((head?.size ?? 0) !== size || (head !== undefined && !equalBytes(target.logs.root(g), unb64(head.root))))
      throw new PqdbError(
        'CORRUPTION',
        `the commit pages of generation ${g} do not give the log the manifest names (${size} of ${head?.size ?? 0} leaves, or another root): a page is missing, older or foreign`,
      );
  }
  await checkCheckpoints(checkpoints, target, manifest.lastCheckpoint);
  for (const f of floors.values()) {
    const sizes = checkpoints.filter((c) => c.generation === f.generation).map((c) => c.size);
    if (sizes.length > 0 && sizes[sizes.length - 1] < f.size)
      throw new PqdbError(
        'CORRUPTION',
        `the history floor of generation ${f.generation} lies past its last checkpoint`,
      );
  }
  if (unreferenced > 0)
    recovered.push(
      `${unreferenced} page(s) the manifest and the key directory do not name (log, index, checkpoint or deleted pages) are ignored`,
    );
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
  if (held.length > 0 && !readOnly) {
    await pages.deletePages(held); // the manifest's list goes with the next commit
    recovered.push(`deleted ${held.length} page(s) a commit deleted while a backup held them`);
  }
  return { checkpoints, recovered, pending: persisted?.pending, persistedLogs: persisted?.logs };
}

/**
 * The history floors `manifest` names, each read, checked against the hash the manifest keeps and
 * decoded (the proofs in it are verifyStore's to check; the compact range is checked against the
 * log's persisted root when leaves are loaded).
 * @throws PqdbError CORRUPTION (a floor page missing, another one, malformed)
 */
export async function readFloors(pages: PageStore, manifest: Manifest): Promise<Map<number, HistoryFloor>> {
  const floors = new Map<number, HistoryFloor>();
  for (const [g, ref] of Object.entries(manifest.floors ?? {})) {
    const page = await pages.readPage(ref.pageId);
    if (page === undefined) throw new PqdbError('CORRUPTION', `the history floor page ${ref.pageId} is missing`);
    if (!equalBytes(sha384(page), unb64(ref.hash)))
      throw new PqdbError('CORRUPTION', `the history floor page ${ref.pageId} is not the one the manifest names`);
    floors.set(Number(g), decodeFloorPage(page, Number(g), ref.size));
  }
  return floors;
}

/**
 * Leaves [floor, to) of generation `g`'s log from the log pages `manifest` names (all of them when
 * `to` is omitted), checked contiguous from the generation's history floor (0 without one).
 * @throws PqdbError CORRUPTION (a log page missing or malformed, a gap, fewer leaves than asked)
 */
export async function logLeaves(pages: PageStore, manifest: Manifest, g: number, to?: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  const floor = manifest.floors?.[g]?.size ?? 0;
  let at = floor;
  for (const ref of manifest.logs?.[g] ?? []) {
    if (to !== undefined && at >= to) break;
    const page = await pages.readPage(ref.pageId);
    if (page === undefined) throw new PqdbError('CORRUPTION', `log page ${ref.pageId} is missing`);
    if (ref.from !== at)
      throw new PqdbError('CORRUPTION', `the log pages of generation ${g} are not contiguous at leaf ${at}`);
    parts.push(decodeLogPage(page, g, ref.from, ref.to));
    at = ref.to;
  }
  if (to !== undefined && at < to)
    throw new PqdbError('CORRUPTION', `the log pages of generation ${g} hold ${at} leaves, not ${to}`);
  const all = concatBytes(parts);
  return to === undefined ? all : all.subarray(0, (to - floor) * HASH_BYTES);
}

/**
 * Loads the persisted key directory the manifest names (its base snapshot, then its runs), and each
 * generation's log up to where it ends, from the leaves persisted in log pages (`known`). Its pages
 * join `named`. Nothing is loaded when the manifest names none.
 * @throws PqdbError CORRUPTION (a page missing, a snapshot that does not fit the manifest or the
 * log pages), AUTH_FAILED (a page that does not open).
 */
async function loadDirectory(
  pages: PageStore,
  manifest: Manifest,
  keys: KeyRing,
  target: ReplayTarget,
  named: Set<number>,
  floors: ReadonlyMap<number, HistoryFloor>,
): Promise<{ afterPage: number; pending?: Record<string, string[]>; logs: Record<string, number> } | undefined> {
  const ref = manifest.directory;
  if (ref === undefined) return undefined;
  const key = keys.storeKey(DIRECTORY_KEY_LABEL);
  let last: ReturnType<typeof decodeSnapshot>['header'] | undefined;
  let runRows = 0;
  for (const s of ref.snapshots) {
    // With its length known, each page is read whole as a range, one at a time: the parts' AEAD
    // tags authenticate them (the page store's checksum pass over megabytes is not needed), and a
    // page is let go once opened.
    let plain: Uint8Array;
    if (s.bytes !== undefined)
      plain = await readSnapshot(key, s.pages, s.bytes, (id, length) => readRangeOf(pages, id, 0, length));
    else {
      const read = await readPagesOf(pages, s.pages);
      const missing = s.pages.find((_, i) => read[i] === undefined);
      if (missing !== undefined) throw new PqdbError('CORRUPTION', `directory page ${missing} is missing`);
      plain = openSnapshot(key, s.pages, read as Uint8Array[]);
    }
    let lazy: Snapshot['header'] | undefined;
    try {
      const snap = decodeSnapshot(plain);
      const parts = snap.header.parts;
      const rows =
        parts !== undefined
          ? Object.values(parts.tables).reduce((n, t) => t.rows.reduce((a, b) => a + b, n), 0)
          : snap.collections.reduce((n, c) => n + c.rows.n, 0);
      if (snap.header.kind !== s.kind || rows !== s.rows || snap.header.afterPage < (last?.afterPage ?? 0))
        throw new PqdbError('CORRUPTION', 'the persisted key directory does not match the manifest');
      applySnapshot(target.directory, snap, s.kind === 'base');
      if (s.kind === 'run') runRows += rows;
      last = snap.header;
      if (parts !== undefined) lazy = snap.header;
      // A base's columns are the tables' memory from now on; a run's rows were copied.
      if (s.kind === 'run' || parts !== undefined) plain.fill(0);
    } catch (e) {
      plain.fill(0);
      throw e;
    }
    s.pages.forEach((id) => named.add(id));
    if (lazy !== undefined) await loadParts(pages, keys, target.directory, lazy, named);
  }
  if (last === undefined || last.afterPage > ref.afterPage)
    throw new PqdbError('CORRUPTION', 'the persisted key directory does not match the manifest');
  // Pages deleted since the last snapshot are changes of its next one (so they stay dropped).
  target.directory.loaded(ref.snapshots[0].rows, runRows);
  target.directory.dropPages(ref.dropped ?? []);
  for (const [g, size] of Object.entries(last.logs)) {
    if (size === 0) continue;
    const floor = floors.get(Number(g));
    const persistedTo = manifest.logs?.[g]?.at(-1)?.to ?? floor?.size ?? 0;
    const frontier = last.frontiers?.[g];
    if (persistedTo < size || frontier === undefined)
      throw new PqdbError(
        'CORRUPTION',
        `the log pages of generation ${g} hold fewer leaves than the persisted key directory covers`,
      );
    try {
      target.logs.restore(Number(g), size, frontier.map(unb64), floor);
    } catch (e) {
      if (e instanceof PqdbError) throw e;
      throw new PqdbError('CORRUPTION', `the persisted key directory has a bad compact range for generation ${g}`);
    }
  }
  return { afterPage: ref.afterPage, pending: last.pending, logs: last.logs };
}

/** Partitions read together when a base is loaded whole at the open (~175 KB each). */
const EAGER_PARTS = 16;

/**
 * Takes the partitions of base `head`: loaded on first use where the page store reads synchronously
 * (node-fs, memory), else read and loaded now. Their pages join `named`.
 * @throws PqdbError CORRUPTION (a partition's page missing, or not what its base says), AUTH_FAILED
 */
async function loadParts(
  pages: PageStore,
  keys: KeyRing,
  directory: KeyDirectory,
  head: Snapshot['header'],
  named: Set<number>,
): Promise<void> {
  const list = head.parts!.pages.flat();
  list.forEach((id) => named.add(id));
  const key = () => keys.storeKey(DIRECTORY_KEY_LABEL);
  if (supportsOf(pages).blockingReads) {
    const read = (id: number, length: number): Uint8Array | undefined => {
      const into = new Uint8Array(length);
      const got = pages.readRangeSync!(id, 0, length, into, true);
      if (got === -1) throw new PqdbError('IO_ERROR', `directory page ${id} could not be read`);
      return got === 1 ? into : undefined;
    };
    directory.lazyBase(partSource(head, key, read), list);
    return;
  }
  const held = new Map<number, Uint8Array | undefined>();
  const source = partSource(head, key, (id) => {
    const page = held.get(id);
    held.delete(id);
    return page;
  });
  // Every partition is read (a few at a time, in one batch where the medium can), opened and
  // checked as a lazy load checks it; then each table is built from all its rows in one pass, as a
  // base loaded whole is. Partitions without rows are not read (as a lazy load never reads them).
  const parts = head.parts!;
  const tables = Object.values(parts.tables);
  const rows = new Map<string, Rows[]>();
  const governance: string[] = [];
  const govIndex = new Map<string, number>();
  const wipes: (() => void)[] = [];
  try {
    for (let from = 0; from < parts.pages.length; from += EAGER_PARTS) {
      const wanted: number[] = [];
      for (let p = from; p < Math.min(parts.pages.length, from + EAGER_PARTS); p++)
        if (tables.some((t) => t.rows[p] > 0)) wanted.push(p);
      const ids = wanted.flatMap((p) => parts.pages[p]);
      const read = await readPagesOf(pages, ids);
      ids.forEach((id, i) => held.set(id, read[i]));
      for (const p of wanted) {
        const part = source.load(p);
        wipes.push(part.done);
        checkPart(source, p, part.collections);
        // The partition's governance numbers, in one list for all of them.
        const map = part.governance.map((g) => {
          let j = govIndex.get(g);
          if (j === undefined) govIndex.set(g, (j = governance.push(g) - 1));
          return j;
        });
        for (const { name, rows: r } of part.collections) {
          for (let i = 0; i < r.n; i++) r.governance[i] = map[r.governance[i]];
          let list = rows.get(name);
          if (list === undefined) rows.set(name, (list = []));
          list.push(r);
        }
      }
    }
    // Fresh columns (the partitions' plaintexts are wiped below), which the tables then own.
    for (const name of Object.keys(parts.tables))
      directory.table(name).applyRows(concatRows(rows.get(name) ?? []), governance, undefined, true);
  } finally {
    for (const wipe of wipes) wipe();
    held.clear();
  }
  directory.basePersisted(list);
}

/**
 * The signed checkpoints as opening checks them (their signatures are checked by verifyStore and
 * by whoever holds the signer's public key): each names this store, chains to the one before it by
 * hash and does not shrink its generation's log; the last of each generation covers no more than
 * the log holds and its root is the root of that many leaves of the log now (from the compact range
 * when it covers the whole log, so a cold open does not rehash the log); the newest one's hash is the
 * one the authenticated manifest names, and the others chain to it. Earlier checkpoints are
 * named by the authenticated manifest and chained to the last, whose root the log must give.
 * @throws PqdbError CORRUPTION for a checkpoint that fails any of these.
 */
async function checkCheckpoints(
  list: readonly SignedCheckpoint[],
  t: Pick<ReplayTarget, 'logs' | 'storeId'>,
  lastHash: string | undefined,
): Promise<void> {
  let previous: Uint8Array = new Uint8Array(48);
  const sizes = new Map<number, number>();
  const last = new Map<number, number>();
  list.forEach((c, i) => {
    const bad = (why: string) => {
      throw new PqdbError('CORRUPTION', `checkpoint ${i} (generation ${c.generation}, size ${c.size}) ${why}`);
    };
    if (!equalBytes(c.storeId, t.storeId)) bad('belongs to another store');
    if (!equalBytes(c.previous, previous)) bad('does not chain to the checkpoint before it');
    if (c.size < (sizes.get(c.generation) ?? 0)) bad('is smaller than an earlier checkpoint of its generation');
    if (t.logs.size(c.generation) < c.size) bad('covers more of the log than the store holds');
    sizes.set(c.generation, c.size);
    last.set(c.generation, i);
    previous = checkpointHash(c.signed);
  });
  // The chain ends at the hash the authenticated manifest names: no checkpoint page was replaced.
  if (list.length > 0 && (lastHash === undefined || !equalBytes(previous, unb64(lastHash))))
    throw new PqdbError('CORRUPTION', 'the checkpoint pages do not chain to the checkpoint the manifest names');
  for (const i of last.values()) {
    const c = list[i];
    if (!equalBytes(await t.logs.rootAt(c.generation, c.size), c.root))
      throw new PqdbError(
        'CORRUPTION',
        `checkpoint ${i} (generation ${c.generation}, size ${c.size}) does not match the log`,
      );
  }
}
