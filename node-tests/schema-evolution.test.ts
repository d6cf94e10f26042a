// Schema evolution (src/engine/codec.ts, collection.ts, writes.ts): a collection reopened with a
// schema that adds optional fields or widens types moves to the next version with its next write, in
// that commit, with no record rewritten; every record is read through the version it was written
// under, across reopens, compaction, migration, backup and restore; any other change is refused
// with the reason; code that opens the collection with an older version gets FORMAT_VERSION; a
// collection opens from its stored schema alone, and `collections()` lists them.
import { describe, it, expect } from 'vitest';
import { generateRecipient, openMemoryPageStore, PqdbError, verifyStore } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { storeOpener } from './support/memory-docs';
import { compileSchema, decodeValue, encodeValue } from '../src/engine/codec';
import { declareCollection } from '../src/engine/writes';
import type { Draft } from '../src/engine/commit';

const r = generateRecipient('classical');
const V1 = { text: 'string', n: 'integer' } as const;
const V2 = { text: 'string', n: 'integer', tags: 'string?' } as const;
const V3 = { text: 'string?', n: 'number', tags: 'string?', pinned: 'boolean?' } as const;

describe('schema evolution', () => {
  it('adds optional fields and widens types in one commit each, with no record rewritten', async () => {
    const open = storeOpener(r);
    let store = await open();
    const v1 = store.collection('notes', { schema: V1, index: { text: ['text'] } });
    await v1.put('a', { text: 'first note', n: 1 });
    await v1.put('b', { text: 'second note', n: 2 });
    await store.close();

    store = await open();
    const before = store.info().commit;
    const v2 = store.collection('notes', { schema: V2, index: { text: ['text'] } });
    // Nothing is written until the collection's next write: reads go through the stored versions.
    expect(store.info().commit).toBe(before);
    expect(await v2.get('a')).toEqual({ text: 'first note', n: 1 });
    await v2.put('c', { text: 'third note', n: 3, tags: 'x' });
    expect(store.info().commit).toBe(before + 1); // the upgrade rode on the write's commit
    expect(store.collections()).toEqual([
      { name: 'notes', schema: V2, version: 2, records: 3, suite: 'gcmsiv-hkdf384', indexed: ['text'] },
    ]);
    await store.close();

    store = await open();
    const v3 = store.collection('notes', { schema: V3 });
    expect(await v3.get('a')).toEqual({ text: 'first note', n: 1 });
    expect(await v3.get('c')).toEqual({ text: 'third note', n: 3, tags: 'x' });
    await v3.put('d', { n: 1.5, pinned: true });
    expect(store.collections()[0]).toMatchObject({ version: 3, records: 4 });
    // Every version's records survive compaction and a migration (each re-sealed as it was written).
    await v3.put('a', { text: 'first note, again', n: 10 });
    await store.compact({ minDeadFraction: 0 });
    await store.migrate({ to: 'cnsa2-gcm-hkdf384-commit' });
    await store.close();

    store = await open();
    const stored = store.collection('notes'); // the stored schema, version 3, and its index
    expect(await stored.get('a')).toEqual({ text: 'first note, again', n: 10 });
    expect(await stored.get('b')).toEqual({ text: 'second note', n: 2 });
    expect(await stored.get('c')).toEqual({ text: 'third note', n: 3, tags: 'x' });
    expect(await stored.get('d')).toEqual({ n: 1.5, pinned: true });
    expect((await stored.search('note')).map((h) => h.id).sort()).toEqual(['a', 'b', 'c']);
    expect(stored.indexed).toEqual(['text']);
    await store.close();
  });

  it('refuses another change with its reason, and an older version with FORMAT_VERSION', async () => {
    const open = storeOpener(r);
    const store = await open();
    const v1 = store.collection('notes', { schema: V1 });
    await v1.put('a', { text: 'x', n: 1 });
    await store.close();
    const again = await open();
    const refused = (schema: object) => () => again.collection('notes', { schema: schema as typeof V1 });
    expect(refused({ text: 'string' })).toThrow(/field "n" is gone/);
    expect(refused({ text: 'integer', n: 'integer' })).toThrow(/field "text" changed from string to integer/);
    expect(refused({ text: 'string', n: 'integer', more: 'string' })).toThrow(/new field "more" is required/);
    // Widened and made optional: the next version.
    await again.collection('notes', { schema: { text: 'string', n: 'number?' } }).put('b', { text: 'y' });
    await again.close();
    const third = await open();
    // Code that still opens it with version 1 is told its schema is older than the store's.
    expect(() => third.collection('notes', { schema: V1 })).toThrow(
      expect.objectContaining({
        code: 'FORMAT_VERSION',
        message: expect.stringMatching(/version 2, newer than the version 1/),
      }),
    );
    expect(() => third.collection('none')).toThrow(expect.objectContaining({ code: 'NOT_FOUND' }));
    expect(await third.collection('notes').get('a')).toEqual({ text: 'x', n: 1 });
    await third.close();
  });

  it('opened with a newer schema but never written, the store keeps its version', async () => {
    const open = storeOpener(r);
    const store = await open();
    await store.collection('notes', { schema: V1 }).put('a', { text: 'x', n: 1 });
    await store.close();
    const peek = await open();
    expect(await peek.collection('notes', { schema: V2 }).get('a')).toEqual({ text: 'x', n: 1 });
    await peek.close();
    const old = await open();
    expect(old.collection('notes', { schema: V1 })).toBeDefined(); // still version 1
    expect(old.collections()[0].version).toBe(1);
    await old.close();
  });

  it('a value of a later version carries it; a reader that knows fewer versions gets FORMAT_VERSION', () => {
    const v1 = compileSchema(V1);
    const v2 = compileSchema(V2, [V1]);
    const old = encodeValue(v1, { text: 'a', n: 1 });
    const now = encodeValue(v2, { text: 'a', n: 1, tags: 't' });
    expect(old[0]).toBe(1); // unchanged for version 1: stores that never evolve are byte for byte as before
    expect([...now.subarray(0, 2)]).toEqual([2, 2]);
    expect(decodeValue(v2, old)).toEqual({ text: 'a', n: 1 });
    expect(decodeValue(v2, now)).toEqual({ text: 'a', n: 1, tags: 't' });
    expect(() => decodeValue(v1, now)).toThrow(expect.objectContaining({ code: 'FORMAT_VERSION' }));
    const bad = now.slice();
    bad[1] = 1; // version 1 under the versioned form is not canonical
    expect(() => decodeValue(v2, bad)).toThrow(PqdbError);
  });

  it('a handle opened before another writer recorded a different next version cannot write (CONFLICT)', () => {
    const manifest = {
      collections: { notes: { schema: { ...V2 }, suite: 2, versions: [{ ...V1 }] } },
    } as unknown as Draft['manifest'];
    const draft = { manifest, currentRegistry: undefined, registry: undefined } as unknown as Draft;
    const mine = compileSchema({ text: 'string', n: 'integer', other: 'string?' }, [V1]);
    expect(() => declareCollection(draft, { name: 'notes', schema: mine, indexed: [] })).toThrow(
      expect.objectContaining({ code: 'CONFLICT' }),
    );
    // The one the store recorded writes on, and the next after it records version 3.
    declareCollection(draft, { name: 'notes', schema: compileSchema(V2, [V1]), indexed: [] });
    declareCollection(draft, { name: 'notes', schema: compileSchema(V3, [V1, V2]), indexed: [] });
    expect(manifest.collections.notes).toMatchObject({ schema: V3, versions: [V1, V2] });
  });

  it('an upgrade function rewrites records in the background, resumes after a failure, and reads through it meanwhile', async () => {
    const medium = new MemoryMedium();
    const open = storeOpener(r, medium);
    const OLD = { title: 'string', n: 'integer' } as const;
    const NEW = { name: 'string', n: 'number', tags: 'string' } as const; // renamed, widened, a required field added
    let store = await open();
    const old = store.collection('notes', { schema: OLD });
    for (let i = 0; i < 1000; i += 250)
      await store.batch((tx) => {
        for (let k = i; k < i + 250; k++) tx.put(old, `n${k}`, { title: `t${k}`, n: k });
      });
    await store.close();

    // Without the function the change is refused, with its reason.
    store = await open();
    expect(() => store.collection('notes', { schema: NEW })).toThrow(/field "title" is gone/);
    let failAt = 600;
    const upgrade = (v: Record<string, unknown>, version: number) => {
      if (v.title === `t${failAt}`) throw new Error('interrupted');
      expect(version).toBe(1);
      return { name: String(v.title).toUpperCase(), n: Number(v.n) + 0.5, tags: 'migrated' };
    };
    let c = store.collection('notes', { schema: NEW, upgrade });
    // Before any write the store is still at version 1; reads already go through the function.
    expect(await c.get('n5')).toEqual({ name: 'T5', n: 5.5, tags: 'migrated' });
    await c.put('fresh', { name: 'new', n: 1, tags: 'x' }); // records version 2 and the upgrade mark
    const progress: number[] = [];
    await expect(c.upgradeRecords({ onProgress: (p) => progress.push(p.done) })).rejects.toThrow('interrupted');
    await store.close();

    // Reopened without the function: the collection says it is being upgraded.
    store = await open();
    expect(() => store.collection('notes', { schema: NEW })).toThrow(/being upgraded to schema version 2/);
    await expect(store.collection('notes').get('n900')).rejects.toMatchObject({ code: 'FORMAT_VERSION' });
    await store.close();
    store = await open();
    failAt = -1;
    c = store.collection('notes', { schema: NEW, upgrade });
    await c.put('n3', { name: 'written meanwhile', n: 3, tags: 'user' }); // not overwritten by the rewrite
    const done = await c.upgradeRecords();
    expect(done.version).toBe(2);
    expect(done.rewritten + done.current).toBe(1001);
    expect(done.current).toBeGreaterThan(2); // the first chunks of the failed run, the fresh and the user's record
    await store.close();

    // Done: opened without the function, every record reads at version 2.
    store = await open();
    const now = store.collection('notes', { schema: NEW });
    expect(await now.get('n900')).toEqual({ name: 'T900', n: 900.5, tags: 'migrated' });
    expect(await now.get('n3')).toEqual({ name: 'written meanwhile', n: 3, tags: 'user' });
    expect(store.collections()[0]).toMatchObject({ version: 2, records: 1001 });
    let count = 0;
    for await (const { value } of now.scan()) if (value.tags === 'migrated') count++;
    expect(count).toBe(999);
    await store.close();
  });

  it('verifyStore holds over a store whose collection evolved', async () => {
    const medium = new MemoryMedium();
    const open = storeOpener(r, medium);
    const store = await open();
    await store.collection('notes', { schema: V1 }).put('a', { text: 'x', n: 1 });
    await store.collection('notes', { schema: V1 }).put('b', { text: 'y', n: 2 });
    await store.close();
    const again = await open();
    await again.collection('notes', { schema: V2 }).put('c', { text: 'z', n: 3, tags: 't' });
    await again.close();
    const pages = await openMemoryPageStore({ medium, readOnly: true });
    const report = await verifyStore(pages, { unlock: r.secretKey });
    await pages.close();
    expect(report.problems).toEqual([]);
    expect(report.counts.collections).toEqual({ notes: 3 });
  });
});
