// A read-only replica (DESIGN §10, docs/replication.md): its own page store holding the primary's
// sealed pages and manifest, whose commit counter is the applied watermark. Each shipped commit is
// staged over the replica's pages and verified by opening a read-only store on the staged view —
// the authenticated manifest, the live page set against the manifest's logs, the checkpoint chain
// and signatures, the store id pinned and the commit counter never going back — and only then
// written to the replica's page store in one atomic commit, pages and manifest (the watermark)
// together. Reads are served by the store verified last. After a kill the replica reopens its own
// page store and says, in its hello, where it stands: the primary sends only what it lacks. The
// hello carries page digests (src/replication/_digests.ts): a page whose copy here is not the
// primary's (damaged on this medium, or kept by an older release) is sent again, verified as every
// shipped page is, and replaces the copy in the same atomic commit as the catch-up.

import { PqdbError } from '../errors';
import { integer } from '../_args';
import { Store, type Collection } from '../engine/store';
import { readManifest } from '../engine/manifest';
import type { PageStore } from '../storage/page-store';
import type { Schema } from '../engine/codec';
import { StagedPages } from './staged';
import { openEngine } from '../engine/open-engine';
import type { Engine } from '../engine/engine';
import { checkShipped } from './_check';
import { helloOf, rangeCount, rangeOfDigests } from './_digests';
import {
  decodeMessage,
  encodeMessage,
  MSG_APPLIED,
  MSG_COMMIT,
  MSG_DIFFER,
  MSG_DIGESTS,
  MSG_PAGES,
  MSG_REPLACE,
  MSG_STATUS,
  type CommitMessage,
} from './messages';
import type { MessageSession } from './primary';

/** What `replica.status()` reports. */
export interface ReplicaStatus {
  /** The newest commit the primary has reported. */
  commitWatermark: number;
  /** The commit the replica has verified and persisted. */
  appliedWatermark: number;
  lagCommits: number;
  /** Since the primary made the oldest commit not yet applied (0 when none is pending). */
  lagMs: number;
  connected: boolean;
  /** The last failure (a refused commit, a lost session), if any. */
  lastError?: string;
  /**
   * A catch-up under way: the pages (and their bytes) received ahead of the commit they belong to,
   * held until that commit arrives and is verified.
   */
  catchUp?: { pages: number; bytes: number };
}

export interface ReplicaOptions {
  /** A recipient secret key of the store (it verifies what it is sent; it writes nothing). */
  unlock: Uint8Array;
  /**
   * The store id the replica follows (32 hex digits). Without it the replica pins the store id of
   * the first commit it applies (kept in its own manifest, with its watermark): from then on a
   * commit of any other store is refused with AUTH_FAILED, before anything of it is staged.
   */
  storeId?: string;
  /** Opens a session to the primary (a new one after each loss). */
  connect(): Promise<MessageSession>;
  /** Retry delays after a lost session, first to last (the last repeats). */
  backoffMs?: readonly number[];
  /**
   * A session that brings no message for this long (default 2,000 ms; an idle primary sends its
   * status every 500 ms) is taken as lost and replaced. Time the replica spends verifying and
   * writing a commit does not count.
   */
  idleTimeoutMs?: number;
  /**
   * Whether each session's hello carries page digests (default true), so that a page whose copy
   * here differs from the primary's is sent again and replaced. It costs a read and a SHA-384 of
   * every page the replica holds at each session start (docs/replication.md, "Pages that differ").
   */
  pageDigests?: boolean;
}

const BACKOFF_MS = [50, 100, 250, 500, 1000];
const IDLE_TIMEOUT_MS = 2000;
/** Page bytes a commit may send ahead of itself (a catch-up of a large store). */
const MAX_AHEAD_BYTES = 4 * 2 ** 30;
/** What a page sent ahead counts for besides its bytes (its entry and id), and how many may wait. */
const PAGE_ENTRY_BYTES = 64;
const MAX_AHEAD_PAGES = 1 << 22;

/** A session and the page digests its hello carried (none: a plain hello). */
type Greeted = { session: MessageSession; digests: Uint8Array | undefined };

/** A read-only collection of a replica: its handle follows each applied commit. */
export interface ReplicaCollection<V> {
  get(id: string): Promise<V | undefined>;
  has(id: string): boolean;
  readonly size: number;
  scan(options?: { prefix?: string; limit?: number }): AsyncGenerator<{ id: string; value: V }>;
  search(
    query: string,
    options?: { mode?: 'all' | 'any'; prefix?: boolean; limit?: number },
  ): Promise<{ id: string; value: V }[]>;
}

export class Replica {
  readonly #pages: PageStore;
  readonly #options: ReplicaOptions;
  #store: Store | undefined;
  /** The engine #store is over (opened here: what verifies shipped pages and takes records-only commits). */
  #engine: Engine | undefined;
  /** The page store view #store reads through. */
  #view: StagedPages | undefined;
  #applied = 0;
  /** The store this replica follows: the storeId option, else the id of the first commit it applied. */
  #storeId: string | undefined;
  #watermark = 0;
  #primaryTime = 0;
  #pendingSince = 0;
  #session: MessageSession | undefined;
  /**
   * False for one session after a primary closed one at once on a hello with page digests (a
   * release before them): that session's hello is a plain one.
   */
  #withDigests: boolean;
  #closed = false;
  #lastError: string | undefined;
  /** Pages and bytes received ahead of their commit in the current session. */
  #ahead = { pages: 0, bytes: 0 };
  /** Reads under way per store (a replaced store stays open for them). */
  readonly #reads = new Map<Store, number>();
  #loop: Promise<void>;
  readonly #waiters: { commit: number; resolve: () => void }[] = [];

  private constructor(
    pages: PageStore,
    options: ReplicaOptions,
    opened: { store: Store; engine: Engine; view: StagedPages } | undefined,
    first: Promise<Greeted>,
  ) {
    this.#pages = pages;
    this.#options = options;
    this.#store = opened?.store;
    this.#engine = opened?.engine;
    this.#view = opened?.view;
    this.#applied = opened?.store.info().commit ?? 0;
    this.#storeId = options.storeId?.toLowerCase() ?? opened?.store.info().storeId;
    this.#watermark = this.#applied;
    this.#withDigests = options.pageDigests !== false;
    this.#loop = this.#run(first);
  }

  /**
   * Opens the replica on its own page store (resuming from its applied watermark) and starts
   * following the primary.
   * @throws PqdbError AUTH_FAILED, CORRUPTION for a replica page store that does not open
   */
  static async open(pages: PageStore, options: ReplicaOptions): Promise<Replica> {
    if (options.idleTimeoutMs !== undefined) integer('idleTimeoutMs', options.idleTimeoutMs, 1, 2 ** 31 - 1);
    if (options.pageDigests !== undefined && typeof options.pageDigests !== 'boolean')
      throw new TypeError('"pageDigests" expected a boolean');
    if (
      options.storeId !== undefined &&
      (typeof options.storeId !== 'string' || !/^[0-9a-f]{32}$/i.test(options.storeId))
    )
      throw new TypeError('"storeId" expected a string of 32 hex digits');
    // The first session's handshake and hello run while the replica's own store opens, so the
    // primary's catch-up is on its way meanwhile. The hello names the commit of the manifest as
    // stored, before it authenticates: it only tells the primary where to start (what arrives is
    // applied to the store once verified, and a store that does not open ends the session).
    const raw = await pages.readManifest();
    const applied = raw === undefined ? 0 : readManifest(raw).header.commit;
    const first = options.connect().then((session) => greet(session, pages, applied, options.pageDigests !== false));
    first.catch(() => undefined);
    let opened: { store: Store; engine: Engine; view: StagedPages } | undefined;
    try {
      if (raw !== undefined) {
        const view = new StagedPages(pages);
        const engine = await openEngine(view, { unlock: options.unlock, readOnly: true, storeId: options.storeId });
        opened = { store: Store.over(engine), engine, view };
      }
    } catch (e) {
      void first.then((g) => g.session.close()).catch(() => undefined);
      throw e;
    }
    return new Replica(pages, options, opened, first);
  }

  /** Watermarks, lag and the connection. */
  status(): ReplicaStatus {
    const lagCommits = Math.max(0, this.#watermark - this.#applied);
    return {
      commitWatermark: this.#watermark,
      appliedWatermark: this.#applied,
      lagCommits,
      lagMs: lagCommits > 0 && this.#pendingSince > 0 ? Math.max(0, Date.now() - this.#pendingSince) : 0,
      connected: this.#session !== undefined,
      ...(this.#lastError !== undefined ? { lastError: this.#lastError } : {}),
      ...(this.#ahead.pages > 0 ? { catchUp: { ...this.#ahead } } : {}),
    };
  }

  /** Resolves once the replica has applied commit `commit` (or a later one). */
  applied(commit: number): Promise<void> {
    if (this.#applied >= commit) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ commit, resolve }));
  }

  /** A read-only collection; reads go to the store verified last. */
  collection<V = Record<string, unknown>>(
    name: string,
    options: { schema: Schema; index?: { text: readonly string[] } },
  ): ReplicaCollection<V> {
    // The handle on the store verified last, made again only when a commit replaced that store.
    let at: { store: Store; c: Collection } | undefined;
    const c = () => {
      const store = this.#store;
      if (store === undefined) throw new PqdbError('NOT_FOUND', 'the replica has applied no commit yet');
      if (at?.store !== store) at = { store, c: store.collection(name, options as never) as unknown as Collection };
      return at;
    };
    const replica = this;
    return {
      get: (id) => this.#reading(c(), (x) => x.get(id)) as Promise<V | undefined>,
      has: (id) => this.#store !== undefined && c().c.has(id),
      get size() {
        return c().c.size;
      },
      async *scan(o) {
        const h = c();
        replica.#pin(h.store, 1);
        try {
          yield* h.c.scan(o) as unknown as AsyncGenerator<{ id: string; value: V }>;
        } finally {
          replica.#pin(h.store, -1);
        }
      },
      search: (q, o) => this.#reading(c(), (x) => x.search(q, o)) as unknown as Promise<{ id: string; value: V }[]>,
    };
  }

  /** Runs a read on the store it started on: a commit applied meanwhile closes that store only after it. */
  async #reading<T>(h: { store: Store; c: Collection }, read: (c: Collection) => Promise<T>): Promise<T> {
    this.#pin(h.store, 1);
    try {
      return await read(h.c);
    } finally {
      this.#pin(h.store, -1);
    }
  }

  /** Counts the reads under way on `store`; a replaced store closes once its last read is done. */
  #pin(store: Store, by: 1 | -1): void {
    const n = (this.#reads.get(store) ?? 0) + by;
    if (n > 0) return void this.#reads.set(store, n);
    this.#reads.delete(store);
    if (store !== this.#store) void store.close();
  }

  /** Closes a store a commit replaced, now or once the reads on it are done. */
  #release(store: Store | undefined): Promise<void> {
    if (store === undefined || this.#reads.has(store)) return Promise.resolve();
    return store.close();
  }

  /** Follows the primary: connect, hello, apply commits; after a loss, again with backoff. */
  async #run(first: Promise<Greeted> | undefined): Promise<void> {
    const delays = this.#options.backoffMs ?? BACKOFF_MS;
    let attempt = 0;
    while (!this.#closed) {
      // Whether the primary sent anything in this session (one that closes at once on a hello with
      // digests is taken for a release before them: the next hello is a plain one).
      const heard = { any: false };
      let withDigests = false;
      try {
        // The first session sent its hello as it opened.
        const g = await (first ??
          this.#options.connect().then((s) => greet(s, this.#pages, this.#applied, this.#withDigests)));
        first = undefined;
        if (this.#closed) {
          await g.session.close();
          return;
        }
        this.#session = g.session;
        withDigests = g.digests !== undefined;
        attempt = 0;
        await this.#follow(g.session, g.digests, heard);
      } catch (e) {
        first = undefined;
        if (this.#closed) return;
        this.#lastError = e instanceof Error ? `${(e as PqdbError).code ?? e.name}: ${e.message}` : String(e);
        const refused = withDigests && !heard.any && (e as PqdbError).code === 'NOT_OPEN';
        this.#withDigests = !refused && this.#options.pageDigests !== false;
        if (refused)
          this.#lastError =
            'PROTOCOL_ERROR: the primary closed the session on a hello with page digests (a release without them?): the next session sends a plain hello';
      }
      const s = this.#session;
      this.#session = undefined;
      await Promise.resolve(s?.close()).catch(() => undefined);
      if (this.#closed) return;
      await new Promise((r) => setTimeout(r, delays[Math.min(attempt++, delays.length - 1)]));
    }
  }

  #note(commit: number, time: number): void {
    if (commit > this.#watermark) {
      if (this.#watermark <= this.#applied) this.#pendingSince = time;
      this.#watermark = commit;
    }
    this.#primaryTime = time;
  }

  /**
   * Reads the session into a queue while commits are applied: the commits that arrived while one
   * was verified are staged together and verified once (a replica behind catches up in few opens).
   */
  async #follow(session: MessageSession, digests: Uint8Array | undefined, heard: { any: boolean }): Promise<void> {
    const queue: CommitMessage[] = [];
    let wake: (() => void) | undefined;
    let ended: unknown;
    let ahead: CommitMessage['pages'] = []; // pages sent ahead of their commit
    let aheadBytes = 0;
    let aheadIds = new Set<number>();
    let replacing = new Set<number>(); // of those, the ones sent again to replace this replica's copy
    const withDigests = digests !== undefined;
    let compared = !withDigests; // a DIFFER comes at most once, before any page (then `digests` go)
    let committed = false; // REPLACE only ahead of the session's first COMMIT (the catch-up's)
    let last = Date.now();
    this.#ahead = { pages: 0, bytes: 0 };
    // A session silent for idleMs (applying aside) is lost: a cut link may never end it otherwise.
    const idleMs = this.#options.idleTimeoutMs ?? IDLE_TIMEOUT_MS;
    let applying = false;
    const watchdog = setInterval(
      () => {
        if (applying || Date.now() - last <= idleMs) return;
        ended ??= new PqdbError(
          'IO_ERROR',
          `no message from the primary for ${idleMs} ms: the session is taken as lost`,
        );
        wake?.();
        void Promise.resolve(session.close()).catch(() => undefined);
      },
      Math.max(10, Math.min(250, idleMs / 4)),
    );
    (watchdog as { unref?: () => void }).unref?.();
    const reader = (async () => {
      try {
        for (;;) {
          const m = decodeMessage(await session.receive());
          last = Date.now();
          heard.any = true;
          if (m.type === MSG_STATUS) this.#note(m.commit, m.time);
          else if (m.type === MSG_DIFFER && !compared) {
            compared = true;
            const n = rangeCount(digests!.length / 48);
            if (m.ranges.some((r) => r >= n))
              throw new PqdbError('CORRUPTION', 'the primary named a range past the hello');
            for (const range of m.ranges)
              await session.send(encodeMessage({ type: MSG_DIGESTS, range, digests: rangeOfDigests(digests!, range) }));
            digests = undefined;
          } else if (m.type === MSG_PAGES || (m.type === MSG_REPLACE && withDigests && !committed)) {
            compared = true;
            digests = undefined;
            // Each page costs its bytes and an entry: many empty ones are bounded too.
            for (const p of m.pages) {
              if (p.bytes.length === 0) throw new PqdbError('CORRUPTION', `the primary sent page ${p.id} empty`);
              if (aheadIds.has(p.id)) throw new PqdbError('CORRUPTION', `the primary sent page ${p.id} twice`);
              aheadBytes += p.bytes.length + PAGE_ENTRY_BYTES;
              if (aheadBytes > MAX_AHEAD_BYTES || ahead.length >= MAX_AHEAD_PAGES)
                throw new PqdbError('CORRUPTION', 'the primary sent too many pages ahead');
              aheadIds.add(p.id);
              ahead.push(p);
              if (m.type === MSG_REPLACE) replacing.add(p.id);
            }
            this.#ahead = { pages: ahead.length, bytes: aheadBytes };
          } else if (m.type === MSG_COMMIT) {
            compared = committed = true;
            digests = undefined;
            this.#note(m.commit, m.time);
            // A catch-up names among its drops the pages it sent ahead that a later commit deleted.
            const dropped = new Set(m.deletes);
            const before = ahead.filter((p) => !dropped.has(p.id));
            const replaces = [...replacing].filter((id) => !dropped.has(id));
            queue.push({ ...m, pages: [...before, ...m.pages], ...(replaces.length > 0 ? { replaces } : {}) });
            ahead = [];
            aheadBytes = 0;
            aheadIds = new Set();
            replacing = new Set();
            this.#ahead = { pages: 0, bytes: 0 };
          } else throw new PqdbError('CORRUPTION', `the primary sent a message of type ${m.type}`);
          wake?.();
        }
      } catch (e) {
        ended ??= e;
        wake?.();
      }
    })();
    try {
      for (;;) {
        if (queue.length === 0) {
          if (ended !== undefined) throw ended;
          await new Promise<void>((r) => (wake = r));
          wake = undefined;
          continue;
        }
        applying = true;
        try {
          await this.#apply(queue.splice(0));
        } finally {
          applying = false;
          last = Date.now();
        }
        await session.send(encodeMessage({ type: MSG_APPLIED, applied: this.#applied }));
      }
    } finally {
      this.#ahead = { pages: 0, bytes: 0 };
      clearInterval(watchdog);
      await Promise.resolve(session.close()).catch(() => undefined);
      await reader;
    }
  }

  /**
   * Verifies commits `ms` (in order) staged over the replica's pages, then persists them (pages
   * and the last manifest in one commit). Commits that fail verification are refused; the replica
   * stays at its watermark.
   * @throws PqdbError AUTH_FAILED (a commit of another store than the pinned one), ROLLBACK (older
   * than applied), CONFLICT (a gap: not the next commit), and what opening the staged store throws
   * (AUTH_FAILED, CORRUPTION)
   */
  async #apply(ms: readonly CommitMessage[]): Promise<void> {
    const staged = new StagedPages(this.#pages);
    let at = this.#applied;
    for (const m of ms) {
      // The header's store id is checked again when the manifest authenticates (the open below).
      const { storeId } = readManifest(m.manifest).header;
      if (this.#storeId !== undefined && storeId !== this.#storeId)
        throw new PqdbError(
          'AUTH_FAILED',
          `the primary sent a commit of store ${storeId}, but this replica follows store ${this.#storeId}`,
        );
      if (m.commit < at || (m.commit === at && !m.snapshot))
        throw new PqdbError('ROLLBACK', `the primary sent commit ${m.commit}, but the replica is at ${at}`);
      if (!m.snapshot && m.commit !== at + 1)
        throw new PqdbError('CONFLICT', `the primary sent commit ${m.commit} after ${at}: a gap`);
      if (readManifest(m.manifest).header.commit !== m.commit)
        throw new PqdbError('CORRUPTION', `commit ${m.commit} carries the manifest of another commit`);
      await staged.stage(m);
      at = m.commit;
    }
    if (await this.#take(staged, ms, at)) return;
    const storeId = this.#storeId;
    const engine = await openEngine(staged, {
      unlock: this.#options.unlock,
      readOnly: true,
      ...(storeId !== undefined ? { storeId } : {}),
      minCommit: this.#applied,
    });
    const verified = Store.over(engine);
    try {
      if (verified.info().commit !== at) throw new PqdbError('CORRUPTION', `the staged store is not at commit ${at}`);
      // Every shipped page opens under the verified keys before it is kept (the open does not read
      // the commit pages its persisted directory covers).
      const batch = await staged.batch();
      const pages = await checkShipped(
        { pipeline: engine.pipeline, pages: engine.pages, keys: engine.keys },
        batch.pages,
      );
      const kept = new Set(pages.map((p) => p.id));
      // A replacement takes the place of the damaged copy in this same atomic commit.
      await this.#pages.commit({
        ...batch,
        pages,
        replaces: batch.replaces.filter((id) => kept.has(id)),
        transfer: true,
      });
    } catch (e) {
      await verified.close();
      throw e;
    }
    staged.settle();
    this.#storeId ??= verified.info().storeId; // pinned from here on
    const old = this.#store;
    this.#store = verified;
    this.#engine = engine;
    this.#view = staged;
    await this.#release(old);
    this.#advanced(at);
  }

  /**
   * Commits that only add records, taken by the store verified last without opening it again
   * (src/engine/follow.ts verifies them against its state). False when they change more (a
   * checkpoint, a migration step, a key or policy change): the caller opens a store on them.
   */
  async #take(staged: StagedPages, ms: readonly CommitMessage[], at: number): Promise<boolean> {
    const engine = this.#engine;
    // A catch-up (snapshot) goes this way too when it is past the watermark and only adds records.
    if (engine === undefined || ms.some((m) => m.snapshot && m.commit <= this.#applied)) return false;
    const batch = await staged.batch();
    if (batch.replaces.length > 0) return false; // a replaced page is for a full open to verify
    // A catch-up that also puts back older pages (the replica lost some) is for a full open to verify.
    const next = engine.pipeline.manifest.nextPageId;
    if (ms.some((m) => m.snapshot) && batch.pages.some((p) => p.id < next)) return false;
    const apply = engine.prepareFollow(batch);
    if (apply === undefined) return false;
    await this.#pages.commit({ ...batch, transfer: true });
    staged.settle();
    this.#view?.settle(); // the store's view lists the pages just written
    await apply();
    this.#advanced(at);
    return true;
  }

  /** The replica is at commit `at`: lag and waiters follow. */
  #advanced(at: number): void {
    this.#applied = at;
    if (this.#applied >= this.#watermark) this.#pendingSince = 0;
    else this.#pendingSince = this.#primaryTime;
    for (let i = this.#waiters.length - 1; i >= 0; i--)
      if (this.#waiters[i].commit <= this.#applied) this.#waiters.splice(i, 1)[0].resolve();
  }

  /** Stops following and releases the replica's store and page store. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.resolve(this.#session?.close()).catch(() => undefined);
    await this.#loop.catch(() => undefined);
    await this.#store?.close();
    this.#store = undefined;
    this.#engine = undefined;
    await this.#pages.close();
  }
}

/** Sends the hello on a new session (closing the session if that fails). */
async function greet(
  session: MessageSession,
  pages: PageStore,
  applied: number,
  withDigests: boolean,
): Promise<Greeted> {
  try {
    const hello = await helloOf(pages, applied, withDigests);
    await session.send(hello.bytes);
    return { session, digests: hello.digests };
  } catch (e) {
    await Promise.resolve(session.close()).catch(() => undefined);
    throw e;
  }
}
