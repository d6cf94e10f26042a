// The store in Chromium on real IndexedDB, through the bundled dist/browser.js: create, batch,
// reopen, wrong key, single writer.
import { test, expect } from '@playwright/test';

test('store on IndexedDB: create, write, reopen, refuse a wrong key and a second writer', async ({ page }) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/');
  const result = await page.evaluate(async () => {
    const pqdb = await import('pqdb');
    const name = `e2e-${Math.random().toString(36).slice(2)}`;
    const r = pqdb.generateRecipient();
    const schema = { lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' };
    const store = await pqdb.openStore({
      location: name,
      create: true,
      recipients: [r.publicKey],
      unlock: r.secretKey,
    });
    const words = store.collection('synsets', { schema });
    await store.batch((tx) => {
      for (let i = 0; i < 50; i++)
        tx.put(words, `n${1000 + i}`, { lemma: `w${i}`, pos: 'n', gloss: 'g'.repeat(i), offset: i });
    });
    await words.put(
      'n0001',
      { lemma: 'entity', pos: 'n', gloss: 'that which is', offset: 1740 },
      { governance: { scope: 'public' } },
    );
    let locked = '';
    try {
      await pqdb.openStore({ location: name, unlock: r.secretKey });
    } catch (e) {
      locked = e.code;
    }
    const storage = store.info().storage;
    await store.close();
    const again = await pqdb.openStore({ location: name, unlock: r.secretKey });
    const w2 = again.collection('synsets', { schema });
    const entity = await w2.get('n0001');
    const count = w2.size;
    await again.close();
    let wrongKey = '';
    try {
      await pqdb.openStore({ location: name, unlock: pqdb.generateRecipient().secretKey });
    } catch (e) {
      wrongKey = e.code;
    }
    return { storage, locked, entity, count, wrongKey };
  });
  expect(errors).toEqual([]);
  expect(result).toEqual({
    storage: 'indexeddb',
    locked: 'LOCKED',
    entity: { lemma: 'entity', pos: 'n', gloss: 'that which is', offset: 1740 },
    count: 51,
    wrongKey: 'AUTH_FAILED',
  });
});

test('store on IndexedDB: a checkpoint persists the key directory in partitions, and a reopen reads them all', async ({
  page,
}) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/');
  const result = await page.evaluate(async () => {
    const pqdb = await import('pqdb');
    const name = `e2e-parts-${Math.random().toString(36).slice(2)}`;
    const r = pqdb.generateRecipient();
    const signer = pqdb.generateSigner();
    const keys = {
      recipients: [r.publicKey],
      unlock: r.secretKey,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
    };
    const schema = { lemma: 'string', offset: 'integer' };
    const store = await pqdb.openStore({ location: name, create: true, autoCheckpoint: false, ...keys });
    const words = store.collection('synsets', { schema });
    for (let b = 0; b < 10; b++)
      await store.batch((tx) => {
        for (let i = 0; i < 1000; i++) tx.put(words, `n${b * 1000 + i}`, { lemma: `w${b}-${i}`, offset: i });
      });
    await store.checkpoint(); // 10,000 rows: a base in 4 partitions
    await words.put('late', { lemma: 'after the checkpoint', offset: -1 });
    await words.delete('n7');
    await store.close();
    const again = await pqdb.openStore({ location: name, autoCheckpoint: false, ...keys });
    const w2 = again.collection('synsets', { schema });
    const sample = [];
    for (const id of ['n0', 'n7', 'n4321', 'n9999', 'late']) sample.push((await w2.get(id))?.lemma ?? null);
    const count = w2.size;
    await again.close();
    await pqdb.deleteStore(name);
    return { sample, count };
  });
  expect(errors).toEqual([]);
  expect(result).toEqual({
    sample: ['w0-0', null, 'w4-321', 'w9-999', 'after the checkpoint'],
    count: 10_000,
  });
});
