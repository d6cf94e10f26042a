// A live migration's copy step (DESIGN §8): the records still to visit, in log order, and one
// bounded chunk of them re-encrypted into the target generation per commit, the durable cursor and
// the chunk's accounting written in the same commit.

import { PqdbError } from '../../errors';
import { HASH_BYTES } from '../../crypto/merkle';
import type { Governance } from '../../crypto/record';
import { suite as suiteOf, type SuiteName } from '../../crypto/suites';
import { CLOCK_STEP, sliceSpent, yieldToEventLoop } from '../../_yield';
import { Scratch } from '../../_bytes';
import type { KeyDirectory, Location } from '../directory';
import type { MerkleLogs } from '../merkle-log';
import type { RecordIO } from '../records';
import type { Draft } from '../commit';
import { rewrite } from '../rewrite';
import type { MigrationRecord } from '../manifest';
import type { PagePass } from './pages';

/** Records a copy chunk visits between reads ahead of it. */
const COPY_READ_STEP = 64;
/**
 * Sealed bytes per copy commit at most (a chunk also stops at chunkRecords): bounds the commit
 * page, and so the synchronous part of its commit (leaf hashes, checksum, directory updates).
 */
export const CHUNK_BYTES = 512 * 1024;
/** How far ahead of the copy, in source records, the next source page is read. */
const READ_AHEAD_RECORDS = 256;
/** Failures kept in the manifest (the count covers all). */
export const MAX_FAILURES_KEPT = 100;

/**
 * What current authority (DESIGN §9) is asked: whether a migration may run (`migrate`, each time a
 * process starts or resumes it), and whether one record may be copied (`copy`).
 */
export type AuthorityRequest =
  | { operation: 'migrate'; to: SuiteName; collections: readonly string[] }
  | { operation: 'copy'; to: SuiteName; collection: string; id: string; governance: Governance };

/**
 * Current authority: true allows. False for `migrate` stops the migration with AUTHORITY_DENIED
 * before it writes anything; false for `copy` withholds the record (it stays in its generation).
 */
export type AuthorityCheck = (request: AuthorityRequest) => boolean;

/**
 * The records a migration still has to visit, in log order: entry i is id ids[i] of collection
 * names[cols[i]], leaf leaves[i] of generation gens[i]. Parallel arrays, not an object per record:
 * 100,000 small objects alive for the whole copy made the collector's work (and pauses) larger.
 */
export interface SourceQueue {
  ids: string[];
  gens: Int32Array;
  leaves: Int32Array;
  cols: Uint32Array;
  names: readonly string[];
  pos: number;
}

export interface CopyContext {
  readonly directory: KeyDirectory;
  readonly logs: MerkleLogs;
  readonly records: RecordIO;
  /** The generation new records are written under. */
  current(): number;
  /** Throws when the store is closed. */
  live(): void;
}

/** Source records to visit: live records of the migrated collections outside the target generation, after the cursor. */
export async function sourceQueue(ctx: CopyContext, m: MigrationRecord): Promise<SourceQueue> {
  // Per source generation, slot = leaf index: the id and its collection's number.
  const byGen = new Map<number, { ids: (string | undefined)[]; cols: Uint32Array; n: number }>();
  let n = 0;
  for (let c = 0; c < m.collections.length; c++) {
    // Built in steps: entries changed meanwhile are checked again when the copy reaches them.
    for (const [id, loc] of ctx.directory.entries(m.collections[c])) {
      if (++n % CLOCK_STEP === 0 && sliceSpent()) await yieldToEventLoop();
      if (loc.generation === m.generation) continue;
      const done =
        m.cursor !== null &&
        (loc.generation < m.cursor[0] || (loc.generation === m.cursor[0] && loc.leafIndex <= m.cursor[1]));
      if (done) continue;
      let slots = byGen.get(loc.generation);
      if (slots === undefined) {
        const size = Math.max(ctx.logs.size(loc.generation), loc.leafIndex + 1);
        byGen.set(
          loc.generation,
          (slots = { ids: new Array<string | undefined>(size), cols: new Uint32Array(size), n: 0 }),
        );
      }
      slots.ids[loc.leafIndex] = id;
      slots.cols[loc.leafIndex] = c;
      slots.n++;
    }
  }
  let total = 0;
  for (const slots of byGen.values()) total += slots.n;
  const q: SourceQueue = {
    ids: new Array<string>(total),
    gens: new Int32Array(total),
    leaves: new Int32Array(total),
    cols: new Uint32Array(total),
    names: m.collections,
    pos: 0,
  };
  let k = 0;
  for (const g of [...byGen.keys()].sort((a, b) => a - b)) {
    const slots = byGen.get(g)!;
    for (let i = 0; i < slots.ids.length; i++) {
      if (i % CLOCK_STEP === CLOCK_STEP - 1 && sliceSpent()) await yieldToEventLoop();
      const id = slots.ids[i];
      if (id === undefined) continue;
      q.ids[k] = id;
      q.gens[k] = g;
      q.leaves[k] = i;
      q.cols[k] = slots.cols[i];
      k++;
    }
  }
  return q;
}

/** Bytes of a block of CopyBuffers' arena. */
const ARENA_BLOCK_BYTES = 64 * 1024;

/**
 * Buffers a migration reuses from record to record and chunk to chunk: one for a record's
 * plaintext (wiped by the caller after each use) and an arena the chunk's records are sealed into
 * (ciphertext, read when the chunk's commit page is encoded). Beyond 64 bytes V8 gives every new
 * array a backing store of its own, which its collector has to find and free: a plaintext and a
 * sealed copy per record made the garbage collector's share of a 1,000,000-record migration grow
 * by half.
 */
export class CopyBuffers {
  readonly #plain = new Scratch(4096, Infinity, true);
  readonly #blocks: Uint8Array[] = [];
  #block = 0;
  #at = 0;

  /** A buffer of at least `n` bytes for one plaintext (the caller wipes what it wrote). */
  plaintext(n: number): Uint8Array {
    return this.#plain.get(n);
  }

  /** `n` bytes of the arena, free until the next reset (a record larger than a block gets its own). */
  take(n: number): Uint8Array {
    if (n > ARENA_BLOCK_BYTES) return new Uint8Array(n);
    if (this.#block < this.#blocks.length && this.#at + n > ARENA_BLOCK_BYTES) {
      this.#block++;
      this.#at = 0;
    }
    if (this.#block === this.#blocks.length) this.#blocks.push(new Uint8Array(ARENA_BLOCK_BYTES));
    const out = this.#blocks[this.#block].subarray(this.#at, this.#at + n);
    this.#at += n;
    return out;
  }

  /** Frees the whole arena (once the commit that read it is encoded). */
  reset(): void {
    this.#block = 0;
    this.#at = 0;
  }
}

/**
 * Copies up to chunkRecords source records (and at most CHUNK_BYTES of sealed records) into the
 * target generation, as writes of `draft` whose manifest also takes the cursor and the chunk's
 * accounting; true while records are left. Runs inside the commit queue: no write changes the
 * directory meanwhile. Source pages come from `pages`, each read once (the queue is in log order,
 * which is page order); each record is sealed as soon as it is opened, with the commit salt of the
 * page the chunk becomes, and its plaintext wiped at once, so the commit only copies sealed bytes
 * into its page and the sealing is spread over the steps between reads.
 */
export async function copyChunk(
  ctx: CopyContext,
  draft: Draft,
  queue: SourceQueue,
  authority: AuthorityCheck | undefined,
  pages: PagePass,
  buffers: CopyBuffers,
): Promise<boolean> {
  const r = draft.manifest.migration!;
  const g = ctx.current();
  if (g !== r.generation)
    throw new PqdbError('INTERNAL', `the migration targets generation ${r.generation}, the store writes ${g}`);
  const to = suiteOf(r.to).name;
  const rw = { from: ctx.records, to: ctx.records, generation: () => g };
  buffers.reset(); // the last chunk's page is encoded (or its draft dropped): the queue runs one task at a time
  let copied = 0;
  let bytes = 0;
  let visited = 0;
  while (copied < r.chunkRecords && bytes < CHUNK_BYTES && queue.pos < queue.ids.length) {
    if (sliceSpent()) await yieldToEventLoop(); // reads first
    if (++visited % COPY_READ_STEP === 0) readAhead(ctx, queue, pages);
    ctx.live();
    const at = queue.pos++;
    const collection = queue.names[queue.cols[at]];
    const id = queue.ids[at];
    r.cursor = [queue.gens[at], queue.leaves[at]];
    const loc = ctx.directory.get(collection, id);
    // Updated or deleted since the queue was built: counted when that write committed.
    if (loc === undefined || loc.generation !== queue.gens[at] || loc.leafIndex !== queue.leaves[at]) continue;
    let page: Uint8Array;
    try {
      page = await pages.get(loc.pageId);
    } catch (e) {
      failed(r, loc, e);
      continue;
    }
    // The copy gate asks the policy in force as this chunk commits (a revocation mid-migration
    // withholds from then on), then the migration's authority check.
    const governance = loc.governance;
    const allow =
      authority !== undefined
        ? () => authority({ operation: 'copy', to, collection, id, governance: JSON.parse(governance) as Governance })
        : undefined;
    const done = await rewrite(rw, draft, {
      purpose: 'copy',
      collection,
      id,
      loc,
      page,
      suite: r.to,
      copy: true,
      plaintext: buffers.plaintext(loc.length),
      sealInto: (length) => buffers.take(length),
      ...(allow !== undefined ? { allow } : {}),
    });
    if (done.kind === 'failed') failed(r, loc, done.error);
    else if (done.kind === 'withheld') r.counts.withheld++;
    else {
      bytes += done.length;
      copied++;
      r.counts.copied++;
    }
  }
  return queue.pos < queue.ids.length;
}

/** Counts a record that did not open (it stays in its generation), naming the first ones. */
function failed(r: MigrationRecord, loc: Location, e: unknown): void {
  r.counts.failed++;
  const code = e instanceof PqdbError ? e.code : 'ERROR';
  if (r.failures.length < MAX_FAILURES_KEPT) r.failures.push({ generation: loc.generation, leaf: loc.leafIndex, code });
}

/**
 * Starts reading the page of the source record READ_AHEAD_RECORDS ahead in the queue, when it is
 * not the page held: its read overlaps the work on the records before it.
 */
function readAhead(ctx: CopyContext, queue: SourceQueue, pages: PagePass): void {
  const at = queue.pos + READ_AHEAD_RECORDS;
  if (at >= queue.ids.length) return;
  const loc = ctx.directory.get(queue.names[queue.cols[at]], queue.ids[at]);
  if (loc !== undefined && loc.generation === queue.gens[at] && loc.leafIndex === queue.leaves[at])
    pages.readAhead(loc.pageId);
}
