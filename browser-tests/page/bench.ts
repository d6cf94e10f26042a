// The page of the browser bench (bench/browser.mjs): one store at a time through one of the forms
// an app would use, timed the same way: durable single puts, a bulk ingest in batches, random
// gets, and for pqdb a migration of everything; long tasks on this page's thread (over 50 ms,
// PerformanceObserver 'longtask') during the ingest and the migration. pqdb runs in a worker on
// OPFS or IndexedDB (browser-tests/page/bench-worker.js) or on this thread on IndexedDB; the peers
// are the official SQLite WASM build on OPFS (opfs-sahpool, in a worker: sqlite-worker.js),
// wa-sqlite on OPFS (AccessHandlePoolVFS, in a worker: wa-sqlite-worker.js) and Dexie on IndexedDB,
// each with its values sealed by WebCrypto AES-256-GCM or not (peer-seal.js for the workers).

import * as pqdb from '../../src/browser'; // bundled, as an app bundles it
import Dexie from 'dexie';

type Rec = [id: string, lemma: string, pos: string, gloss: string, offset: number];
type Value = { lemma: string; pos: string; gloss: string; offset: number };
const schema = { lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' } as const;
const valueOf = (r: Rec): Value => ({ lemma: r[1], pos: r[2], gloss: r[3], offset: r[4] });

const longTasks: { start: number; duration: number }[] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) longTasks.push({ start: e.startTime, duration: e.duration });
}).observe({ type: 'longtask', buffered: true });
function tasksBetween(t0: number, t1: number) {
  const ts = longTasks.filter((t) => t.start >= t0 && t.start <= t1);
  return {
    count: ts.length,
    maxMs: Math.max(0, ...ts.map((t) => t.duration)),
    totalMs: ts.reduce((n, t) => n + t.duration, 0),
  };
}

interface Adapter {
  form: string;
  putOne(r: Rec): Promise<void>;
  putBatch(rs: Rec[]): Promise<void>;
  get(id: string): Promise<Value | undefined>;
  migrate?(): Promise<unknown>;
  close(): Promise<void>;
  /** The same gets, timed inside the worker (pqdb in a worker). */
  inWorker?(ids: string[]): Promise<number[]>;
  /** The store opened again through the worker (after inWorker). */
  reopen?(): Promise<Adapter>;
  heap?(): Promise<number | undefined>;
}

type Keys = { publicKey: number[]; secretKey: number[] };
const u8 = (a: number[]) => new Uint8Array(a);

function message<T>(w: Worker, m: object, kind: string): Promise<T> {
  return new Promise((ok) => {
    const on = (e: MessageEvent) => {
      if (e.data?.pqdbBench !== kind) return;
      w.removeEventListener('message', on);
      ok(e.data as T);
    };
    w.addEventListener('message', on);
    w.postMessage(m);
  });
}

async function pqdbAdapter(mode: string, name: string, keys: Keys, create = true): Promise<Adapter> {
  const storage = mode === 'pqdb-worker-opfs' ? 'opfs' : 'indexeddb';
  const worker = mode === 'pqdb-main-idb' ? undefined : new Worker('/page/bench-worker.js', { type: 'module' });
  const options = { location: name, create, recipients: [u8(keys.publicKey)], unlock: u8(keys.secretKey) };
  const store =
    worker !== undefined
      ? await pqdb.openStore({ ...options, worker, storage })
      : await pqdb.openStore({ ...options, storage });
  const c = store.collection('synsets', { schema });
  return {
    form: `${mode} (${storage})`,
    putOne: (r) => c.put(r[0], valueOf(r)),
    putBatch: (rs) =>
      store.batch((tx) => {
        for (const r of rs) (tx.put as (c: unknown, id: string, v: Value) => void)(c, r[0], valueOf(r));
      }),
    get: (id) => c.get(id) as Promise<Value | undefined>,
    migrate: () => store.migrate({ to: 'cnsa2-gcm-hkdf384-commit' }),
    close: async () => {
      await store.close();
    },
    ...(worker === undefined
      ? {}
      : {
          inWorker: async (ids: string[]) => {
            const r = await message<{ times: number[] }>(
              worker,
              { pqdbBench: 'gets', storage, name, unlock: keys.secretKey, ids, schema },
              'gets',
            );
            return r.times;
          },
          heap: () => workerHeap(),
          reopen: () => pqdbAdapter(mode, name, keys, false),
        }),
  };
}

/** A peer in a dedicated worker answering peer-seal.js's serveOps messages: SQLite WASM or wa-sqlite. */
async function peerWorkerAdapter(peer: 'sqlite' | 'wa-sqlite', name: string, encrypted: boolean): Promise<Adapter> {
  const w = new Worker(`/page/${peer}-worker.js`, { type: 'module' });
  let next = 0;
  const call = <T>(op: string, arg: object = {}): Promise<T> =>
    new Promise((ok, no) => {
      const id = next++;
      const on = (e: MessageEvent) => {
        if (e.data?.id !== id) return;
        w.removeEventListener('message', on);
        if (e.data.error !== undefined) no(new Error(e.data.error));
        else ok(e.data.value as T);
      };
      w.addEventListener('message', on);
      w.postMessage({ id, op, arg });
    });
  const version = await call<string>('open', { name, encrypted });
  return {
    form: `${peer === 'sqlite' ? `SQLite ${version} WASM, opfs-sahpool` : `wa-sqlite (SQLite ${version}), AccessHandlePoolVFS`}, in a worker${encrypted ? ', AES-256-GCM (WebCrypto)' : ''}`,
    putOne: (r) => call('putOne', { id: r[0], value: valueOf(r) }),
    putBatch: (rs) => call('putBatch', { rows: rs.map((r) => [r[0], valueOf(r)]) }),
    get: (id) => call('get', { id }),
    close: async () => {
      await call('close');
      w.terminate();
    },
  };
}

async function dexieAdapter(name: string, encrypted: boolean): Promise<Adapter> {
  // Durable as pqdb's IndexedDB commits: 'strict' transactions.
  const db = new Dexie(name, { chromeTransactionDurability: 'strict' });
  db.version(1).stores({ kv: 'id' });
  const table = db.table('kv');
  const key = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const seal = async (id: string, v: Value) => {
    if (!encrypted) return { id, ...v };
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, enc.encode(JSON.stringify(v))));
    return { id, iv, ct };
  };
  const open = async (row: ({ iv?: Uint8Array; ct?: Uint8Array } & Partial<Value>) | undefined) => {
    if (row === undefined) return undefined;
    if (!encrypted) return row as Value;
    return JSON.parse(dec.decode(await crypto.subtle.decrypt({ name: 'AES-GCM', iv: row.iv! }, key, row.ct!))) as Value;
  };
  return {
    form: `Dexie ${Dexie.semVer}, IndexedDB, on the page${encrypted ? ', AES-256-GCM (WebCrypto)' : ''}`,
    putOne: async (r) => void (await table.put(await seal(r[0], valueOf(r)))),
    putBatch: async (rs) => void (await table.bulkPut(await Promise.all(rs.map((r) => seal(r[0], valueOf(r)))))),
    get: async (id) => open(await table.get(id)),
    close: async () => {
      db.close();
      await Dexie.delete(name);
    },
  };
}

/**
 * The JS heap of this page's dedicated workers (performance.measureUserAgentSpecificMemory, which
 * needs cross-origin isolation: the server sends COOP and COEP with the bench's files), or
 * undefined where the browser lacks it.
 */
async function workerHeap(): Promise<number | undefined> {
  const measure = (performance as { measureUserAgentSpecificMemory?: () => Promise<MemoryResult> })
    .measureUserAgentSpecificMemory;
  if (!crossOriginIsolated || measure === undefined) return undefined;
  const m = await measure.call(performance);
  let bytes = 0;
  for (const b of m.breakdown)
    if (b.attribution.some((a) => a.scope === 'DedicatedWorkerGlobalScope' && a.url.includes('bench-worker')))
      bytes += b.bytes;
  return bytes;
}
type MemoryResult = { breakdown: { bytes: number; attribution: { url: string; scope: string }[] }[] };

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

interface RunOptions {
  mode: string;
  records: Rec[];
  puts: number;
  reads: number;
  batch: number;
  migrate: boolean;
  keys: Keys;
  keep?: boolean;
}

async function run(o: RunOptions) {
  const name = `bench-${o.mode}-${Date.now()}`;
  const a = o.mode.startsWith('pqdb')
    ? await pqdbAdapter(o.mode, name, o.keys)
    : o.mode.startsWith('sqlite') || o.mode.startsWith('wa-sqlite')
      ? await peerWorkerAdapter(o.mode.startsWith('sqlite') ? 'sqlite' : 'wa-sqlite', name, o.mode.endsWith('aesgcm'))
      : await dexieAdapter(name, o.mode.endsWith('aesgcm'));
  const puts: number[] = [];
  for (let i = 0; i < o.puts; i++) {
    const r = o.records[o.records.length - 1 - i];
    const t = performance.now();
    await a.putOne([`single-${i}`, r[1], r[2], r[3], r[4]]);
    puts.push(performance.now() - t);
  }
  const t0 = performance.now();
  for (let i = 0; i < o.records.length; i += o.batch) await a.putBatch(o.records.slice(i, i + o.batch));
  const t1 = performance.now();
  const ingestTasks = tasksBetween(t0, t1);
  const ids: string[] = [];
  for (let i = 0, x = 12345; i < o.reads; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    ids.push(o.records[x % o.records.length][0]);
  }
  const gets: number[] = [];
  let wrong = 0;
  const g0 = performance.now();
  for (const id of ids) {
    const t = performance.now();
    const v = await a.get(id);
    gets.push(performance.now() - t);
    if (v === undefined) wrong++;
  }
  const g1 = performance.now();
  let migration: object | undefined;
  if (o.migrate && a.migrate !== undefined) {
    const m0 = performance.now();
    await a.migrate();
    const m1 = performance.now();
    migration = {
      ms: m1 - m0,
      recPerSec: (o.records.length + o.puts) / ((m1 - m0) / 1000),
      longTasks: tasksBetween(m0, m1),
    };
  }
  const heap = await a.heap?.();
  await a.close();
  // The RPC's cost: the same gets on the same reopened store, inside the worker and through it.
  let rpc: { inWorker: number[]; throughWorker: number[] } | undefined;
  if (a.inWorker !== undefined && a.reopen !== undefined) {
    const sample = ids.slice(0, Math.min(ids.length, 2000));
    const inWorker = await a.inWorker(sample);
    const again = await a.reopen();
    for (const id of sample) await again.get(id);
    const throughWorker: number[] = [];
    for (const id of sample) {
      const t = performance.now();
      await again.get(id);
      throughWorker.push(performance.now() - t);
    }
    await again.close();
    rpc = { inWorker, throughWorker };
  }
  return {
    mode: o.mode,
    form: a.form,
    name,
    records: o.records.length,
    put: { p50: pct(puts, 0.5), p99: pct(puts, 0.99), n: puts.length },
    ingest: { recPerSec: o.records.length / ((t1 - t0) / 1000), ms: t1 - t0, longTasks: ingestTasks },
    get: { p50: pct(gets, 0.5), p99: pct(gets, 0.99), recPerSec: ids.length / ((g1 - g0) / 1000), missing: wrong },
    rpc: rpc && {
      inWorkerP50: pct(rpc.inWorker, 0.5),
      throughWorkerP50: pct(rpc.throughWorker, 0.5),
      overheadP50: pct(rpc.throughWorker, 0.5) - pct(rpc.inWorker, 0.5),
    },
    migration,
    heapAfterIngest: heap,
    userAgent: navigator.userAgent,
  };
}

/**
 * The worker's JS heap after opening a store of `n` records: ingested in a worker on OPFS in
 * batches of 5,000 (synthetic records of about WordNet's size, made here), closed, then opened in a
 * new worker, one record read, and the heap measured (Chromium: performance.measureUserAgentSpecificMemory).
 */
async function heapAfterOpen(o: { n: number; keys: Keys }) {
  const name = `bench-heap-${o.n}-${Date.now()}`;
  const make = async (create: boolean) => {
    const worker = new Worker('/page/bench-worker.js', { type: 'module' });
    const store = await pqdb.openStore({
      worker,
      storage: 'opfs',
      location: name,
      create,
      recipients: [u8(o.keys.publicKey)],
      unlock: u8(o.keys.secretKey),
    });
    return { worker, store, c: store.collection('synsets', { schema }) };
  };
  const a = await make(true);
  const t0 = performance.now();
  for (let i = 0; i < o.n; i += 5000)
    await a.store.batch((tx) => {
      for (let j = i; j < Math.min(o.n, i + 5000); j++)
        (tx.put as (c: unknown, id: string, v: Value) => void)(a.c, `n${String(j).padStart(8, '0')}`, {
          lemma: `lemma ${j}`,
          pos: 'n',
          gloss: `a gloss of about the length of a WordNet synset's, number ${j}`,
          offset: j,
        });
    });
  const ingestMs = performance.now() - t0;
  await a.store.close();
  a.worker.terminate();
  const t1 = performance.now();
  const b = await make(false);
  const value = await b.c.get(`n${String(o.n >> 1).padStart(8, '0')}`);
  const openMs = performance.now() - t1;
  const heap = await workerHeap();
  await b.store.close();
  b.worker.terminate();
  return { n: o.n, ingestMs, openMs, found: value !== undefined, heap };
}

/** What the query bench (bench/query-browser.mjs) asks: fresh parameters for each run. */
interface QueryOptions {
  records: Rec[];
  params: { pos: string; lo: number; hi: number }[];
  keys: Keys;
}

/**
 * Secondary-index queries, each timed end to end with its values (bench/query-browser.mjs): pqdb
 * (on this thread on IndexedDB, or in a worker on OPFS; values sealed, indexes sealed at a
 * checkpoint-free persist: in memory) against Dexie and raw IndexedDB with the same two indexes,
 * their values in clear. Equality: 100 records of one part of speech; range: 1,000 consecutive
 * offsets of one.
 */
async function query(o: QueryOptions) {
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const time = async (eq: (p: QueryOptions['params'][0]) => Promise<number>, range: typeof eq) => {
    const e: number[] = [];
    const r: number[] = [];
    for (const p of o.params) {
      let t = performance.now();
      if ((await eq(p)) !== 100) throw new Error('equality');
      e.push(performance.now() - t);
      t = performance.now();
      if ((await range(p)) !== 1000) throw new Error('range');
      r.push(performance.now() - t);
    }
    return { equalityMs: median(e), rangeMs: median(r) };
  };
  const out: Record<string, { equalityMs: number; rangeMs: number; form: string }> = {};
  for (const mode of ['pqdb-main-idb', 'pqdb-worker-opfs']) {
    const name = `query-${mode}-${Date.now()}`;
    const worker = mode === 'pqdb-main-idb' ? undefined : new Worker('/page/bench-worker.js', { type: 'module' });
    const options = { location: name, create: true, recipients: [u8(o.keys.publicKey)], unlock: u8(o.keys.secretKey) };
    const store = (
      worker !== undefined
        ? await pqdb.openStore({ ...options, worker, storage: 'opfs' })
        : await pqdb.openStore({ ...options, storage: 'indexeddb' })
    ) as pqdb.Store;
    const c = store.collection('synsets', { schema, index: { by: ['pos', ['pos', 'offset']] } });
    await c.where('pos').equals('n').toArray(); // built before the first write: every write keeps it current
    for (let i = 0; i < o.records.length; i += 1000)
      await store.batch((tx) => {
        for (const r of o.records.slice(i, i + 1000)) tx.put(c, r[0], valueOf(r));
      });
    out[mode] = {
      form: worker === undefined ? 'pqdb, IndexedDB, on the page' : 'pqdb, OPFS, in a worker',
      ...(await time(
        async ({ pos }) => (await c.where('pos').equals(pos).limit(100).toArray()).length,
        async ({ pos, lo, hi }) => (await c.where(['pos', 'offset']).between([pos, lo], [pos, hi]).toArray()).length,
      )),
    };
    await store.close();
    worker?.terminate();
  }
  {
    const name = `query-dexie-${Date.now()}`;
    const db = new Dexie(name, { chromeTransactionDurability: 'strict' });
    db.version(1).stores({ kv: 'id, pos, [pos+offset]' });
    const table = db.table('kv');
    for (let i = 0; i < o.records.length; i += 1000)
      await table.bulkPut(o.records.slice(i, i + 1000).map((r) => ({ id: r[0], ...valueOf(r) })));
    out.dexie = {
      form: `Dexie ${Dexie.semVer}, IndexedDB, values in clear`,
      ...(await time(
        async ({ pos }) => (await table.where('pos').equals(pos).limit(100).toArray()).length,
        async ({ pos, lo, hi }) => (await table.where('[pos+offset]').between([pos, lo], [pos, hi]).toArray()).length,
      )),
    };
    db.close();
    await Dexie.delete(name);
  }
  {
    const name = `query-idb-${Date.now()}`;
    const db = await new Promise<IDBDatabase>((ok, fail) => {
      const rq = indexedDB.open(name, 1);
      rq.onupgradeneeded = () => {
        const s = rq.result.createObjectStore('kv', { keyPath: 'id' });
        s.createIndex('pos', 'pos');
        s.createIndex('pos_offset', ['pos', 'offset']);
      };
      rq.onsuccess = () => ok(rq.result);
      rq.onerror = () => fail(rq.error);
    });
    const done = (t: IDBTransaction) =>
      new Promise<void>((ok, fail) => ((t.oncomplete = () => ok()), (t.onerror = () => fail(t.error))));
    for (let i = 0; i < o.records.length; i += 1000) {
      const t = db.transaction('kv', 'readwrite', { durability: 'strict' });
      for (const r of o.records.slice(i, i + 1000)) t.objectStore('kv').put({ id: r[0], ...valueOf(r) });
      await done(t);
    }
    const getAll = (index: string, range: IDBKeyRange, count?: number) =>
      new Promise<unknown[]>((ok, fail) => {
        const rq = db.transaction('kv', 'readonly').objectStore('kv').index(index).getAll(range, count);
        rq.onsuccess = () => ok(rq.result);
        rq.onerror = () => fail(rq.error);
      });
    out.indexeddb = {
      form: 'IndexedDB (IDBIndex.getAll with an IDBKeyRange), values in clear',
      ...(await time(
        async ({ pos }) => (await getAll('pos', IDBKeyRange.only(pos), 100)).length,
        async ({ pos, lo, hi }) =>
          (await getAll('pos_offset', IDBKeyRange.bound([pos, lo], [pos, hi], false, true))).length,
      )),
    };
    db.close();
    indexedDB.deleteDatabase(name);
  }
  return { results: out, userAgent: navigator.userAgent };
}

(globalThis as unknown as { pqdbBench: unknown }).pqdbBench = { run, heapAfterOpen, query };
