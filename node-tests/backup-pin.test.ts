// Backups pin the page set instead of holding the commit queue (src/engine/pins.ts, copies.ts): the
// store's pages are read through a gate that blocks reads while it is shut, so each case holds a
// backup in the middle of its copy and checks what the store does meanwhile, and after a crash
// there. No timing: a step either completes while the gate is shut or it does not.
import { describe, it, expect } from 'vitest';
import {
  openStore,
  generateRecipient,
  generateSigner,
  openMemoryPageStore,
  verifyStore,
  type Store,
} from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import type { PageStore } from '../src/storage/page-store';
import { engineOf as partsOf } from '../src/engine/store';

const r = generateRecipient('classical');
const s = generateSigner();
const options = {
  recipients: [r.publicKey],
  unlock: r.secretKey,
  signer: s.secretKey,
  signerPublicKey: s.publicKey,
  autoCheckpoint: false as const,
};
const schema = { v: 'string' } as const;

/** A page store whose reads wait while the gate is shut; once killed, every call fails (a dead process). */
function gated(base: PageStore) {
  let open: (() => void) | undefined;
  let shut: Promise<void> | undefined;
  let dead = false;
  let blocked: () => void = () => {};
  const reading = { started: new Promise<void>((res) => (blocked = res)) };
  const wait = async () => {
    if (shut !== undefined) {
      blocked();
      await shut;
    }
    if (dead) throw new Error('the process is gone');
  };
  const pages = new Proxy(base, {
    get(target, key) {
      const v = Reflect.get(target, key, target) as unknown;
      if (typeof v !== 'function') return v;
      if (key === 'readPage' || key === 'readPages')
        return async (...a: unknown[]) => (await wait(), (v as (...x: unknown[]) => unknown).apply(target, a));
      return (...a: unknown[]) => {
        if (dead) return Promise.reject(new Error('the process is gone'));
        return (v as (...x: unknown[]) => unknown).apply(target, a);
      };
    },
  });
  return {
    pages,
    reading,
    shut() {
      shut = new Promise<void>((res) => (open = res));
      reading.started = new Promise<void>((res) => (blocked = res));
    },
    open() {
      shut = undefined;
      open?.();
    },
    kill() {
      dead = true;
      this.open();
    },
  };
}

/** 40 records in 4 pages, then 3 of every 4 overwritten: the first pages are mostly dead. */
async function seeded(store: Store) {
  const docs = store.collection('d', { schema });
  for (let b = 0; b < 4; b++)
    await store.batch((tx) => {
      for (let i = b * 10; i < b * 10 + 10; i++) tx.put(docs, `k${i}`, { v: `v${i}` });
    });
  await store.batch((tx) => {
    for (let i = 0; i < 40; i++) if (i % 4 !== 0) tx.put(docs, `k${i}`, { v: `w${i}` });
  });
  return docs;
}

const expected = (i: number) => (i % 4 !== 0 ? `w${i}` : `v${i}`);

describe('a backup pins the page set instead of holding the commit queue', () => {
  it('puts and a compaction complete while the backup copies; deleted pages stay until it is done', async () => {
    const medium = new MemoryMedium();
    const gate = gated(await openMemoryPageStore({ medium }));
    const store = await openStore({ ...options, create: true, storage: gate.pages });
    const docs = await seeded(store);
    const dest = await openMemoryPageStore();
    gate.shut();
    const backup = store.backup(dest);
    await gate.reading.started; // the backup reads its pages: the gate holds it there
    await docs.put('late', { v: 'after the backup began' });
    const compacted = await store.compact({ minDeadFraction: 0.5 });
    expect(compacted.pagesRewritten).toBeGreaterThan(0);
    const held = partsOf(store).pipeline.manifest.heldPages ?? [];
    // The victims, and the log pages below the history floor the compaction raised at its end.
    expect(held.length).toBe(compacted.pagesRewritten + (compacted.historyFloor?.logPagesDeleted ?? 0));
    for (const id of held) expect(medium.pages.has(id)).toBe(true); // deleted, not yet gone
    for (let i = 0; i < 40; i++) expect((await docs.get(`k${i}`))?.v).toBe(expected(i));
    const commitBefore = store.info().commit;
    gate.open();
    const done = await backup;
    expect(done.copy.records).toBe(40);
    // One commit inventories the copy and deletes what was held back for it.
    expect(store.info().commit).toBe(commitBefore + 1);
    // Released: the held pages are gone, the list with them.
    expect(partsOf(store).pipeline.manifest.heldPages).toBeUndefined();
    for (const id of held) expect(medium.pages.has(id)).toBe(false);
    const report = await verifyStore(dest, { unlock: r.secretKey, signerPublicKey: s.publicKey });
    expect(report.problems).toEqual([]);
    expect(report.ok && report.counts.uncheckpointed === 0).toBe(true);
    // The copy is the store as the backup began: the late put is not in it.
    const copy = await openStore({ storage: dest, unlock: r.secretKey, readOnly: true });
    const copied = copy.collection('d', { schema });
    for (let i = 0; i < 40; i++) expect((await copied.get(`k${i}`))?.v).toBe(expected(i));
    expect(await copied.get('late')).toBeUndefined();
    await copy.close();
    await store.close();
  });

  it('a crash while deletions are held back: open skips the held pages, verifies, and deletes them', async () => {
    const medium = new MemoryMedium();
    const gate = gated(await openMemoryPageStore({ medium }));
    const store = await openStore({ ...options, create: true, storage: gate.pages });
    const docs = await seeded(store);
    gate.shut();
    const backup = store.backup(await openMemoryPageStore());
    backup.catch(() => undefined);
    await gate.reading.started;
    // Pages written after the backup began die too (the backup never copies them).
    const before = new Set(medium.pages.keys());
    await store.batch((tx) => {
      for (let i = 0; i < 10; i++) tx.put(docs, `n${i}`, { v: `n${i}` });
    });
    await store.batch((tx) => {
      for (let i = 0; i < 9; i++) tx.put(docs, `n${i}`, { v: `m${i}` });
    });
    const compacted = await store.compact({ minDeadFraction: 0.5 });
    const held = partsOf(store).pipeline.manifest.heldPages ?? [];
    // The victims, and the log pages below the history floor the compaction raised at its end.
    expect(held.length).toBe(compacted.pagesRewritten + (compacted.historyFloor?.logPagesDeleted ?? 0));
    expect(held.some((id) => !before.has(id))).toBe(true);
    await docs.put('k1', { v: 'x1' });
    // The process dies: nothing of it reaches the medium again, and its lock goes with it.
    gate.kill();
    await expect(backup).rejects.toThrow();
    medium.locked = false;
    for (const id of held) expect(medium.pages.has(id)).toBe(true);

    const pages = await openMemoryPageStore({ medium });
    const report = await verifyStore(pages, { unlock: r.secretKey, signerPublicKey: s.publicKey });
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    const ro = await openStore({ ...options, storage: pages, readOnly: true });
    expect((await ro.collection('d', { schema }).get('k1'))?.v).toBe('x1');
    await ro.close();
    for (const id of held) expect(medium.pages.has(id)).toBe(true); // a read-only open leaves them

    const again = await openStore({ ...options, storage: await openMemoryPageStore({ medium }) });
    for (const id of held) expect(medium.pages.has(id)).toBe(false); // deleted by the open
    const back = again.collection('d', { schema });
    for (let i = 0; i < 40; i++) expect((await back.get(`k${i}`))?.v).toBe(i === 1 ? 'x1' : expected(i));
    for (let i = 0; i < 10; i++) expect((await back.get(`n${i}`))?.v).toBe(i < 9 ? `m${i}` : `n${i}`);
    await back.put('next', { v: 'n' }); // the next commit drops the list
    expect(partsOf(again).pipeline.manifest.heldPages).toBeUndefined();
    await again.close();
    const last = await openStore({ ...options, storage: await openMemoryPageStore({ medium }) });
    expect((await last.collection('d', { schema }).get('next'))?.v).toBe('n');
    await last.close();
  });
});
