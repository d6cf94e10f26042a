// Change notifications (docs/changes.md): after each durable commit, the collections and ids it
// changed and its commit number, to listeners on a collection (`collection.watch`, filtered by ids
// or an id prefix) and to the store's iterators (`store.changes()`). They carry ids, never values:
// a listener reads what it needs through the store, under the policy in force. A migration's copies
// re-seal records without changing them and are not changes.
//
// The feed is the Store's, not an engine's: a store that follows its writer keeps its listeners when
// it swaps to an engine opened anew, and then tells each collection it was `reset` (which ids changed
// between the two engines is not known; a listener re-reads what it shows).

import { PqdbError } from '../errors';
import type { AppliedCommit } from './commit';

/** What one durable commit changed in one collection. */
export interface Change {
  /** The commit that made it durable (`store.info().commit` once it is installed). */
  readonly commit: number;
  readonly collection: string;
  /** The ids put or deleted, each once, in the order the commit first wrote them. */
  readonly ids: readonly string[];
  /** Set when the store was opened anew at `commit` (a following store): any record may have changed, `ids` is empty. */
  readonly reset?: true;
}

/** Which changes of a collection a listener hears: of these ids, or of ids with this prefix (both: either). */
export interface WatchOptions {
  readonly ids?: Iterable<string>;
  readonly prefix?: string;
}

/** Which changes `store.changes()` yields: of these collections (all when absent). */
export interface ChangesOptions {
  readonly collections?: Iterable<string>;
  /** Ends the iteration (it returns) when aborted. */
  readonly signal?: AbortSignal;
}

/** The most ids an iterator of `changes()` holds unread before it fails with ABORTED (falling behind). */
export const CHANGES_BUFFER_IDS = 1_000_000;

interface Watcher {
  readonly collection: string | undefined;
  readonly ids: ReadonlySet<string> | undefined;
  readonly prefix: string | undefined;
  readonly deliver: (change: Change) => void;
}

/** The checked filter of `watch`: undefined fields hear every id. */
export function watchFilter(options: WatchOptions | undefined): { ids?: Set<string>; prefix?: string } {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
  const { ids, prefix } = options;
  if (prefix !== undefined && typeof prefix !== 'string') throw new TypeError('"prefix" expected a string');
  if (ids === undefined) return { prefix };
  if (typeof ids === 'string' || typeof (ids as Iterable<string>)[Symbol.iterator] !== 'function')
    throw new TypeError('"ids" expected an iterable of ids');
  const set = new Set<string>();
  for (const id of ids) {
    if (typeof id !== 'string') throw new TypeError('"ids" expected strings');
    set.add(id);
  }
  return { ids: set, prefix };
}

/** The part of `change` a filter hears, or undefined when it hears none of it. */
export function filterChange(
  change: Change,
  ids: ReadonlySet<string> | undefined,
  prefix: string | undefined,
): Change | undefined {
  if (change.reset === true || (ids === undefined && prefix === undefined)) return change;
  const heard = change.ids.filter((id) => ids?.has(id) === true || (prefix !== undefined && id.startsWith(prefix)));
  return heard.length === 0 ? undefined : heard.length === change.ids.length ? change : { ...change, ids: heard };
}

/** The changes of one commit, per collection, in the order the commit first wrote each collection. */
export function changesOf(c: AppliedCommit): Change[] {
  const byCollection = new Map<string, Set<string>>();
  for (const w of c.writes) {
    if (w.copy === true) continue;
    let ids = byCollection.get(w.collection);
    if (ids === undefined) byCollection.set(w.collection, (ids = new Set()));
    ids.add(w.id);
  }
  const commit = c.manifest.commit;
  return [...byCollection].map(([collection, ids]) => ({ commit, collection, ids: [...ids] }));
}

/**
 * A store's listeners and iterators. The Store feeds it from its engine's commits (`applied`); a
 * worker engine's page side (WorkerStore) feeds it from the worker's stream (`publish`), which
 * `onListened` starts with the first listener and stops after the last.
 */
export class ChangeFeed {
  readonly #watchers = new Set<Watcher>();
  readonly #ends = new Set<() => void>();
  readonly #onListened: ((listened: boolean) => void) | undefined;

  constructor(onListened?: (listened: boolean) => void) {
    this.#onListened = onListened;
  }

  #add(w: Watcher): void {
    this.#watchers.add(w);
    if (this.#watchers.size === 1) this.#onListened?.(true);
  }

  #remove(w: Watcher): void {
    if (this.#watchers.delete(w) && this.#watchers.size === 0) this.#onListened?.(false);
  }

  /** Whether anything listens (a commit's changes are not grouped otherwise). */
  get listened(): boolean {
    return this.#watchers.size > 0;
  }

  /** The `applied` step: tells each listener what the commit changed that it hears. */
  applied(c: AppliedCommit): void {
    if (this.#watchers.size > 0) this.#publish(changesOf(c));
  }

  /** The store now serves an engine opened anew at `commit`: each of `collections` may have changed. */
  reset(commit: number, collections: Iterable<string>): void {
    if (this.#watchers.size > 0)
      this.#publish([...collections].map((collection) => ({ commit, collection, ids: [], reset: true as const })));
  }

  /** Tells each listener the part of `changes` it hears. */
  publish(changes: readonly Change[]): void {
    if (this.#watchers.size > 0) this.#publish(changes);
  }

  #publish(changes: readonly Change[]): void {
    for (const change of changes)
      for (const w of this.#watchers) {
        if (w.collection !== undefined && w.collection !== change.collection) continue;
        const heard = filterChange(change, w.ids, w.prefix);
        if (heard !== undefined) w.deliver(heard);
      }
  }

  /**
   * Calls `listener` with each change of `collection` (every collection when undefined) that
   * `options` selects, after its commit is durable, from now until the returned function is
   * called. Each call is a microtask of its own: a listener that throws is reported as the
   * platform reports an uncaught error and does not affect the store nor the other listeners.
   */
  watch(collection: string | undefined, listener: (change: Change) => void, options?: WatchOptions): () => void {
    if (typeof listener !== 'function') throw new TypeError('"listener" expected a function');
    const { ids, prefix } = watchFilter(options);
    const w: Watcher = {
      collection,
      ids,
      prefix,
      deliver: (change) => queueMicrotask(() => this.#watchers.has(w) && listener(change)),
    };
    this.#add(w);
    return () => this.#remove(w);
  }

  /**
   * The changes of every collection (or of `options.collections`) from now on, in commit order, as
   * an async iterator. It ends when the store closes (after the changes it holds), when
   * `options.signal` aborts or when the loop leaves it (dropping them), and fails with ABORTED when more than CHANGES_BUFFER_IDS ids wait unread.
   */
  changes(options: ChangesOptions = {}): AsyncIterableIterator<Change> {
    if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
    const only = options.collections === undefined ? undefined : new Set(options.collections);
    const signal = options.signal;
    const queue: Change[] = [];
    let buffered = 0;
    let failed: PqdbError | undefined;
    let done = false;
    /** The next() calls waiting for a change, oldest first. */
    const waiters: (() => void)[] = [];
    const wake = () => waiters.splice(0).forEach((w) => w());
    const w: Watcher = {
      collection: undefined,
      ids: undefined,
      prefix: undefined,
      deliver: (change) => {
        if (done || failed !== undefined || (only !== undefined && !only.has(change.collection))) return;
        buffered += Math.max(1, change.ids.length);
        if (buffered > CHANGES_BUFFER_IDS) {
          failed = new PqdbError(
            'ABORTED',
            `store.changes(): more than ${CHANGES_BUFFER_IDS} changed ids were not read; iterate faster or watch fewer collections`,
          );
          queue.length = 0;
        } else queue.push(change);
        wake();
      },
    };
    const end = (): void => {
      done = true;
      this.#remove(w);
      this.#ends.delete(end);
      signal?.removeEventListener('abort', abort);
      wake();
    };
    const abort = (): void => {
      queue.length = 0; // what was not read yet is dropped, as by return()
      end();
    };
    this.#add(w);
    this.#ends.add(end);
    if (signal?.aborted === true) abort();
    else signal?.addEventListener('abort', abort, { once: true });
    const it: AsyncIterableIterator<Change> = {
      [Symbol.asyncIterator]: () => it,
      next: async (): Promise<IteratorResult<Change>> => {
        for (;;) {
          const change = queue.shift();
          if (change !== undefined) {
            buffered -= Math.max(1, change.ids.length);
            return { value: change, done: false };
          }
          if (failed !== undefined) {
            const e = failed;
            end();
            throw e;
          }
          if (done) return { value: undefined, done: true };
          await new Promise<void>((resolve) => waiters.push(resolve));
        }
      },
      return: async (): Promise<IteratorResult<Change>> => {
        end();
        queue.length = 0;
        return { value: undefined, done: true };
      },
    };
    return it;
  }

  /** Ends every iterator and drops every listener (the store closed). */
  close(): void {
    for (const end of [...this.#ends]) end();
    for (const w of [...this.#watchers]) this.#remove(w);
  }
}

/**
 * Runs `run` now and again after each change `watch` hears, one run at a time (changes heard during
 * a run make one more run after it), handing each result to `onResult` and each failure to
 * `onError` (else it is reported as an uncaught error); returns the function that stops it.
 */
export function rerunOnChange<T>(
  watch: (heard: () => void) => () => void,
  run: () => Promise<T>,
  onResult: (result: T) => void,
  onError?: (e: unknown) => void,
): () => void {
  if (typeof onResult !== 'function') throw new TypeError('"onResult" expected a function');
  if (onError !== undefined && typeof onError !== 'function') throw new TypeError('"onError" expected a function');
  let stopped = false;
  let running = false;
  let again = false;
  const go = async (): Promise<void> => {
    running = true;
    try {
      do {
        again = false;
        try {
          const result = await run();
          if (!stopped) onResult(result);
        } catch (e) {
          if (stopped) break;
          // Reported, and the query keeps running on the next change.
          if (onError === undefined)
            queueMicrotask(() => {
              throw e;
            });
          else onError(e);
        }
      } while (again && !stopped);
    } finally {
      running = false;
    }
  };
  const unwatch = watch(() => {
    if (stopped) return;
    if (running) again = true;
    else void go();
  });
  void go();
  return () => {
    stopped = true;
    unwatch();
  };
}
