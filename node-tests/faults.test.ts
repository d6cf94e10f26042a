// Fault injection: failed fsyncs and full disks reject the commit and change nothing; torn commits
// are dropped on reopen; altered bytes are detected (CORRUPTION below the checksum, AUTH_FAILED
// above it), never returned as data. On every page store (memory, node-fs, IndexedDB over
// fake-indexeddb, PostgreSQL), each wrapped in the fault-injecting page store.
import { describe, it, expect } from 'vitest';
import { generateRecipient } from '../src/index';
import { faulty, type Faults } from './support/faulty-page-store';
import { STORE_FIXTURES, perTest, postgresStoreFixture, type NodeStoreFixture } from './support/store-fixtures';
import { usePostgres } from './support/postgres';

const schema = { n: 'integer', s: 'string' } as const;
const r = generateRecipient('classical');

function open(f: NodeStoreFixture, faults: Faults, create = false) {
  return f.open({ create, recipients: [r.publicKey], unlock: r.secretKey }, (pages) => faulty(pages, faults));
}

const cluster = usePostgres();
/** The Node adapters, and a store in a throwaway PostgreSQL cluster. */
const FIXTURES: [string, () => Promise<NodeStoreFixture>][] = [
  ...STORE_FIXTURES,
  ['postgres', () => postgresStoreFixture(cluster())],
];

describe.each(FIXTURES)('faults (%s)', (_name, factory) => {
  const fresh = perTest(factory);

  it('a failed fsync rejects with IO_ERROR, a full disk with QUOTA_EXCEEDED; nothing changes; later commits work', async () => {
    const f = await fresh();
    const faults: Faults = {};
    const store = await open(f, faults, true);
    const c = store.collection('c', { schema });
    await c.put('a', { n: 1, s: 'one' });
    faults.failNextCommit = 'io';
    await expect(c.put('b', { n: 2, s: 'two' })).rejects.toMatchObject({ code: 'IO_ERROR' });
    faults.failNextCommit = 'quota';
    await expect(store.batch((tx) => tx.put(c, 'b', { n: 2, s: 'two' }))).rejects.toMatchObject({
      code: 'QUOTA_EXCEEDED',
    });
    expect(await c.get('b')).toBeUndefined();
    await c.put('b', { n: 2, s: 'two' });
    await c.put('c', { n: 3, s: 'three' });
    await store.close();
    const again = await open(f, {});
    const c2 = again.collection('c', { schema });
    expect([await c2.get('a'), await c2.get('b'), await c2.get('c')].map((v) => v?.n)).toEqual([1, 2, 3]);
    await again.close();
  });

  it('a torn commit (pages without their manifest) is dropped and reported on reopen', async () => {
    const f = await fresh();
    const faults: Faults = {};
    const store = await open(f, faults, true);
    const c = store.collection('c', { schema });
    await c.put('kept', { n: 1, s: 'acknowledged' });
    faults.tearNextCommit = true;
    await expect(c.put('lost', { n: 2, s: 'never acknowledged' })).rejects.toMatchObject({ code: 'IO_ERROR' });
    await store.close();
    const again = await open(f, {});
    expect(again.recovery.clean).toBe(false);
    expect(again.recovery.actions.join()).toContain('unacknowledged commit');
    const c2 = again.collection('c', { schema });
    expect(await c2.get('kept')).toEqual({ n: 1, s: 'acknowledged' });
    expect(await c2.get('lost')).toBeUndefined();
    await c2.put('next', { n: 3, s: 'after recovery' });
    expect(await c2.get('next')).toEqual({ n: 3, s: 'after recovery' });
    await again.close();
  });

  it('a flipped bit on the medium is CORRUPTION; bytes altered above the checksum fail the log check on open and are AUTH_FAILED when read', async () => {
    const f = await fresh();
    const store = await open(f, {}, true);
    const c = store.collection('c', { schema });
    await c.put('a', { n: 1, s: 'x'.repeat(100) });
    await c.put('b', { n: 2, s: 'y'.repeat(100) });
    await store.close();
    await f.flipStoredByte(2, 60);
    const s1 = await open(f, {}).catch((e) => e);
    expect(s1).toMatchObject({ code: 'CORRUPTION' });
    await f.flipStoredByte(2, 60); // repair, then alter above the checksum instead
    // Opening replays the page: its record no longer gives the log the manifest names.
    await expect(open(f, { alterPages: new Set([2]) })).rejects.toMatchObject({ code: 'CORRUPTION' });
    // Altered only once the store is open (the page is read again for the record): AUTH_FAILED.
    const later: Faults = {};
    const altered = await open(f, later);
    later.alterPages = new Set([2]);
    const ca = altered.collection('c', { schema });
    expect(await ca.get('a')).toEqual({ n: 1, s: 'x'.repeat(100) });
    await expect(ca.get('b')).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    await altered.close();
    await expect(open(f, { alterManifestAt: 20 })).rejects.toMatchObject({
      code: expect.stringMatching(/AUTH_FAILED|CORRUPTION/),
    });
    const fine = await open(f, {});
    expect(await fine.collection('c', { schema }).get('b')).toEqual({ n: 2, s: 'y'.repeat(100) });
    await fine.close();
  });
});
