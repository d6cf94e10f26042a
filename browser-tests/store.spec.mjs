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
