// The primary's side of replication (DESIGN §10, docs/replication.md): it ships sealed pages only.
// A replica opens a session, says which commit it has applied and which pages it holds; the primary
// answers, inside the commit queue so that no commit slips between, with what the replica lacks of
// the page set of its current commit (pages, deletes, the sealed manifest), and from then on ships
// every durable commit as the commit pipeline's `applied` hook sees it. Page bytes and manifests
// are the store's own sealed bytes: nothing is decrypted or re-encrypted here, and no key is sent.
// A replica that falls too far behind (its send queue past a bound) is dropped; it reconnects and
// catches up from its own watermark.

import type { Parts } from '../engine/parts';
import type { AppliedCommit } from '../engine/commit';
import {
  decodeMessage,
  encodeMessage,
  splitCommit,
  MSG_COMMIT,
  MSG_HELLO,
  MSG_STATUS,
  type CommitMessage,
  type Message,
} from './messages';

/** A session as the shipping layer uses it: ordered, authenticated, encrypted messages. */
export interface MessageSession {
  send(bytes: Uint8Array): Promise<void>;
  receive(): Promise<Uint8Array>;
  close(): Promise<void> | void;
}

/** Bytes queued to one replica before it is dropped as too slow. */
const MAX_QUEUED_BYTES = 256 << 20;
/** How often an idle primary tells its replicas its commit and time. */
export const STATUS_INTERVAL_MS = 500;

interface Follower {
  session: MessageSession;
  queue: Promise<void>;
  queued: number;
  live: boolean;
  closed: boolean;
}

/** Ships the store of `parts` to every session handed to `accept`; `close` ends them all. */
export class Primary {
  readonly #p: Parts;
  readonly #followers = new Set<Follower>();
  readonly #timer: ReturnType<typeof setInterval>;
  #closed = false;

  constructor(parts: Parts) {
    this.#p = parts;
    parts.pipeline.hook({ applied: (c) => this.#ship(c) });
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
      if (hello.type !== MSG_HELLO) throw new TypeError('expected a hello');
      await this.#catchUp(f, new Set(hello.pageIds), hello.applied);
      // Then only acknowledgements come (and are not needed): read until the session ends.
      for (;;) decodeMessage(await session.receive());
    } catch {
      // The session ended, or the replica sent something it should not have: drop it.
    } finally {
      this.#drop(f);
    }
  }

  /** The pages the replica lacks of the current commit, and from then on every commit. */
  #catchUp(f: Follower, held: Set<number>, applied: number): Promise<void> {
    const { pipeline, pages } = this.#p;
    return pipeline.exclusive(async () => {
      // The installed manifest, as sealed: authenticated when the store opened or written by its
      // own commit, never read back from the medium.
      const manifest = pipeline.sealedManifest;
      if (manifest === undefined) return void (f.live = true); // nothing committed yet
      const ids = await pages.listPages();
      const have = new Set(ids);
      const missing: { id: number; bytes: Uint8Array }[] = [];
      for (const id of ids)
        if (!held.has(id)) {
          const bytes = await pages.readPage(id);
          if (bytes !== undefined) missing.push({ id, bytes });
        }
      const deletes = [...held].filter((id) => !have.has(id));
      const commit = pipeline.manifest.commit;
      if (commit !== applied || missing.length > 0 || deletes.length > 0)
        for (const bytes of splitCommit({
          type: MSG_COMMIT,
          commit,
          time: Date.now(),
          snapshot: true,
          pages: missing,
          deletes,
          manifest,
        }))
          this.#sendBytes(f, bytes);
      else this.#send(f, { type: MSG_STATUS, commit, time: Date.now() });
      f.live = true; // still inside the queue: the next commit's hook ships to it
    });
  }

  /** `applied` hook: every durable commit to every live replica, in commit order. */
  #ship(c: AppliedCommit): void {
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
    const messages = splitCommit(m);
    for (const f of this.#followers) if (f.live) for (const bytes of messages) this.#sendBytes(f, bytes);
  }

  #status(): void {
    if (this.#followers.size === 0) return;
    const commit = this.#p.pipeline.manifest.commit;
    const bytes = encodeMessage({ type: MSG_STATUS, commit, time: Date.now() });
    for (const f of this.#followers) if (f.live && f.queued === 0) this.#sendBytes(f, bytes);
  }

  #send(f: Follower, m: Message): void {
    this.#sendBytes(f, encodeMessage(m));
  }

  /** Queues `bytes` to `f` without waiting for the network (commits never wait for replicas). */
  #sendBytes(f: Follower, bytes: Uint8Array): void {
    if (f.closed) return;
    if (f.queued + bytes.length > MAX_QUEUED_BYTES) return this.#drop(f); // it catches up on reconnect
    f.queued += bytes.length;
    f.queue = f.queue
      .then(() => f.session.send(bytes))
      .then(
        () => void (f.queued -= bytes.length),
        () => this.#drop(f),
      );
  }

  #drop(f: Follower): void {
    if (f.closed) return;
    f.closed = true;
    this.#followers.delete(f);
    void Promise.resolve(f.session.close()).catch(() => undefined);
  }

  /** Ends every session. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    for (const f of [...this.#followers]) this.#drop(f);
  }
}
