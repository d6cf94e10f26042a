// The primary's side of replication (DESIGN §10, docs/replication.md): it ships sealed pages only.
// A replica opens a session, says which commit it has applied and which pages it holds; the primary
// answers, inside the commit queue so that no commit slips between, with what the replica lacks of
// the page set of its current commit (pages, deletes, the sealed manifest), and from then on ships
// every durable commit as the commit pipeline's `applied` hook sees it. Page bytes and manifests
// are the store's own sealed bytes: nothing is decrypted or re-encrypted here, and no key is sent.
// A catch-up of any size streams in bounded messages, each read only once the replica's queue has
// drained (back-pressure), so it never meets the queue bound; a live replica that falls too far
// behind (its send queue past the bound) is dropped, reconnects and catches up from its watermark.
// A replica whose hello carries page digests (HELLO2) first learns which of its ranges differ,
// sends the page digests of those, and is sent again, as replacements, the pages whose bytes are
// not the primary's (src/replication/_digests.ts); a plain HELLO (an older replica) skips that.

import type { AppliedCommit } from '../engine/commit';
import type { ReplicationSource } from '../engine/store-options';
import { integer } from '../_args';
import { PageDigests, rangeIds, DIGEST_BYTES } from './_digests';
import {
  decodeMessage,
  encodeMessage,
  splitCommit,
  MSG_COMMIT,
  MSG_DIFFER,
  MSG_DIGESTS,
  MSG_HELLO,
  MSG_HELLO2,
  MSG_PAGES,
  MSG_REPLACE,
  MSG_STATUS,
  PAGES_PER_MESSAGE_BYTES,
  type CommitMessage,
  type Hello2,
  type Message,
} from './messages';

/** A session as the shipping layer uses it: ordered, authenticated, encrypted messages. */
export interface MessageSession {
  send(bytes: Uint8Array): Promise<void>;
  receive(): Promise<Uint8Array>;
  close(): Promise<void> | void;
}

/** How far a primary lets one replica's send queue grow, and how a catch-up streams (docs/replication.md). */
export interface PrimaryLimits {
  /** Bytes queued to one replica before it is dropped as too slow (default 256 MiB). */
  maxQueuedBytes?: number;
  /**
   * A catch-up reads its next pages only once the replica's queue is below this (default 16 MiB),
   * and queues at most this many page bytes at a time. At most half of maxQueuedBytes.
   */
  lowWaterBytes?: number;
  /** Page bytes per catch-up message (default PAGES_PER_MESSAGE_BYTES, 4 MiB). */
  messageBytes?: number;
}

const MAX_QUEUED_BYTES = 256 << 20;
const LOW_WATER_BYTES = 16 << 20;
/** Catch-up rounds outside the commit queue before the last one reads what is left inside it. */
const MAX_ROUNDS = 8;
/** How often an idle primary tells its replicas its commit and time. */
export const STATUS_INTERVAL_MS = 500;

interface Follower {
  session: MessageSession;
  queue: Promise<void>;
  queued: number;
  live: boolean;
  /** Comparing page digests: it gets the status heartbeat meanwhile, as a live replica does. */
  comparing?: boolean;
  closed: boolean;
  /** Called when `queued` falls or the follower is dropped (a catch-up waiting to send more). */
  drained?: () => void;
}

type Page = { id: number; bytes: Uint8Array };

/**
 * What a primary uses of the store it serves: its sealed pages, the commit queue and manifest, and
 * `ship`, the engine's registration of a listener of durable commits (it returns the removal).
 */
export type PrimaryContext = ReplicationSource;

/** Ships the store of `source` to every session handed to `accept`; `close` ends them all. */
export class Primary {
  readonly #p: PrimaryContext;
  readonly #off: () => void;
  readonly #followers = new Set<Follower>();
  readonly #timer: ReturnType<typeof setInterval>;
  readonly #maxQueued: number;
  readonly #lowWater: number;
  readonly #messageBytes: number;
  /** Digests of this store's pages, kept once computed (pages are immutable). */
  readonly #digests: PageDigests;
  #closed = false;

  constructor(source: PrimaryContext, limits: PrimaryLimits = {}) {
    this.#p = source;
    this.#maxQueued =
      limits.maxQueuedBytes === undefined
        ? MAX_QUEUED_BYTES
        : integer('maxQueuedBytes', limits.maxQueuedBytes, 2, 2 ** 40);
    this.#lowWater =
      limits.lowWaterBytes === undefined
        ? Math.min(LOW_WATER_BYTES, this.#maxQueued >> 1)
        : integer('lowWaterBytes', limits.lowWaterBytes, 1, this.#maxQueued >> 1);
    this.#messageBytes =
      limits.messageBytes === undefined
        ? PAGES_PER_MESSAGE_BYTES
        : integer('messageBytes', limits.messageBytes, 1, PAGES_PER_MESSAGE_BYTES);
    this.#digests = new PageDigests(source.pages);
    this.#off = source.ship((c) => this.#ship(c));
    this.#timer = setInterval(() => this.#status(), STATUS_INTERVAL_MS);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /** Replicas connected, and how many are past their catch-up. */
  get followers(): { connected: number; live: number } {
    let live = 0;
    for (const f of this.#followers) if (f.live) live++;
    return { connected: this.#followers.size, live };
  }

  /** Serves one replica's session until it ends. */
  async accept(session: MessageSession): Promise<void> {
    const f: Follower = { session, queue: Promise.resolve(), queued: 0, live: false, closed: false };
    if (this.#closed) return void (await session.close());
    this.#followers.add(f);
    try {
      const hello = decodeMessage(await session.receive());
      if (hello.type !== MSG_HELLO && hello.type !== MSG_HELLO2) throw new TypeError('expected a hello');
      const replace = hello.type === MSG_HELLO2 ? await this.#compare(f, hello) : [];
      // Acknowledgements and progress come meanwhile (and are not needed): read until the session ends.
      const reading = (async () => {
        for (;;) decodeMessage(await session.receive());
      })();
      reading.catch(() => this.#drop(f));
      if (replace.length > 0) await this.#stream(f, replace, new Set(), MSG_REPLACE);
      await this.#catchUp(f, new Set(hello.pageIds), hello.applied, replace.length > 0);
      await reading;
    } catch {
      // The session ended, or the replica sent something it should not have: drop it.
    } finally {
      this.#drop(f);
    }
  }

  /**
   * The pages of a HELLO2 whose bytes here differ from the replica's: the ranges that differ
   * (DIFFER), then the page digests of each (DIGESTS), compared one by one. Runs before the
   * catch-up, outside the commit queue (pages are immutable: commits meanwhile only delete some,
   * and the catch-up drops those).
   */
  async #compare(f: Follower, hello: Hello2): Promise<number[]> {
    f.comparing = true;
    try {
      const ranges = await this.#digests.differingRanges(hello.pageIds, hello.ranges);
      this.#send(f, { type: MSG_DIFFER, ranges });
      const replace: number[] = [];
      for (const r of ranges) {
        const m = decodeMessage(await f.session.receive());
        const ids = rangeIds(hello.pageIds, r);
        if (m.type !== MSG_DIGESTS || m.range !== r || m.digests.length !== ids.length * DIGEST_BYTES)
          throw new TypeError(`expected the page digests of range ${r}`);
        replace.push(...(await this.#digests.differingPages(ids, m.digests)));
      }
      return replace;
    } finally {
      f.comparing = false;
    }
  }

  /**
   * The pages the replica lacks of the current commit, and from then on every commit. The pages
   * stream in bounded messages, the next read only once the replica's queue has drained below the
   * low-water mark, outside the commit queue (commits go on meanwhile); a round inside the queue
   * then sends what the replica still lacks of the commit current by then, with its manifest and
   * the pages to drop, and makes the replica live. Pages sent ahead that a later commit deleted
   * are named among the drops. With `replaced` (pages sent ahead as replacements) a COMMIT goes
   * even when the replica is at the current commit: the replacements belong to it.
   */
  async #catchUp(f: Follower, held: Set<number>, applied: number, replaced: boolean): Promise<void> {
    const { pipeline, pages } = this.#p;
    const sent = new Set<number>();
    for (let round = 0; !f.closed; round++) {
      await this.#drained(f);
      if (f.closed) return;
      const rest = await pipeline.exclusive(async () => {
        // The installed manifest, as sealed: authenticated when the store opened or written by its
        // own commit, never read back from the medium.
        const manifest = pipeline.sealedManifest;
        if (manifest === undefined) return void (f.live = true); // nothing committed yet
        const ids = await pages.listPages();
        const missing = ids.filter((id) => !held.has(id) && !sent.has(id));
        // Up to the low-water mark read here; the rest (if any) streams outside the queue.
        const batch: Page[] = [];
        let bytes = 0;
        let i = 0;
        for (; i < missing.length && (bytes <= this.#lowWater || round >= MAX_ROUNDS); i++) {
          const page = await pages.readPage(missing[i]);
          if (page === undefined) continue;
          batch.push({ id: missing[i], bytes: page });
          bytes += page.length;
        }
        if (i < missing.length) {
          this.#sendPages(f, batch, sent);
          return missing.slice(i);
        }
        const have = new Set(ids);
        const deletes = [...held, ...sent].filter((id) => !have.has(id));
        const commit = pipeline.manifest.commit;
        if (commit !== applied || batch.length > 0 || sent.size > 0 || deletes.length > 0 || replaced)
          for (const m of splitCommit(
            { type: MSG_COMMIT, commit, time: Date.now(), snapshot: true, pages: batch, deletes, manifest },
            this.#messageBytes,
          ))
            this.#sendBytes(f, m);
        else this.#send(f, { type: MSG_STATUS, commit, time: Date.now() });
        f.live = true; // still inside the queue: the next commit's hook ships to it
      });
      if (rest === undefined) return;
      await this.#stream(f, rest, sent);
    }
  }

  /**
   * Sends pages `ids` ahead, reading each batch only once the queue is below the low-water mark. A
   * page gone meanwhile (a later commit deleted it) or unreadable here is left for the last round.
   */
  async #stream(
    f: Follower,
    ids: readonly number[],
    sent: Set<number>,
    type: typeof MSG_PAGES | typeof MSG_REPLACE = MSG_PAGES,
  ): Promise<void> {
    const { pages } = this.#p;
    let batch: Page[] = [];
    let bytes = 0;
    for (const id of ids) {
      if (f.closed) return;
      if (bytes === 0) await this.#drained(f);
      const page = await pages.readPage(id).catch(() => undefined);
      if (page === undefined) continue;
      batch.push({ id, bytes: page });
      bytes += page.length;
      if (bytes >= this.#lowWater) {
        this.#sendPages(f, batch, sent, type);
        batch = [];
        bytes = 0;
      }
    }
    this.#sendPages(f, batch, sent, type);
  }

  /** Queues `batch` as PAGES (or REPLACE) messages of at most messageBytes each (but one page), noting them sent. */
  #sendPages(
    f: Follower,
    batch: readonly Page[],
    sent: Set<number>,
    type: typeof MSG_PAGES | typeof MSG_REPLACE = MSG_PAGES,
  ): void {
    let part: Page[] = [];
    let n = 0;
    const flush = () => {
      if (part.length > 0) this.#send(f, { type, pages: part });
      part = [];
      n = 0;
    };
    for (const p of batch) {
      if (n + p.bytes.length > this.#messageBytes) flush();
      part.push(p);
      n += p.bytes.length;
      sent.add(p.id);
    }
    flush();
  }

  /** Resolves once `f`'s queue is at or below the low-water mark, or `f` is dropped. */
  async #drained(f: Follower): Promise<void> {
    while (!f.closed && f.queued > this.#lowWater) await new Promise<void>((r) => (f.drained = r));
  }

  /** `applied` hook: every durable commit to every live replica, in commit order. */
  #ship(c: AppliedCommit): void {
    this.#digests.forget(c.deletes);
    if (this.#followers.size === 0) return;
    const m: CommitMessage = {
      type: MSG_COMMIT,
      commit: c.manifest.commit,
      time: Date.now(),
      snapshot: false,
      pages: c.pages.map((p) => ({ id: p.id, bytes: p.bytes })),
      deletes: [...c.deletes],
      manifest: c.sealedManifest,
    };
    const messages = splitCommit(m, this.#messageBytes);
    for (const f of this.#followers) if (f.live) for (const bytes of messages) this.#sendBytes(f, bytes);
  }

  #status(): void {
    if (this.#followers.size === 0) return;
    const commit = this.#p.pipeline.manifest.commit;
    const bytes = encodeMessage({ type: MSG_STATUS, commit, time: Date.now() });
    for (const f of this.#followers) if ((f.live || f.comparing) && f.queued === 0) this.#sendBytes(f, bytes);
  }

  #send(f: Follower, m: Message): void {
    this.#sendBytes(f, encodeMessage(m));
  }

  /** Queues `bytes` to `f` without waiting for the network (commits never wait for replicas). */
  #sendBytes(f: Follower, bytes: Uint8Array): void {
    if (f.closed) return;
    if (f.queued + bytes.length > this.#maxQueued) return this.#drop(f); // it catches up on reconnect
    f.queued += bytes.length;
    f.queue = f.queue
      .then(() => f.session.send(bytes))
      .then(
        () => {
          f.queued -= bytes.length;
          f.drained?.();
        },
        () => this.#drop(f),
      );
  }

  #drop(f: Follower): void {
    if (f.closed) return;
    f.closed = true;
    f.drained?.();
    this.#followers.delete(f);
    void Promise.resolve(f.session.close()).catch(() => undefined);
  }

  /** Ends every session. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#off();
    clearInterval(this.#timer);
    for (const f of [...this.#followers]) this.#drop(f);
  }
}
