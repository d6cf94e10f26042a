// A closed store answers nothing: the calls a collection answers from the key directory alone
// (has, size, version, a scan's ids) throw NOT_OPEN after close(), as the ones that read records do.
import { describe, it, expect } from 'vitest';
import { generateRecipient } from '../src/index';
import { storeOpener } from './support/memory-docs';

describe('after close()', () => {
  it('has, size, version, scan and get throw NOT_OPEN', async () => {
    const store = await storeOpener(generateRecipient('classical'))();
    const c = store.collection('c', { schema: { n: 'integer' } });
    await c.put('a', { n: 1 });
    expect(c.has('a')).toBe(true);
    await store.close();
    const closed = expect.objectContaining({ code: 'NOT_OPEN' });
    expect(() => c.has('a')).toThrow(closed);
    expect(() => c.size).toThrow(closed);
    expect(() => c.version('a')).toThrow(closed);
    await expect(c.scan().next()).rejects.toMatchObject({ code: 'NOT_OPEN' });
    await expect(c.get('a')).rejects.toMatchObject({ code: 'NOT_OPEN' });
    await expect(c.put('b', { n: 2 })).rejects.toMatchObject({ code: 'NOT_OPEN' });
  });
});

describe('the IndexedDB page store under Node', () => {
  it("takes no Web Locks of Node's own for a browser's: a second writer here is told of this process", async () => {
    await import('fake-indexeddb/auto');
    const { openIndexedDbPageStore } = await import('../src/storage/indexeddb');
    // Node 22 and later have navigator.locks: stand one in on this Node, as Node 24's is.
    const g = globalThis as { navigator?: unknown };
    const had = Object.getOwnPropertyDescriptor(globalThis, 'navigator');
    const nodeLocks = {
      request: () => {
        throw new Error("Node's own Web Locks were taken for a browser's");
      },
    };
    Object.defineProperty(globalThis, 'navigator', { value: { locks: nodeLocks }, configurable: true });
    try {
      expect((g.navigator as { locks: unknown }).locks).toBe(nodeLocks);
      const first = await openIndexedDbPageStore('pqdb-node-locks');
      await expect(openIndexedDbPageStore('pqdb-node-locks')).rejects.toMatchObject({
        code: 'LOCKED',
        message: expect.stringMatching(/another store in this process/),
      });
      await first.close();
    } finally {
      if (had !== undefined) Object.defineProperty(globalThis, 'navigator', had);
      else delete g.navigator;
    }
  });
});
