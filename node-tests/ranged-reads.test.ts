// Ranged reads above the page stores: PageCache.getRange (a record out of a cached page, or a ranged
// read that caches nothing) and the replica's staged view of a shipped commit (StagedPages.readRange
// answers from staged pages, refuses dropped ones and passes the rest to the base page store). The
// page stores' own readRange is in the conformance suite (cases/page-store.ts).
import { describe, it, expect } from 'vitest';
import { PageCache } from '../src/engine/page-cache';
import { StagedPages } from '../src/replication/staged';
import { MSG_COMMIT } from '../src/replication/messages';
import { MemoryMedium, openMemoryPageStore } from '../src/storage/memory';
import type { PageStore } from '../src/storage/page-store';
import { Rng } from './cases/_util';

/** A real memory page store whose reads are counted (a delegating wrapper; nothing else changes). */
async function countedStore(): Promise<{ store: PageStore; reads: { page: number; range: number } }> {
  const inner = await openMemoryPageStore({ medium: new MemoryMedium() });
  const reads = { page: 0, range: 0 };
  const store: PageStore = {
    kind: inner.kind,
    recovery: inner.recovery,
    supports: inner.supports,
    get isOpen() {
      return inner.isOpen;
    },
    readPage: (id) => (reads.page++, inner.readPage(id)),
    readRange: (id, offset, length) => (reads.range++, inner.readRange!(id, offset, length)),
    readManifest: () => inner.readManifest(),
    listPages: () => inner.listPages(),
    commit: (batch) => inner.commit(batch),
    deletePages: (ids) => inner.deletePages(ids),
    stats: () => inner.stats(),
    close: () => inner.close(),
  };
  return { store, reads };
}

describe('PageCache.getRange', () => {
  it('a page not cached is read by range and stays uncached; a cached page serves ranges without a read', async () => {
    const { store, reads } = await countedStore();
    const page = new Rng(1).bytes(20_000);
    await store.commit({ pages: [{ id: 7, bytes: page }] });
    const cache = new PageCache(store);
    expect(await cache.getRange(7, 1000, 150)).toEqual(page.subarray(1000, 1150));
    expect(await cache.getRange(7, 19_850, 150)).toEqual(page.subarray(19_850));
    expect(reads).toEqual({ page: 0, range: 2 }); // the second range read again: nothing was cached
    expect(await cache.get(7)).toEqual(page);
    expect(reads).toEqual({ page: 1, range: 2 });
    const view = await cache.getRange(7, 5000, 150);
    expect(view).toEqual(page.subarray(5000, 5150));
    expect(view.length).toBe(150);
    expect(await cache.getRange(7, 0, 0)).toEqual(new Uint8Array(0));
    expect(reads).toEqual({ page: 1, range: 2 }); // served from the cached page
    await store.close();
  });

  it('where a range costs the whole page (no partialRanges, e.g. IndexedDB) the page is read once and cached', async () => {
    const { store, reads } = await countedStore();
    const page = new Rng(2).bytes(4000);
    await store.commit({ pages: [{ id: 3, bytes: page }] });
    (store as { supports?: PageStore['supports'] }).supports = { ...store.supports!, partialRanges: false };
    const cache = new PageCache(store);
    expect(await cache.getRange(3, 10, 20)).toEqual(page.subarray(10, 30));
    expect(await cache.getRange(3, 3000, 20)).toEqual(page.subarray(3000, 3020));
    expect(cache.getRangeSync(3, 100, 5, new Uint8Array(5))).toEqual(page.subarray(100, 105));
    expect(reads).toEqual({ page: 1, range: 0 });
    // Not cached and no partial ranges: getRangeSync leaves it to getRange.
    await store.commit({ pages: [{ id: 4, bytes: page }] });
    expect(cache.getRangeSync(4, 0, 5, new Uint8Array(5))).toBeUndefined();
    expect(reads).toEqual({ page: 1, range: 0 });
    await store.close();
  });

  it('a missing page or a range past the end is CORRUPTION, cached or not; bad arguments are RangeError/TypeError', async () => {
    const { store } = await countedStore();
    await store.commit({ pages: [{ id: 1, bytes: new Uint8Array(100) }] });
    const cache = new PageCache(store);
    await expect(cache.getRange(2, 0, 10)).rejects.toMatchObject({ name: 'PqdbError', code: 'CORRUPTION' });
    await expect(cache.getRange(1, 50, 51)).rejects.toMatchObject({ name: 'PqdbError', code: 'CORRUPTION' });
    await cache.get(1);
    await expect(cache.getRange(1, 50, 51)).rejects.toMatchObject({ name: 'PqdbError', code: 'CORRUPTION' });
    await expect(cache.getRange(1, 101, 0)).rejects.toMatchObject({ name: 'PqdbError', code: 'CORRUPTION' });
    await expect(cache.getRange(1, -1, 10)).rejects.toBeInstanceOf(RangeError);
    await expect(cache.getRange(1, 0, 1.5)).rejects.toBeInstanceOf(TypeError);
    expect(await cache.getRange(1, 50, 50)).toHaveLength(50);
    await store.close();
  });
});

describe('StagedPages.readRange (a replica verifying a shipped commit)', () => {
  it('ranges of staged pages, none of dropped ones, the base page store for the rest', async () => {
    const base = await openMemoryPageStore();
    const rng = new Rng(3);
    const kept = rng.bytes(3000);
    const dropped = rng.bytes(3000);
    const shipped = rng.bytes(3000);
    await base.commit({
      pages: [
        { id: 1, bytes: kept },
        { id: 2, bytes: dropped },
      ],
      manifest: new Uint8Array(1),
    });
    const staged = new StagedPages(base);
    await staged.stage({
      type: MSG_COMMIT,
      commit: 2,
      time: 0,
      snapshot: false,
      pages: [{ id: 3, bytes: shipped }],
      deletes: [2],
      manifest: new Uint8Array(2),
    });
    expect(await staged.readRange(1, 2900, 100)).toEqual(kept.subarray(2900));
    expect(await staged.readRange(2, 0, 10)).toBeUndefined();
    expect(await base.readRange!(2, 0, 10)).toEqual(dropped.subarray(0, 10)); // still in the base until applied
    const r = (await staged.readRange(3, 100, 150))!;
    expect(r).toEqual(shipped.subarray(100, 250));
    r.fill(0); // a copy: the staged page is not changed
    expect(await staged.readRange(3, 100, 150)).toEqual(shipped.subarray(100, 250));
    expect(await staged.readRange(4, 0, 1)).toBeUndefined();
    await expect(staged.readRange(3, 2999, 2)).rejects.toMatchObject({ name: 'PqdbError', code: 'CORRUPTION' });
    await expect(staged.readRange(1, 2999, 2)).rejects.toMatchObject({ name: 'PqdbError', code: 'CORRUPTION' });
    await expect(staged.readRange(3, -1, 2)).rejects.toBeInstanceOf(RangeError);
    await base.close();
  });
});

describe("a user's read", () => {
  it('decodes from a reused scratch: values read at once, bytes fields and larger records stay intact', async () => {
    const { openStore, generateRecipient } = await import('../src/index');
    const who = generateRecipient();
    const store = await openStore({
      storage: await openMemoryPageStore({ medium: new MemoryMedium() }),
      create: true,
      recipients: [who.publicKey],
      unlock: who.secretKey,
      autoCheckpoint: false,
    });
    const c = store.collection('c', { schema: { b: 'bytes', s: 'string' } });
    const rng = new Rng(3);
    // Sizes around and past the scratch's first 1,024 bytes, so it grows between reads.
    const want = [10, 900, 1500, 5000, 40].map((n, i) => ({ b: rng.bytes(n), s: `v${i}`.repeat(n % 50) }));
    await store.batch((tx) => want.forEach((v, i) => tx.put(c, `r${i}`, v)));
    const first = await c.get('r0');
    const all = await Promise.all(want.map((_, i) => c.get(`r${i}`)));
    expect(all).toEqual(want);
    expect(first).toEqual(want[0]); // a later read into the scratch left an earlier value alone
    expect(all[3]!.b.buffer).not.toBe(all[4]!.b.buffer);
    await store.close();
  });
});

describe('node-fs reads past the synchronous reads of a turn', () => {
  const setup = async (records: number) => {
    const { openStore, generateRecipient } = await import('../src/node');
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const dir = mkdtempSync(join(tmpdir(), 'pqdb-budget-'));
    const who = generateRecipient();
    const opts = { unlock: who.secretKey, autoCheckpoint: false, autoCompact: false } as const;
    const schema = { s: 'string' } as const;
    let store = await openStore({ location: dir, create: true, recipients: [who.publicKey], ...opts });
    let c = store.collection('c', { schema });
    await store.batch((tx) => {
      for (let i = 0; i < 200; i++) tx.put(c, `r${i}`, { s: `r${i}` });
    });
    await store.batch((tx) => {
      for (let i = 0; i < records; i++) tx.put(c, `q${i}`, { s: `${'q'.repeat(100)}${i}` });
    });
    // The first page is left mostly dead: a compaction moves its last records and deletes it.
    await store.batch((tx) => {
      for (let i = 0; i < 190; i++) tx.put(c, `r${i}`, { s: `R${i}` });
    });
    await store.close();
    store = await openStore({ location: dir, ...opts }); // no page cached
    c = store.collection('c', { schema });
    return { store, c };
  };

  it('a read waiting for a later turn keeps its page: a compaction deleting it meanwhile changes nothing', async () => {
    const { store, c } = await setup(3000);
    // Enough reads at once that the later ones wait for a turn; one of them is of the doomed page.
    const burst = Promise.all(Array.from({ length: 5000 }, (_, i) => c.get(`q${i % 3000}`)));
    const doomed = c.get('r195');
    const compacted = store.compact();
    expect(await doomed).toEqual({ s: 'r195' });
    expect((await compacted).pagesRewritten).toBeGreaterThan(0);
    expect((await burst).every((v, i) => v!.s.endsWith(`${i % 3000}`))).toBe(true);
    expect(await c.get('r195')).toEqual({ s: 'r195' });
    await store.close();
  });

  it('reads waiting for a turn go first: a read started beside a long read loop ends within a few turns', async () => {
    const { store, c } = await setup(2000);
    let loopReads = 0;
    const loop = (async () => {
      for (let i = 0; i < 20_000; i++) {
        await c.get(`q${i % 2000}`);
        loopReads++;
      }
    })();
    // Started once the loop has taken this turn's synchronous reads.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const startedAt = loopReads;
    await c.get('r7');
    // Served in the next turn at the latest, ahead of the loop's later reads (64 a turn).
    expect(loopReads - startedAt).toBeLessThanOrEqual(3 * 64);
    await loop;
    await store.close();
  });
});
