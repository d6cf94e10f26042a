// Managed copies (DESIGN §9, docs/authority.md): `store.backup(destination)` writes a consistent copy
// of the store into another page store while the store keeps serving, and every copy is kept in
// the store's inventory (the manifest's `copies`) until it is retired.
//
// A backup is the store's sealed pages as they stand at one commit, and a manifest for them: the
// store's own manifest at that commit, sealed again with one field added (`copy`: this is managed
// copy <id> of store <storeId>), so a copy opens only read-only (a restore, src/engine/restore.ts,
// turns it into a live store under new keys). Pages are immutable and only a commit deletes them,
// so the page list and the manifest are taken inside the commit queue with a pin (pins.ts) that
// holds back the deletions of later commits; the pages are then copied outside the queue in
// bounded batches (writes go on; memory is one batch, whatever the store's size), and the pin is
// released. The newest signed checkpoint covers the whole log of the page set taken (one is signed
// just before when it does not: queued back to back, no write comes between): the copy verifies on
// its own (verifyStore) against the signer key, and a restore, which takes only what a checkpoint
// covers, gets every record of it.
// Nothing is plaintext: the copy holds exactly the bytes the store holds.

import { PqdbError } from '../errors';
import { suite as suiteOf, type SuiteName } from '../crypto/suites';
import { checkpointHash } from '../crypto/proofs';
import type { PageStore } from '../storage/page-store';
import { readPagesOf } from '../storage/page-store-base';
import { pinPages, type Pinnable } from './pins';
import { pauseIfSpent } from '../_yield';
import type { Locations } from './store-options';
import { cloneManifest, encodeManifest, MANIFEST_KEY_LABEL, type CopyRecord, type Manifest } from './manifest';
import type { CommitPipeline } from './commit';
import type { KeyDirectory } from './directory';
import type { KeyRing } from './keys';
import type { Checkpoints } from './checkpoints';
import type { MerkleLogs } from './merkle-log';

/** What a backup uses of the engine (engine.ts builds it). */
export interface BackupContext {
  readonly pages: PageStore;
  readonly pipeline: Pick<CommitPipeline, 'manifest' | 'run' | 'exclusive' | 'idle'> & Pinnable;
  readonly directory: Pick<KeyDirectory, 'collections' | 'loadAllInSteps'>;
  readonly keys: Pick<KeyRing, 'current' | 'storeKey'>;
  readonly checkpoints: Pick<Checkpoints, 'canSign' | 'checkpoint' | 'list'>;
  readonly logs: Pick<MerkleLogs, 'size'>;
  /** Throws NOT_OPEN once the store is closed. */
  live(): void;
}

/** What the inventory's edits use of the engine. */
export interface InventoryContext {
  readonly pipeline: Pick<CommitPipeline, 'manifest' | 'run'>;
  /** Throws NOT_OPEN once the store is closed. */
  live(): void;
}
import { hex, unb64 } from '../_encoding';

/** A managed copy as `store.copies()` lists it. */
export interface ManagedCopy extends Omit<CopyRecord, 'suites'> {
  suites: SuiteName[];
}

/** What `store.backup` did. */
export interface BackupResult {
  /** The copy's inventory entry. */
  copy: ManagedCopy;
  /** Pages and bytes written to the destination. */
  pages: number;
  bytes: number;
  /** How long writes waited while the page list and manifest were taken (and pinned), in milliseconds. */
  pausedMs: number;
  /** Time of the whole backup, in milliseconds. */
  tookMs: number;
}

/** Where a copy goes: a page store opened for it (closed after, when `close`), its label, and the location it was named by. */
export interface CopyDestination {
  pages: PageStore;
  label: string;
  close: boolean;
  /** The location name (directory, database), when the page store was opened by name. */
  location?: string;
}

/**
 * The page store `destination` names: a location (directory, database name) opened through the
 * platform's `locations`, a PageStore given as it is, or (to read a copy) a backup file's bytes
 * (src/storage/archive.ts), its framing checked, in a memory page store.
 * @throws TypeError when a location is given and this entry has none
 */
export async function destinationOf(
  destination: string | PageStore | Uint8Array,
  locations: Locations | undefined,
  mode: 'create' | 'read',
): Promise<CopyDestination> {
  if (destination instanceof Uint8Array) {
    if (mode !== 'read') throw new TypeError('"destination" expected a non-empty string or a PageStore');
    const { openBackupFile } = await import('../storage/archive'); // loaded when a file is restored
    return { pages: await openBackupFile(destination), label: 'the backup file', close: true };
  }
  if (typeof destination === 'string') {
    if (destination.length === 0) throw new TypeError('"destination" expected a non-empty string or a PageStore');
    if (locations === undefined)
      throw new TypeError(
        `a location (${JSON.stringify(destination)}) needs the Node or browser build of pqdb: here, give a PageStore`,
      );
    return { pages: await locations.open(destination, mode), label: destination, close: true, location: destination };
  }
  if (destination === null || typeof destination !== 'object' || typeof destination.commit !== 'function')
    throw new TypeError('"destination" expected a non-empty string or a PageStore');
  return { pages: destination, label: `${destination.kind} page store`, close: false };
}

/** Pages written per destination commit: bounds the memory of one commit. */
const COMMIT_BYTES = 2 << 20;

export const randomId = (): string => hex(globalThis.crypto.getRandomValues(new Uint8Array(16)));

/** The inventory entry's public form. */
export function publicCopy(c: CopyRecord): ManagedCopy {
  return {
    ...structuredClone(c),
    suites: c.suites.map((s) => suiteOf(s).name),
  };
}

/** Generations and suites of the store's live records, and how many there are. */
export function heldRecords(p: { readonly directory: Pick<KeyDirectory, 'collections'> }): {
  generations: number[];
  suites: number[];
  records: number;
} {
  const generations = new Set<number>();
  const suites = new Set<number>();
  let records = 0;
  for (const [, table] of p.directory.collections()) records += table.addHeld(generations, suites);
  const sort = (s: Set<number>) => [...s].sort((a, b) => a - b);
  return { generations: sort(generations), suites: sort(suites), records };
}

/**
 * Writes a consistent copy of the store into `dest` (which must hold no store) and inventories it.
 * @throws PqdbError CONFLICT (the destination holds a store), READ_ONLY, NOT_OPEN, IO_ERROR;
 * TypeError without signer keys (the copy carries a signed checkpoint).
 */
export async function backup(p: BackupContext, dest: CopyDestination): Promise<BackupResult> {
  // A destination opened here is closed on every path, a refused one included: an open file store
  // left to the garbage collector has its descriptors closed with a warning on stderr.
  try {
    return await backupInto(p, dest);
  } finally {
    if (dest.close) await dest.pages.close();
  }
}

async function backupInto(p: BackupContext, dest: CopyDestination): Promise<BackupResult> {
  const started = performance.now();
  p.live();
  if (!p.checkpoints.canSign)
    throw new TypeError(
      'a backup needs the "signer" and "signerPublicKey" options: the copy carries a signed checkpoint',
    );
  if ((await dest.pages.readManifest()) !== undefined)
    throw new PqdbError('CONFLICT', `the backup destination ${dest.label} already holds a store`);
  // The page set at one commit, taken inside the commit queue right after a checkpoint (unless the
  // newest one covers the log): queued back to back, nothing comes between them, so the newest
  // checkpoint signs the whole log of the pages taken. Only the page list and the manifest are
  // taken there, and a pin (pins.ts) that holds back the deletions of the commits that follow: the
  // pages are read outside the queue, while writes go on.
  const id = randomId();
  let pausedMs = 0;
  // The key directory's partitions a store opened lazily, loaded here beside writes: in the queue,
  // counting the live records (heldRecords) then walks memory only.
  await p.directory.loadAllInSteps(pauseIfSpent);
  const signing = p.checkpoints.checkpoint(true);
  signing.catch(() => undefined); // rethrown in the queue
  const snapshot = await p.pipeline.exclusive(async () => {
    const last = await signing; // settled already: it ran before this task
    const t = performance.now();
    p.live();
    const g = p.keys.current();
    if (p.checkpoints.list.at(-1) !== last || last.generation !== g || last.size !== p.logs.size(g))
      throw new PqdbError('INTERNAL', 'the newest checkpoint does not sign the log it was taken of');
    const taken = await readSnapshot(p);
    pausedMs = performance.now() - t;
    return taken;
  });
  try {
    const time = new Date().toISOString();
    const entry: CopyRecord = {
      id,
      kind: 'backup',
      time,
      destination: dest.label,
      ...(dest.location !== undefined ? { location: dest.location } : {}),
      ...snapshot.held,
      commit: snapshot.m.commit,
      ...(snapshot.checkpoint !== undefined ? { checkpoint: hex(checkpointHash(snapshot.checkpoint.signed)) } : {}),
      state: 'retained',
    };
    const copyManifest: Manifest = { ...snapshot.m, copy: { id, of: snapshot.m.storeId, time } };
    const manifest = encodeManifest(copyManifest, p.keys.storeKey(MANIFEST_KEY_LABEL));
    // Background work: each step of the copy waits for the writes queued meanwhile, so a put beside
    // a backup shares the thread with one bounded step at most, never with the whole copy.
    const { pages, bytes } = await copyPages(p.pages, snapshot.ids, dest.pages, manifest, () => p.pipeline.idle());
    // The copy is durable: one commit inventories it and deletes the pages held back for it.
    await p.pipeline.run((draft) => {
      snapshot.pin.inCommit();
      draft.manifest.copies = [...(draft.manifest.copies ?? []), entry];
    });
    return { copy: publicCopy(entry), pages, bytes, pausedMs, tookMs: performance.now() - started };
  } finally {
    await snapshot.pin.release();
  }
}

/**
 * In the commit queue: the store's manifest, page list, newest checkpoint and live records as they
 * stand, and a pin on those pages (`pin`: released in the inventory's commit, or on its own). Pages
 * a commit deleted while an earlier pin was held are not part of the store: they are left out, and
 * so is their list.
 */
async function readSnapshot(p: BackupContext) {
  const m = cloneManifest(p.pipeline.manifest);
  const listed = await p.pages.listPages();
  const excluded = new Set(m.heldPages ?? []);
  delete m.heldPages;
  const ids = excluded.size > 0 ? listed.filter((x) => !excluded.has(x)) : listed;
  const held = heldRecords(p);
  const pin = pinPages(p.pipeline); // last: nothing throws after it
  return { m, ids, checkpoint: p.checkpoints.list.at(-1), held, pin };
}

/** Pages read per read call: with COMMIT_BYTES, bounds what a backup holds in memory. */
const READ_PAGES = 4;

/**
 * Copies pages `ids` of `from` into `to` in commits of about COMMIT_BYTES, then writes `manifest`
 * (a copy cut short by a crash has no manifest, so it is no store). What is held in memory is one
 * commit's pages and one read's, whatever the store's size.
 * @throws PqdbError CORRUPTION when a page listed (and pinned) cannot be read
 */
async function copyPages(
  from: PageStore,
  ids: readonly number[],
  to: PageStore,
  manifest: Uint8Array,
  yieldToWrites: () => Promise<void>,
): Promise<{ pages: number; bytes: number }> {
  let bytes = 0;
  let batch: { id: number; bytes: Uint8Array }[] = [];
  let batchBytes = 0;
  for (let at = 0; at < ids.length; at += READ_PAGES) {
    await yieldToWrites();
    const run = ids.slice(at, at + READ_PAGES);
    const read = await readPagesOf(from, run);
    for (let k = 0; k < run.length; k++) {
      const page = read[k];
      if (page === undefined) throw new PqdbError('CORRUPTION', `page ${run[k]} is listed but cannot be read`);
      batch.push({ id: run[k], bytes: page });
      batchBytes += page.length;
      bytes += page.length;
    }
    if (batchBytes >= COMMIT_BYTES) {
      await yieldToWrites();
      await to.commit({ pages: batch, transfer: true });
      batch = [];
      batchBytes = 0;
    }
  }
  await to.commit({ pages: batch, manifest, transfer: true });
  return { pages: ids.length, bytes };
}

/** The inventory, oldest first. */
export function listCopies(p: Pick<InventoryContext, 'pipeline'>): ManagedCopy[] {
  return (p.pipeline.manifest.copies ?? []).map(publicCopy);
}

/**
 * Records the retirement of copy `id`, after deleting it when `locations` reach it. A migration's old
 * generation is retired by `retire` (retireGenerations) instead.
 * @throws RangeError for an unknown id; PqdbError CONFLICT when it is retired already
 */
export async function retireCopy(
  p: InventoryContext,
  id: string,
  locations: Locations | undefined,
  retire: () => Promise<number[]>,
): Promise<{ copy: ManagedCopy; deleted: boolean }> {
  p.live();
  const find = (m: Manifest) => {
    const c = (m.copies ?? []).find((x) => x.id === id);
    if (c === undefined) throw new RangeError(`no managed copy ${JSON.stringify(id)} in this store's inventory`);
    if (c.state === 'retired') throw new PqdbError('CONFLICT', `managed copy ${id} is retired already`);
    return c;
  };
  const entry = find(p.pipeline.manifest);
  if (entry.kind === 'generation') {
    await retire(); // destroys the roots and deletes the pages, and marks the entry retired
    const c = (p.pipeline.manifest.copies ?? []).find((x) => x.id === id)!;
    return { copy: publicCopy(c), deleted: c.state === 'retired' };
  }
  // A backup written to a PageStore object has no location: its owner deletes it.
  const deleted =
    entry.kind === 'backup' && entry.location !== undefined && locations !== undefined
      ? await locations.remove(entry.location)
      : false;
  let out!: CopyRecord;
  await p.pipeline.run((draft) => {
    const c = find(draft.manifest);
    c.state = 'retired';
    c.retiredAt = new Date().toISOString();
    out = c;
  });
  return { copy: publicCopy(out), deleted };
}

/**
 * In a draft: marks the inventory entries of retired generations retired (retireGenerations).
 */
export function retireGenerationCopies(m: Manifest, generations: readonly number[]): void {
  const now = new Date().toISOString();
  for (const c of m.copies ?? [])
    if (c.kind === 'generation' && c.state !== 'retired' && c.generations.every((g) => generations.includes(g))) {
      c.state = 'retired';
      c.retiredAt = now;
    }
}

/** In a draft: inventories a migration's old generation(s), kept in the store after activation. */
export function inventoryGeneration(
  m: Manifest,
  held: { generations: number[]; suites: number[]; records: number },
): void {
  if (held.generations.length === 0) return;
  const entry: CopyRecord = {
    id: randomId(),
    kind: 'generation',
    time: new Date().toISOString(),
    destination: 'this store',
    ...held,
    commit: m.commit + 1,
    ...(m.lastCheckpoint !== undefined ? { checkpoint: hex(unb64(m.lastCheckpoint)) } : {}),
    state: 'retained',
  };
  m.copies = [...(m.copies ?? []), entry];
}
