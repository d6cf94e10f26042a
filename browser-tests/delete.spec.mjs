// deleteStore in Chromium through the bundled dist/browser.js: an IndexedDB database holding a pqdb
// store goes, but not while another tab holds the store (LOCKED, naming the tab or worker), and a
// database that is missing or not pqdb's is NOT_FOUND and left as it is.
import { test, expect } from '@playwright/test';

async function openPage(context, errors) {
  const page = await context.newPage();
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/');
  return page;
}

test('deleteStore: LOCKED while another tab holds the store, then the database goes', async ({ context }) => {
  const errors = [];
  const a = await openPage(context, errors);
  const b = await openPage(context, errors);
  const name = `pqdb-delete-${Date.now()}`;
  await a.evaluate(async (name) => {
    const pqdb = await import('pqdb');
    const r = pqdb.generateRecipient('classical');
    const store = await pqdb.openStore({
      location: name,
      create: true,
      recipients: [r.publicKey],
      unlock: r.secretKey,
    });
    await store.collection('c', { schema: { n: 'integer' } }).put('k', { n: 1 });
    globalThis.held = { store, r };
  }, name);

  const attempt = (name) =>
    b.evaluate(async (name) => {
      const pqdb = await import('pqdb');
      try {
        await pqdb.deleteStore(name);
        return 'deleted';
      } catch (e) {
        return `${e.code}: ${e.message}`;
      }
    }, name);
  const databases = () => b.evaluate(async () => (await indexedDB.databases()).map((d) => d.name));

  expect(await attempt(name)).toBe(
    `LOCKED: indexeddb page store "${name}" is held by another writer: another tab or worker of this origin (or another store in this page) has it open`,
  );
  expect(await databases()).toContain(name);
  // The holder still works after the refusal.
  expect(await a.evaluate(() => globalThis.held.store.collection('c', { schema: { n: 'integer' } }).get('k'))).toEqual({
    n: 1,
  });
  await a.evaluate(() => globalThis.held.store.close());

  expect(await attempt(name)).toBe('deleted');
  expect(await databases()).not.toContain(name);
  expect(await attempt(name)).toBe(
    `NOT_FOUND: no pqdb store in IndexedDB database "${name}": no such database; nothing was deleted`,
  );
  const reopened = await a.evaluate(async (name) => {
    const pqdb = await import('pqdb');
    try {
      await pqdb.openStore({ location: name, unlock: globalThis.held.r.secretKey });
      return 'opened';
    } catch (e) {
      return e.code;
    }
  }, name);
  expect(reopened).toBe('NOT_FOUND');

  // A database of someone else's is refused and kept.
  const other = `not-pqdb-${Date.now()}`;
  await b.evaluate(
    (other) =>
      new Promise((resolve, reject) => {
        const req = indexedDB.open(other, 1);
        req.onupgradeneeded = () => req.result.createObjectStore('things');
        req.onsuccess = () => (req.result.close(), resolve(undefined));
        req.onerror = () => reject(req.error);
      }),
    other,
  );
  expect(await attempt(other)).toMatch(/^NOT_FOUND: .*object stores are not those of a pqdb page store/);
  expect(await databases()).toContain(other);
  expect(errors).toEqual([]);
});
