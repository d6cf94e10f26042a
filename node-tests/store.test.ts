// The store end to end on every page store (memory, node-fs, IndexedDB over fake-indexeddb, PostgreSQL): typed
// collections, sealed records, batches, reopen, wrong keys, locks, the registry, recipients.
import { describe, it, expect } from 'vitest';
import { generateRecipient, generateSigner, openStore, openMemoryPageStore, type Store } from '../src/node';
import { MemoryMedium } from '../src/storage/memory';
import { STORE_FIXTURES, perTest, postgresStoreFixture, type NodeStoreFixture } from './support/store-fixtures';
import { usePostgres } from './support/postgres';

const schema = { lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' } as const;
const entity = {
  lemma: 'entity',
  pos: 'n',
  gloss: 'that which is perceived or known or inferred to have its own distinct existence',
  offset: 1740,
};

async function values(store: Store, name = 'synsets') {
  const out: Record<string, unknown> = {};
  for await (const { id, value } of store.collection(name, { schema }).scan()) out[id] = value;
  return out;
}

const cluster = usePostgres();
/** The Node adapters, and a store in a throwaway PostgreSQL cluster. */
const FIXTURES: [string, () => Promise<NodeStoreFixture>][] = [
  ...STORE_FIXTURES,
  ['postgres', () => postgresStoreFixture(cluster())],
];

describe.each(FIXTURES)('store (%s)', (_name, factory) => {
  const fresh = perTest(factory);
  const recipient = generateRecipient();
  const signer = generateSigner();
  const make = async () =>
    (await fresh()).open({
      create: true,
      recipients: [recipient.publicKey],
      unlock: recipient.secretKey,
      signer: signer.secretKey,
    });

  it('put / get / delete / scan / batch with typed, sealed values', async () => {
    const store = await make();
    const words = store.collection('synsets', { schema });
    await words.put('n00001740', entity, { governance: { scope: 'public' } });
    expect(await words.get('n00001740')).toEqual(entity);
    expect(await words.get('n00001741')).toBeUndefined();
    await store.batch((tx) => {
      for (let i = 0; i < 20; i++) tx.put(words, `n0000${2000 + i}`, { ...entity, offset: 2000 + i });
      tx.delete(words, 'n00001740');
    });
    expect(words.size).toBe(20);
    const got = [];
    for await (const r of words.scan({ prefix: 'n000020', limit: 5 })) got.push(r.id);
    expect(got).toEqual(['n00002000', 'n00002001', 'n00002002', 'n00002003', 'n00002004']);
    expect(await words.delete('n00002000')).toBe(true);
    expect(await words.delete('n00002000')).toBe(false);
    await expect(words.put('x', { ...entity, offset: 'no' } as never)).rejects.toMatchObject({
      code: 'SCHEMA_MISMATCH',
    });
    expect(words.size).toBe(19);
    expect(() => store.collection('synsets', { schema: { lemma: 'string' } })).toThrow(RangeError);
    await store.close();
    await expect(words.get('n00002001')).rejects.toMatchObject({ code: 'NOT_OPEN' });
  });

  it('registry: a quarantined suite refuses writes and serves reads; retired refuses reads', async () => {
    const store = await make();
    const old = store.collection('legacy', { schema, suite: 'gcmsiv-hkdf256' });
    await old.put('a', entity);
    expect(store.registry.list().find((e) => e.suite.id === 1)?.state).toBe('active');
    await store.registry.setState('gcmsiv-hkdf256', 'quarantined');
    await expect(old.put('b', entity)).rejects.toMatchObject({ code: 'SUITE_QUARANTINED' });
    expect(await old.get('a')).toEqual(entity);
    await expect(store.registry.setState('gcmsiv-hkdf256', 'retired')).rejects.toThrow(RangeError); // still in use
    await store.registry.setState('cnsa2-gcm-hkdf384-commit', 'quarantined');
    const cnsa = store.collection('cnsa', { schema, suite: 'cnsa2-gcm-hkdf384-commit' });
    await expect(cnsa.put('c', entity)).rejects.toMatchObject({ code: 'SUITE_QUARANTINED' });
    await store.registry.setState('cnsa2-gcm-hkdf384-commit', 'active');
    await cnsa.put('c', entity);
    expect(await cnsa.get('c')).toEqual(entity);
    expect(store.registry.list().find((e) => e.suite.id === 3)?.state).toBe('active');
    await store.close();
  });

  it('reopens with every committed record; a wrong key is AUTH_FAILED; a second opener is LOCKED', async () => {
    const f = await fresh();
    const alice = generateRecipient();
    const bob = generateRecipient('classical');
    const store = await f.open({ create: true, recipients: [alice.publicKey], unlock: alice.secretKey });
    const words = store.collection('synsets', { schema });
    for (let i = 0; i < 30; i++) await words.put(`id${i}`, { ...entity, offset: i });
    await expect(f.open({ unlock: alice.secretKey })).rejects.toMatchObject({ code: 'LOCKED' });
    await store.addRecipient(bob.publicKey);
    await store.close();

    const again = await f.open({ unlock: bob.secretKey });
    expect(Object.keys(await values(again)).length).toBe(30);
    expect(await again.collection('synsets', { schema }).get('id7')).toEqual({ ...entity, offset: 7 });
    await again.removeRecipient(alice.publicKey);
    await again.close();
    await expect(f.open({ unlock: alice.secretKey })).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    await expect(f.open({ unlock: generateRecipient().secretKey })).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    await expect((await fresh()).open({ unlock: bob.secretKey })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('zero bytes per record: a 115-byte value costs the same stored whether the root is PQC or classical', async () => {
    const sizes = [];
    for (const type of ['hybrid', 'classical'] as const) {
      const r = generateRecipient(type);
      const f = await fresh();
      const store = await f.open({ create: true, recipients: [r.publicKey], unlock: r.secretKey });
      const c = store.collection('blobs', { schema: { data: 'bytes' } });
      await store.batch((tx) => {
        for (let i = 0; i < 100; i++) tx.put(c, `r${i}`, { data: new Uint8Array(110).fill(i) });
      });
      await store.close();
      const pages = await f.pages();
      sizes.push((await pages.stats()).pageBytes);
      await pages.close();
    }
    expect(sizes[0]).toBe(sizes[1]);
  });
});

describe('creating a store', () => {
  it('refuses an unlock key that is none of the recipients: the creator could never open it again', async () => {
    const a = generateRecipient('classical');
    const b = generateRecipient('classical');
    const medium = new MemoryMedium();
    await expect(
      openStore({
        storage: await openMemoryPageStore({ medium }),
        create: true,
        recipients: [a.publicKey],
        unlock: b.secretKey,
      }),
    ).rejects.toMatchObject({ name: 'PqdbError' });
    expect(medium.manifest).toBeUndefined(); // nothing was written
  });
});
