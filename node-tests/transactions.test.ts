// Transactions that read (store.transaction) and compare-and-set (ifVersion): a read-modify-write
// that races loses updates (shown first: the race is real), the same under a transaction or with
// ifVersion and retries on CONFLICT loses none; a transaction's writes commit together or not at
// all, its reads see what it staged, and nothing else lands while it runs.
import { describe, it, expect } from 'vitest';
import { generateRecipient, openMemoryPageStore, openStore, PqdbError, type Store } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';

const r = generateRecipient('classical');
const schema = { n: 'integer' } as const;

async function counterStore(): Promise<Store> {
  const pages = await openMemoryPageStore({ medium: new MemoryMedium() });
  return openStore({
    storage: pages,
    create: true,
    recipients: [r.publicKey],
    unlock: r.secretKey,
    autoCheckpoint: false,
  });
}

const N = 40;

describe('transactions that read', () => {
  it('a racing read-modify-write loses updates; a transaction loses none', async () => {
    const store = await counterStore();
    const c = store.collection('counters', { schema });
    await c.put('naive', { n: 0 });
    await Promise.all(
      Array.from({ length: N }, async () => {
        const v = await c.get('naive');
        await c.put('naive', { n: v!.n + 1 });
      }),
    );
    expect((await c.get('naive'))!.n).toBeLessThan(N); // the race the issue names

    await Promise.all(
      Array.from({ length: N }, () =>
        store.transaction(async (tx) => {
          const v = await tx.get(c, 'safe');
          tx.put(c, 'safe', { n: (v?.n ?? 0) + 1 });
        }),
      ),
    );
    expect(await c.get('safe')).toEqual({ n: N });
    await store.close();
  });

  it('compare-and-set with ifVersion and a retry on CONFLICT loses none', async () => {
    const store = await counterStore();
    const c = store.collection('counters', { schema });
    let conflicts = 0;
    const increment = async () => {
      for (;;) {
        const version = c.version('cas') ?? 0;
        const v = await c.get('cas');
        try {
          await c.put('cas', { n: (v?.n ?? 0) + 1 }, { ifVersion: version });
          return;
        } catch (e) {
          if (!(e instanceof PqdbError) || e.code !== 'CONFLICT') throw e;
          conflicts++;
        }
      }
    };
    await Promise.all(Array.from({ length: N }, increment));
    expect(await c.get('cas')).toEqual({ n: N });
    expect(conflicts).toBeGreaterThan(0);
    // Versions grow with every write; 0 means absent, for a put and for a delete.
    const v1 = c.version('cas')!;
    await c.put('cas', { n: 0 }, { ifVersion: v1 });
    expect(c.version('cas')).toBeGreaterThan(v1);
    await expect(c.put('new', { n: 1 }, { ifVersion: 5 })).rejects.toMatchObject({ code: 'CONFLICT' });
    await c.put('new', { n: 1 }, { ifVersion: 0 });
    await expect(c.put('new', { n: 2 }, { ifVersion: 0 })).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(c.delete('new', { ifVersion: v1 })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(await c.delete('new', { ifVersion: c.version('new') })).toBe(true);
    expect(c.has('new')).toBe(false);
    await expect(c.put('x', { n: 1 }, { ifVersion: -1 })).rejects.toThrow(TypeError);
    await store.close();
  });

  it('commits together or not at all, sees its own writes, and holds other writes until it returns', async () => {
    const store = await counterStore();
    const c = store.collection('counters', { schema });
    await c.put('a', { n: 1 });
    const commit = store.info().commit;
    const got = await store.transaction(async (tx) => {
      tx.put(c, 'b', { n: 2 });
      tx.delete(c, 'a');
      expect(await tx.get(c, 'b')).toEqual({ n: 2 });
      expect(await tx.get(c, 'a')).toBeUndefined();
      expect(tx.has(c, 'a')).toBe(false);
      expect(tx.version(c, 'a')).toBeGreaterThan(0); // the stored version until the commit
      return 'done';
    });
    expect(got).toBe('done');
    expect(store.info().commit).toBe(commit + 1); // one page
    expect(c.has('a')).toBe(false);
    expect(await c.get('b')).toEqual({ n: 2 });

    // A throw writes nothing.
    await expect(
      store.transaction(async (tx) => {
        tx.put(c, 'c', { n: 3 });
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    expect(c.has('c')).toBe(false);
    // A bad value fails the commit: nothing written.
    await expect(store.transaction((tx) => tx.put(c, 'd', { n: 'x' } as never))).rejects.toMatchObject({
      code: 'SCHEMA_MISMATCH',
    });
    expect(c.has('d')).toBe(false);

    // A put started while a transaction runs lands after it.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const order: string[] = [];
    const tx = store.transaction(async (t) => {
      await held;
      t.put(c, 'e', { n: 1 });
      order.push('transaction');
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    const put = c.put('e', { n: 2 }).then(() => order.push('put'));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(order).toEqual([]);
    release();
    await Promise.all([tx, put]);
    expect(order).toEqual(['transaction', 'put']);
    expect(await c.get('e')).toEqual({ n: 2 });
    const other = await counterStore();
    const foreign = other.collection('counters', { schema });
    await expect(store.transaction((t) => t.put(foreign, 'x', { n: 1 }))).rejects.toThrow(TypeError);
    await other.close();
    await store.close();
  });
});
