// The notes app (examples/browser-app) in Chromium, built and served as `npm run demo:browser`
// serves it (examples/browser-app/serve.mjs, mounted by browser-tests/server.mjs) under the policies
// its README documents: notes added, edited, searched and kept over a reload; two tabs editing with
// each other's changes shown live; the serving tab closed mid-edit; a migration with typing going
// on; a backup downloaded and restored from the file (and a changed file refused); the page holding
// no secret key and running no WebAssembly. Screenshots go under the test's output directory.
import { test, expect } from '@playwright/test';
import { readFile, writeFile } from 'node:fs/promises';
import { keystrokeProbe, keystrokeFigures } from './keystrokes.mjs';

const APP = '/examples/browser-app/';

/** Fails the test on page errors and failed requests. */
function watchErrors(page) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('response', (r) => r.status() >= 400 && errors.push(`${r.status()} ${r.url()}`));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  return errors;
}

async function ready(page, notes) {
  await expect(page.locator('#status')).toHaveText(notes === undefined ? /^ready: / : `ready: ${notes}`, {
    timeout: 30_000,
  });
}

async function add(page, title, body) {
  await page.fill('#title', title);
  await page.fill('#body', body);
  await page.click('#save');
  await expect(page.locator('#notes li', { hasText: title }).first()).toBeVisible();
}

const listed = (page) => page.locator('#notes li').allTextContents();

test('notes app: add, edit, search, reload; the page holds no secret key and compiles no WebAssembly', async ({
  page,
}, info) => {
  await page.addInitScript(() => {
    // Counts WebAssembly compiled on the page's thread (the worker's are its own).
    const count = (f) =>
      function (...args) {
        globalThis.__pageWasm = (globalThis.__pageWasm ?? 0) + 1;
        return f.apply(this, args);
      };
    for (const k of ['instantiate', 'compile', 'instantiateStreaming', 'compileStreaming'])
      if (WebAssembly[k]) WebAssembly[k] = count(WebAssembly[k]);
    WebAssembly.Module = new Proxy(WebAssembly.Module, {
      construct: (t, a) => ((globalThis.__pageWasm = (globalThis.__pageWasm ?? 0) + 1), new t(...a)),
    });
  });
  const errors = watchErrors(page);
  const response = await page.goto(APP);
  expect(response.headers()['content-security-policy']).toMatch(/script-src 'self';/);
  await ready(page, '0 notes');
  await expect(page.locator('#storage')).toHaveText(/^on opfs/);

  await add(page, 'groceries', 'milk and bread');
  await add(page, 'reading', 'a book about bread baking');
  await add(page, 'todo', 'call the plumber');
  await ready(page, '3 notes');
  expect(await listed(page)).toEqual([
    'todocall the plumber',
    'readinga book about bread baking',
    'groceriesmilk and bread',
  ]);

  // Search as you type, every word and the last as a prefix.
  await page.fill('#query', 'bread');
  await expect(page.locator('#results li')).toHaveCount(2);
  await page.fill('#query', 'plumb');
  await expect(page.locator('#results li')).toHaveText(['todocall the plumber']);
  // A note edited: picked from the list, changed, saved under its id; the live search follows.
  await page.locator('#notes li', { hasText: 'todo' }).click();
  await expect(page.locator('#title')).toHaveValue('todo');
  await page.fill('#body', 'call the electrician');
  await page.click('#save');
  await expect(page.locator('#results li')).toHaveCount(0);
  await ready(page, '3 notes');

  await page.reload();
  await ready(page, '3 notes');
  expect(await listed(page)).toEqual([
    'todocall the electrician',
    'readinga book about bread baking',
    'groceriesmilk and bread',
  ]);
  await page.screenshot({ path: info.outputPath('notes.png') });

  // The page's storage: its device key a non-extractable CryptoKey, the store's keys only wrapped;
  // no WebAssembly compiled here.
  const held = await page.evaluate(async () => {
    const db = await new Promise((resolve, reject) => {
      const r = indexedDB.open('pqdb-notes-keys');
      r.onsuccess = () => resolve(r.result);
      r.onerror = () => reject(r.error);
    });
    const get = (k) =>
      new Promise((resolve) => {
        const r = db.transaction('keys').objectStore('keys').get(k);
        r.onsuccess = () => resolve(r.result);
      });
    const [device, keyring] = [await get('device'), await get('keyring')];
    db.close();
    let exported = 'refused';
    await crypto.subtle.exportKey('raw', device).then(
      () => (exported = 'exported'),
      () => undefined,
    );
    return {
      device: device.constructor.name,
      extractable: device.extractable,
      exported,
      wrappedBytes: keyring.wrapped.sealed.length,
      secretBytes: keyring.recipientSecretBytes,
      fields: Object.keys(keyring).sort(),
      pageWasm: globalThis.__pageWasm ?? 0,
      localStorage: localStorage.length,
    };
  });
  expect(held).toMatchObject({
    device: 'CryptoKey',
    extractable: false,
    exported: 'refused',
    pageWasm: 0,
    localStorage: 0,
  });
  expect(held.fields).toEqual(['recipientPublicKey', 'recipientSecretBytes', 'signerPublicKey', 'wrapped']);
  expect(held.wrappedBytes).toBe(held.secretBytes + 4896 + 16); // both secret keys (ML-DSA-87's is 4,896 bytes) and the tag
  expect(errors).toEqual([]);
});

test("notes app in two tabs: each shows the other's notes live; the serving tab closed mid-edit, the other serves", async ({
  context,
}, info) => {
  const a = await context.newPage();
  const errors = watchErrors(a);
  await a.goto(APP);
  await ready(a, '0 notes');
  const b = await context.newPage();
  errors.push(...watchErrors(b));
  await b.goto(APP);
  await ready(b, '0 notes');

  await add(a, 'from a', 'first tab');
  await expect(b.locator('#notes li')).toHaveText(['from afirst tab']); // heard live, no reload
  await ready(b, '1 note');
  await add(b, 'from b', 'second tab');
  await expect(a.locator('#notes li')).toHaveText(['from bsecond tab', 'from afirst tab']);
  // b edits a's note; a sees the edit.
  await b.locator('#notes li', { hasText: 'from a' }).click();
  await b.fill('#body', 'first tab, edited in the second');
  await b.click('#save');
  await expect(a.locator('#notes li', { hasText: 'from a' })).toHaveText('from afirst tab, edited in the second');
  await Promise.all([
    a.screenshot({ path: info.outputPath('tab-a.png') }),
    b.screenshot({ path: info.outputPath('tab-b.png') }),
  ]);

  // a (the tab whose worker took the lock first) closes while b is typing a note; b saves it.
  await b.click('#new');
  await b.fill('#title', 'typed while');
  await b.locator('#body').pressSequentially('the serving tab closed', { delay: 5 });
  const closing = a.close();
  await b.click('#save');
  await closing;
  await expect(b.locator('#notes li')).toHaveText([
    'typed whilethe serving tab closed',
    'from bsecond tab',
    'from afirst tab, edited in the second',
  ]);
  await add(b, 'after', 'the handover');
  await ready(b, '4 notes');

  // A new tab is served by b and sees everything; b's worker serves it.
  const c = await context.newPage();
  errors.push(...watchErrors(c));
  await c.goto(APP);
  await ready(c, '4 notes');
  await add(c, 'from c', 'third tab');
  await expect(b.locator('#notes li').first()).toHaveText('from cthird tab');
  expect(errors).toEqual([]);
});

test('notes app: a migration started from the page runs in the worker while typing goes on', async ({ page }, info) => {
  const errors = watchErrors(page);
  await page.addInitScript(keystrokeProbe);
  await page.goto(APP);
  await ready(page, '0 notes');
  await page.fill('#sample-count', '4000');
  await page.click('#sample');
  await ready(page, '4,000 notes');
  await expect(page.locator('#suites tbody tr', { hasText: 'gcmsiv-hkdf384' })).toContainText('4,000', {
    timeout: 5_000,
  });

  await page.click('#title');
  await page.evaluate(() => globalThis.__keys.start());
  await page.click('#migrate');
  await page.click('#title');
  let typed = '';
  const word = 'responsive ';
  // Type until the migration reports done (and at least one word), as a user keeps writing.
  for (let i = 0; typed.length < word.length || !/^done/.test(await page.textContent('#migration')); i++) {
    await page.keyboard.type(word[i % word.length], { delay: 0 });
    typed += word[i % word.length];
    await page.waitForTimeout(15);
    if (i > 20_000) throw new Error('the migration did not finish');
  }
  const figures = keystrokeFigures(await page.evaluate(() => globalThis.__keys.stop()));
  await expect(page.locator('#title')).toHaveValue(typed); // every keystroke landed
  await expect(page.locator('#migration')).toHaveText(/^done: 4,000 notes re-encrypted with cnsa2-gcm-hkdf384-commit/);
  await expect(page.locator('#suites tbody tr', { hasText: 'cnsa2-gcm-hkdf384-commit' })).toContainText('4,000');
  await page.screenshot({ path: info.outputPath('migrated.png') });
  console.log(
    `[chromium notes app] 4,000-note migration: ${figures.keys} keystrokes, keystroke to paint p50 ${figures.p50} ms / p99 ${figures.p99} ms / max ${figures.max} ms; longest main-thread task ${figures.longestTask} ms (${figures.longTasks} over 50 ms)`,
  );
  expect(figures.keys).toBeGreaterThan(0);
  expect(errors).toEqual([]);
});

test('notes app: a backup downloaded and restored from the file; a changed file is refused', async ({ page }, info) => {
  const errors = watchErrors(page);
  await page.goto(APP);
  await ready(page, '0 notes');
  await add(page, 'kept', 'in the backup');
  await add(page, 'second', 'also kept');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#backup')]);
  expect(download.suggestedFilename()).toMatch(/^notes-.*\.pqdb$/);
  const saved = info.outputPath(download.suggestedFilename());
  await download.saveAs(saved);
  await expect(page.locator('#backups')).toHaveText(/^backup [0-9a-f]{8}: 2 notes, [\d,]+ bytes$/);
  await expect(page.locator('#copies')).toHaveText(/1 managed copy holding data \(1 backup\)/);
  await add(page, 'after', 'the backup');

  // A changed file: one byte of the middle flipped, and the file's checksum redone by hand too.
  const bytes = await readFile(saved);
  const flipped = Buffer.from(bytes);
  flipped[Math.floor(bytes.length / 2)] ^= 1;
  await writeFile(info.outputPath('changed.pqdb'), flipped);
  await page.setInputFiles('#restore', info.outputPath('changed.pqdb'));
  await expect(page.locator('#backups')).toHaveText(/^not restored: \[CORRUPTION\] /);

  // The file as downloaded: a new store made of it, and the app moved there.
  await page.setInputFiles('#restore', saved);
  await expect(page.locator('#backups')).toHaveText(`restored 2 notes from ${download.suggestedFilename()}`, {
    timeout: 30_000,
  });
  await ready(page, '2 notes');
  expect(await listed(page)).toEqual(['secondalso kept', 'keptin the backup']);
  await page.reload();
  await ready(page, '2 notes');
  await page.screenshot({ path: info.outputPath('restored.png') });
  expect(errors).toEqual([]);
});

test("notes app: a worker policy without 'wasm-unsafe-eval' stops the kernels, and the page says so", async ({
  page,
}) => {
  const response = await page.goto('/examples/no-wasm/');
  expect(response.headers()['content-security-policy']).not.toContain('wasm-unsafe-eval');
  await expect(page.locator('#status')).toHaveText(/^error: \[WASM_UNAVAILABLE\] /, { timeout: 30_000 });
});
