// A dedicated worker of the storage page: the PageStore conformance suite against the OPFS store
// on Chromium's real Origin Private File System (FileSystemSyncAccessHandle exists only in
// dedicated workers), and the single-writer check between two workers. Bundled by
// browser-tests/server.mjs; browser-tests/page/storage.ts starts it and relays its replies.

import { openOpfsPageStore, deleteOpfsPageStore, opfsAvailable, type SyncDirectory } from '../../src/storage/opfs';
import type { PageStore } from '../../src/storage/page-store';
import {
  runPageStoreCases,
  syncDirectoryFixture,
  type PageStoreFixtureFactory,
} from '../../node-tests/cases/page-store';
import { engineName } from './_engine';
import { openStore, generateRecipient, generateSigner, verifyStore, deleteStore, type Store } from '../../src/browser';
import { runStoreCases } from '../../node-tests/cases/_store';
import { tamperCases, type TamperFixture } from '../../node-tests/cases/tamper';
import { opfsRaw } from '../../node-tests/cases/_opfs-raw';

const run = Math.random().toString(36).slice(2, 8);
let n = 0;

/** The store's directory as the store names it (docs/storage.md): for the fixture's raw access. */
async function rawDirectory(name: string): Promise<SyncDirectory> {
  const root = await navigator.storage.getDirectory();
  const dir = await root.getDirectoryHandle(`pqdb-${encodeURIComponent(name)}`, { create: true });
  return {
    open: async (file) =>
      (await dir.getFileHandle(file, { create: true })).createSyncAccessHandle() as unknown as ReturnType<
        SyncDirectory['open']
      >,
  };
}

const factory: PageStoreFixtureFactory = async () => {
  const name = `conformance-${run}-${n++}`;
  return syncDirectoryFixture({
    dir: await rawDirectory(name),
    open: () => openOpfsPageStore(name),
    dispose: () => deleteOpfsPageStore(name),
  });
};

const held = new Map<string, PageStore>();

/** A fresh OPFS location for the tamper cases: the store through openStore, the raw medium its four files. */
async function tamperFixture(): Promise<TamperFixture> {
  const name = `tamper-${run}-${n++}`;
  const open: (Store | PageStore)[] = [];
  return {
    async open(options) {
      const s = await openStore({ ...options, storage: 'opfs', location: name });
      open.push(s);
      return s;
    },
    async pages() {
      const p = await openOpfsPageStore(name);
      open.push(p);
      return p;
    },
    async dispose() {
      for (const x of open.splice(0)) await x.close().catch(() => undefined);
      await deleteOpfsPageStore(name);
    },
    raw: opfsRaw(await rawDirectory(name)),
  };
}
/** The store the quota check fills, between its two calls. */
const quota: { name: string; recipient?: { publicKey: Uint8Array; secretKey: Uint8Array }; acked: number } = {
  name: '',
  acked: 0,
};

const api: Record<string, (arg: string) => Promise<unknown>> = {
  available: async () => opfsAvailable(),
  tamper: () =>
    runStoreCases(
      `tamper (opfs, ${engineName} worker)`,
      tamperCases(tamperFixture, { generateRecipient, generateSigner, verifyStore }),
    ),
  conformance: () => runPageStoreCases(`opfs, ${engineName} worker`, factory),
  /** Opens store `name` and keeps it open; 'opened' or the PqdbError code. */
  async open(name) {
    try {
      const s = await openOpfsPageStore(name);
      held.set(name, s);
      await s.commit({ pages: [{ id: (await s.listPages()).length + 1, bytes: new Uint8Array([1]) }] });
      return 'opened';
    } catch (e) {
      return (e as { code?: string }).code ?? String(e);
    }
  },
  async close(name) {
    await held.get(name)?.close();
    held.delete(name);
    return 'closed';
  },
  /**
   * Writes 10,000 records with known ids, values and collection name to a store on `storage`
   * ('opfs' or 'indexeddb'), closes it, then reads every byte the medium holds (the four OPFS files,
   * or every value and key of the IndexedDB database's object stores) and counts the markers found.
   */
  async plaintext(storage) {
    const name = `plaintext-${storage}-${run}`;
    const r = generateRecipient();
    const store = await openStore({
      storage: storage as 'opfs' | 'indexeddb',
      location: name,
      create: true,
      recipients: [r.publicKey],
      unlock: r.secretKey.slice(),
    });
    const c = store.collection('confidential-ledger', {
      schema: { owner: 'string', note: 'string', amount: 'integer' },
    });
    for (let i = 0; i < 10_000; i += 1000)
      await store.batch((tx) => {
        for (let j = i; j < i + 1000; j++)
          tx.put(c, `acct-id-${String(j).padStart(6, '0')}`, {
            owner: `owner-name-${j}`,
            note: `plain-note-marker ${j}`,
            amount: 7_000_000 + j,
          });
      });
    await store.close();
    const chunks: Uint8Array[] = [];
    if (storage === 'opfs') {
      const dir = await rawDirectory(name);
      for (const f of ['log-0', 'log-1', 'slot-a', 'slot-b']) {
        const file = await dir.open(f);
        const buf = new Uint8Array(file.getSize());
        file.read(buf, { at: 0 });
        file.close();
        chunks.push(buf);
      }
    } else {
      const db = await new Promise<IDBDatabase>((ok, no) => {
        const q = indexedDB.open(name);
        q.onsuccess = () => ok(q.result);
        q.onerror = () => no(q.error);
      });
      const enc = new TextEncoder();
      const add = (v: unknown) => {
        if (v instanceof Uint8Array) chunks.push(v);
        else if (v instanceof ArrayBuffer) chunks.push(new Uint8Array(v));
        else if (v !== undefined)
          chunks.push(enc.encode(JSON.stringify(v, (_, x) => (x instanceof Uint8Array ? Array.from(x) : x))));
        if (typeof v === 'object' && v !== null && !(v instanceof Uint8Array))
          for (const x of Object.values(v)) if (x instanceof Uint8Array) chunks.push(x);
      };
      for (const os of Array.from(db.objectStoreNames)) {
        await new Promise<void>((ok, no) => {
          const q = db.transaction(os).objectStore(os).openCursor();
          q.onsuccess = () => {
            const cur = q.result;
            if (cur === null) return ok();
            add(cur.key);
            add(cur.value);
            cur.continue();
          };
          q.onerror = () => no(q.error);
        });
      }
      db.close();
    }
    // The last marker is a control the medium does hold in clear (the slots' magic, a meta key):
    // the search finds what is there.
    const control = storage === 'opfs' ? 'PQDBOPFS' : 'manifest';
    const markers = ['acct-id-', 'owner-name-', 'plain-note-marker', 'confidential-ledger', control];
    const enc = new TextEncoder();
    const found: Record<string, number> = {};
    let bytes = 0;
    for (const m of markers) {
      const needle = enc.encode(m);
      let hits = 0;
      for (const buf of chunks) {
        for (
          let i = buf.indexOf(needle[0]);
          i !== -1 && i <= buf.length - needle.length;
          i = buf.indexOf(needle[0], i + 1)
        ) {
          let k = 1;
          while (k < needle.length && buf[i + k] === needle[k]) k++;
          if (k === needle.length) hits++;
        }
      }
      found[m] = hits;
    }
    for (const b of chunks) bytes += b.length;
    if (storage === 'opfs') await deleteOpfsPageStore(name);
    else await deleteStore(name);
    const controlHits = found[control];
    delete found[control];
    return { found, controlHits, bytes, files: chunks.length };
  },
  /**
   * Puts records of 4 KiB one commit at a time into a new store on `storage` until a put fails
   * (the spec has set a small quota first); closes the store (or lets it go, when closing fails).
   * Returns the acknowledged count and the failure's code.
   */
  async fill(storage) {
    const name = `quota-${storage}-${run}`;
    quota.name = name;
    quota.recipient = generateRecipient();
    quota.acked = 0;
    const store = await openStore({
      storage: storage as 'opfs' | 'indexeddb',
      location: name,
      create: true,
      recipients: [quota.recipient.publicKey],
      unlock: quota.recipient.secretKey.slice(),
    });
    const c = store.collection('q', { schema: { blob: 'bytes' } });
    let code = 'none';
    for (let i = 0; i < 100_000; i++) {
      try {
        await c.put(`r${i}`, { blob: crypto.getRandomValues(new Uint8Array(4096)) });
        quota.acked = i + 1;
      } catch (e) {
        code = (e as { code?: string }).code ?? String(e);
        break;
      }
    }
    const closed = await store.close().then(
      () => 'closed',
      (e: { code?: string }) => e.code ?? String(e),
    );
    return { acked: quota.acked, code, closed };
  },
  /** Reopens the store `fill` made (the spec has lifted the quota): how many acknowledged records it finds, and a new put. */
  async refill(storage) {
    const store = await openStore({
      storage: storage as 'opfs' | 'indexeddb',
      location: quota.name,
      unlock: quota.recipient!.secretKey.slice(),
    });
    const c = store.collection('q', { schema: { blob: 'bytes' } });
    let found = 0;
    for (let i = 0; i < quota.acked; i++) if ((await c.get(`r${i}`))?.blob.length === 4096) found++;
    await c.put('after', { blob: new Uint8Array(16) });
    const after = (await c.get('after'))?.blob.length;
    await store.close();
    if (storage === 'opfs') await deleteOpfsPageStore(quota.name);
    else await deleteStore(quota.name);
    return { found, after };
  },
  async remove(name) {
    try {
      await deleteOpfsPageStore(name);
      return 'deleted';
    } catch (e) {
      return (e as { code?: string }).code ?? String(e);
    }
  },
};

self.onmessage = async (e: MessageEvent<{ id: number; op: string; arg: string }>) => {
  const { id, op, arg } = e.data;
  try {
    self.postMessage({ id, value: await api[op](arg) });
  } catch (err) {
    self.postMessage({ id, error: String((err as Error)?.stack ?? err) });
  }
};
