// Tabs of one origin for the worker engine's tests in Node: a Web Locks manager shared by every
// tab (exclusive locks, waiters granted in order, `ifAvailable`, `signal`), Node's BroadcastChannel,
// and per tab a "worker" serving connections through the bridge (src/worker/bridge.ts) on memory
// page stores that share one medium. `crash()` does what a closed or crashed tab does: its locks go
// to the next waiter, its channels close, its messages stop.
import { MemoryMedium, openMemoryPageStore } from '../../src/storage/memory';
import { openStore, restoreStore } from '../../src/node';
import { serveConnections, type WorkerPlatform } from '../../src/worker/serve';
import { bridgePort } from '../../src/worker/bridge';
import type { LockManagerLike, PortLike, TabsPlatform } from '../../src/worker/tabs';

interface Waiter {
  agent: number;
  grant: () => void;
}

export class Locks {
  readonly #held = new Map<string, { agent: number; release: () => void }>();
  readonly #queue = new Map<string, Waiter[]>();

  /** The lock manager of tab `agent`. */
  view(agent: number): LockManagerLike {
    return {
      query: async () => ({ held: [...this.#held].map(([name, h]) => ({ name, clientId: `tab-${h.agent}` })) }),
      request: (name, options, callback) => {
        if (this.#held.has(name) && options.ifAvailable === true) return callback(null);
        return new Promise((resolve, reject) => {
          const run = () => {
            let done = false;
            const release = () => {
              if (done) return;
              done = true;
              this.#held.delete(name);
              const next = this.#queue.get(name)?.shift();
              next?.grant();
            };
            this.#held.set(name, { agent, release });
            callback({ name }).then(
              (v) => (release(), resolve(v)),
              (e) => (release(), reject(e)),
            );
          };
          if (!this.#held.has(name)) return run();
          const w: Waiter = { agent, grant: run };
          const q = this.#queue.get(name) ?? [];
          q.push(w);
          this.#queue.set(name, q);
          options.signal?.addEventListener('abort', () => {
            const i = q.indexOf(w);
            if (i >= 0) q.splice(i, 1);
            reject(new DOMException('aborted', 'AbortError'));
          });
        });
      },
    };
  }

  /** Tab `agent` is gone: its locks pass on, its waiting requests are dropped. */
  crash(agent: number): void {
    for (const q of this.#queue.values())
      for (let i = q.length - 1; i >= 0; i--) if (q[i].agent === agent) q.splice(i, 1);
    for (const h of [...this.#held.values()]) if (h.agent === agent) h.release();
  }

  holder(name: string): number | undefined {
    return this.#held.get(name)?.agent;
  }

  holds(agent: number): boolean {
    return [...this.#held.values()].some((h) => h.agent === agent);
  }
}

export interface Tab {
  readonly worker: Worker;
  crash(): void;
  /** Crashes the tab when a message it picks reaches one of its channels (a call another tab sent it). */
  crashOn(when: (message: unknown) => boolean): void;
  /** Crashes the tab instead of sending a message it picks to another tab (a reply, say: what it did is durable, the reply lost). */
  crashOnSend(when: (message: unknown) => boolean): void;
}

/** A set of tabs over one lock manager and one medium. */
export function tabsOf(medium = new MemoryMedium()) {
  const locks = new Locks();
  let agents = 0;
  const all: Tab[] = [];
  const open = (): Tab => {
    const agent = ++agents;
    const channels = new Set<BroadcastChannel>();
    let alive = true;
    let crashOn: ((message: unknown) => boolean) | undefined;
    let crashOnSend: ((message: unknown) => boolean) | undefined;
    const tabs: TabsPlatform = {
      locks: locks.view(agent),
      channel: (name) => {
        const ch = new BroadcastChannel(name);
        channels.add(ch);
        const close = ch.close.bind(ch);
        let handler: ((e: MessageEvent) => void) | null = null;
        // A message `crashOn` picks crashes the tab instead of reaching it.
        ch.onmessage = (e: MessageEvent) => (crashOn?.(e.data) === true ? tab.crash() : handler?.(e));
        return {
          postMessage: (m: unknown) => (crashOnSend?.(m) === true ? tab.crash() : ch.postMessage(m)),
          close: () => (channels.delete(ch), close()),
          get onmessage() {
            return handler;
          },
          set onmessage(h: ((e: MessageEvent) => void) | null) {
            handler = h;
          },
        } satisfies PortLike;
      },
    };
    const platform: WorkerPlatform = {
      open: async (o) => {
        const pages = await openMemoryPageStore({ medium });
        return openStore({ ...o, storage: pages }).catch(async (e: unknown) => {
          await pages.close();
          throw e;
        });
      },
      restore: (copy, o) => restoreStore(copy, o as never),
      storageInfo: async (s) => ({ pageStore: s.info().storage }),
      bridge: (port, options) => bridgePort(port, platform, tabs, options),
    };
    const scope = new EventTarget();
    serveConnections(scope, platform);
    const worker = {
      postMessage: (data: unknown) => alive && scope.dispatchEvent(new MessageEvent('message', { data })),
      addEventListener: () => undefined,
      removeEventListener: () => undefined,
      terminate: () => undefined,
    } as unknown as Worker;
    const tab: Tab = {
      worker,
      crashOn: (when) => void (crashOn = when),
      crashOnSend: (when) => void (crashOnSend = when),
      crash: () => {
        alive = false;
        for (const ch of [...channels]) ch.close();
        // Its worker's file handles die with it (an OPFS sync access handle, say): the medium is free.
        if (locks.holds(agent)) medium.locked = false;
        locks.crash(agent);
      },
    };
    all.push(tab);
    return tab;
  };
  return { open, locks, medium, closeAll: () => all.forEach((t) => t.crash()) };
}
