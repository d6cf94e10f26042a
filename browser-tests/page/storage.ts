// The browser side of the PageStore conformance suite: the same platform-neutral checks the Node
// tests run (node-tests/cases/page-store.ts), against the IndexedDB adapter on Chromium's real
// IndexedDB and Web Locks. Bundled from src/ by browser-tests/server.mjs (no dist/ needed).
// Playwright drives window.pqdbStorage.

import { openDB, deleteDB } from 'idb';
import { openIndexedDbPageStore, lockName } from '../../src/storage/indexeddb';
import type { PageStore } from '../../src/storage/page-store';
import { runPageStoreCases, indexedDbFixture, type PageStoreFixtureFactory } from '../../node-tests/cases/page-store';
import type { Summary } from '../../node-tests/cases/_util';

const run = Math.random().toString(36).slice(2, 8);
let n = 0;

const factory: PageStoreFixtureFactory = async () =>
  indexedDbFixture(`pqdb-conformance-${run}-${n++}`, { openDB, deleteDB, open: openIndexedDbPageStore });

/** Stores this page holds open, by name, for the cross-page lock test. */
const held = new Map<string, PageStore>();
/** The message of the last failed open. */
let lastMessage = '';

const api = {
  /** Runs the whole conformance suite. */
  conformance: (): Promise<Summary> => runPageStoreCases('indexeddb, Chromium', factory),
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
