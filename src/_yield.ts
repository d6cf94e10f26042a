// Yielding to the event loop between bounded steps of long work (migration, index encoding,
// checksums of large pages), so reads and timers run in between. Node: setImmediate (no 1 ms
// clamp). Browsers: a task posted with scheduler.postTask at the default priority, else a
// MessageChannel message: queued behind the timers and events already waiting. Not
// scheduler.yield: its continuation runs ahead of other tasks, so a long run of steps would keep
// the page's timers waiting. Not setTimeout: nested timers are clamped to 4 ms, which would make
// thousands of small steps slow.

type Scheduler = { postTask?: (f: () => void, options?: { priority?: string }) => Promise<void> };

let channel: MessageChannel | undefined;
const waiting: (() => void)[] = [];

/** Resolves after queued I/O callbacks, timers and other tasks had their turn. */
export function yieldToEventLoop(): Promise<void> {
  return turn().then(resumed);
}

function resumed(): void {
  resumedAt = now();
}

function turn(): Promise<void> {
  const g = globalThis as { setImmediate?: (f: () => void) => void; scheduler?: Scheduler };
  if (g.setImmediate !== undefined) return new Promise((resolve) => g.setImmediate!(resolve));
  if (typeof g.scheduler?.postTask === 'function')
    return g.scheduler.postTask(() => undefined, { priority: 'user-visible' });
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

/**
 * How long a step of background work (a migration, compaction, checkpoint, backup) holds the
 * thread before it lets waiting reads in: long loops call `sliceSpent()` often (it reads a clock)
 * and yield when it says so. Reads first: a read arriving during background work waits at most
 * about this long.
 */
export const SLICE_MS = 2;

/** Items of a cheap loop (a directory entry, a queue slot) between looks at the clock. */
export const CLOCK_STEP = 256;

const now = () => performance.now();

/** When this thread last came back from yieldToEventLoop. */
let resumedAt = now();

/**
 * Whether background work has held the thread for SLICE_MS since it last yielded (or since work
 * that never yields began: a step starting from an I/O callback counts from the last yield, and so
 * yields early rather than late).
 */
export function sliceSpent(): boolean {
  return now() - resumedAt >= SLICE_MS;
}

/** yieldToEventLoop once the slice is spent: the `pause` long work takes between bounded steps. */
export async function pauseIfSpent(): Promise<void> {
  if (sliceSpent()) await yieldToEventLoop();
}
