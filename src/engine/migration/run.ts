// A live migration's phases and accounting (DESIGN §8): prepare generation g+1 with the target
// suite (new writes go there at once) → copy the records in bounded chunks, each commit carrying
// the durable cursor → carry the lexical indexes over → verify every migrated record → checkpoint
// (with signer keys) → activate. Each step is one queued task, so reads and writes interleave; a
// store reopened with a migration under way resumes it. The accounting is kept in the manifest:
// copied + superseded + deleted + withheld + failed + inserted = total, with writes that reach a
// record before the copy does counted as they commit (a `prepare` hook).

import { PqdbError } from '../../errors';
import { suite as suiteOf, type SuiteName } from '../../crypto/suites';
import { pauseIfSpent, sliceSpent, yieldToEventLoop } from '../../_yield';
import type { KeyRing } from '../keys';
import type { KeyDirectory, Location } from '../directory';
import type { AppliedCommit, CommitPage, CommitPipeline, Draft } from '../commit';
import type { LexicalStore } from '../lexical-store';
import type { Checkpoints } from '../checkpoints';
import type { RecordIO } from '../records';
import { b64, hex, unb64 } from '../../_encoding';
import { inventoryGeneration } from '../copies';
import type { MigrationCounts, MigrationFailure, MigrationPhase, MigrationRecord } from '../manifest';
import { copyChunk, sourceQueue, CopyBuffers, type AuthorityCheck, type CopyContext, type SourceQueue } from './copy';
import { PagePass } from './pages';
import { byPage, gather } from './gather';
import type { PageCache } from '../page-cache';

export type { AuthorityCheck, AuthorityRequest } from './copy';
export type { MigrationCounts, MigrationPhase } from '../manifest';
export { byPage } from './gather';

/**
 * Records per copy commit unless the caller says otherwise (a chunk also stops at CHUNK_BYTES of
 * sealed records). Each commit waits for its fsync (about 5 ms on the measured host): 256-record
 * chunks spent 20 of the 75 s a 1,000,000-record migration took waiting for 3,900 of them. Reads
 * are let in within a chunk whatever its size, each time a slice is spent (sliceSpent).
 */
export const DEFAULT_CHUNK_RECORDS = 2048;
/** Problems a failed verification names. */
const MAX_PROBLEMS_NAMED = 20;

export interface MigrationProgress extends MigrationCounts {
  phase: MigrationPhase;
}

export interface MigrationStatus extends MigrationProgress {
  /** Collections migrated. */
  collections: string[];
  /** Target suite. */
  to: SuiteName;
  /** The key generation records are copied into. */
  generation: number;
  /** The last source record (generation, leaf index) the copy reached. */
  cursor: [number, number] | null;
  startedAt: string;
  finishedAt?: string;
  /** Milliseconds of migration work (in every process that worked on it), per phase and in all. */
  workMs: number;
  phaseMs: Partial<Record<MigrationPhase, number>>;
  /**
   * The first records the copy could not read (they stay in their old generation): their place in
   * the log, the error code, and their collection and id while the record still exists.
   */
  failures: (MigrationFailure & { collection?: string; id?: string })[];
  /** True while this process is working on it. */
  running: boolean;
}

export interface MigrateOptions {
  /** Only this collection (default: every collection). */
  collection?: string;
  /** The target suite. */
  to: SuiteName;
  /** Records per copy commit (default 2048; a chunk also stops at 512 KiB of sealed records). */
  chunkRecords?: number;
  /** Aborting pauses the migration after the current step; migrate() then rejects with ABORTED. */
  signal?: AbortSignal;
  onProgress?: (p: MigrationProgress) => void;
  /** Overrides the store's authority check for this migration. */
  authority?: AuthorityCheck;
}

export interface MigrationContext extends CopyContext {
  readonly pipeline: CommitPipeline;
  readonly keys: KeyRing;
  readonly directory: KeyDirectory;
  readonly records: RecordIO;
  readonly cache: PageCache;
  readonly lexical: LexicalStore;
  readonly checkpoints: Checkpoints;
  /** The store's authority check. */
  readonly authority?: AuthorityCheck;
  /** True once the store is closing. */
  closing(): boolean;
  /** Decodes a record's plaintext with its collection's schema (verification decodes every record). */
  decode(collection: string, plaintext: Uint8Array): unknown;
}

type Hooks = Pick<MigrateOptions, 'signal' | 'onProgress' | 'authority'>;

export class Migration {
  readonly #ctx: MigrationContext;
  /** The migration this process is running, and the hooks its caller gave. */
  #run?: Promise<MigrationStatus>;
  #hooks: Hooks = {};
  /** Source records still to visit, and the next position. */
  #queue?: SourceQueue;
  /** The source page the copy is reading (kept across chunks: a page spans several). */
  #pages?: PagePass;
  #buffers?: CopyBuffers;
  /** Copy commit pages of this process not verified yet, and those whose every record verified. */
  #unverified: CommitPage[] = [];
  readonly #verified = new Set<number>();
  /** When the migration's work time was last accounted (performance.now()). */
  #mark = 0;
  /** Why a migration resumed on open stopped, if it did. */
  error?: unknown;

  constructor(ctx: MigrationContext) {
    this.#ctx = ctx;
  }

  /** The migration this process is running, if any (close waits for it). */
  get running(): Promise<MigrationStatus> | undefined {
    return this.#run;
  }

  /** Starts (or joins) a migration; see Store.migrate. */
  start(options: MigrateOptions): Promise<MigrationStatus> {
    const manifest = this.#ctx.pipeline.manifest;
    if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
    const target = suiteOf(options.to);
    const chunk = options.chunkRecords ?? DEFAULT_CHUNK_RECORDS;
    if (!Number.isInteger(chunk) || chunk < 1 || chunk > 100_000)
      throw new RangeError('"chunkRecords" expected an integer in 1..100000');
    if (options.collection !== undefined && manifest.collections[options.collection] === undefined)
      throw new RangeError(`no collection "${options.collection}"`);
    if (options.authority !== undefined && typeof options.authority !== 'function')
      throw new TypeError('"authority" expected a function');
    const hooks = { signal: options.signal, onProgress: options.onProgress, authority: options.authority };
    const authority = options.authority ?? this.#ctx.authority;
    const current = manifest.migration;
    if (current !== undefined) {
      const same =
        current.to === target.id &&
        (options.collection === undefined ? true : current.collections.includes(options.collection));
      if (!same)
        return Promise.reject(
          new RangeError(
            `a migration of ${current.collections.join(', ')} to ${suiteOf(current.to).name} is under way`,
          ),
        );
      const denied = this.#denied(authority, current.collections, current.to, 'under way');
      if (denied !== undefined) return Promise.reject(denied);
      this.#hooks = hooks;
      return (this.#run ??= this.#runPhases());
    }
    const names = options.collection !== undefined ? [options.collection] : Object.keys(manifest.collections);
    const denied = this.#denied(authority, names, target.id, 'new');
    if (denied !== undefined) return Promise.reject(denied);
    this.#hooks = hooks;
    // With signer keys the old generation's log is signed to its end first, queued right before the
    // new generation opens (no write comes between): the records a migration leaves in it (withheld,
    // failed) stay covered by a checkpoint, which new checkpoints, of the new generation, are not.
    const { checkpoints } = this.#ctx;
    const signed = checkpoints.canSign ? checkpoints.checkpoint(true).then(() => undefined) : undefined;
    signed?.catch(() => undefined); // #prepare's task rethrows it
    const run = this.#prepare(target.id, options.collection, chunk, signed).then(() => this.#runPhases());
    this.#run = run;
    return run;
  }

  /** Resumes the migration the manifest has under way (on open), unless the store's authority denies it. */
  resume(): void {
    const m = this.#ctx.pipeline.manifest.migration!;
    const denied = this.#denied(this.#ctx.authority, m.collections, m.to, 'under way');
    if (denied !== undefined) {
      this.error = denied;
      return;
    }
    this.#run = this.#runPhases();
    this.#run.catch((e) => (this.error = e));
  }

  /**
   * Asks current authority whether the migration may run (DESIGN §9); the refusal when it may not.
   * Asked before a new migration writes anything and each time a process resumes one.
   */
  #denied(
    authority: AuthorityCheck | undefined,
    collections: readonly string[],
    to: number,
    which: 'new' | 'under way',
  ): PqdbError | undefined {
    const name = suiteOf(to).name;
    if (authority === undefined || authority({ operation: 'migrate', to: name, collections: [...collections] }))
      return undefined;
    const what = `current authority does not allow migrating ${collections.join(', ') || 'the store'} to ${name}`;
    return new PqdbError(
      'AUTHORITY_DENIED',
      which === 'new'
        ? `${what}: nothing was written`
        : `${what}: the migration under way stays paused, and resumes when migrate() is allowed`,
    );
  }

  /** The migration under way (or the last finished one), with its accounting; undefined if none. */
  status(): MigrationStatus | undefined {
    const manifest = this.#ctx.pipeline.manifest;
    const m = manifest.migration ?? manifest.migrations?.at(-1);
    if (m === undefined) return undefined;
    return {
      phase: m.phase,
      ...m.counts,
      collections: [...m.collections],
      to: suiteOf(m.to).name,
      generation: m.generation,
      cursor: m.cursor,
      startedAt: m.startedAt,
      finishedAt: m.finishedAt,
      workMs: m.workMs,
      phaseMs: { ...m.phaseMs },
      failures: this.#resolve(m.failures),
      running: this.#run !== undefined && manifest.migration !== undefined,
    };
  }

  /** Failures with the collection and id now at their place in the log, when a record is still there. */
  #resolve(failures: readonly MigrationFailure[]): MigrationStatus['failures'] {
    if (failures.length === 0) return [];
    const wanted = new Map(failures.map((f) => [`${f.generation}/${f.leaf}`, { ...f }] as const));
    for (const [collection, records] of this.#ctx.directory.collections())
      for (const [id, loc] of records) {
        const f = wanted.get(`${loc.generation}/${loc.leafIndex}`);
        if (f !== undefined) Object.assign(f, { collection, id });
      }
    return [...wanted.values()];
  }

  /**
   * Opens generation g+1 under the target suite and records the migration, in one commit; not when
   * `signed` (the old generation's last checkpoint, queued just before) failed.
   */
  #prepare(to: number, collection: string | undefined, chunkRecords: number, signed?: Promise<void>): Promise<void> {
    return this.#ctx.pipeline.run(async (draft) => {
      await signed; // settled already: it ran before this task
      const m = draft.manifest;
      const state = draft.registry.state(to);
      if (state === 'quarantined' || state === 'retired') draft.registry.checkWrite(to); // refuses
      const listed = (m.recipients ?? []).map(unb64);
      const sole = listed.length === 0 ? this.#ctx.keys.soleRecipient() : undefined;
      const recipients = sole !== undefined ? [sole] : listed;
      if (recipients.length === 0) {
        throw new TypeError(
          "the store does not list its recipients' public keys: add them with addRecipient(publicKey) before migrating",
        );
      }
      const names = collection !== undefined ? [collection] : Object.keys(m.collections);
      const fromSuites = [...new Set(names.map((n) => m.collections[n].suite))];
      const total = names.reduce((n, name) => n + this.#ctx.directory.count(name), 0);
      const g = draft.keyring.createGeneration(to, recipients);
      if (state === 'decrypt-only') draft.registry.setState(to, 'active');
      for (const n of names) m.collections[n] = { ...m.collections[n], suite: to };
      if (collection === undefined) m.defaultSuite = to;
      if (sole !== undefined) m.recipients = [b64(sole)];
      const id = new Uint8Array(8);
      globalThis.crypto.getRandomValues(id);
      m.migration = {
        id: hex(id),
        collections: names,
        to,
        generation: g,
        fromSuites,
        phase: 'copying',
        cursor: null,
        counts: { copied: 0, superseded: 0, deleted: 0, withheld: 0, failed: 0, inserted: 0, total },
        startedAt: new Date().toISOString(),
        workMs: 0,
        phaseMs: {},
        failures: [],
        chunkRecords,
      };
      draft.afterCommit(() => (this.#queue = undefined));
    });
  }

  /** Runs the migration's remaining phases; each step is one queued task, so writes interleave. */
  async #runPhases(): Promise<MigrationStatus> {
    const { pipeline, lexical, checkpoints } = this.#ctx;
    this.#mark = performance.now();
    try {
      // Every record is visited: a base still in partitions loads now, beside reads.
      await this.#ctx.directory.loadAllInSteps(pauseIfSpent);
      for (;;) {
        const m = pipeline.manifest.migration;
        if (m === undefined) throw new PqdbError('INTERNAL', 'no migration under way');
        if (this.#ctx.closing())
          throw new PqdbError('NOT_OPEN', 'the store is closing; the migration resumes when it is reopened');
        if (this.#hooks.signal?.aborted)
          throw new PqdbError('ABORTED', 'the migration was paused; migrate() or reopening resumes it');
        let next: MigrationPhase | undefined;
        if (m.phase === 'copying') next = (await this.#copyStep()) ? undefined : 'indexing';
        else if (m.phase === 'indexing') {
          for (const name of m.collections) await lexical.carryOver(name, m.generation);
          next = 'verifying';
        } else if (m.phase === 'verifying') {
          await this.#verify(m);
          next = 'activating';
        } else if (m.phase === 'activating') {
          // Signed with signer keys; without them the key directory is persisted all the same, so
          // the next open does not replay every copy commit (a 100k store: 529 ms against 53).
          await (checkpoints.canSign ? checkpoints.checkpoint() : checkpoints.persist());
          next = 'done';
        }
        if (next !== undefined) await this.#advance(next);
        this.#report();
        if (next === 'done') return this.status()!;
        await yieldToEventLoop(); // let reads and other work in
      }
    } finally {
      this.#run = undefined;
      this.#queue = undefined;
      this.#pages = undefined;
      this.#buffers = undefined;
      this.#unverified = [];
      this.#verified.clear();
    }
  }

  #report(): void {
    const manifest = this.#ctx.pipeline.manifest;
    const m = manifest.migration ?? manifest.migrations?.at(-1);
    if (m !== undefined) this.#hooks.onProgress?.({ phase: m.phase, ...m.counts });
  }

  /**
   * One copy chunk, and the verification of the copies committed before it while the chunk's
   * commit writes and syncs (the main thread would wait for the fsync otherwise; about 5 ms a
   * commit on the measured host); false when no source record is left.
   */
  async #copyStep(): Promise<boolean> {
    let staged!: () => void;
    const ready = new Promise<void>((resolve) => (staged = resolve));
    const copying = this.#copy(staged);
    copying.catch(() => undefined); // awaited below; a failure surfaces there
    await Promise.race([ready, copying]);
    try {
      await this.#verifyCopies();
    } catch (e) {
      await copying.catch(() => undefined); // the step ends with its commit, whatever stopped the verification
      throw e;
    }
    return await copying;
  }

  /** One copy chunk in one commit (`staged` once its records are staged); false when no source record is left. */
  #copy(staged: () => void): Promise<boolean> {
    return this.#ctx.pipeline.run(async (draft) => {
      const queue = (this.#queue ??= await sourceQueue(this.#ctx, draft.manifest.migration!));
      draft.onAbort(() => (this.#queue = undefined)); // rebuilt from the durable cursor on the next step
      const pages = (this.#pages ??= new PagePass(this.#ctx.cache));
      const buffers = (this.#buffers ??= new CopyBuffers());
      const authority = this.#hooks.authority ?? this.#ctx.authority;
      const more = await copyChunk(this.#ctx, draft, queue, authority, pages, buffers);
      this.#accountWork(draft.manifest.migration!);
      staged();
      return more;
    });
  }

  /** Persists the move to the next phase (and, at 'done', activation: registry, history). */
  #advance(next: MigrationPhase): Promise<void> {
    return this.#ctx.pipeline.run((draft) => {
      const mm = draft.manifest;
      const r = mm.migration!;
      this.#accountWork(r);
      r.phase = next;
      if (next !== 'done') return;
      r.finishedAt = new Date().toISOString();
      // Activation: old suites no longer used by any collection stop writing (they keep decrypting).
      for (const s of r.fromSuites) {
        const used = s === r.to || s === mm.defaultSuite || Object.values(mm.collections).some((c) => c.suite === s);
        if (!used && draft.registry.state(s) === 'active') draft.registry.setState(s, 'decrypt-only');
      }
      mm.migrations = [...(mm.migrations ?? []), r];
      delete mm.migration;
      // The old generations stay in the store (until retireGenerations): a managed copy of what they held.
      const retired = new Set(mm.retired ?? []);
      const old = this.#ctx.keys.generations().filter((g) => g < r.generation && !retired.has(g));
      inventoryGeneration(mm, { generations: old, suites: r.fromSuites, records: r.counts.total - r.counts.inserted });
    });
  }

  /**
   * Adds the wall-clock time since the last accounting to the migration's work time (and its
   * phase's): the time a process spent migrating, commits included; an outage adds nothing.
   */
  #accountWork(r: MigrationRecord): void {
    const now = performance.now();
    const ms = now - this.#mark;
    this.#mark = now;
    r.workMs += ms;
    r.phaseMs[r.phase] = (r.phaseMs[r.phase] ?? 0) + ms;
  }

  /** `prepare` hook: counts writes to migrated collections that reach records before the copy does. */
  accountWrites(draft: Draft): void {
    const r = draft.manifest.migration;
    if (r === undefined || r.phase === 'done') return;
    const seen = new Set<string>();
    for (const w of draft.writes) {
      if (w.copy === true || !r.collections.includes(w.collection)) continue;
      const key = `${w.collection}\u0000${w.id}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const loc = this.#ctx.directory.get(w.collection, w.id);
      if (loc === undefined) {
        if (w.kind === 'put') {
          r.counts.inserted++;
          r.counts.total++;
        }
        continue;
      }
      const ahead =
        loc.generation !== r.generation &&
        (r.cursor === null ||
          loc.generation > r.cursor[0] ||
          (loc.generation === r.cursor[0] && loc.leafIndex > r.cursor[1]));
      if (!ahead || r.phase !== 'copying') continue;
      if (w.kind === 'put') r.counts.superseded++;
      else r.counts.deleted++;
    }
  }

  /** `applied` hook: a durable copy chunk's page is kept until its records are verified (#verifyCopies). */
  noteCopies(c: AppliedCommit): void {
    const r = c.manifest.migration;
    if (this.#run === undefined || r === undefined || r.phase !== 'copying' || c.page === undefined) return;
    if (c.page.generation === r.generation && c.writes.length > 0 && c.writes.every((w) => w.copy === true))
      this.#unverified.push(c.page);
  }

  /**
   * Opens and decodes every record of the copy pages this process committed and has not verified
   * yet, out of the pages' bytes as written (no read); a page whose every record passes is noted,
   * so the verifying phase does not open its records again while they are still live there. A
   * record that fails leaves its page unnoted: the verifying phase opens it again and reports it.
   * Pages are immutable, so what passed here stays true of them.
   */
  async #verifyCopies(): Promise<void> {
    const buffers = (this.#buffers ??= new CopyBuffers());
    for (let page = this.#unverified.shift(); page !== undefined; page = this.#unverified.shift()) {
      let ok = true;
      // One location object for the page's records (openIn reads it and keeps nothing of it).
      const loc: Location = {
        pageId: page.id,
        generation: page.generation,
        leafIndex: 0,
        suite: 0,
        offset: 0,
        length: 0,
        sequence: 0,
        governance: '',
      };
      for (const op of page.ops) {
        if (sliceSpent()) {
          await yieldToEventLoop(); // reads first
          this.#ctx.live();
        }
        if (op.kind !== 'put') continue;
        loc.offset = op.offset;
        loc.length = op.length;
        loc.sequence = op.sequence;
        loc.governance = op.governance;
        try {
          const plaintext = this.#ctx.records.openIn(
            'verify',
            page.bytes,
            op.collection,
            op.id,
            loc,
            buffers.plaintext(op.length),
          );
          try {
            this.#ctx.decode(op.collection, plaintext);
          } finally {
            plaintext.fill(0);
          }
        } catch {
          ok = false;
        }
      }
      if (ok) this.#verified.add(page.id);
    }
  }

  /**
   * Decrypts every live record of the migrated collections in the target generation (all must open
   * and decode); records left outside it must be no more than those withheld or failed, which stay
   * readable (or not) where they are and are reported, so a record that cannot be read does not
   * keep the migration from finishing. The records are gathered from the directory, then visited
   * page by page (a counting sort by page id), each page read once outside the page cache; writes
   * interleave between steps, so each record is looked up again when its turn comes.
   */
  async #verify(m: MigrationRecord): Promise<void> {
    const { directory, records } = this.#ctx;
    await this.#verifyCopies(); // the last chunk's
    const pass = new PagePass(this.#ctx.cache);
    const buffers = (this.#buffers ??= new CopyBuffers());
    let behind = 0;
    const problems: string[] = [];
    const problem = (loc: Location, e: unknown): void => {
      if (problems.length < MAX_PROBLEMS_NAMED)
        problems.push(
          `generation ${loc.generation}, leaf ${loc.leafIndex}: ${e instanceof PqdbError ? e.code : String(e)}`,
        );
    };
    for (const name of m.collections) {
      const live = () => this.#ctx.live();
      const { ids, pageIds, behind: left } = await gather(directory.entries(name), m.generation, this.#verified, live);
      behind += left;
      const { order, pages, starts } = byPage(pageIds);
      for (let p = 0; p < pages.length; p++) {
        if (p + 1 < pages.length) pass.readAhead(pages[p + 1]);
        for (let k = starts[p]; k < starts[p + 1]; k++) {
          if (sliceSpent()) {
            await yieldToEventLoop(); // reads first
            this.#ctx.live();
          }
          const id = ids[order[k]];
          const loc = directory.get(name, id);
          if (loc === undefined) continue; // deleted meanwhile
          if (loc.generation !== m.generation) {
            behind++;
            continue;
          }
          try {
            // Written again meanwhile (a user's write, into a page of its own): read where it is now.
            const plaintext =
              loc.pageId === pages[p]
                ? records.openIn('verify', await pass.get(loc.pageId), name, id, loc, buffers.plaintext(loc.length))
                : await records.open('verify', name, id, loc);
            try {
              this.#ctx.decode(name, plaintext);
            } finally {
              plaintext.fill(0);
            }
          } catch (e) {
            problem(loc, e);
          }
        }
      }
    }
    const leftBehind = m.counts.withheld + m.counts.failed;
    if (behind > leftBehind)
      problems.push(
        `${behind} records remain outside generation ${m.generation}, but only ${leftBehind} were withheld or failed`,
      );
    if (problems.length > 0) throw new PqdbError('CORRUPTION', `migration verification failed: ${problems.join('; ')}`);
  }
}
