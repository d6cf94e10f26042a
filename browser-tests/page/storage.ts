// The browser side of the PageStore conformance suite: the same platform-neutral checks the Node
// tests run (node-tests/cases/page-store.ts), against the IndexedDB adapter on Chromium's real
// IndexedDB and Web Locks. Bundled from src/ by browser-tests/server.mjs (no dist/ needed).
// Playwright drives window.pqdbStorage.

import { openDB, deleteDB } from 'idb';
import { openIndexedDbPageStore, lockName } from '../../src/storage/indexeddb';
import { openOpfsPageStore, opfsAvailable } from '../../src/storage/opfs';
import type { PageStore } from '../../src/storage/page-store';
import { runPageStoreCases, indexedDbFixture, type PageStoreFixtureFactory } from '../../node-tests/cases/page-store';
import type { Summary } from '../../node-tests/cases/_util';
import { engineName } from './_engine';

const run = Math.random().toString(36).slice(2, 8);
let n = 0;

const factory: PageStoreFixtureFactory = async () =>
  indexedDbFixture(`pqdb-conformance-${run}-${n++}`, { openDB, deleteDB, open: openIndexedDbPageStore });

/** Stores this page holds open, by name, for the cross-page lock test. */
const held = new Map<string, PageStore>();
/** The message of the last failed open. */
let lastMessage = '';

/** A dedicated worker running browser-tests/page/opfs-worker.ts, called by message. */
function startWorker(): (op: string, arg?: string) => Promise<unknown> {
  const w = new Worker('/page/opfs-worker.js', { type: 'module' });
  let next = 0;
  const waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  w.onmessage = (e: MessageEvent<{ id: number; value?: unknown; error?: string }>) => {
    const p = waiting.get(e.data.id)!;
    waiting.delete(e.data.id);
    if (e.data.error !== undefined) p.reject(new Error(e.data.error));
    else p.resolve(e.data.value);
  };
  w.onerror = (e) => {
    for (const p of waiting.values()) p.reject(new Error(`worker: ${e.message}`));
    waiting.clear();
  };
  return (op, arg = '') =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      w.postMessage({ id, op, arg });
    });
}

const workers: ((op: string, arg?: string) => Promise<unknown>)[] = [];

const api = {
  /** Calls `op` in dedicated worker `index` (started on first use). */
  inWorker(index: number, op: string, arg?: string): Promise<unknown> {
    workers[index] ??= startWorker();
    return workers[index](op, arg);
  },
  /** What the page's own thread gets from the OPFS store: its availability and an open's code. */
  async opfsOnPage(): Promise<{ available: boolean; open: string }> {
    try {
      await openOpfsPageStore('on-the-page');
      return { available: opfsAvailable(), open: 'opened' };
    } catch (e) {
      return { available: opfsAvailable(), open: (e as { code?: string }).code ?? String(e) };
    }
  },
  /** Runs the whole conformance suite. */
  conformance: (): Promise<Summary> => runPageStoreCases(`indexeddb, ${engineName}`, factory),
  /** Opens store `name` and keeps it open; returns 'opened' or the PqdbError code. */
  async open(name: string): Promise<string> {
    try {
      const s = await openIndexedDbPageStore(name);
      held.set(name, s);
      await s.commit({ pages: [{ id: held.size, bytes: new Uint8Array([1]) }] }).catch(() => undefined);
      return 'opened';
    } catch (e) {
      lastMessage = (e as Error).message;
      return (e as { code?: string }).code ?? String(e);
    }
  },
  /** The message of the last open that failed. */
  lastMessage: (): string => lastMessage,
  async close(name: string): Promise<void> {
    await held.get(name)?.close();
    held.delete(name);
  },
  /** Names of the Web Locks held in this origin. */
  async heldLocks(): Promise<string[]> {
    const q = await navigator.locks.query();
    return (q.held ?? []).map((l) => l.name ?? '');
  },
  lockName,
};

(globalThis as unknown as { pqdbStorage: typeof api }).pqdbStorage = api;
