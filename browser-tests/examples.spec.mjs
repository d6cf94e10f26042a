// examples/browser-app in Chromium, served by browser-tests/server.mjs under the Content Security
// Policy the README gives: add notes, list and search them, reload and find them again; the
// recipient secret key is stored only wrapped under a non-extractable WebCrypto key; and without
// 'wasm-unsafe-eval' in the policy the store cannot open.
import { test, expect } from '@playwright/test';

const APP = '/examples/browser-app/';

async function add(page, title, body) {
  const before = await page.locator('#notes li').count();
  await page.fill('#title', title);
  await page.fill('#body', body);
  await page.click('#add button');
  await expect(page.locator('#notes li')).toHaveCount(before + 1);
}

async function search(page, query) {
  await page.fill('#query', query);
  await page.click('#find button');
  await expect(page.locator('#status')).toHaveText(/found$/);
  return (await page.locator('#results li').allTextContents()).sort();
}

test('notes app: add, list, search, and a reload keeps them', async ({ page }) => {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  // Every failed request but the favicon the browser asks for on its own, and every console error
  // but the 404 line for it.
  page.on('response', (r) => r.status() >= 400 && !r.url().endsWith('/favicon.ico') && errors.push(r.url()));
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
  });
  const response = await page.goto(APP);
  expect(response.headers()['content-security-policy']).toMatch(/script-src 'self' 'wasm-unsafe-eval' 'sha256-/);
  await expect(page.locator('#status')).toHaveText('ready: 0 notes');

  await add(page, 'groceries', 'milk and bread');
  await add(page, 'reading', 'a book about bread baking');
  await add(page, 'todo', 'call the plumber');
  await expect(page.locator('#status')).toHaveText('ready: 3 notes');
  expect(await page.locator('#notes li').allTextContents()).toEqual([
    'groceries: milk and bread',
    'reading: a book about bread baking',
    'todo: call the plumber',
  ]);
  expect(await search(page, 'bread')).toEqual(['groceries: milk and bread', 'reading: a book about bread baking']);
  expect(await search(page, 'plumb')).toEqual(['todo: call the plumber']);
  expect(await search(page, 'bread plumber')).toEqual([]);

  await page.reload();
  await expect(page.locator('#status')).toHaveText('ready: 3 notes');
  expect(await search(page, 'baking')).toEqual(['reading: a book about bread baking']);
  await add(page, 'after reload', '');
  await expect(page.locator('#status')).toHaveText('ready: 4 notes');

  // What the origin's storage holds: the wrapping key is a non-extractable CryptoKey, the recipient
  // secret key appears only wrapped (32 bytes + a 16-byte tag), and the store's database names no
  // note in the clear.
  const stored = await page.evaluate(async () => {
    const open = (name) =>
      new Promise((resolve, reject) => {
        const r = indexedDB.open(name);
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error);
      });
    const all = (db, store) =>
      new Promise((resolve, reject) => {
        const r = db.transaction(store).objectStore(store).getAll();
        r.onsuccess = () => resolve(r.result);
        r.onerror = () => reject(r.error);
      });
    const keys = await open('pqdb-notes-keys');
    const [saved] = await all(keys, 'keys');
    keys.close();
    let exported = 'refused';
    try {
      await crypto.subtle.exportKey('raw', saved.wrappingKey);
      exported = 'exported';
    } catch {}
    const db = await open('pqdb-notes');
    const text = [];
    for (const name of db.objectStoreNames) {
      for (const v of await all(db, name)) {
        const bytes = v instanceof Uint8Array ? v : v?.bytes instanceof Uint8Array ? v.bytes : undefined;
        text.push(bytes !== undefined ? new TextDecoder('latin1').decode(bytes) : JSON.stringify(v));
      }
    }
    db.close();
    return {
      keyType: saved.wrappingKey.constructor.name,
      extractable: saved.wrappingKey.extractable,
      exported,
      wrappedBytes: saved.wrapped.length,
      bytesRead: text.reduce((n, t) => n + t.length, 0),
      plaintext: text.some((t) => t.includes('groceries') || t.includes('plumber')),
      localStorage: localStorage.length,
    };
  });
  expect(stored).toEqual({
    keyType: 'CryptoKey',
    extractable: false,
    exported: 'refused',
    wrappedBytes: 48,
    bytesRead: expect.any(Number),
    plaintext: false,
    localStorage: 0,
  });
  expect(stored.bytesRead).toBeGreaterThan(1000); // the pages were read, so the check above means something
  expect(errors).toEqual([]);
});

test("notes app: a policy without 'wasm-unsafe-eval' stops the WebAssembly kernels", async ({ page }) => {
  const response = await page.goto(`${APP}?csp=no-wasm`);
  expect(response.headers()['content-security-policy']).not.toContain('wasm-unsafe-eval');
  await expect(page.locator('#status')).toHaveText(/^error: \[WASM_UNAVAILABLE\] /);
});
