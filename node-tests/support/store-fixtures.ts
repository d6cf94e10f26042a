// Store locations for the shared store cases (cases/proofs.ts, cases/search.ts) in Node: memory,
// node-fs and IndexedDB over fake-indexeddb. The Chromium page runs the same cases on real IndexedDB.
import 'fake-indexeddb/auto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deleteDB } from 'idb';
import { openStore, openMemoryPageStore, openNodeFsPageStore } from '../../src/node';
import { MemoryMedium } from '../../src/storage/memory';
import { openIndexedDbPageStore } from '../../src/storage/indexeddb';
import type { StoreFixtureFactory } from '../cases/_store';

let n = 0;

export const STORE_FIXTURES: [string, StoreFixtureFactory][] = [
  [
    'memory',
    async () => {
      const medium = new MemoryMedium();
      return {
        open: async (o) => openStore({ ...o, storage: await openMemoryPageStore({ medium }) }),
        pages: () => openMemoryPageStore({ medium }),
        dispose: async () => undefined,
      };
    },
  ],
  [
    'node-fs',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'pqdb-store-case-'));
      return {
        open: (o) => openStore({ ...o, storage: 'fs', location: dir }),
        pages: () => openNodeFsPageStore(dir, { readOnly: true, create: false }),
        dispose: () => rm(dir, { recursive: true, force: true }),
      };
    },
  ],
  [
    'indexeddb (fake-indexeddb)',
    async () => {
      const name = `pqdb-store-case-${n++}`;
      return {
        open: async (o) => openStore({ ...o, storage: await openIndexedDbPageStore(name) }),
        pages: () => openIndexedDbPageStore(name),
        dispose: () => deleteDB(name),
      };
    },
  ],
];
