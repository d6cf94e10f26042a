// One page's connection when its worker serves tabs (tabs.ts, docs/tabs.md): the page's calls go
// to whichever worker serves the store now, this one's (the page's worker took the store's lock) or
// another tab's (over its channel), and come back as they are. When the serving tab goes (closed,
// reloaded, crashed), the calls in flight fail with HANDOVER; the bridge finds the new server (or
// becomes it: the waiting lock request was granted), declares the page's collections again, and the
// calls sent meanwhile go on there.

import { PqdbError } from '../errors';
import type { OpenStoreOptions } from '../engine/open';
import type { Store } from '../engine/store';
import { sendError, type PageMessage, type WorkerMessage } from './protocol';
import { completeOptions, servePort, type ServeWorkerOptions, type WorkerPlatform } from './serve';
import { b64 } from '../_encoding';
import { publicKeysOf } from '../engine/keys';
import {
  joinTab,
  lockHolder,
  recipientAmong,
  serveTabs,
  tryLock,
  waitForLock,
  type PortLike,
  type TabsPlatform,
} from './tabs';

/** The store this worker serves to its page and to the other tabs, by location. */
interface Served {
  readonly store: Store;
  /** Stops serving the other tabs, closes the store, releases the lock, then calls `gone`'s. */
  close(): Promise<void>;
  /** The other connections of this worker served by it: told when it closes. */
  readonly gone: Set<() => void>;
}

/** Per worker (its tabs platform): the stores it serves by location. */
const servedBy = new WeakMap<TabsPlatform, Map<string, Served>>();

/** Two ports joined in this worker: what one posts, the other receives (nothing cloned). */
function localPair(): [PortLike, PortLike] {
  const make = (): PortLike & { peer?: PortLike } => ({
    onmessage: null,
    postMessage(m: unknown) {
      const peer = this.peer;
      queueMicrotask(() => peer?.onmessage?.({ data: m } as MessageEvent));
    },
    close() {
      this.peer = undefined;
    },
  });
  const a = make();
  const b = make();
  a.peer = b;
  b.peer = a;
  return [a, b];
}

/** Calls a new server may be given again after a handover: they read, or write with a request id (applied once). */
const READS = new Set([
  'get',
  'has',
  'version',
  'queryIds',
  'readMany',
  'size',
  'search',
  'exportSealed',
  'info',
  'policy',
  'storageInfo',
  'recipientKeys',
  'checkpoints',
  'copies',
  'posture',
  'migration',
  'registry.list',
  'collection',
  'collections',
]);

/**
 * Gives a put or batch sent to another tab's worker a request id (16 random bytes, base64), so
 * that the next server takes it once if this one goes with it in flight. Calls this worker serves
 * itself need none: its page goes with it.
 */
function withRequestId(m: PageMessage): void {
  if (m.t !== 'call' || (m.op !== 'put' && m.op !== 'batch')) return;
  const at = m.op === 'put' ? 2 : 1;
  const options = (m.args[at] ?? {}) as { requestId?: string };
  if (options.requestId === undefined)
    (m.args as unknown[])[at] = { ...options, requestId: b64(globalThis.crypto.getRandomValues(new Uint8Array(16))) };
}

function retrySafe(m: PageMessage): boolean {
  if (m.t !== 'call') return false;
  if (m.op === 'put') return (m.args[2] as { requestId?: unknown } | undefined)?.requestId !== undefined;
  if (m.op === 'batch') return (m.args[1] as { requestId?: unknown } | undefined)?.requestId !== undefined;
  return READS.has(m.op);
}

function isTabMessage(m: unknown): m is { t: 'bye' | 'server' } {
  const t = (m as { t?: unknown } | null)?.t;
  return t === 'bye' || t === 'server';
}

/**
 * @internal Serves one page's connection on `page` through the store's server: a platform's
 * `bridge` (src/worker.ts) where `tabs` offers locks and channels.
 */
export function bridgePort(
  page: PortLike,
  platform: WorkerPlatform,
  tabs: TabsPlatform,
  serve: ServeWorkerOptions = {},
): void {
  const served = servedBy.get(tabs) ?? new Map<string, Served>();
  servedBy.set(tabs, served);
  let endpoint: PortLike | undefined;
  let location: string | undefined;
  let options: OpenStoreOptions | undefined;
  let waiting: { cancel(): void } | undefined;
  let announcements: PortLike | undefined;
  let closed = false;
  let closing: number | undefined;
  /** The page's calls sent to the server and not answered yet. */
  const pending = new Map<number, PageMessage>();
  /** The page's collection declarations, declared again at a new server. */
  const declarations: PageMessage[] = [];
  /** Page messages that came while no server was there. */
  const queue: PageMessage[] = [];
  let internal = 0;

  const toPage = (m: WorkerMessage) => page.postMessage(m);

  /** Sends `m` to the server now; an internal message (negative id) waits for its reply, which the page does not see. */
  const replies = new Map<number, (m: WorkerMessage) => void>();
  function send(m: PageMessage): void {
    if (m.t === 'call' || m.t === 'open') pending.set(m.id, m);
    if (remote) withRequestId(m);
    try {
      endpoint!.postMessage(m);
    } catch {
      handover(); // its channel closed under it: the server is gone
    }
  }
  function sendInternal(
    m: Omit<PageMessage & { t: 'call' }, 'id'> | { t: 'open'; options: Record<string, unknown> },
  ): Promise<WorkerMessage> {
    const id = --internal;
    return new Promise((resolve) => {
      replies.set(id, resolve);
      try {
        endpoint!.postMessage({ ...m, id });
      } catch {
        handover();
      }
    });
  }

  function fromServer(m: unknown): void {
    if (isTabMessage(m)) {
      if (m.t === 'bye') handover();
      return;
    }
    const r = m as WorkerMessage;
    const internalReply = replies.get(r.id);
    if (internalReply !== undefined) {
      if (r.t !== 'event') (replies.delete(r.id), internalReply(r));
      return;
    }
    if (r.t !== 'event') pending.delete(r.id);
    toPage(r);
    if (r.id === closing && r.t !== 'event') {
      endpoint?.close();
      endpoint = undefined;
      page.close();
    }
  }

  /** Opens and serves the store here (this worker holds its lock: `release` lets it go). */
  async function becomeServer(release: () => void): Promise<void> {
    let store: Store;
    try {
      store = await platform.open(options!);
    } catch (e) {
      release();
      throw e;
    }
    const loc = location!;
    let stopTabs: () => void = () => undefined;
    const s: Served = {
      store,
      gone: new Set(),
      close: async () => {
        served.delete(loc);
        stopTabs();
        try {
          await store.close();
        } finally {
          release();
          for (const f of s.gone) f();
        }
      },
    };
    served.set(loc, s);
    // The other tabs' connections attach to the store; only this page's close closes it.
    stopTabs = serveTabs(tabs, loc, store, (port) =>
      servePort(port, platform, serve, { store, close: async () => undefined }),
    );
    const [mine, theirs] = localPair();
    servePort(theirs, platform, serve, { store, close: () => s.close() });
    attach(mine);
  }

  /** The lock, once a waiting request got it (this worker serves next). */
  let granted: (() => void) | undefined;
  let stopJoining: AbortController | undefined;
  let connecting = false;
  /** The server is another tab's worker. */
  let remote = false;

  async function becomeClient(): Promise<void> {
    // Waits for the lock from now on: when the server goes, one waiting tab gets it.
    stopJoining = new AbortController();
    waiting ??= waitForLock(tabs, location!, (release) => {
      waiting = undefined;
      granted = release; // the server is gone: this worker serves next
      // A connect under way takes it (a join gives up; a join done finds it unused: reach goes
      // round); else the server this tab was served by is gone: a round of the handover serves.
      if (connecting) stopJoining?.abort();
      else handover();
    });
    if (granted !== undefined) throw new PqdbError('ABORTED', 'the lock came first'); // connect serves
    const port = await joinTab(tabs, location!, options!.unlock!, stopJoining.signal);
    const holder = await lockHolder(tabs, location!);
    // A new server announces itself when this one is gone without a word (its tab crashed); an
    // announcement while the lock's holder is the one this tab joined is not taken (anyone may post one).
    announcements ??= tabs.channel(`pqdb-tabs:${location}`);
    announcements.onmessage = (e) => {
      if ((e.data as { t?: string })?.t !== 'server' || endpoint !== port) return;
      void lockHolder(tabs, location!).then(
        (now) => (now !== holder || now === undefined) && endpoint === port && handover(),
      );
    };
    attach(port, true);
  }

  function attach(port: PortLike, other = false): void {
    endpoint = port;
    remote = other;
    port.onmessage = (e) => fromServer(e.data);
  }

  /**
   * Finds the server (this worker, with the lock; another connection of this worker; or another
   * tab's) and opens the page's store there, declaring its collections again; resolves with what
   * the open reported.
   */
  async function connect(resent: ReadonlySet<number> = new Set()): Promise<unknown> {
    for (;;) {
      const here = served.get(location!);
      if (here !== undefined) {
        // Another connection of this worker serves it: this one's key must be a recipient's too.
        if (
          recipientAmong(
            here.store,
            publicKeysOf(options!.unlock!).map((k) => b64(k)),
          ) === undefined
        )
          throw new PqdbError('AUTH_FAILED', 'this key is not a recipient key of the store');
        const [mine, theirs] = localPair();
        const gone = () => (here.gone.delete(gone), endpoint === mine && handover());
        here.gone.add(gone);
        servePort(theirs, platform, serve, { store: here.store, close: async () => void here.gone.delete(gone) });
        attach(mine);
        break;
      }
      const held = granted ?? (await tryLock(tabs, location!));
      granted = undefined;
      if (held !== undefined) {
        waiting?.cancel();
        waiting = undefined;
        await becomeServer(held);
        break;
      }
      try {
        await becomeClient();
        break;
      } catch (e) {
        if (granted !== undefined) continue; // the lock came meanwhile: serve
        waiting?.cancel(); // a tab that cannot join does not wait for the lock either
        waiting = undefined;
        throw e;
      }
    }
    const opened = await sendInternal({ t: 'open', options: {} });
    if (opened.t === 'err')
      throw new PqdbError('INTERNAL', `the serving tab refused the open: ${opened.error.message}`);
    // Declared again, but for those the page still waits for: they go again as they are.
    for (const d of declarations) if (!resent.has(d.id)) await sendInternal(d as PageMessage & { t: 'call' });
    return opened.t === 'ok' ? opened.value : undefined;
  }

  let handing: Promise<void> | undefined;
  /** Set when the server went (again): the handover under way goes round once more. */
  let lost = false;
  /** Why no server could be found: every later call fails with it. */
  let failure: unknown;
  /** The page's calls in flight at a server that went, given to the next as they are. */
  const again: PageMessage[] = [];

  /** The server went: its calls in flight are failed or kept for the next. */
  function dropServer(): void {
    const old = endpoint;
    endpoint = undefined;
    try {
      old?.postMessage({ t: 'bye' }); // a server still there ends this connection's streams
    } catch {
      // closed
    }
    old?.close();
    for (const [id, m] of pending) {
      if (retrySafe(m)) {
        again.push(m);
        continue;
      }
      const what = m.t === 'call' ? `"${m.op}"` : 'the call';
      toPage({
        t: 'err',
        id,
        error: sendError(
          new PqdbError(
            'HANDOVER',
            `the tab serving the store went away with ${what} in flight: it may or may not have taken effect; call again`,
          ),
        ),
      });
    }
    pending.clear();
    for (const resolve of replies.values())
      resolve({ t: 'err', id: 0, error: sendError(new PqdbError('HANDOVER', 'the serving tab went away')) });
    replies.clear();
  }

  /** Finds a server and opens the store there, going round while servers go meanwhile; resolves with what the open reported. */
  async function reach(): Promise<unknown> {
    let value: unknown;
    while (lost && !closed) {
      lost = false;
      dropServer();
      connecting = true;
      try {
        value = await connect(new Set(again.map((m) => m.id)));
      } catch (e) {
        if (granted !== undefined) lost = true; // the lock came meanwhile: serve
        if (lost) continue; // or a server went: again
        throw e;
      } finally {
        connecting = false;
      }
      // The lock came after this tab joined a server: that server is gone, this worker serves.
      if (granted !== undefined) lost = true;
    }
    return value;
  }

  /** Runs `reach`, then sends what waited, or fails it all when no server can be had. */
  function establish(opened?: (value: unknown) => void, failed?: (e: unknown) => void): void {
    lost = true;
    handing ??= reach()
      .then(
        (value) => {
          opened?.(value);
          for (const m of [...again.splice(0), ...queue.splice(0)]) send(m);
        },
        (e: unknown) => {
          failure = e; // no server and none to be
          failed?.(e);
          for (const m of [...again.splice(0), ...queue.splice(0)]) fail(m, e);
          releaseGranted();
        },
      )
      .finally(() => {
        handing = undefined;
        if (lost) handover(); // the server went as what waited was sent
      });
  }

  /** The server went: find the next one, then send what waited. */
  function handover(): void {
    if (closed || failure !== undefined || location === undefined) return;
    establish();
  }

  /** Answers `m` with `e` (a close is answered as done: there is nothing left to close). */
  function fail(m: PageMessage, e: unknown): void {
    if (m.t === 'abort') return;
    if (m.t === 'call' && m.target === 0 && m.op === 'close') {
      toPage({ t: 'ok', id: m.id, value: undefined });
      page.close();
    } else toPage({ t: 'err', id: m.id, error: sendError(e) });
  }

  /** A lock granted that this connection will not use goes back. */
  function releaseGranted(): void {
    granted?.();
    granted = undefined;
    waiting?.cancel();
    waiting = undefined;
  }

  page.onmessage = (e: MessageEvent<PageMessage>) => {
    const m = e.data;
    if ((m?.t === 'open' || m?.t === 'restore') && location === undefined && endpoint === undefined) {
      void (async () => {
        try {
          const requested = m.options as unknown as OpenStoreOptions;
          const complete = await completeOptions(serve, requested, m.context);
          const { location: where, storage, unlock } = complete;
          if (m.t === 'restore' || typeof where !== 'string' || storage === 'memory' || unlock === undefined) {
            // Nothing to share between tabs: served here as without tabs.
            const [mine, theirs] = localPair();
            servePort(theirs, platform, serve);
            attach(mine);
            send(m);
            return;
          }
          options = complete;
          location = where;
          establish(
            (value) => toPage({ t: 'ok', id: m.id, value }),
            (err) => toPage({ t: 'err', id: m.id, error: sendError(err) }),
          );
        } catch (err) {
          toPage({ t: 'err', id: m.id, error: sendError(err) });
        }
      })();
      return;
    }
    if (failure !== undefined) return fail(m, failure);
    if (m?.t === 'call' && m.target === 0 && m.op === 'collection') declarations.push(m);
    if (m?.t === 'call' && m.target === 0 && m.op === 'close') {
      closed = true;
      closing = m.id;
      waiting?.cancel();
      announcements?.close();
    }
    if (endpoint === undefined || handing !== undefined) queue.push(m);
    else send(m);
  };
}
