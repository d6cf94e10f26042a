// The page of the worker engine's browser tests and bench: a store opened in a dedicated worker
// (browser-tests/page/engine-worker.js) through pqdb's `openStore({ worker })`, from the built
// package. It counts what would show work on the page's own thread: WebAssembly instances made here
// (the kernels instantiate on first use, so a seal or an open on this thread makes one) and long
// tasks (PerformanceObserver 'longtask'). `failure` and `move` go through pqdb/client, the page's
// side alone. Playwright drives window.pqdbWorker.

import * as pqdb from 'pqdb';
import * as client from 'pqdb/client';

let instances = 0;
const Instance = WebAssembly.Instance;
WebAssembly.Instance = new Proxy(Instance, {
  construct(target, args) {
    instances++;
    return Reflect.construct(target, args);
  },
});

const longTasks: number[] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) longTasks.push(e.duration);
}).observe({ type: 'longtask', buffered: true });

type Keys = { publicKey: number[]; secretKey: number[] };
interface RunOptions {
  name: string;
  storage: 'auto' | 'opfs' | 'indexeddb' | 'memory';
  records: number;
  recipient: Keys;
  signer: Keys;
  migrate?: boolean;
  singlePuts?: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))] ?? 0;
const u8 = (a: number[]) => new Uint8Array(a);
const schema = { lemma: 'string', gloss: 'string' } as const;

async function openIn(o: RunOptions, create: boolean, unlock = u8(o.recipient.secretKey), entry = 'pqdb') {
  return (entry === 'pqdb' ? pqdb : client).openStore({
    worker: '/page/engine-worker.js',
    storage: o.storage,
    location: o.name,
    create,
    recipients: [u8(o.recipient.publicKey)],
    unlock,
    signer: u8(o.signer.secretKey),
    signerPublicKey: u8(o.signer.publicKey),
  });
}

const tab: {
  store?: Awaited<ReturnType<typeof client.openStore>>;
  words?: ReturnType<Awaited<ReturnType<typeof client.openStore>>['collection']>;
  heard: { ids: readonly string[]; at: number }[];
} = { heard: [] };

const api = {
  /** Opens a store in a worker, writes, reads, scans, checkpoints, migrates, reopens; what it saw. */
  async run(o: RunOptions) {
    longTasks.length = 0;
    const before = instances;
    const wiped = u8(o.recipient.secretKey);
    const s = await openIn(o, true, wiped);
    const words = s.collection('words', { schema, index: { text: ['lemma'] } });
    const t0 = performance.now();
    for (let i = 0; i < o.records; i += 1000)
      await s.batch((tx) => {
        for (let j = i; j < Math.min(o.records, i + 1000); j++)
          tx.put(words, `w${String(j).padStart(7, '0')}`, { lemma: `lemma${j}`, gloss: `the gloss of word ${j}` });
      });
    const ingestMs = performance.now() - t0;
    const ingestLongTask = Math.max(0, ...longTasks);
    const puts: number[] = [];
    for (let i = 0; i < (o.singlePuts ?? 50); i++) {
      const t = performance.now();
      await words.put(`single${i}`, { lemma: 'single', gloss: `put ${i}` });
      puts.push(performance.now() - t);
    }
    const gets: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t = performance.now();
      await words.get(`w${String((i * 7919) % o.records).padStart(7, '0')}`);
      gets.push(performance.now() - t);
    }
    let scanned = 0;
    for await (const _ of words.scan()) scanned++;
    const hits = await words.search('lemma42');
    const checkpoint = await s.checkpoint();
    const sealed = await words.exportSealed('w0000042');
    longTasks.length = 0;
    const progress: number[] = [];
    let migrated: unknown;
    if (o.migrate)
      migrated = await s.migrate({ to: 'cnsa2-gcm-hkdf384-commit', onProgress: (p) => progress.push(p.copied) });
    const migrationLongTask = Math.max(0, ...longTasks);
    const storage = await s.storageInfo();
    const info = await s.info();
    await s.close();
    const again = await openIn(o, false);
    const count = await again.collection('words', { schema, index: { text: ['lemma'] } }).count();
    const first = await again.collection('words', { schema, index: { text: ['lemma'] } }).get('w0000001');
    await again.close();
    return {
      ingestMs,
      ingestLongTask,
      migrationLongTask,
      putP50: median(puts),
      putP99: p99(puts),
      getP50: median(gets),
      scanned,
      hits: hits.map((h) => h.id),
      checkpointSize: checkpoint.size,
      sealed: Array.from(sealed),
      progress: progress.length,
      migrated,
      storage,
      info: { storage: info.storage, collections: info.collections },
      count,
      first,
      keyWiped: wiped.every((b) => b === 0),
      instancesOnPage: instances - before,
    };
  },
  /**
   * Change notifications from a worker engine: a listener on a prefix, one on a prefix nothing
   * touches, a live get; per put the time from its acknowledgement to its listener's call.
   */
  async changes(o: RunOptions) {
    const s = await openIn(o, true, undefined, 'client');
    const words = s.collection('words', { schema });
    const heardAt = new Map<string, number>();
    const heard: { commit: number; ids: readonly string[] }[] = [];
    const stop = words.watch(
      (c) => {
        const t = performance.now();
        heard.push({ commit: c.commit, ids: c.ids });
        for (const id of c.ids) heardAt.set(id, t);
      },
      { prefix: 'p/' },
    );
    let untouched = 0;
    words.watch(() => untouched++, { prefix: 'never/' });
    const live: unknown[] = [];
    words.live({ get: 'p/7' }, (v) => live.push(v));
    const lag: number[] = [];
    for (let i = 0; i < (o.singlePuts ?? 50); i++) {
      const id = `p/${i}`;
      await words.put(id, { lemma: `l${i}`, gloss: 'g' });
      const acked = performance.now();
      while (!heardAt.has(id)) await new Promise((resolve) => setTimeout(resolve, 0));
      lag.push(heardAt.get(id)! - acked); // negative: heard before the put's reply arrived
    }
    await words.put('other', { lemma: 'x', gloss: 'y' });
    await new Promise((resolve) => setTimeout(resolve, 20));
    stop();
    const commit = (await s.info()).commit;
    await s.close();
    const sorted = [...lag].sort((a, b) => a - b);
    return {
      heard: heard.length,
      lastCommit: heard.at(-1)?.commit,
      commit,
      untouched,
      live: live.length,
      lagP50: sorted[sorted.length >> 1],
      lagP95: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.95))],
      instancesOnPage: instances,
    };
  },
  /** This tab's store of the tab tests (tabs.spec.mjs): opened through pqdb/client in this tab's worker. */
  async tabOpen(o: RunOptions) {
    const s = await openIn(o, true, undefined, 'client');
    tab.store = s;
    tab.words = s.collection('words', { schema });
    tab.heard = [];
    tab.words.watch((c) => tab.heard.push({ ids: c.ids, at: performance.timeOrigin + performance.now() }));
    return (await s.storageInfo()).pageStore;
  },
  /** A put from this tab: resolves with the wall-clock time it was acknowledged (or the error's code). */
  async tabPut(id: string, gloss: string) {
    try {
      await tab.words!.put(id, { lemma: id, gloss });
      return { at: performance.timeOrigin + performance.now() };
    } catch (e) {
      return { code: (e as { code?: string }).code ?? String(e) };
    }
  },
  async tabGet(id: string) {
    return tab.words!.get(id);
  },
  async tabCount() {
    return tab.words!.count();
  },
  /** When this tab heard each id (wall-clock ms). */
  tabHeard() {
    return tab.heard;
  },
  async tabInfo() {
    return tab.store!.info();
  },
  async tabClose() {
    await tab.store?.close();
  },
  /** What a bad value gets from the worker: its class, code and message. */
  async failure(o: RunOptions) {
    const s = await openIn(o, true, undefined, 'client');
    try {
      await s.collection('words', { schema }).put('bad', { lemma: 3 } as never);
      return 'no error';
    } catch (e) {
      // One class whichever entry the page imports it from.
      const both = e instanceof client.PqdbError && e instanceof pqdb.PqdbError;
      return `${both ? 'PqdbError' : (e as Error).name} ${(e as { code?: string }).code}`;
    } finally {
      await s.close();
    }
  },
  /**
   * Moves a store from IndexedDB to OPFS through the worker engine: written in a worker on
   * IndexedDB, backed up (a managed copy in IndexedDB), restored with `restoreStore({ worker })`
   * into OPFS; what the restored store holds.
   */
  async move(o: RunOptions) {
    const s = await openIn({ ...o, storage: 'indexeddb' }, true);
    const words = s.collection('words', { schema });
    await s.batch((tx) => {
      for (let i = 0; i < 1000; i++) tx.put(words, `w${i}`, { lemma: `lemma${i}`, gloss: 'moved' });
    });
    const { copy } = await s.backup(`${o.name}-copy`);
    await s.close();
    const r = await client.restoreStore(`${o.name}-copy`, {
      worker: '/page/engine-worker.js',
      storage: 'opfs',
      location: `${o.name}-opfs`,
      unlock: u8(o.recipient.secretKey),
      recipients: [u8(o.recipient.publicKey)],
      trustedSigner: u8(o.signer.publicKey),
      signer: u8(o.signer.secretKey),
      signerPublicKey: u8(o.signer.publicKey),
    });
    const moved = r.store.collection('words', { schema });
    const out = {
      copyKind: copy.kind,
      restored: r.restored,
      pageStore: (await r.store.storageInfo()).pageStore,
      count: await moved.count(),
      sample: await moved.get('w999'),
      instancesOnPage: instances,
    };
    await r.store.close();
    return out;
  },
  instances: () => instances,
};

(globalThis as unknown as { pqdbWorker: typeof api }).pqdbWorker = api;
