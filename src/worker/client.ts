// The page's side of the worker engine (docs/worker.md): `openStore({ worker })` returns a
// WorkerStore, the Store's API with every call sent to the engine in a dedicated worker. The page
// checks arguments it can check alone (ids, a collection's schema), collects a batch's operations,
// and waits: nothing is sealed, opened, signed or committed on its thread. Methods a Store answers
// synchronously from engine state (info, checkpoints, has, size…) answer with a promise here.

import { PqdbError } from '../errors';
import type { Store } from '../engine/store';
import type { OpenStoreOptions } from '../engine/open';
import {
  collectionSpec,
  live as liveQuery,
  type CollectionOptions,
  type CollectionValue,
  type PutOptions,
} from '../engine/collection';
import type { LiveQuery } from '../engine/collection';
import { ChangeFeed, type Change, type ChangesOptions, type WatchOptions } from '../engine/changes';
import type { Schema, ValueShape, Value } from '../engine/codec';
import type { Manifest } from '../engine/manifest';
import type { MigrateOptions } from '../engine/migration/run';
import type { RestoreOptions, RestoreResult } from '../engine/restore';
import { checkId, WITHHELD } from '../engine/writes';
import { Query, Where, type QuerySource } from '../engine/query';
import type { SearchOptions } from '../engine/lexical';
import { receivedError, type ConnectMessage, type PageMessage, type ScanChunk, type WorkerMessage } from './protocol';
import type { StorageInfo } from './serve';
import type { SuiteName } from '../crypto/suites';
import type { SuiteState } from '../engine/registry';

/** Options of `openStore({ worker, … })` in a browser page. */
export interface WorkerOpenOptions extends Omit<OpenStoreOptions, 'storage' | 'authority' | 'follow' | 'unlock'> {
  /** The worker running `serveWorkerEngine()` (pqdb/worker): a Worker, or its module script's URL. */
  worker: Worker | URL | string;
  /**
   * The page store in the worker: 'auto' (default) takes OPFS where the worker can get a sync
   * access handle and IndexedDB elsewhere; 'opfs', 'indexeddb' and 'memory' ask for one.
   */
  storage?: 'auto' | 'opfs' | 'indexeddb' | 'memory';
  /**
   * A recipient secret key that opens the store: copied to the worker, and the array given here is
   * wiped (zeroed). Leave it out when the worker unwraps the key itself (`context`, docs/worker.md).
   */
  unlock?: Uint8Array;
  /** Passed as is (structured clone: a CryptoKey, wrapped bytes) to the worker's `options` hook. */
  context?: unknown;
}

/** Options of `restoreStore(copy, { worker, … })` in a browser page: restoreStore's, sendable. */
export interface WorkerRestoreOptions extends Omit<
  RestoreOptions,
  'live' | 'storage' | 'authority' | 'onProgress' | 'locations' | 'unlock'
> {
  worker: Worker | URL | string;
  /** Where the new store goes in the worker: 'auto' (default), 'opfs' or 'indexeddb'. */
  storage?: 'auto' | 'opfs' | 'indexeddb';
  unlock?: Uint8Array;
  context?: unknown;
}

type Resolver = { resolve(v: unknown): void; reject(e: Error): void; event?(v: unknown): void };

/** One page's connection to its worker: calls by id on a MessagePort, one reply each. */
class Connection {
  readonly #port: MessagePort;
  readonly #owned: Worker | undefined;
  readonly #waiting = new Map<number, Resolver>();
  #next = 1;
  #failed: Error | undefined;
  readonly #unlisten: () => void;

  constructor(worker: Worker, owned: boolean) {
    const { port1, port2 } = new MessageChannel();
    this.#port = port1;
    this.#owned = owned ? worker : undefined;
    port1.onmessage = (e: MessageEvent<WorkerMessage>) => this.#receive(e.data);
    const onError = (e: ErrorEvent) =>
      this.#fail(new PqdbError('IO_ERROR', `the worker engine failed: ${e.message ?? 'an error in its script'}`));
    worker.addEventListener('error', onError);
    // A Worker the app made serves its next connections too: this one's listener goes with it.
    this.#unlisten = () => worker.removeEventListener('error', onError);
    const connect: ConnectMessage = { pqdb: 'connect', port: port2 };
    worker.postMessage(connect, [port2]);
  }

  #receive(m: WorkerMessage): void {
    const r = this.#waiting.get(m.id);
    if (r === undefined) return;
    if (m.t === 'event') return r.event?.(m.value);
    this.#waiting.delete(m.id);
    if (m.t === 'ok') r.resolve(m.value);
    else r.reject(receivedError(m.error));
  }

  #fail(e: Error): void {
    this.#failed ??= e;
    for (const r of this.#waiting.values()) r.reject(e);
    this.#waiting.clear();
  }

  /** Sends `message` (given its id) and resolves with the reply's value. */
  send(
    make: (id: number) => PageMessage,
    transfer: Transferable[] = [],
    event?: (v: unknown) => void,
  ): Promise<unknown> {
    if (this.#failed !== undefined) return Promise.reject(this.#failed);
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject, event });
      this.#port.postMessage(make(id), transfer);
    });
  }

  call(target: number, op: string, args: unknown[] = [], event?: (v: unknown) => void): Promise<unknown> {
    return this.send((id) => ({ t: 'call', id, target, op, args }), [], event);
  }

  /** The id the next message will carry (for an abort of a call). */
  get nextId(): number {
    return this.#next;
  }

  abort(id: number): void {
    this.#port.postMessage({ t: 'abort', id } satisfies PageMessage);
  }

  close(): void {
    this.#fail(new PqdbError('NOT_OPEN', 'the store is closed'));
    this.#port.close();
    this.#unlisten();
    this.#owned?.terminate();
  }
}

const NO_MANIFEST = { collections: {} } as unknown as Manifest;

const SECRET_OPTIONS = ['unlock', 'signer'] as const;
const FUNCTION_OPTIONS = ['authority', 'follow', 'locations', 'onProgress'] as const;

/** The page's copy of `options` for the worker: keys copied for transfer and wiped here. */
function sendable(options: WorkerOpenOptions): { options: Record<string, unknown>; transfer: ArrayBuffer[] } {
  for (const k of FUNCTION_OPTIONS)
    if ((options as unknown as Record<string, unknown>)[k] !== undefined)
      throw new TypeError(
        `"${k}" cannot be sent to a worker engine: give it in the worker, to serveWorkerEngine({ options }) (docs/worker.md)`,
      );
  const out: Record<string, unknown> = { ...options };
  delete out.worker;
  delete out.context;
  const transfer: ArrayBuffer[] = [];
  for (const k of SECRET_OPTIONS) {
    const key = options[k];
    if (key === undefined) continue;
    if (!(key instanceof Uint8Array)) throw new TypeError(`"${k}" expected a Uint8Array`);
    const copy = key.slice();
    key.fill(0);
    out[k] = copy;
    transfer.push(copy.buffer);
  }
  return { options: out, transfer };
}

/** A store served by an engine in a dedicated worker: Store's methods, each a message to it. */
export class WorkerStore {
  readonly #c: Connection;
  readonly #collections = new Map<string, WorkerCollection<never>>();
  readonly #recovery: Store['recovery'];
  /** The page's listeners, fed by one stream of the worker's changes while any listens. */
  readonly #feed: ChangeFeed;
  #handles = 1;
  #open = true;

  private constructor(c: Connection, recovery: Store['recovery']) {
    this.#c = c;
    this.#recovery = recovery;
    let stream: number | undefined;
    const start = (): void => {
      const id = (stream = c.nextId);
      // Only the stream started last is heard (one aborted may still send what it had).
      c.call(0, 'changes', [], (change) => stream === id && this.#feed.publish([change as Change])).catch(
        (e: unknown) => {
          // The serving tab went: the stream starts again at the next one (its commits meanwhile are not heard).
          if (e instanceof PqdbError && e.code === 'HANDOVER' && stream === id && this.#open) start();
        },
      );
    };
    this.#feed = new ChangeFeed((listened) => {
      if (listened && this.#open) start();
      else if (!listened && stream !== undefined) {
        if (this.#open) c.abort(stream);
        stream = undefined;
      }
    });
  }

  /**
   * The changes of every collection (or of `options.collections`) from now on, as Store's: after
   * each durable commit in the worker, its number, the collection and the ids (docs/changes.md).
   */
  changes(options?: ChangesOptions): AsyncIterableIterator<Change> {
    if (!this.#open) throw new PqdbError('NOT_OPEN', 'the store is closed');
    return this.#feed.changes(options);
  }

  /** @internal Listens to a collection's changes (WorkerCollection.watch). */
  watch(collection: string, listener: (change: Change) => void, options?: WatchOptions): () => void {
    if (!this.#open) throw new PqdbError('NOT_OPEN', 'the store is closed');
    return this.#feed.watch(collection, listener, options);
  }

  /** @internal Opens the store in `options.worker` (openStore in the browser entry). */
  static async open(options: WorkerOpenOptions): Promise<WorkerStore> {
    return (await WorkerStore.#connect(options, undefined)).store;
  }

  /**
   * @internal Restores managed copy `copy` (a name in the worker's IndexedDB, as `backup` wrote it,
   * or a backup file's bytes, as `backupFile` made them: copied to the worker) into a new store in
   * the worker, which then serves it (restoreStore in the browser entry).
   */
  static async restore(
    copy: string | Uint8Array,
    options: WorkerRestoreOptions,
  ): Promise<{ store: WorkerStore } & Omit<RestoreResult, 'store'>> {
    if (typeof copy !== 'string' && !(copy instanceof Uint8Array))
      throw new TypeError('"copy" expected the name of a managed copy or a backup file\'s bytes');
    if ((options as { live?: unknown })?.live !== undefined)
      throw new TypeError(
        '"live" cannot be sent to a worker engine: restore beside it in the worker, or give "policy"',
      );
    const { store, result } = await WorkerStore.#connect(options as WorkerOpenOptions, copy);
    return { ...(result as Omit<RestoreResult, 'store'>), store };
  }

  static async #connect(
    options: WorkerOpenOptions,
    copy: string | Uint8Array | undefined,
  ): Promise<{ store: WorkerStore; result?: unknown }> {
    if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
    const w = options.worker;
    const owned = typeof w === 'string' || w instanceof URL;
    if (!owned && (typeof w !== 'object' || w === null || typeof (w as Worker).postMessage !== 'function'))
      throw new TypeError('"worker" expected a Worker or the URL of its module script');
    const { options: sent, transfer } = sendable(options);
    const worker = owned ? new Worker(w, { type: 'module', name: 'pqdb' }) : (w as Worker);
    const c = new Connection(worker, owned);
    try {
      const reply = (await c.send(
        (id) =>
          copy === undefined
            ? { t: 'open', id, options: sent, context: options.context }
            : { t: 'restore', id, copy, options: sent, context: options.context },
        transfer,
      )) as { recovery: Store['recovery']; result?: unknown };
      return { store: new WorkerStore(c, reply.recovery), result: reply.result };
    } catch (e) {
      c.close();
      throw e;
    }
  }

  #call<T>(op: string, ...args: unknown[]): Promise<T> {
    if (!this.#open) return Promise.reject(new PqdbError('NOT_OPEN', 'the store is closed'));
    return this.#c.call(0, op, args) as Promise<T>;
  }

  /** @internal */
  get connection(): { call(target: number, op: string, args: unknown[]): Promise<unknown> } {
    return this.#c;
  }

  /** What opening the store repaired (as Store's). */
  get recovery(): Store['recovery'] {
    return this.#recovery;
  }

  /**
   * A typed collection (as Store's). Its options are checked here; a schema that differs from the
   * stored one rejects every call on the collection with the RangeError a Store throws at once.
   * Without options, the stored collection (a store without it rejects every call with NOT_FOUND).
   */
  collection(name: string): WorkerCollection<Value>;
  collection<V extends ValueShape<V> = never, S extends Schema = Schema>(
    name: string,
    options: CollectionOptions<S>,
  ): WorkerCollection<CollectionValue<V, S>>;
  collection(name: string, options?: CollectionOptions): WorkerCollection<Value> {
    if (!this.#open) throw new PqdbError('NOT_OPEN', 'the store is closed');
    if (options !== undefined) collectionSpec(name, options, NO_MANIFEST);
    else if (typeof name !== 'string' || name.length === 0) throw new TypeError('"name" expected a non-empty string');
    let c = this.#collections.get(name);
    if (c === undefined) {
      const h = this.#handles++;
      const declared = this.#call<void>('collection', h, name, options);
      declared.catch(() => undefined);
      const by = options === undefined ? undefined : collectionSpec(name, options, NO_MANIFEST).by;
      this.#collections.set(name, (c = new WorkerCollection<never>(this, this.#c, h, name, declared, by)));
    }
    return c as unknown as WorkerCollection<Value>;
  }

  /** The store's collections (as Store's). */
  collections(): Promise<ReturnType<Store['collections']>> {
    return this.#call('collections');
  }

  /** Collects operations with `fn`, then commits them in the worker in one page (all or nothing). */
  async batch(fn: (tx: WorkerTransaction) => void | Promise<void>): Promise<void> {
    const ops: { h: number; kind: 'put' | 'delete'; id: string; value?: unknown; governance?: unknown }[] = [];
    const own = (c: WorkerCollection<never>) => {
      if (!(c instanceof WorkerCollection) || c.store !== this)
        throw new TypeError('"collection" expected a collection of this store');
      return c;
    };
    const declared: Promise<void>[] = [];
    await fn({
      put: (c, id, value, o = {}) => {
        const w = own(c as never);
        declared.push(w.declared);
        ops.push({ h: w.handle, kind: 'put', id, value, governance: o.governance });
      },
      delete: (c, id) => {
        const w = own(c as never);
        declared.push(w.declared);
        ops.push({ h: w.handle, kind: 'delete', id });
      },
    });
    await Promise.all(declared);
    if (ops.length > 0) await this.#call('batch', ops, {});
  }

  readonly registry = {
    list: (): Promise<ReturnType<Store['registry']['list']>> => this.#call('registry.list'),
    setState: (suite: SuiteName | number, state: SuiteState): Promise<void> =>
      this.#call('registry.setState', suite, state),
  };

  addRecipient(publicKey: Uint8Array): Promise<void> {
    return this.#call('addRecipient', publicKey);
  }
  removeRecipient(publicKey: Uint8Array): Promise<void> {
    return this.#call('removeRecipient', publicKey);
  }
  recipientKeys(): Promise<Uint8Array[]> {
    return this.#call('recipientKeys');
  }
  setPolicy(signed: Uint8Array): ReturnType<Store['setPolicy']> {
    return this.#call('setPolicy', signed);
  }
  policy(): Promise<ReturnType<Store['policy']>> {
    return this.#call('policy');
  }
  info(): Promise<ReturnType<Store['info']>> {
    return this.#call('info');
  }
  /** The page store the worker runs on, `navigator.storage.persisted()` and `estimate()` there. */
  storageInfo(): Promise<StorageInfo> {
    return this.#call('storageInfo');
  }
  checkpoint(): ReturnType<Store['checkpoint']> {
    return this.#call('checkpoint');
  }
  checkpoints(): Promise<ReturnType<Store['checkpoints']>> {
    return this.#call('checkpoints');
  }
  compact(options?: Parameters<Store['compact']>[0]): ReturnType<Store['compact']> {
    return this.#call('compact', options);
  }
  consistencyProof(from: number, to: number): ReturnType<Store['consistencyProof']> {
    return this.#call('consistencyProof', from, to);
  }
  retireGenerations(): ReturnType<Store['retireGenerations']> {
    return this.#call('retireGenerations');
  }

  /**
   * Migrates in the worker (as Store's): `onProgress` hears each step there, `signal` pauses it.
   * An `authority` check is the worker's (serveWorkerEngine's `options`).
   */
  async migrate(options: MigrateOptions): ReturnType<Store['migrate']> {
    if (!this.#open) throw new PqdbError('NOT_OPEN', 'the store is closed');
    if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
    const { onProgress, signal, authority, ...rest } = options;
    if (authority !== undefined)
      throw new TypeError('"authority" cannot be sent to a worker engine: give it to serveWorkerEngine({ options })');
    if (onProgress !== undefined && typeof onProgress !== 'function')
      throw new TypeError('"onProgress" expected a function');
    signal?.throwIfAborted?.();
    const id = this.#c.nextId;
    const onAbort = () => this.#c.abort(id);
    signal?.addEventListener('abort', onAbort, { once: true });
    return (
      this.#c.call(0, 'migrate', [rest], (p) => onProgress?.(p as never)) as ReturnType<Store['migrate']>
    ).finally(() => signal?.removeEventListener('abort', onAbort));
  }
  migration(): Promise<ReturnType<Store['migration']>> {
    return this.#call('migration');
  }

  /** A backup into the worker's storage under name `destination` (as Store's). */
  async backup(destination: string): ReturnType<Store['backup']> {
    if (typeof destination !== 'string')
      throw new TypeError('"destination" expected a store name: a PageStore cannot be sent to a worker');
    return this.#call('backup', destination);
  }
  /** A backup file of the store, made in the worker and sent here (as Store's). */
  backupFile(): ReturnType<Store['backupFile']> {
    return this.#call('backupFile');
  }
  copies(): Promise<ReturnType<Store['copies']>> {
    return this.#call('copies');
  }
  retireCopy(id: string): ReturnType<Store['retireCopy']> {
    return this.#call('retireCopy', id);
  }
  posture(): Promise<ReturnType<Store['posture']>> {
    return this.#call('posture');
  }

  /** Closes the store in the worker (waiting for its commits), then the connection. Idempotent. */
  async close(): Promise<void> {
    if (!this.#open) return;
    try {
      await this.#call('close');
    } finally {
      this.#open = false;
      this.#feed.close(); // iterators end after what they hold, listeners go
      this.#c.close();
    }
  }
}

/** Operations `WorkerStore.batch` collects; they commit together or not at all. */
export interface WorkerTransaction {
  put<V extends ValueShape<V>>(collection: WorkerCollection<V>, id: string, value: V, options?: PutOptions): void;
  delete<V extends ValueShape<V>>(collection: WorkerCollection<V>, id: string): void;
}

/** A typed collection of a WorkerStore: Collection's methods, run in the worker. */
export class WorkerCollection<V extends ValueShape<V> = Value> {
  readonly #c: Connection;
  #scans = 0;

  /** @internal Made by WorkerStore.collection. */
  constructor(
    readonly store: WorkerStore,
    c: Connection,
    /** @internal */ readonly handle: number,
    readonly name: string,
    /** @internal Settles when the worker declared the collection (rejects as Store.collection would throw). */
    readonly declared: Promise<void>,
    /** Its secondary indexes as declared here (undefined: opened without options, the worker knows them). */
    readonly by?: readonly (readonly string[])[],
  ) {
    this.#c = c;
  }

  /**
   * As Collection's: a query on a secondary index, run in the worker (ids in key order, values read
   * there through the read gate); a `filter` runs here, on the values that come back.
   */
  where(fields: string | readonly string[]): Where<V> {
    const list = typeof fields === 'string' ? [fields] : [...fields];
    if (list.length === 0 || list.some((f) => typeof f !== 'string'))
      throw new TypeError('"fields" expected a field name or a list of them');
    const source: QuerySource = {
      ids: (f, ranges, reverse, max) => this.#call('queryIds', f, ranges, reverse, max),
      read: async (ids) =>
        ((await this.#call('readMany', ids)) as (Value | null | 0)[]).map((v) =>
          v === 0 ? WITHHELD : v === null ? undefined : v,
        ),
      // Opened without options, the worker checks the index (a TypeError crosses back).
      indexes: () => this.by ?? [list],
    };
    return new Where<V>(source, list);
  }

  /** As Collection's: the secondary indexes loaded or built in the worker now (no progress events cross). */
  buildIndexes(): Promise<void> {
    return this.#call('buildIndexes');
  }

  /** As Collection's: every record with the field, in the order of its index. */
  orderBy(field: string): Query<V> {
    return this.where(field).all();
  }

  async #call<T>(op: string, ...args: unknown[]): Promise<T> {
    await this.declared;
    return (await this.#c.call(this.handle, op, args)) as T;
  }

  /** Seals and stores `value` under `id` in the worker, durable when the promise resolves. */
  put(id: string, value: V, options: PutOptions = {}): Promise<void> {
    return this.#call('put', id, value, options);
  }
  get(id: string): Promise<V | undefined> {
    return this.#call('get', id);
  }
  async has(id: string): Promise<boolean> {
    checkId(id);
    return this.#call('has', id);
  }
  /** As Collection's: only if the record still has version `ifVersion` when it commits (else CONFLICT). */
  delete(id: string, options: { ifVersion?: number } = {}): Promise<boolean> {
    return this.#call('delete', id, options);
  }
  /** As Collection's: the record's version (what `ifVersion` compares with), undefined when absent. */
  async version(id: string): Promise<number | undefined> {
    checkId(id);
    return this.#call('version', id);
  }
  /** Number of live records. */
  count(): Promise<number> {
    return this.#call('size');
  }
  exportSealed(id: string): Promise<Uint8Array> {
    return this.#call('exportSealed', id);
  }

  /** As Collection's: the ids each durable commit put or deleted here (of `options.ids` or `prefix`), never values. */
  watch(listener: (change: Change) => void, options?: WatchOptions): () => void {
    return this.store.watch(this.name, listener, options);
  }

  /** As Collection's: `query` run now and again whenever a commit touches what it read. */
  live<T = unknown>(query: LiveQuery, onResult: (result: T) => void, onError?: (e: unknown) => void): () => void {
    return liveQuery(this, query, onResult as (result: unknown) => void, onError);
  }

  async search(query: string, options: SearchOptions = {}): Promise<{ id: string; value: V }[] & { withheld: number }> {
    const { hits, withheld } = await this.#call<{ hits: { id: string; value: V }[]; withheld: number }>(
      'search',
      query,
      options,
    );
    return Object.assign(hits, { withheld });
  }

  /**
   * Records in id order (as Collection's), streamed from the worker in chunks of 256: the next chunk
   * is asked for while this one is taken, never more than one ahead.
   */
  async *scan(
    options: { prefix?: string; limit?: number; onWithheld?: (id: string) => void } = {},
  ): AsyncGenerator<{ id: string; value: V }, { withheld: number }> {
    const { onWithheld, ...rest } = options;
    if (onWithheld !== undefined && typeof onWithheld !== 'function')
      throw new TypeError('"onWithheld" expected a function');
    const id = this.#scans++ * 65536 + this.handle;
    let withheld = 0;
    let done = false;
    try {
      let next: Promise<ScanChunk> = this.#call('scan', id, rest);
      for (;;) {
        const chunk = await next;
        done = chunk.done;
        if (!done) next = this.#c.call(0, 'scan.next', [id]) as Promise<ScanChunk>;
        for (const w of chunk.withheld) {
          withheld++;
          onWithheld?.(w);
        }
        for (const r of chunk.records) yield r as { id: string; value: V };
        if (done) return { withheld };
      }
    } finally {
      if (!done) await this.#c.call(0, 'scan.end', [id]).catch(() => undefined);
    }
  }
}
