// The storage-attacker cases of node-tests/cases/tamper.ts on the memory medium, on IndexedDB
// (fake-indexeddb) and on the OPFS store's logic over plain files (its four files edited from the
// documented layout: cases/_opfs-raw.ts); the browsers run the same cases on real IndexedDB and, in a
// dedicated worker, on real OPFS.
import { describe, it, afterAll } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateRecipient, generateSigner, verifyStore, openStore, type Store } from '../src/index';
import { openSyncPageStore } from '../src/storage/opfs';
import type { PageStore } from '../src/storage/page-store';
import { tamperCases, type TamperFixture, type TamperFixtureFactory } from './cases/tamper';
import { opfsRaw } from './cases/_opfs-raw';
import { memoryStoreFixture, indexedDbStoreFixture } from './support/store-fixtures';
import { nodeSyncDirectory } from './support/sync-directory';

const root = await mkdtemp(join(tmpdir(), 'pqdb-tamper-opfs-'));
afterAll(() => rm(root, { recursive: true, force: true }));
let dirs = 0;

/** The OPFS store's logic over a directory of files, its raw medium the four files. */
async function opfsLogicFixture(): Promise<TamperFixture> {
  const dir = join(root, `s${dirs++}`);
  const open: (Store | PageStore)[] = [];
  const pages = async () => {
    const p = await openSyncPageStore(nodeSyncDirectory(dir), dir);
    open.push(p);
    return p;
  };
  return {
    async open(options) {
      const p = await openSyncPageStore(nodeSyncDirectory(dir), dir);
      try {
        const s = await openStore({ ...options, storage: p });
        open.push(s);
        return s;
      } catch (e) {
        await p.close();
        throw e;
      }
    },
    pages,
    async dispose() {
      for (const x of open.splice(0)) await x.close().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
    raw: opfsRaw(nodeSyncDirectory(dir)),
  };
}

const FIXTURES: [string, TamperFixtureFactory][] = [
  ['memory', memoryStoreFixture],
  ['indexeddb (fake-indexeddb)', indexedDbStoreFixture],
  ['opfs (its logic over node files)', opfsLogicFixture],
];

describe.each(FIXTURES)('a storage attacker editing the medium (%s)', (_name, factory) => {
  for (const c of tamperCases(factory, { generateRecipient, generateSigner, verifyStore })) it(c.name, c.run);
});
