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

const api: Record<string, (arg: string) => Promise<unknown>> = {
  available: async () => opfsAvailable(),
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
