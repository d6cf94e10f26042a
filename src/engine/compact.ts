// Compaction (DESIGN §6): rewrites the live records of commit pages that are mostly dead (their
// records updated, deleted or migrated since) into new commit pages, and deletes the old pages, so a
// store updated for years stays near its live size. A page store that keeps deleted bytes in files
// (node-fs segments) gives them back with its segment reclaim (`reclaim`), called at the end.
//
// Each victim page is one commit: its live records are opened, re-sealed under the current key
// generation with their own suite and governance (fresh sequences: a new leaf each, so the Merkle
// log only grows) and written as copies, and the page is deleted in the same atomic commit. A kill
// at any point leaves either the page or its records' new versions, never neither. Before the
// first victim the store persists its key directory and the log pages with it (a persist), so
// the deleted pages are covered by both: opening never needs them, and their leaves stay in the
// log pages, so every earlier checkpoint and inclusion proof still verifies.
//
// Then the history below the generation's first live commit page stops costing disk (unless the
// store keeps its whole history, `keepHistory`): a signed checkpoint covers the log (one is signed
// when the store holds signer keys), and one commit raises the log's history floor there
// (history-floor.ts): it writes the floor page (the compact range there, and a consistency proof
// from every older checkpoint to it), deletes the log pages below the floor and rewrites the one
// that straddles it. Every live record's leaf lies above the floor, so its inclusion proof against
// the newest checkpoint stands; sealed exports made before carry their own proofs.
//
// A page holding a delete operation is never deleted: replaying the remaining pages (what the
// independent verifier does) must not bring a deleted record back from an older page. Pages of an
// older key generation are left to migration; records whose suite no longer takes writes, or whose
// scope the current authority does not let migrate, keep their page.

import { PqdbError } from '../errors';
import { pauseIfSpent, sliceSpent, yieldToEventLoop } from '../_yield';
import { supportsOf } from '../storage/page-store';
import { decodePage, pageKey, pageSalt } from './page-format';
import { rewrite, type RewriteContext } from './rewrite';
import type { PageStore } from '../storage/page-store';
import type { AppliedCommit, CommitPipeline, Draft } from './commit';
import type { KeyDirectory } from './directory';
import type { RecordIO } from './records';
import type { KeyRing } from './keys';
import type { PageCache } from './page-cache';
import type { Checkpoints } from './checkpoints';
import type { MerkleLogs } from './merkle-log';
import { opLeafHashes } from './apply';
import { encodeFloorPage, nextFloor } from './history-floor';
import { readFloors } from './replay';
import { HASH_BYTES } from '../crypto/merkle';
import { equalBytes } from '../_bytes';
import { b64 } from '../_encoding';
import { sha384 } from '../kernels/sha2';
import type { LogPageRef } from './manifest';
import { encodeLogPage } from './page-format';

/** What a compaction uses of the engine (engine.ts builds it). */
export interface CompactContext {
  readonly pages: PageStore;
  readonly pipeline: Pick<CommitPipeline, 'manifest' | 'run'>;
  readonly directory: KeyDirectory;
  readonly records: RewriteContext['from'] & RewriteContext['to'];
  readonly keys: Pick<KeyRing, 'current' | 'generationKey'>;
  readonly cache: Pick<PageCache, 'get'>;
  readonly checkpoints: Pick<Checkpoints, 'persist' | 'checkpoint' | 'canSign' | 'list'>;
  readonly logs: MerkleLogs;
  readonly storeId: Uint8Array;
  /** The blind of the leaves of a page with this commit salt (keys.ts leafBlind). */
  blind(salt: Uint8Array): Uint8Array;
  /** Keep every leaf of the Merkle logs (the store's `keepHistory` option): no history floor is raised. */
  readonly keepHistory: boolean;
  readonly readOnly: boolean;
  /** Throws NOT_OPEN once the store is closed. */
  live(): void;
}

/** What `compact` takes. */
export interface CompactOptions {
  /** Pages whose dead bytes are at least this fraction of their length are rewritten (default 0.5). */
  minDeadFraction?: number;
  /** At most this many pages are rewritten (default: every one that qualifies). */
  maxPages?: number;
  /** Called after each page. */
  onProgress?(progress: CompactProgress): void;
  /** Keep every leaf this time (default: the store's `keepHistory` option): no history floor is raised. */
  keepHistory?: boolean;
}

export interface CompactProgress {
  pagesRewritten: number;
  recordsMoved: number;
  /** Pages chosen in all. */
  pages: number;
}

/** A history floor a compaction raised: generation `generation`'s leaves below `to` are no longer stored. */
export interface HistoryFloorRaised {
  generation: number;
  from: number;
  to: number;
  /** Log pages deleted (the one across the floor written again from it counts). */
  logPagesDeleted: number;
}

/** What `compact` did. */
export interface CompactResult {
  /** Commit pages deleted after their live records were moved. */
  pagesRewritten: number;
  recordsMoved: number;
  /** Mostly dead pages kept (a delete operation in them, a suite that takes no writes, authority). */
  pagesKept: number;
  /** The page store's stored bytes before and after (framing and dead bytes included). */
  bytesBefore: number;
  bytesAfter: number;
  /** Sum of the live records' sealed lengths after. */
  liveRecordBytes: number;
  /** The current generation's history floor raised at the end (leaves below `to` no longer stored), when it was. */
  historyFloor?: HistoryFloorRaised;
  /** Every history floor raised at the end: the current generation's, and each retired one's (to its end). */
  historyFloors?: HistoryFloorRaised[];
  /** Set when nothing was done, and why. */
  skipped?: string;
  ms: number;
}

/** The dead fraction at which a compaction has the page store reclaim a segment. */
const SEGMENT_DEAD_FRACTION = 0.25;

/** Automatic compaction defaults. */
export const AUTO_COMPACT_DEAD_RATIO = 0.5;
export const AUTO_COMPACT_MIN_DEAD_BYTES = 64 * 1024 * 1024;

/**
 * The automatic compaction rule of the `autoCompact` option, or undefined when it is off.
 * @throws TypeError, RangeError for a malformed option
 */
export function autoCompaction(
  option: { deadRatio?: number; minDeadBytes?: number } | false | undefined,
): { deadRatio: number; minDeadBytes: number } | undefined {
  if (option === false) return undefined;
  if (option !== undefined && (typeof option !== 'object' || option === null))
    throw new TypeError('"autoCompact" expected { deadRatio?, minDeadBytes? } or false');
  const deadRatio = option?.deadRatio ?? AUTO_COMPACT_DEAD_RATIO;
  const minDeadBytes = option?.minDeadBytes ?? AUTO_COMPACT_MIN_DEAD_BYTES;
  if (!(deadRatio > 0 && deadRatio <= 1) || !(minDeadBytes >= 0))
    throw new RangeError('"autoCompact" expected deadRatio in (0, 1] and minDeadBytes >= 0');
  return { deadRatio, minDeadBytes };
}

/**
 * The `applied` hook of the `autoCompact` option (engine.ts registers it), or undefined when it is
 * off: after a commit of records, queues one compaction (`run`) at a time once the dead bytes pass
 * the rule. Dead bytes a compaction left (pages it keeps) do not start another one by themselves.
 * @throws TypeError, RangeError for a malformed option
 */
export function autoCompactor(
  option: { deadRatio?: number; minDeadBytes?: number } | false | undefined,
  directory: Pick<KeyDirectory, 'liveBytes'>,
  run: () => Promise<unknown>,
): ((c: AppliedCommit) => void) | undefined {
  const auto = autoCompaction(option);
  if (auto === undefined) return undefined;
  let compacting: Promise<unknown> | undefined;
  let deadAfter = 0;
  return (c) => {
    if (c.foreign || compacting !== undefined || !c.writes.some((w) => w.copy !== true)) return;
    // After a durable commit: nothing here may load (or fail to load) a directory partition.
    const { pageBytes, recordBytes } = directory.liveBytes(true);
    const dead = pageBytes - recordBytes;
    if (dead - deadAfter < auto.minDeadBytes || dead < auto.deadRatio * pageBytes) return;
    compacting = run().then(
      () => {
        const after = directory.liveBytes(true);
        deadAfter = after.pageBytes - after.recordBytes;
        compacting = undefined;
      },
      () => (compacting = undefined), // a failed one leaves the store as it was; the next commit tries again
    );
  };
}

/**
 * Compacts the store (see the file comment).
 * @throws PqdbError NOT_OPEN, READ_ONLY; whatever a commit throws (nothing is lost: each page is one
 * atomic commit).
 * @example const r = await store.compact(); console.log(r.bytesBefore, '→', r.bytesAfter);
 */
export async function compact(p: CompactContext, options: CompactOptions = {}): Promise<CompactResult> {
  const started = performance.now();
  const minDead = options.minDeadFraction ?? 0.5;
  if (!(minDead >= 0 && minDead <= 1)) throw new RangeError('"minDeadFraction" expected a number in [0, 1]');
  const maxPages = options.maxPages ?? Infinity;
  if (!(maxPages >= 0)) throw new RangeError('"maxPages" expected a number >= 0');
  if (options.keepHistory !== undefined && typeof options.keepHistory !== 'boolean')
    throw new TypeError('"keepHistory" expected a boolean');
  p.live();
  if (p.readOnly) throw new PqdbError('READ_ONLY', 'the store was opened read-only');
  const bytesBefore = (await p.pages.stats()).storedBytes;
  const result: CompactResult = {
    pagesRewritten: 0,
    recordsMoved: 0,
    pagesKept: 0,
    bytesBefore,
    bytesAfter: bytesBefore,
    liveRecordBytes: 0,
    ms: 0,
  };
  const done = async (skipped?: string) => {
    // A page store that keeps deleted pages' bytes in files reclaims them (node-fs segments): every
    // segment a quarter dead, asked for explicitly (its own automatic steps wait for half).
    if (supportsOf(p.pages).reclaim) await p.pages.reclaim!({ minDeadFraction: SEGMENT_DEAD_FRACTION });
    result.bytesAfter = (await p.pages.stats()).storedBytes;
    result.liveRecordBytes = p.directory.liveBytes().recordBytes;
    result.ms = performance.now() - started;
    return skipped === undefined ? result : { ...result, skipped };
  };
  if (p.pipeline.manifest.migration !== undefined) return done('a migration is under way: compact after it');

  // The directory and the log pages cover every commit page so far.
  await p.checkpoints.persist();
  const afterPage = p.pipeline.manifest.directory?.afterPage ?? 0;
  const g = p.keys.current();
  await p.directory.loadAllInSteps(pauseIfSpent); // a base still in partitions, beside reads
  const live = p.directory.livePerPage();
  const victims = p.directory
    .pages()
    .filter(([id, info]) => {
      if (id > afterPage || info.generation !== g || info.bytes === 0) return false;
      return (info.bytes - (live.get(id) ?? 0)) / info.bytes >= minDead;
    })
    .map(([id]) => id)
    .slice(0, maxPages);

  for (const victim of victims) {
    await yieldToEventLoop(); // reads and writes get in between pages
    const moved = await p.pipeline.run(async (draft) => {
      const info = p.directory.page(victim);
      if (info === undefined) return (draft.discard(), 0); // deleted meanwhile
      // A migration begun since made a newer generation: the page is an older one's, left to it.
      if (p.keys.current() !== g) return (draft.discard(), -1);
      const page = await p.cache.get(victim);
      const ops = decodePage(victim, p.keys.generationKey(info.generation, 'page', pageKey), page);
      if (ops.some((op) => op.kind === 'delete')) return (draft.discard(), -1);
      const registry = draft.currentRegistry;
      const ctx = { from: p.records, to: p.records, generation: () => p.keys.current() };
      let moved = 0;
      for (const op of ops) {
        if (op.kind !== 'put') continue;
        if (sliceSpent()) await yieldToEventLoop(); // reads first, within a page too
        const loc = p.directory.get(op.collection, op.id);
        // Superseded records are dead: only the version the directory names here moves.
        if (loc === undefined || loc.pageId !== victim || loc.offset !== op.offset) continue;
        try {
          registry.checkWrite(loc.suite);
        } catch {
          return (draft.discard(), -1);
        }
        // Re-sealed with its own suite and governance, as a copy; a scope the policy in force does
        // not let migrate (the copy gate) keeps the page.
        const spec = { collection: op.collection, id: op.id, loc, page, suite: loc.suite, copy: true };
        const r = await rewrite(ctx, draft, { purpose: 'copy', ...spec });
        if (r.kind === 'withheld') return (draft.discard(), -1);
        if (r.kind === 'failed') throw r.error;
        moved++;
      }
      draft.deletePage(victim);
      return moved;
    });
    if (moved < 0) result.pagesKept++;
    else if (p.directory.page(victim) === undefined) {
      result.pagesRewritten++;
      result.recordsMoved += moved;
    }
    options.onProgress?.({
      pagesRewritten: result.pagesRewritten,
      recordsMoved: result.recordsMoved,
      pages: victims.length,
    });
  }
  if (!(options.keepHistory ?? p.keepHistory)) {
    p.live();
    const raised = await raiseHistoryFloor(p);
    const now = raised.find((f) => f.generation === p.keys.current());
    if (now !== undefined) result.historyFloor = now;
    if (raised.length > 0) result.historyFloors = raised;
  }
  return done();
}

/**
 * Raises the history floor of the current generation's log to the first leaf of its first live
 * commit page, and of each retired generation's (no records left) to its end: at most to what log
 * pages and (with signer keys) a signed checkpoint cover. One commit for all; undefined for the
 * current generation when its floor would not rise.
 */
async function raiseHistoryFloor(p: CompactContext): Promise<HistoryFloorRaised[]> {
  // A signed checkpoint covers the log first; without signer keys, the log pages are written.
  if (p.checkpoints.canSign) await p.checkpoints.checkpoint(true);
  else await p.checkpoints.persist();
  return p.pipeline.run(async (draft) => {
    const raised: HistoryFloorRaised[] = [];
    const current = p.keys.current();
    const retired = (draft.manifest.retired ?? []).filter((g) => g !== current);
    for (const g of [current, ...retired]) {
      const r = await raiseFloorOf(p, draft, g, g === current);
      if (r !== undefined) raised.push(r);
    }
    if (raised.length === 0) draft.discard();
    return raised;
  });
}

/** Raises generation `g`'s floor in `draft` (see raiseHistoryFloor); undefined when it would not rise. */
async function raiseFloorOf(
  p: CompactContext,
  draft: Draft,
  g: number,
  current: boolean,
): Promise<HistoryFloorRaised | undefined> {
  const m = draft.manifest;
  const from = p.logs.floorOf(g);
  const refs = m.logs?.[g] ?? [];
  let to = Math.min(p.logs.size(g), refs.at(-1)?.to ?? from);
  const signed = p.checkpoints.list.filter((c) => c.generation === g);
  if (signed.length > 0) to = Math.min(to, signed[signed.length - 1].size);
  // Below the first live commit page of the generation, no leaf is needed: every page before it
  // is gone, and leaves grow with page ids within a generation. A retired generation has none.
  const first = p.directory.pages().find(([, info]) => info.generation === g);
  if (first !== undefined && !current) return undefined;
  if (first !== undefined) {
    await p.logs.load(g);
    to = Math.min(to, await firstLeaf(p, g, first[0], from));
  }
  if (to <= from) return undefined;
  const tree = await p.logs.tree(g, to);
  const frontier = await p.logs.frontierAt(g, to);
  const old = (await readFloors(p.pages, m)).get(g);
  const floor = nextFloor(
    g,
    old,
    tree,
    frontier,
    signed.map((c) => c.size),
  );
  const bytes = encodeFloorPage(floor);
  const pageId = draft.pageId();
  draft.addPage({ id: pageId, bytes });
  if (m.floors?.[g] !== undefined) draft.deletePage(m.floors[g].pageId);
  m.floors = { ...(m.floors ?? {}), [g]: { pageId, size: to, hash: b64(sha384(bytes)) } };
  // Log pages below the floor go; the one across it is written again from the floor.
  const kept: LogPageRef[] = [];
  let deleted = 0;
  for (const ref of refs) {
    if (ref.to <= to) {
      draft.deletePage(ref.pageId);
      deleted++;
    } else if (ref.from < to) {
      const leaves = await p.logs.since(g, to);
      const id = draft.pageId();
      draft.addPage({
        id,
        bytes: await encodeLogPage(g, to, leaves.subarray(0, (ref.to - to) * HASH_BYTES), pauseIfSpent),
      });
      draft.deletePage(ref.pageId);
      kept.push({ pageId: id, from: to, to: ref.to });
      deleted++;
    } else kept.push(ref);
  }
  m.logs = { ...(m.logs ?? {}), [g]: kept };
  if (kept.length === 0) delete m.logs[g];
  draft.afterCommit(() => p.logs.raiseFloor(g, { size: to, frontier }));
  return { generation: g, from, to, logPagesDeleted: deleted };
}

/**
 * The index in generation `g`'s log (loaded, held from `from`) of the first leaf of commit page
 * `pageId`: its operations' leaves, recomputed, are found there.
 * @throws PqdbError INTERNAL when they are not in the log
 */
async function firstLeaf(p: CompactContext, g: number, pageId: number, from: number): Promise<number> {
  const page = await p.cache.get(pageId);
  const ops = decodePage(pageId, p.keys.generationKey(g, 'page', pageKey), page);
  const leaves = opLeafHashes(p.storeId, g, page, ops, p.blind(pageSalt(page)));
  // A live record of the page gives the place at once; a page of dead records is looked for.
  const log = p.logs.log(g);
  const n = ops.length;
  const at = (i: number) => equalBytes(log.subarray((i - from) * HASH_BYTES, (i - from + n) * HASH_BYTES), leaves);
  for (let k = 0; k < n; k++) {
    const op = ops[k];
    if (op.kind !== 'put') continue;
    const loc = p.directory.get(op.collection, op.id);
    if (loc !== undefined && loc.pageId === pageId && loc.offset === op.offset && at(loc.leafIndex - k))
      return loc.leafIndex - k;
  }
  const size = p.logs.size(g);
  for (let i = from; i + n <= size; i++) {
    if ((i & 0xffff) === 0) await pauseIfSpent();
    if (log[(i - from) * HASH_BYTES] === leaves[0] && at(i)) return i;
  }
  throw new PqdbError('INTERNAL', `the leaves of commit page ${pageId} are not in the log of generation ${g}`);
}
