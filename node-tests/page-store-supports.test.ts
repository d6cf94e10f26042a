// PageStore.supports (src/storage/page-store.ts): a page store written before `supports` existed
// (none declared) still serves a Store, which then calls only its required methods; the wrappers
// declare what they forward; node-fs's segment reclaim answers to its former names too.
import { describe, it, expect } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, generateRecipient } from '../src/node';
import { MemoryMedium, openMemoryPageStore } from '../src/storage/memory';
import {
  openNodeFsPageStore,
  DEFAULT_COMPACT_DEAD_FRACTION,
  DEFAULT_RECLAIM_DEAD_FRACTION,
} from '../src/storage/node-fs';
import { NOTHING_SUPPORTED, supportsOf, type PageStore } from '../src/storage/page-store';
import { StagedPages } from '../src/replication/staged';

/** A user's page store over a memory one: every method, and no `supports`. Optional calls are counted. */
async function legacyStore(): Promise<{ store: PageStore; optional: string[] }> {
  const inner = await openMemoryPageStore({ medium: new MemoryMedium() });
  const optional: string[] = [];
  const store: PageStore = {
    kind: 'user',
    recovery: inner.recovery,
    get isOpen() {
      return inner.isOpen;
    },
    readPage: (id) => inner.readPage(id),
    readPages: (ids) => (optional.push('readPages'), inner.readPages!(ids)),
    readRange: (id, o, l) => (optional.push('readRange'), inner.readRange!(id, o, l)),
    readRangeSync: (id, o, l, into, b) => (optional.push('readRangeSync'), inner.readRangeSync!(id, o, l, into, b)),
    readManifest: () => inner.readManifest(),
    listPages: () => inner.listPages(),
    commit: (batch) => inner.commit(batch),
    deletePages: (ids) => inner.deletePages(ids),
    stats: () => inner.stats(),
    compact: async () => (
      optional.push('compact'),
      { segmentsRewritten: 0, bytesCopied: 0, bytesBefore: 0, bytesAfter: 0 }
    ),
    close: () => inner.close(),
  };
  return { store, optional };
}

describe('PageStore.supports', () => {
  it('a page store without supports declares nothing optional, and a Store on it works through the required methods', async () => {
    const { store, optional } = await legacyStore();
    expect(supportsOf(store)).toBe(NOTHING_SUPPORTED);
    const who = generateRecipient();
    const schema = { s: 'string' } as const;
    const db = await openStore({ storage: store, create: true, recipients: [who.publicKey], unlock: who.secretKey });
    const c = db.collection('c', { schema });
    await db.batch((tx) => {
      for (let i = 0; i < 50; i++) tx.put(c, `k${i}`, { s: `v${i}` });
    });
    await db.batch((tx) => {
      for (let i = 0; i < 45; i++) tx.put(c, `k${i}`, { s: `w${i}` });
    });
    await db.compact(); // the engine's record compaction: no segment reclaim asked of the store
    for (let i = 0; i < 50; i++) expect(await c.get(`k${i}`)).toEqual({ s: i < 45 ? `w${i}` : `v${i}` });
    await db.close();
    expect(optional).toEqual([]); // nothing optional was called: none was declared
  });

  it('the staged view declares reads it forwards, the partialRanges of the store below, and no reclaim', async () => {
    const inner = await openMemoryPageStore();
    const staged = new StagedPages(inner);
    expect(staged.supports).toMatchObject({
      readPages: true,
      readRange: true,
      partialRanges: true,
      reclaim: false,
      follow: false,
    });
    const { store } = await legacyStore();
    expect(new StagedPages(store).supports.partialRanges).toBe(false);
    await inner.close();
  });

  it('node-fs segment reclaim: reclaim(), and compact() and the autoCompact/compact* options as deprecated aliases', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pqdb-reclaim-'));
    try {
      expect(DEFAULT_COMPACT_DEAD_FRACTION).toBe(DEFAULT_RECLAIM_DEAD_FRACTION);
      await expect(openNodeFsPageStore(dir, { reclaimDeadFraction: 2 })).rejects.toThrow(/reclaimDeadFraction/);
      await expect(openNodeFsPageStore(dir, { compactStepBytes: 1 })).rejects.toThrow(/compactStepBytes/);
      const s = await openNodeFsPageStore(dir, { segmentBytes: 4096, autoReclaim: false, reclaimStepBytes: 4096 });
      expect(supportsOf(s).reclaim).toBe(true);
      const page = (n: number) => new Uint8Array(900).fill(n);
      for (let i = 1; i <= 12; i++) await s.commit({ pages: [{ id: i, bytes: page(i) }] });
      await s.deletePages([1, 2, 3, 4, 5, 6, 7, 8]);
      const r = await s.reclaim!({ minDeadFraction: 0.5 });
      expect(r.segmentsRewritten).toBeGreaterThan(0);
      expect(r.bytesAfter).toBeLessThan(r.bytesBefore);
      const again = await s.compact!({ minDeadFraction: 0.5 }); // the former name: same method
      expect(again.segmentsRewritten).toBe(0);
      for (let i = 9; i <= 12; i++) expect(await s.readPage(i)).toEqual(page(i));
      await s.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
