// A migration that meets records it cannot read finishes: they are counted as failed and left in
// their old generation, the phase reaches done (a reopen resumes nothing), the manifest names them
// by their place in the log and never by id, and retiring the old generation explains what keeps it.
import { describe, it, expect } from 'vitest';
import { openStore, generateRecipient, openMemoryPageStore } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import type { PageStore } from '../src/storage/page-store';
import { faulty, type Faults } from './support/faulty-page-store';

const r = generateRecipient('classical');
const schema = { n: 'integer', s: 'string' } as const;

describe('migration with unreadable records', () => {
  it('completes, accounts for the failure by position, and retirement says why it refuses', async () => {
    const medium = new MemoryMedium();
    const faults: Faults = {};
    const handles: PageStore[] = [];
    const open = async (create = false) => {
      const storage = faulty(await openMemoryPageStore({ medium }), faults);
      handles.push(storage);
      const store = await openStore({ storage, create, recipients: [r.publicKey], unlock: r.secretKey });
      return { store, c: store.collection('c', { schema }) };
    };
    const closeAll = async (store: { close(): Promise<void> }) => {
      await store.close();
      await handles.pop()!.close();
    };
    const ids = Array.from({ length: 50 }, (_, i) => `private-id-${i}`);
    const first = await open(true);
    await first.store.batch((tx) => ids.forEach((id, i) => tx.put(first.c, id, { n: i, s: `value ${i}` })));
    await closeAll(first.store);
    // Once the store is open, reads of the commit page come back with one byte of its records altered
    // (above the storage checksum), as a failing medium might: opening would refuse such a page.
    const [pageId] = [...medium.pages.keys()];
    const { store, c } = await open();
    faults.alterPages = new Set([pageId]);
    const broken: string[] = [];
    for (const id of ids) await c.get(id).catch(() => broken.push(id));
    expect(broken.length).toBe(1);

    const done = await store.migrate({ to: 'cnsa2-gcm-hkdf384-commit' });
    expect(done).toMatchObject({ phase: 'done', copied: 49, failed: 1, total: 50 });
    expect(done.failures).toEqual([
      { generation: 1, leaf: ids.indexOf(broken[0]), code: 'AUTH_FAILED', collection: 'c', id: broken[0] },
    ]);
    const manifest = new TextDecoder().decode((await handles[0].readManifest())!);
    for (const id of ids) expect(manifest).not.toContain(id);
    // The record left behind is still sealed with the old suite: that suite cannot be retired.
    await expect(store.registry.setState('gcmsiv-hkdf384', 'retired')).rejects.toThrow(RangeError);
    await expect(store.retireGenerations()).rejects.toMatchObject({
      code: 'GENERATION_IN_USE',
      message: expect.stringContaining('1 it could not read'),
    });
    await closeAll(store);
    faults.alterPages = undefined; // the medium reads right again

    const again = await open();
    expect(again.store.migration()).toMatchObject({ phase: 'done', failed: 1, running: false });
    for (const id of ids) expect((await again.c.get(id))?.n).toBe(ids.indexOf(id));
    await again.c.delete(broken[0]); // the record left behind keeps generation 1 until it is migrated or deleted
    expect(await again.store.retireGenerations()).toEqual([1]);
    await closeAll(again.store);
  });
});
