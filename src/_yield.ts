// Yielding to the event loop between bounded steps of long work (migration, index encoding,
// checksums of large pages), so reads and timers run in between. Node: setImmediate (no 1 ms
// clamp). Browsers: scheduler.yield where it exists, else a MessageChannel message (setTimeout is
// clamped to 4 ms once nested, which would make many small steps slow).

type Scheduler = { yield?: () => Promise<void> };

let channel: MessageChannel | undefined;
const waiting: (() => void)[] = [];

/** Resolves after queued I/O callbacks, timers and other tasks had their turn. */
export function yieldToEventLoop(): Promise<void> {
  const g = globalThis as { setImmediate?: (f: () => void) => void; scheduler?: Scheduler };
  if (g.setImmediate !== undefined) return new Promise((resolve) => g.setImmediate!(resolve));
  if (typeof g.scheduler?.yield === 'function') return g.scheduler.yield();
  if (typeof MessageChannel === 'function') {
    if (channel === undefined) {
      channel = new MessageChannel();
      channel.port1.onmessage = () => waiting.shift()?.();
    }
    return new Promise((resolve) => {
      waiting.push(resolve);
      channel!.port2.postMessage(0);
    });
  }
  return new Promise((resolve) => setTimeout(resolve, 0));
}
