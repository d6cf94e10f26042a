// The worker's side of the worker engine (docs/worker.md): serves the stores pages open over
// MessagePorts. Each port is one page's connection: it opens one store, declares collections by
// handle, and calls the façade's methods by name; every call runs here, on the worker's thread, so
// no sealing, opening, signing or commit runs on the page's. What the page cannot send (functions:
// an authority check; a key the worker unwraps itself) the worker adds through `options`.

import { PqdbError } from '../errors';
import type { Store } from '../engine/store';
import type { Collection } from '../engine/collection';
import type { KeyRange } from '../engine/field-index';
import { WITHHELD } from '../engine/writes';
import type { OpenStoreOptions } from '../engine/open';
import type { MigrateOptions } from '../engine/migration/run';
import type { RestoreOptions, RestoreResult } from '../engine/restore';
import {
  SCAN_CHUNK,
  sendError,
  type ConnectMessage,
  type PageMessage,
  type ScanChunk,
  type WorkerMessage,
} from './protocol';
import type { PortLike } from './tabs';

/** What a worker's page stores report of their storage (`store.storageInfo()`). */
export interface StorageInfo {
  /** The page store the engine runs on: 'opfs', 'indexeddb', 'memory' or another adapter's kind. */
  readonly pageStore: string;
  /** `navigator.storage.persisted()` in the worker (undefined where the API is missing). */
  readonly persisted?: boolean;
  /** `navigator.storage.estimate()`: bytes used and the quota (undefined where the API is missing). */
  readonly estimate?: { readonly usage?: number; readonly quota?: number };
}

export interface ServeWorkerOptions {
  /**
   * Completes the options a page sent (which hold no functions) before the store opens: add an
   * `authority` check, or an `unlock` key unwrapped here from the page's `context` (a CryptoKey and
   * wrapped bytes, say: docs/worker.md). Default: the page's options as sent.
   */
  options?: (requested: OpenStoreOptions, context: unknown) => OpenStoreOptions | Promise<OpenStoreOptions>;
}

/** @internal How a platform opens stores and reports storage (src/worker.ts passes the browser's). */
export interface WorkerPlatform {
  open(options: OpenStoreOptions): Promise<Store>;
  /** restoreStore of managed copy `copy` into a new store, which the connection then serves. */
  restore(copy: string | Uint8Array, options: RestoreOptions & { storage?: unknown }): Promise<RestoreResult>;
  storageInfo(store: Store): Promise<StorageInfo>;
  /** Serves a page's connection instead of servePort: one tab serving a store to the others (bridge.ts, docs/tabs.md). */
  readonly bridge?: (port: PortLike, options: ServeWorkerOptions) => void;
}

/** @internal Serves the pages that post `connect` to `scope` (the worker's global). */
export function serveConnections(
  scope: { addEventListener(type: 'message', l: (e: MessageEvent) => void): void },
  platform: WorkerPlatform,
  options: ServeWorkerOptions = {},
): void {
  scope.addEventListener('message', (e: MessageEvent) => {
    const m = e.data as Partial<ConnectMessage> | null;
    if (m?.pqdb !== 'connect' || m.port === undefined) return;
    if (platform.bridge !== undefined) platform.bridge(m.port, options);
    else servePort(m.port, platform, options);
  });
}

type Method = (...args: never[]) => unknown;

/** @internal The options a page sent, completed in the worker (ServeWorkerOptions.options). */
export async function completeOptions(
  serve: ServeWorkerOptions,
  requested: OpenStoreOptions,
  context: unknown,
): Promise<OpenStoreOptions> {
  return serve.options !== undefined ? serve.options(requested, context) : requested;
}

/**
 * A store a connection serves without opening it (one the worker serves to several tabs): `open`
 * attaches to it and `close` calls `close` here (which closes it only for the connection that owns it).
 */
export interface AttachedStore {
  readonly store: Store;
  close(): Promise<void>;
}

/** @internal Serves one page's connection on `port` (its own store, or the `attached` one). */
export function servePort(
  port: PortLike,
  platform: WorkerPlatform,
  serve: ServeWorkerOptions = {},
  attached?: AttachedStore,
): void {
  let store: Store | undefined;
  const collections = new Map<number, Collection>();
  const scans = new Map<number, { gen: AsyncGenerator<{ id: string; value: unknown }>; withheld: string[] }>();
  const aborts = new Map<number, AbortController>();

  const post = (m: WorkerMessage, transfer: Transferable[] = []) => {
    try {
      port.postMessage(m, transfer);
    } catch {
      // The connection closed (a tab's channel): what it would have been told goes nowhere.
    }
  };
  const opened = (): Store => {
    if (store === undefined) throw new PqdbError('NOT_OPEN', 'the store is not open on this connection');
    return store;
  };
  const collection = (h: number): Collection => {
    const c = collections.get(h);
    if (c === undefined) throw new TypeError(`collection handle ${h} was never declared`);
    return c;
  };

  async function chunk(id: number): Promise<ScanChunk> {
    const s = scans.get(id);
    if (s === undefined) throw new TypeError(`scan ${id} is not open`);
    const records: { id: string; value: unknown }[] = [];
    let done = false;
    while (records.length < SCAN_CHUNK) {
      const r = await s.gen.next();
      if (r.done === true) {
        done = true;
        break;
      }
      records.push(r.value);
    }
    const withheld = s.withheld.splice(0);
    if (done) scans.delete(id);
    return { records, withheld, done };
  }

  /** The store's methods a page may call, by name: each one the façade's own. */
  const storeOps: Record<string, (s: Store, args: never, call: number) => unknown> = {
    collection: (s, [h, name, options]: [number, string, Parameters<Store['collection']>[1]]) => {
      collections.set(h, s.collection(name, options) as unknown as Collection);
    },
    batch: (
      s,
      [ops, options]: [
        { h: number; kind: 'put' | 'delete'; id: string; value?: never; governance?: never }[],
        { requestId?: string }?,
      ],
    ) =>
      s.batch(
        (tx) => {
          for (const o of ops)
            if (o.kind === 'put') tx.put(collection(o.h), o.id, o.value as never, { governance: o.governance });
            else tx.delete(collection(o.h), o.id);
        },
        { requestId: options?.requestId },
      ),
    recovery: (s) => s.recovery,
    'registry.list': (s) => s.registry.list(),
    'registry.setState': (s, [suite, state]: Parameters<Store['registry']['setState']>) =>
      s.registry.setState(suite, state),
    migrate: (s, [o]: [MigrateOptions], call) => {
      const abort = new AbortController();
      aborts.set(call, abort);
      return s
        .migrate({ ...o, signal: abort.signal, onProgress: (p) => post({ t: 'event', id: call, value: p }) })
        .finally(() => aborts.delete(call));
    },
    // The store's changes, streamed as events of this call until the page aborts it (its last listener went).
    changes: async (s, _args: [], call) => {
      const abort = new AbortController();
      aborts.set(call, abort);
      try {
        for await (const change of s.changes({ signal: abort.signal })) post({ t: 'event', id: call, value: change });
      } finally {
        aborts.delete(call);
      }
    },
    storageInfo: (s) => platform.storageInfo(s),
    dataKeyFor: () => {
      throw new TypeError('dataKeyFor is not served by a worker engine: data keys never leave the worker');
    },
    serveReplication: () => {
      throw new TypeError('replication needs the Node build of pqdb');
    },
    close: async (s) => {
      for (const sc of scans.values()) await sc.gen.return(undefined);
      scans.clear();
      if (attached !== undefined) for (const a of aborts.values()) a.abort(); // its streams; the store stays
      await (attached !== undefined ? attached.close() : s.close());
      store = undefined;
    },
  };
  for (const name of [
    'info',
    'collections',
    'checkpoint',
    'checkpoints',
    'compact',
    'consistencyProof',
    'retireGenerations',
    'migration',
    'backup',
    'backupFile',
    'copies',
    'retireCopy',
    'posture',
    'policy',
    'setPolicy',
    'addRecipient',
    'removeRecipient',
    'recipientKeys',
  ] as const)
    storeOps[name] = (s, args: unknown[]) => (s[name] as Method).apply(s, args as never[]);

  const collectionOps: Record<string, (c: Collection, args: never) => unknown> = {
    put: (c, [id, value, o]: Parameters<Collection['put']>) => c.put(id, value, o),
    get: (c, [id]: [string]) => c.get(id),
    has: (c, [id]: [string]) => c.has(id),
    delete: (c, [id, o]: [string, { ifVersion?: number }?]) => c.delete(id, o),
    version: (c, [id]: [string]) => c.version(id),
    buildIndexes: (c) => c.buildIndexes(),
    queryIds: (c, [fields, ranges, reverse, max]: [string[], KeyRange[], boolean, number]) =>
      c.queryIds(fields, ranges, reverse, max),
    // Values cross by structured clone: an absent record as null, a withheld one as 0.
    readMany: async (c, [ids]: [string[]]) =>
      (await c.readMany(ids)).map((v) => (v === WITHHELD ? 0 : v === undefined ? null : v)),
    size: (c) => c.size,
    exportSealed: (c, [id]: [string]) => c.exportSealed(id),
    search: async (c, [q, o]: Parameters<Collection['search']>) => {
      const hits = await c.search(q, o);
      return { hits: [...hits], withheld: hits.withheld };
    },
    scan: (c, [id, o]: [number, { prefix?: string; limit?: number }]) => {
      const withheld: string[] = [];
      const gen = c.scan({ prefix: o?.prefix, limit: o?.limit, onWithheld: (w) => withheld.push(w) });
      scans.set(id, { gen, withheld });
      return chunk(id);
    },
  };
  const scanOps: Record<string, (args: never) => unknown> = {
    'scan.next': ([id]: [number]) => chunk(id),
    'scan.end': async ([id]: [number]) => {
      await scans.get(id)?.gen.return(undefined);
      scans.delete(id);
    },
  };

  async function run(m: PageMessage): Promise<unknown> {
    if (attached !== undefined && (m.t === 'open' || m.t === 'restore')) {
      if (m.t === 'restore') throw new TypeError('a connection to a served store cannot restore');
      if (store !== undefined) throw new TypeError('this connection has a store open already');
      store = attached.store;
      return { recovery: store.recovery };
    }
    if (m.t === 'open' || m.t === 'restore') {
      if (store !== undefined) throw new TypeError('this connection has a store open already');
      const requested = m.options as unknown as OpenStoreOptions;
      const options = await completeOptions(serve, requested, m.context);
      if (m.t === 'open') {
        store = await platform.open(options);
        return { recovery: store.recovery };
      }
      const { store: restored, ...result } = await platform.restore(m.copy, options as unknown as RestoreOptions);
      store = restored;
      return { recovery: store.recovery, result };
    }
    if (m.t !== 'call') return undefined;
    const scanOp = Object.hasOwn(scanOps, m.op) ? scanOps[m.op] : undefined; // never an Object.prototype member
    if (scanOp !== undefined) return scanOp(m.args as never);
    if (m.target === 0) {
      const op = Object.hasOwn(storeOps, m.op) ? storeOps[m.op] : undefined;
      if (op === undefined) throw new TypeError(`"${m.op}" is not a method of a store`);
      return op(opened(), m.args as never, m.id);
    }
    opened();
    const op = Object.hasOwn(collectionOps, m.op) ? collectionOps[m.op] : undefined;
    if (op === undefined) throw new TypeError(`"${m.op}" is not a method of a collection`);
    return op(collection(m.target), m.args as never);
  }

  port.onmessage = (e: MessageEvent<PageMessage | { t: 'bye' }>) => {
    const m = e.data;
    if (m?.t === 'bye' && attached !== undefined) {
      // The tab left this connection (it found another server): its streams and scans end here.
      for (const a of aborts.values()) a.abort();
      for (const sc of scans.values()) void sc.gen.return(undefined);
      scans.clear();
      store = undefined;
      void attached.close().finally(() => port.close());
      return;
    }
    if (m?.t === 'bye') return;
    if (m?.t === 'abort') {
      aborts.get(m.id)?.abort();
      return;
    }
    run(m).then(
      (value) => {
        const bytes =
          m.t !== 'call'
            ? undefined
            : m.op === 'exportSealed'
              ? value
              : m.op === 'backupFile'
                ? (value as { file: unknown }).file
                : undefined;
        const transfer = bytes instanceof Uint8Array ? [bytes.buffer] : []; // made for the page: moved, not copied
        post({ t: 'ok', id: m.id, value }, transfer);
        if (m.t === 'call' && m.op === 'close' && m.target === 0) port.close();
      },
      (err: unknown) => post({ t: 'err', id: m.id, error: sendError(err) }),
    );
  };
}
