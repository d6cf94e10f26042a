// Compaction (src/engine/compact.ts): after rounds of updates the live records of mostly dead pages
// move to new pages and the old pages go; every record, search, count, signed checkpoint,
// consistency and inclusion proof stays as it was, across a reopen, and verifyStore holds. A
// commit that fails part-way (a failed fsync, a torn commit) loses nothing. A page holding a delete
// is kept.
import { describe, it, expect } from 'vitest';
import {
  openStore,
  generateRecipient,
  generateSigner,
  openMemoryPageStore,
  verifyStore,
  verifySealed,
} from '../src/index';
import { merkle } from '../src/crypto';
import { MemoryMedium } from '../src/storage/memory';
import { pageKind } from '../src/engine/page-format';
import { faulty, type Faults } from './support/faulty-page-store';
import { docsOpener } from './support/memory-docs';

const r = generateRecipient('classical');
const signer = generateSigner();
const schema = { text: 'string', round: 'integer' } as const;
const N = 1200;
const id = (i: number) => `r${String(i).padStart(5, '0')}`;

async function fixture(faults: Faults = {}) {
  const medium = new MemoryMedium();
  const open = docsOpener(medium, { recipient: r, signer }, schema, { wrap: (p) => faulty(p, faults) });
  const { store, docs } = await open(true);
  for (let round = 0; round < 4; round++) {
    for (let i = 0; i < N; i += 300)
      await store.batch((tx) => {
        for (let k = i; k < i + 300; k++) tx.put(docs, id(k), { text: `word${k % 17} round${round}`, round });
      });
    await store.checkpoint();
  }
  return { medium, open, store, docs };
}

const commitPages = (medium: MemoryMedium) =>
  [...medium.pages].filter(([, p]) => pageKind(p.bytes) === 'commit').map(([pageId]) => pageId);
const commitBytes = (medium: MemoryMedium) =>
  [...medium.pages].filter(([, p]) => pageKind(p.bytes) === 'commit').reduce((n, [, p]) => n + p.bytes.length, 0);

describe('compaction', () => {
  it('moves live records out of dead pages and keeps records, searches, checkpoints and proofs', async () => {
    const { medium, open, store, docs } = await fixture();
    const before = commitPages(medium).length;
    const bytes = commitBytes(medium);
    const checkpoints = store.checkpoints();
    const exported = await docs.exportSealed(id(7));
    const r1 = await store.compact();
    expect(r1.pagesRewritten).toBe(12); // the three superseded rounds, 4 pages each
    expect(r1.recordsMoved).toBe(0); // their records are all dead
    expect(r1.bytesAfter).toBeLessThan(r1.bytesBefore);
    expect(commitBytes(medium)).toBeLessThan(bytes * 0.3);
    expect(commitPages(medium).length).toBe(before - 12);
    for (let k = 0; k < N; k += 37) expect(await docs.get(id(k))).toEqual({ text: `word${k % 17} round3`, round: 3 });
    expect(docs.size).toBe(N);
    // Half of one page superseded: its live half moves.
    await store.batch((tx) => {
      for (let k = 0; k < 200; k++) tx.put(docs, id(k), { text: `fresh${k}`, round: 4 });
    });
    const r2 = await store.compact({ minDeadFraction: 0.6 });
    expect(r2.pagesRewritten).toBe(1);
    expect(r2.recordsMoved).toBe(100);
    await store.checkpoint();
    expect((await docs.search('fresh5')).map((h) => h.id)).toEqual([id(5)]);
    expect((await docs.search('word3 round3')).length).toBe(
      [...Array(N).keys()].filter((k) => k >= 200 && k % 17 === 3).length,
    );
    // Earlier signed checkpoints stay; each compaction raised the history floor to the first live
    // page's first leaf (round 3's, then past the half page moved), and consistency proofs from
    // checkpoints below it are the floor page's links (verifyStore checks them below).
    expect(r1.historyFloor).toEqual({ generation: 1, from: 0, to: 3 * N, logPagesDeleted: 3 });
    expect(r2.historyFloor?.from).toBe(3 * N);
    expect(r2.historyFloor!.to).toBeGreaterThan(3 * N);
    const now = store.checkpoints();
    expect(now.slice(0, checkpoints.length)).toEqual(checkpoints);
    for (let i = 0; i < now.length - 1; i++) {
      if (now[i].size < r2.historyFloor!.to) {
        await expect(store.consistencyProof(i, now.length - 1)).rejects.toMatchObject({ code: 'HISTORY_PRUNED' });
        continue;
      }
      const proof = await store.consistencyProof(i, now.length - 1);
      expect(merkle.verifyConsistency(now[i].size, now.at(-1)!.size, now[i].root, now.at(-1)!.root, proof)).toBe(true);
    }
    expect(verifySealed(exported, signer.publicKey).valid).toBe(true);
    expect(verifySealed(await docs.exportSealed(id(150)), signer.publicKey).valid).toBe(true);
    expect(verifySealed(await docs.exportSealed(id(900)), signer.publicKey).valid).toBe(true);
    await store.close();

    const again = await open();
    expect(again.store.recovery.clean).toBe(true);
    expect(again.docs.size).toBe(N);
    for (let k = 0; k < N; k += 29)
      expect(await again.docs.get(id(k))).toEqual(
        k < 200 ? { text: `fresh${k}`, round: 4 } : { text: `word${k % 17} round3`, round: 3 },
      );
    // A snapshot written after the reopen still knows the pages compaction deleted before it.
    await again.docs.put('after', { text: 'after', round: 9 });
    await again.store.checkpoint();
    await again.store.close();
    const third = await open();
    expect(third.docs.size).toBe(N + 1);
    await third.docs.delete('after');
    await third.store.checkpoint();
    await third.store.close();
    const pages = await openMemoryPageStore({ medium, readOnly: true });
    const report = await verifyStore(pages, { unlock: r.secretKey, signerPublicKey: signer.publicKey });
    await pages.close();
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.counts.collections).toEqual({ docs: N });
  });

  it('with keepHistory, keeps every leaf: consistency proofs from every checkpoint, no floor', async () => {
    const medium = new MemoryMedium();
    const open = docsOpener(medium, { recipient: r, signer }, schema, { keepHistory: true });
    const { store, docs } = await open(true);
    for (let round = 0; round < 3; round++) {
      await store.batch((tx) => {
        for (let k = 0; k < 300; k++) tx.put(docs, id(k), { text: `w${k} r${round}`, round });
      });
      await store.checkpoint();
    }
    const result = await store.compact();
    expect(result.pagesRewritten).toBe(2);
    expect(result.historyFloor).toBeUndefined();
    await store.checkpoint();
    const list = store.checkpoints();
    for (let i = 0; i < list.length - 1; i++) {
      const proof = await store.consistencyProof(i, list.length - 1);
      expect(merkle.verifyConsistency(list[i].size, list.at(-1)!.size, list[i].root, list.at(-1)!.root, proof)).toBe(
        true,
      );
    }
    await store.close();
    const pages = await openMemoryPageStore({ medium, readOnly: true });
    const report = await verifyStore(pages, { unlock: r.secretKey, signerPublicKey: signer.publicKey });
    await pages.close();
    expect(report.problems).toEqual([]);
    expect(report.counts.leaves).toEqual({ 1: 900 });
  });

  it('reopened right after a compaction, the next snapshot still leaves the deleted pages out', async () => {
    const { open, store } = await fixture();
    expect((await store.compact()).pagesRewritten).toBe(12);
    await store.close(); // the manifest lists the deleted pages as dropped since the last snapshot
    const again = await open();
    await again.docs.put('x', { text: 'x', round: 0 });
    await again.store.checkpoint(); // a run: it must carry the drops
    await again.store.close();
    const third = await open();
    expect(third.docs.size).toBe(N + 1);
    expect(await third.docs.get(id(3))).toEqual({ text: 'word3 round3', round: 3 });
    await third.store.close();
  });

  it('keeps a page that holds a delete, so no record comes back from an older page', async () => {
    const { medium, open, store, docs } = await fixture();
    await store.batch((tx) => {
      tx.delete(docs, id(1));
      for (let k = 2; k < 100; k++) tx.put(docs, id(k), { text: 'x', round: 5 });
    });
    await store.batch((tx) => {
      for (let k = 2; k < 100; k++) tx.put(docs, id(k), { text: 'y', round: 6 });
    });
    const r1 = await store.compact({ minDeadFraction: 0.5 });
    expect(r1.pagesKept).toBe(1);
    expect(await docs.get(id(1))).toBeUndefined();
    await store.close();
    const pages = await openMemoryPageStore({ medium, readOnly: true });
    const report = await verifyStore(pages, { unlock: r.secretKey });
    await pages.close();
    expect(report.ok).toBe(true);
    expect(report.counts.collections).toEqual({ docs: N - 1 });
    const again = await open();
    expect(await again.docs.get(id(1))).toBeUndefined();
    await again.store.close();
  });

  it('loses nothing when a commit fails or tears in the middle of a compaction', async () => {
    for (const fault of ['io', 'tear'] as const) {
      const faults: Faults = {};
      const { open, store, docs } = await fixture(faults);
      let n = 0;
      const done = store.compact({
        onProgress: () => {
          if (++n === 3) {
            if (fault === 'io') faults.failNextCommit = 'io';
            else faults.tearNextCommit = true;
          }
        },
      });
      await expect(done).rejects.toMatchObject({ name: 'PqdbError' });
      await store.close().catch(() => undefined);
      const again = await open();
      expect(again.docs.size).toBe(N);
      for (let k = 0; k < N; k += 13)
        expect(await again.docs.get(id(k))).toEqual({ text: `word${k % 17} round3`, round: 3 });
      const r2 = await again.store.compact();
      expect(r2.pagesRewritten).toBeGreaterThan(0);
      for (let k = 0; k < N; k += 13) expect((await again.docs.get(id(k)))?.round).toBe(3);
      await again.store.close();
    }
  });
});

describe('automatic compaction', () => {
  it('runs once dead bytes pass the ratio and the floor, and the store reads the same', async () => {
    const medium = new MemoryMedium();
    const store = await openStore({
      storage: await openMemoryPageStore({ medium }),
      create: true,
      recipients: [r.publicKey],
      unlock: r.secretKey,
      autoCheckpoint: false,
      autoCompact: { deadRatio: 0.5, minDeadBytes: 64 * 1024 },
    });
    const docs = store.collection('docs', { schema });
    const pagesAfter: number[] = [];
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < N; i += 300)
        await store.batch((tx) => {
          for (let k = i; k < i + 300; k++) tx.put(docs, id(k), { text: `t${k} r${round}`, round });
        });
      await new Promise((resolve) => setTimeout(resolve, 50));
      pagesAfter.push(commitPages(medium).length);
    }
    // Without compaction there would be 24 commit pages; dead rounds are reclaimed as it goes.
    expect(Math.max(...pagesAfter.slice(2))).toBeLessThan(12);
    for (let k = 0; k < N; k += 31) expect(await docs.get(id(k))).toEqual({ text: `t${k} r5`, round: 5 });
    await store.close();
    await expect(
      openStore({
        storage: 'memory',
        create: true,
        recipients: [r.publicKey],
        unlock: r.secretKey,
        autoCompact: { deadRatio: 2 },
      }),
    ).rejects.toThrow(RangeError);
  });
});
